// A thread that waits for the coordination service to report a task's death, for the
// transports: a wait on a dead peer's bytes is not always released by the transport
// itself (a Gloo send queued for it, a shared-memory ring it will never write), so each
// transport hands this a callback that releases its waits.
//
// Thread-safety: Stop and the destructor from one thread; `on_death` runs on the
// watcher's own thread, at most once.
#ifndef DISTRIBUTE_CORE_SERVER_PEER_DEATH_WATCHER_H_
#define DISTRIBUTE_CORE_SERVER_PEER_DEATH_WATCHER_H_

#include <atomic>
#include <thread>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "core/server/coordination_client.h"

namespace distribute {

class PeerDeathWatcher {
 public:
  // Starts watching; `on_death(status)` gets the service's report (PeerDied(status)).
  PeerDeathWatcher(CoordinationClient& coordination, absl::AnyInvocable<void(const absl::Status&)> on_death);
  ~PeerDeathWatcher() { Stop(); }

  PeerDeathWatcher(const PeerDeathWatcher&) = delete;
  PeerDeathWatcher& operator=(const PeerDeathWatcher&) = delete;

  // Ends the watch (within about 100 ms) and joins the thread; `on_death` no longer runs.
  void Stop();

 private:
  void Watch();

  CoordinationClient& coordination_;
  absl::AnyInvocable<void(const absl::Status&)> on_death_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;  // last: started once everything above exists
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_PEER_DEATH_WATCHER_H_
