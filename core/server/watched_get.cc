#include "core/server/watched_get.h"

#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<std::string> WatchedGet(CoordinationClient& coordination, absl::string_view key,
                                       const Deadline& deadline) {
  while (true) {
    RETURN_IF_ERROR(coordination.PeerHealth());
    absl::StatusOr<std::string> value = coordination.Get(key, deadline.Within(kWatchedGetSliceMs));
    if (value.ok() || !absl::IsDeadlineExceeded(value.status()) || deadline.Expired()) return value;
  }
}

}  // namespace distribute
