// Cross-replica operations of a strategy (Strategy.reduce/gather and StrategyExtended's
// reduce_to, batch_reduce_to, update), computed by the calling thread directly over the
// replicas' buffers in shared memory: there is no rendezvous in cross-replica context.
#ifndef DISTRIBUTE_CORE_STRATEGY_CROSS_REPLICA_H_
#define DISTRIBUTE_CORE_STRATEGY_CROSS_REPLICA_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "core/kernels/reduce_op.h"
#include "core/strategy/strategy.h"
#include "core/values/value.h"

namespace distribute {

// Strategy.reduce; `axis` (negative counts from the end) also reduces within each replica
// and makes MEAN divide by the true element count of a partial batch.
absl::StatusOr<Value> Reduce(Strategy& strategy, ReduceOp op, const Value& value,
                             std::optional<int32_t> axis);

// Strategy.gather: components concatenated along `axis`.
absl::StatusOr<Value> Gather(Strategy& strategy, const Value& value, int32_t axis);

// Where reduce_to puts its result: one device per copy.
using Destinations = std::vector<DeviceSpec>;
absl::StatusOr<Destinations> DestinationsOf(const Value& value);
absl::StatusOr<Destinations> DestinationsOf(absl::string_view device);

// StrategyExtended.batch_reduce_to (reduce_to is a batch of one): every value reduced
// across replicas and placed on its destinations (a tensor for one device, a Mirrored
// value for several). The default strategy returns values unchanged.
absl::StatusOr<std::vector<Value>> BatchReduceTo(Strategy& strategy, ReduceOp op,
                                                 std::span<const Value> values,
                                                 std::span<const Destinations> destinations);

// StrategyExtended.update: fn(variable copy, args for its device) once per copy, in update
// context; results merged (group) into Mirrored, or left PerReplica.
using UpdateFn = absl::FunctionRef<absl::StatusOr<std::optional<Value>>(
    const Value& variable, std::span<const Value> args)>;
absl::StatusOr<std::optional<Value>> Update(Strategy& strategy, const Value& variable,
                                            UpdateFn fn, std::span<const Value> args, bool group);

// experimental_distribute_values_from_function: fn(replica_id_in_sync_group,
// num_replicas_in_sync) once per local replica, in order, must produce a tensor (nothing,
// or another kind of value, is InvalidArgument naming the replica). One replica: that
// tensor; several: a PerReplica value of them.
using ValueFn = absl::FunctionRef<absl::StatusOr<std::optional<Value>>(
    int32_t replica_id_in_sync, int32_t num_replicas_in_sync)>;
absl::StatusOr<Value> DistributeValuesFromFunction(Strategy& strategy, ValueFn fn);

// StrategyExtended.value_container: the distributed variable a component view belongs
// to; anything else is its own container.
Value ValueContainer(const Value& value);

// Whether `variable` was created in `strategy`'s scope; InvalidArgument for a value that
// is not a variable.
absl::StatusOr<bool> VariableCreatedInScope(const Strategy& strategy, const Value& variable);

// colocate_vars_with: until the matching exit, this thread's new variables go to the
// devices of `variable` (InvalidArgument for a value that is not a variable;
// FailedPrecondition outside `strategy`'s scope).
absl::Status ColocateVarsWithEnter(const Strategy& strategy, const Value& variable);

// The per-replica tensors of a value, for reductions: PerReplica/Mirrored components,
// variable copies (snapshots), or the tensor itself.
absl::StatusOr<std::vector<Tensor>> LocalResults(const Value& value);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_CROSS_REPLICA_H_
