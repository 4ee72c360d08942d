// Strategy.run over values: each replica gets the arguments unwrapped for it, fills its
// result slots, and the slots are merged across replicas (and workers) into the results
// the caller receives. The C API's dist_strategy_run is this plus handle wrapping.
#ifndef DISTRIBUTE_CORE_STRATEGY_RUN_H_
#define DISTRIBUTE_CORE_STRATEGY_RUN_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/strategy.h"
#include "core/values/value.h"

namespace distribute {

// A replica function over values: `args` are the run arguments unwrapped for this
// replica; `results` has one empty slot per result, which the function may fill. Slots
// filled before a failure are dropped (released) with the rest of the run.
using ValueReplicaFn = absl::FunctionRef<absl::Status(
    ReplicaContext& context, std::span<const Value> args, std::span<std::optional<Value>> results)>;

// Runs `fn` once per replica of `strategy` (Strategy::Run's rules and errors) and merges
// result slot i over the replicas: nothing when no replica filled it, one replica's value
// as it is, the same variable from every replica as that variable, otherwise a PerReplica
// value (always one under a multi-worker strategy, whose replicas have peers elsewhere).
// InvalidArgument when num_results < 0 or when some replicas filled a slot and others
// did not.
absl::StatusOr<std::vector<std::optional<Value>>> RunReplicas(Strategy& strategy,
                                                              std::span<const Value> args,
                                                              int32_t num_results,
                                                              ValueReplicaFn fn);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_RUN_H_
