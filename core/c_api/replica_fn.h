// The user's dist_replica_fn as the core's ValueReplicaFn: the handle wrapping around one
// replica's call, and nothing else (unwrapping and merging are RunReplicas's).
#ifndef DISTRIBUTE_CORE_C_API_REPLICA_FN_H_
#define DISTRIBUTE_CORE_C_API_REPLICA_FN_H_

#include <optional>
#include <span>

#include "absl/status/status.h"
#include "core/strategy/replica_context.h"
#include "core/values/value.h"
#include "distribute/strategy.h"

namespace distribute::c_api {

// Calls `fn` for `context`'s replica with handles for `args`, and moves what it stored
// into `results` (even when it failed, so that nothing leaks). A failure becomes a status
// carrying the callback's last error message, naming the replica.
absl::Status CallReplicaFn(dist_replica_fn fn, void* user_data, ReplicaContext& context,
                           std::span<const Value> args, std::span<std::optional<Value>> results);

}  // namespace distribute::c_api

#endif  // DISTRIBUTE_CORE_C_API_REPLICA_FN_H_
