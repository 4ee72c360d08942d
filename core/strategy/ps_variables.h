// ParameterServerStrategy's variables: creation on the ps tasks (placement, then
// create-if-absent), registered updates applied where they live, and their shards.
#ifndef DISTRIBUTE_CORE_STRATEGY_PS_VARIABLES_H_
#define DISTRIBUTE_CORE_STRATEGY_PS_VARIABLES_H_

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/ps/hyperparameters.h"
#include "core/strategy/ps_variable_storage.h"
#include "core/strategy/strategy.h"
#include "core/tensor/tensor.h"
#include "core/values/value.h"
#include "core/values/variable.h"

namespace distribute {

// Declares `name` in the strategy's placement (colocated with variable `colocate_with`
// when not empty) and creates it on its task(s) from `initial` unless it exists there: the
// first creator's value stands, a later creator reads it. InvalidArgument naming both
// declarations for another dtype or shape under the same name.
absl::StatusOr<Value> CreatePsVariable(Strategy& strategy, const Tensor& initial, VariableSync sync,
                                       VariableAggregation aggregation, const std::string& name,
                                       const std::string& colocate_with);

// The storage of a ParameterServerStrategy variable; InvalidArgument naming what `value`
// is otherwise.
absl::StatusOr<PsVariableStorage*> PsStorageOf(const Value& value);

// dist_variable_apply_update (see include_c/distribute/parameter_server.h): in
// cross-replica context one update with `arguments`; in replica context the arguments of
// this worker's replicas aggregated by the variable's aggregation, sent once by replica 0.
absl::Status ApplyRegisteredUpdate(const Value& variable, absl::string_view function,
                                   std::span<const Tensor> arguments,
                                   const ps::Hyperparameters& hyperparameters);

// dist_variables_read: every variable's value as ReadVariable reads it; those of a
// ParameterServerStrategy in one batch (ps_variable_batch.h), the others one by one.
absl::StatusOr<std::vector<Tensor>> ReadVariables(std::span<const Value* const> variables);

// dist_variables_apply_update: ApplyRegisteredUpdate on every variable (all of a
// ParameterServerStrategy) with its own arguments, sent as one batch. In replica context
// the arguments of all the variables are aggregated in one collective per reduction (SUM,
// MEAN), and replica 0 sends the batch. Every variable's update is attempted; the error of
// the first that failed is returned.
absl::Status ApplyRegisteredUpdates(std::span<const Value* const> variables,
                                    std::span<const std::vector<Tensor>> arguments,
                                    absl::string_view function, const ps::Hyperparameters& hyperparameters);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_PS_VARIABLES_H_
