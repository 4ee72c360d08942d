#include "core/strategy/run.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<std::vector<std::optional<Value>>> RunReplicas(Strategy& strategy,
                                                              std::span<const Value> args,
                                                              int32_t num_results,
                                                              ValueReplicaFn fn) {
  if (num_results < 0) {
    return absl::InvalidArgumentError(absl::StrCat("num_results is ", num_results, ": expected >= 0"));
  }
  const int32_t n = strategy.num_replicas();
  ASSIGN_OR_RETURN(std::vector<std::vector<Value>> per_replica_args, UnwrapForReplicas(args, n));
  // slots[s][r]: result s of replica r. Each replica writes only its own column.
  const auto results = static_cast<size_t>(num_results);
  std::vector<std::vector<std::optional<Value>>> by_replica(static_cast<size_t>(n),
                                                            std::vector<std::optional<Value>>(results));
  RETURN_IF_ERROR(strategy.Run([&](ReplicaContext& context) -> absl::Status {
    const auto r = static_cast<size_t>(context.replica_id());
    return fn(context, per_replica_args[r], by_replica[r]);
  }));
  const bool always_wrap = strategy.num_workers() > 1;
  std::vector<std::optional<Value>> merged;
  merged.reserve(results);
  for (size_t s = 0; s < results; ++s) {
    std::vector<std::optional<Value>> slot;
    slot.reserve(by_replica.size());
    for (auto& replica_results : by_replica) slot.push_back(std::move(replica_results[s]));
    ASSIGN_OR_RETURN(std::optional<Value> value,
                     MergeResults(slot, static_cast<int32_t>(s), always_wrap));
    merged.push_back(std::move(value));
  }
  return merged;
}

}  // namespace distribute
