#include "core/server/peer_death_watcher.h"

#include <chrono>
#include <utility>

#include "core/server/peer_failure.h"

namespace distribute {

PeerDeathWatcher::PeerDeathWatcher(CoordinationClient& coordination,
                                   absl::AnyInvocable<void(const absl::Status&)> on_death)
    : coordination_(coordination), on_death_(std::move(on_death)), thread_([this] { Watch(); }) {}

void PeerDeathWatcher::Stop() {
  stopping_ = true;
  if (thread_.joinable()) thread_.join();
}

void PeerDeathWatcher::Watch() {
  constexpr int64_t kSliceMs = 100;  // bounds how long Stop waits for this thread
  while (!stopping_) {
    const absl::Status peer = coordination_.WaitForPeerFailure(Deadline::AfterMs(kSliceMs));
    if (PeerDied(peer)) {
      on_death_(peer);
      return;
    }
    // A failure that is no death comes back at once: do not spin on it.
    if (!peer.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(kSliceMs));
  }
}

}  // namespace distribute
