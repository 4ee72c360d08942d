#include "core/ps/slot_declarations.h"

#include "core/ps/names.h"
#include "core/util/status_macros.h"

namespace distribute::ps {

absl::StatusOr<std::vector<VariableDeclaration>> SlotDeclarations(const VariablePlacement& variable,
                                                                  const UpdateFunction& function) {
  std::vector<VariableDeclaration> out;
  for (const ShardPlacement& shard : variable.shards) {
    for (const SlotSpec& slot : function.slots) {
      VariableDeclaration declaration;
      declaration.name = SlotName(shard.name, slot.name);
      RETURN_IF_ERROR(CheckPsName("slot variable name", declaration.name));
      declaration.dtype = variable.declaration.dtype;
      declaration.shape = shard.shape;
      declaration.colocate_with = shard.name;
      out.push_back(std::move(declaration));
    }
  }
  return out;
}

}  // namespace distribute::ps
