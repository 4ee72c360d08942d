// A key-value read that keeps an eye on the job's tasks: a connection step that waits for
// every worker's key must fail as soon as the coordination service knows a worker died,
// naming it, rather than at its deadline with "key ... was not set" (a worker that died
// before it wrote its key never will).
#ifndef DISTRIBUTE_CORE_SERVER_WATCHED_GET_H_
#define DISTRIBUTE_CORE_SERVER_WATCHED_GET_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/server/coordination_client.h"
#include "core/util/deadline.h"

namespace distribute {

// How often a watched read asks whether a task died.
inline constexpr int64_t kWatchedGetSliceMs = 100;

// coordination.Get(key) in slices of kWatchedGetSliceMs until `deadline`, failing with
// PeerHealth's kUnavailable (naming the lost task) between slices; kDeadlineExceeded when
// the key is still unset at `deadline`.
absl::StatusOr<std::string> WatchedGet(CoordinationClient& coordination, absl::string_view key,
                                       const Deadline& deadline);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_WATCHED_GET_H_
