// The slot variables an update function needs for a placed variable, as declarations for
// the worker's Placement: one per slot and shard ("w/m", or "w/part_0/m" for a shard),
// each with its shard's dtype and shape and colocated with it, so that a ps task always
// holds a variable's slots beside it (Keras creates slots under colocate_vars_with(var)).
#ifndef DISTRIBUTE_CORE_PS_SLOT_DECLARATIONS_H_
#define DISTRIBUTE_CORE_PS_SLOT_DECLARATIONS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/ps/function_registry.h"
#include "core/ps/placement.h"

namespace distribute::ps {

// InvalidArgument when a slot name would be longer than kMaxPsNameBytes.
absl::StatusOr<std::vector<VariableDeclaration>> SlotDeclarations(const VariablePlacement& variable,
                                                                  const UpdateFunction& function);

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_SLOT_DECLARATIONS_H_
