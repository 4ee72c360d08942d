// Reads and registered updates of many ParameterServerStrategy variables at once: every
// shard of every variable goes to its ps task, and each task is asked once for all of them
// (VariableHost::ReadMany and ApplyUpdates: one gRPC call, or a few when the batch holds
// more than 1 MiB of tensors or than one call may carry), the tasks at once through the
// servers' FanOutPool. A training step that reads 4 variables of 2 shards each makes 2
// calls instead of 8.
//
// Each variable's value is read, and each shard updated, atomically, as one variable's
// read or update is; the batch as a whole is not one snapshot or one transaction (as
// separate calls are not).
#ifndef DISTRIBUTE_CORE_STRATEGY_PS_VARIABLE_BATCH_H_
#define DISTRIBUTE_CORE_STRATEGY_PS_VARIABLE_BATCH_H_

#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/ps/hyperparameters.h"
#include "core/strategy/ps_variable_storage.h"
#include "core/tensor/tensor.h"

namespace distribute {

// The value of every variable, in order. Variables of different strategies may be mixed
// (each strategy's tasks are asked in turn). A read that fails fails the batch, with the
// error of one of the reads that failed; nothing is returned then.
absl::StatusOr<std::vector<Tensor>> ReadPsVariables(std::span<PsVariableStorage* const> variables);

// Registered `function` run on every variable with its own `arguments[i]` (split by its
// shard layout) and the same hyperparameters. Every shard's update is attempted whatever
// the others' outcome; returns OK, or the error of the first variable (by position, then
// shard) that failed, naming it ("variables[2] ('w'): ..."); the others stay applied (as
// for a sharded variable's shards).
absl::Status ApplyPsUpdates(std::span<PsVariableStorage* const> variables,
                            std::span<const std::vector<Tensor>> arguments, absl::string_view function,
                            const ps::Hyperparameters& hyperparameters);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_PS_VARIABLE_BATCH_H_
