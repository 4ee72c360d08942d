// The cross-worker Transport over Gloo's TCP transport (Debian's libgloo 0.5): point-to-point
// transfers through unbound buffers (the options-based API) and nothing else. Mixing in
// the older buffer-based algorithm classes fixes a pair's socket buffer to the first small
// message's size and slows large transfers 100-1000 times (measured on Debian's Gloo), and
// Gloo's own collectives cannot be released when a peer dies (below).
//
// Failures become statuses: a peer that closed its connection gives kUnavailable naming
// the lost task (asked of the coordination service, which learns it from the dead task's
// closed connection), a peer that stopped answering gives kDeadlineExceeded at the call's
// deadline. Either leaves the communicator failed for good (Gloo's context is unusable
// after an error): later calls fail at once with the original cause.
//
// Gloo behaviours this accounts for (all seen on Debian's build):
// - A wait that times out closes every connection of its context, so the other survivors,
//   whose deadlines come a moment later, see a closed connection and no lost task: they
//   report the timeout too, at their own deadline.
// - A send queued for a peer that then dies is never released. A watcher thread aborts
//   the pending waits as soon as the coordination service reports a death.
// - A message longer than the receive posted for it trips an enforce in Gloo's event loop
//   (the process aborts), so receives whose size is not yet agreed are posted with room
//   to spare (CrossWorker's first frame); a shorter message is fine.
#ifndef DISTRIBUTE_CORE_GLOO_GLOO_TRANSPORT_H_
#define DISTRIBUTE_CORE_GLOO_GLOO_TRANSPORT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/collective/transport.h"
#include "core/server/coordination_client.h"
#include "core/server/peer_death_watcher.h"
#include "core/util/mutex.h"

namespace gloo {
class Context;
namespace transport {
class UnboundBuffer;
}
}

namespace distribute {

class GlooTransport : public Transport {
 public:
  // Connects `task_names.size()` workers: this one is `rank` and listens on `hostname`.
  // Addresses are exchanged through `coordination` under `key_prefix` (the same on every
  // worker, new for every communicator), and every connection proves that it comes from
  // the job (`job_token`, gloo_connect.h). Fails at `deadline` naming the tasks that did
  // not connect. With `background_loop`, Gloo's event loop runs at a low priority
  // (gloo_device.h: for a machine whose workers' callers and loops outnumber its cores).
  static absl::StatusOr<std::unique_ptr<GlooTransport>> Connect(
      CoordinationClient& coordination, const std::string& key_prefix, int32_t rank,
      std::vector<std::string> task_names, const std::string& hostname, const std::string& job_token,
      const Deadline& deadline, bool background_loop = false);

  ~GlooTransport() override;

  int32_t rank() const override { return rank_; }
  int32_t size() const override { return static_cast<int32_t>(task_names_.size()); }
  const std::string& task_name(int32_t rank) const override { return task_names_[rank]; }

  absl::Status Exchange(std::span<const Transfer> sends, std::span<const Transfer> receives,
                        const Deadline& deadline, const OnReceived& on_received) override;
  absl::Status health() const override { return failure_; }

 private:
  GlooTransport(CoordinationClient& coordination, int32_t rank,
                   std::vector<std::string> task_names, std::shared_ptr<gloo::Context> context);

  // Runs one Gloo operation with SIGPIPE blocked, turning its exceptions into the
  // communicator's (sticky) failure.
  template <typename Op>
  absl::Status Call(const char* what, const Deadline& deadline, Op op);
  absl::Status Fail(const char* what, const std::string& error, const Deadline& deadline);
  // Gloo does not release a wait for a send queued to a peer that then died; the watcher
  // calls this when the coordination service learns that a task died.
  void ReleaseWaits();

  CoordinationClient& coordination_;
  const int32_t rank_;
  const std::vector<std::string> task_names_;
  std::shared_ptr<gloo::Context> context_;
  uint32_t next_tag_ = 0;
  absl::Status failure_;
  Mutex pending_mu_;
  // The buffers of the exchange in flight, whose waits a task's death aborts.
  std::vector<gloo::transport::UnboundBuffer*> pending_ ABSL_GUARDED_BY(pending_mu_);
  bool peer_died_ ABSL_GUARDED_BY(pending_mu_) = false;
  PeerDeathWatcher watcher_;  // last: started once everything above exists
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GLOO_GLOO_TRANSPORT_H_
