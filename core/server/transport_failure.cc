#include "core/server/transport_failure.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/server/peer_failure.h"

namespace distribute {
namespace {

// How long a transport error waits for the coordination service to name the lost task:
// it learns of a dead process from its closed connection within a few hundred ms.
constexpr int64_t kNameLostTaskMs = 1500;
// The same wait when the call's own deadline is due within it: how long past the deadline
// the transport error may still be blamed on a lost task rather than on the timeout.
constexpr int64_t kNameLostNearDeadlineMs = 500;

}  // namespace

absl::Status ExplainTransportFailure(CoordinationClient& coordination, const char* what,
                                     const std::string& error, bool timed_out, const Deadline& deadline,
                                     absl::FunctionRef<void()> close_now) {
  if (timed_out || deadline.Expired()) {
    close_now();
    // A task that died meanwhile is the cause: a transport does not always release a
    // wait on a dead peer before the deadline.
    if (const absl::Status peer = coordination.PeerHealth(); PeerDied(peer)) {
      return absl::UnavailableError(
          absl::StrCat(what, " across workers failed: ", peer.message(), " (", error, ")"));
    }
    return absl::DeadlineExceededError(absl::StrCat(
        what, " across workers timed out after ", deadline.timeout_ms,
        " ms (a worker stopped responding): ", error));
  }
  // End the communicator now: a survivor still waiting on this worker learns at once that
  // it is gone, instead of waiting for its deadline.
  close_now();
  // Wait to hear which task died; when this call's own deadline is near, only a short while
  // past it.
  const Clock::time_point now = Clock::now();
  const Clock::time_point naming_until =
      std::min(now + std::chrono::milliseconds(kNameLostTaskMs),
               std::max(deadline.when, now + std::chrono::milliseconds(kNameLostNearDeadlineMs)));
  const absl::Status peer = coordination.WaitForPeerFailure(Deadline{naming_until, kNameLostTaskMs});
  if (!PeerDied(peer) && deadline.when <= naming_until) {
    // No task died, and this call's deadline has come: a peer whose wait on the same
    // silent worker timed out a moment earlier closed its end (and maybe left). This call
    // has timed out as well.
    std::this_thread::sleep_until(deadline.when);
    return absl::DeadlineExceededError(absl::StrCat(
        what, " across workers timed out after ", deadline.timeout_ms,
        " ms (a worker stopped responding; a peer whose wait timed out first closed its "
        "connections): ", error));
  }
  return absl::UnavailableError(
      peer.ok() ? absl::StrCat(what, " across workers failed: lost the connection to a peer: ", error)
                : absl::StrCat(what, " across workers failed: ", peer.message(), " (", error, ")"));
}

}  // namespace distribute
