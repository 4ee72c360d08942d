#include "core/server/coordination_limits.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/util/quote.h"

namespace distribute {

std::string QuotedKey(absl::string_view text) {
  constexpr size_t kShown = 64;
  return Quoted(text, kShown);
}

size_t DefaultMaxPendingWaits(size_t tasks) {
  const size_t bounded = std::min(tasks, kMaxClusterTasksForThreads);
  return std::clamp(bounded * kDefaultPendingWaitsPerTask, kMinDefaultPendingWaits, kMaxPendingWaits);
}

int ServerThreadLimit(size_t watching_tasks, size_t max_pending_waits) {
  return static_cast<int>(std::min(watching_tasks, kMaxClusterTasksForThreads) +
                          std::min(max_pending_waits, kMaxPendingWaits) + kServerThreadsForShortCalls);
}

absl::Status CheckCoordinationKey(absl::string_view what, absl::string_view key) {
  if (key.empty()) return absl::InvalidArgumentError(absl::StrCat("the ", what, " is empty"));
  if (key.size() > kMaxCoordinationKeyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("the ", what, " ", QuotedKey(key), " is too long: at most ",
                                                   kMaxCoordinationKeyBytes, " bytes"));
  }
  return absl::OkStatus();
}

absl::Status CheckCoordinationValue(absl::string_view key, size_t size, size_t max_value_bytes) {
  if (size <= max_value_bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the value for key ", QuotedKey(key), " has ", size,
                                                 " bytes: at most ", max_value_bytes,
                                                 " bytes fit the server's message size limit"));
}

absl::Status CheckWaitTimeoutMs(absl::string_view name, int64_t timeout_ms) {
  if (timeout_ms >= 0 && timeout_ms <= kMaxCoordinationWaitMs) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(name, " is ", timeout_ms, " ms: expected 0 to ",
                                                 kMaxCoordinationWaitMs, " ms (a day)"));
}

}  // namespace distribute
