// The cross-worker Transport between worker processes on one host, through shared memory:
// each worker maps a segment of its own (one ring per peer, shm_layout.h) and every
// peer's. A send copies its bytes into the ring of the receiving worker's segment, record
// by record; the receiver copies them out into the receive posted for the same channel.
// Rings are small enough to stay in cache, so a message costs one copy through memory.
// Waiters spin briefly (or yield their core between polls where the workers sharing this
// worker's cores outnumber them: Connect's `crowded`), then sleep on their doorbell (a
// futex) until a peer rings it.
//
// Each worker also maps every peer's shared host arena read-only (core/shm/peer_arena.h),
// so that CrossWorker can reduce straight out of a peer's tensors (shares_memory()).
//
// Segments are created through the coordination service's key-value store and unlinked as
// soon as every worker has mapped them, so nothing is left in /dev/shm whatever happens to
// a process afterwards (SIGKILL included); a start-up that fails unlinks every name it
// heard of. Failures are the Gloo transport's (core/server/transport_failure.h): a dead
// peer, which the coordination service reports, fails the call with kUnavailable naming
// it; a silent one hits the deadline; a peer whose communicator failed marks its segment
// closed, and its peers stop waiting on it. Any failure is final for the communicator.
//
// Thread-safety: one thread at a time.
#ifndef DISTRIBUTE_CORE_SHM_SHM_TRANSPORT_H_
#define DISTRIBUTE_CORE_SHM_SHM_TRANSPORT_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/collective/transport.h"
#include "core/server/coordination_client.h"
#include "core/server/peer_death_watcher.h"
#include "core/shm/peer_arena.h"
#include "core/shm/ring_reader.h"
#include "core/shm/shared_segment.h"
#include "core/shm/shm_layout.h"
#include "core/util/mutex.h"

namespace distribute::shm {

// Whether workers with these host identities (shm::HostIdentity, one per worker) may try
// shared memory: all on one host, and not more of them than a communicator takes.
bool AllOnOneHost(std::span<const std::string> hosts);

class ShmTransport : public Transport {
 public:
  // Connects `task_names.size()` workers (this one is `rank`) that share this host, through
  // `coordination` under `key_prefix` (the same on every worker, new for every
  // communicator). kFailedPrecondition, on every worker, when some worker cannot open
  // another's segment (a different /dev/shm); other errors name the tasks that did not
  // come by `deadline`. `crowded`: whether the workers that share this worker's cores
  // outnumber them (the transport factory's census, worker_place.h), so that a waiting
  // worker yields its core instead of spinning on it; unset: whether the workers outnumber
  // this process's cores (every worker assumed to share them). `share_tensors`: whether
  // this worker puts its large tensors where its peers read them in place (the shared
  // host arena); the workers agree, and one that does not (or cannot map another's) makes
  // every worker of the communicator copy through the rings.
  static absl::StatusOr<std::unique_ptr<ShmTransport>> Connect(CoordinationClient& coordination,
                                                               const std::string& key_prefix, int32_t rank,
                                                               std::vector<std::string> task_names,
                                                               const Deadline& deadline,
                                                               std::optional<bool> crowded = std::nullopt,
                                                               bool share_tensors = true);
  ~ShmTransport() override;

  int32_t rank() const override { return rank_; }
  int32_t size() const override { return static_cast<int32_t>(task_names_.size()); }
  const std::string& task_name(int32_t rank) const override { return task_names_[rank]; }

  absl::Status Exchange(std::span<const Transfer> sends, std::span<const Transfer> receives,
                        const Deadline& deadline, const OnReceived& on_received) override;
  absl::Status health() const override { return failure_; }
  // A relayed run is consumed straight out of the ring it arrived in (no copy into a
  // receive), and its result queued for the relay's peer at once.
  bool relays() const override { return true; }
  // Every worker's tensors of the shared host arena (core/tensor/shared_host_arena.h) are
  // readable by the others when every worker could map every other's arena at Connect.
  bool shares_memory() const override { return !arenas_.empty(); }
  std::optional<uint64_t> SharedPlace(const void* data, size_t bytes) const override;
  const char* PeerBytes(int32_t peer, uint64_t place, size_t bytes) const override;
  // Whether a waiting worker yields its core between polls (Connect's `crowded`).
  bool yields_core() const { return yield_; }
  // Small pieces: a message here is a copy into a ring that stays in cache, with no
  // handshake, so the finer the pipeline the more the reduction overlaps the copies (1 MiB
  // all-reduces between two workers took 0.57x the time of the default cutting, 4 MiB 0.55x;
  // 32 KiB to 256 KiB pieces all measured alike). Whole packs up to 16 KiB: 1-16 KiB
  // all-reduces between two workers took 0.7-0.85x the time so, 64 KiB and more longer.
  Pipelining pipelining() const override {
    return Pipelining{size_t{64} << 10, size_t{128} << 10, size_t{128} << 10, size_t{16} << 10};
  }

  // The ring size of a communicator of `workers` workers (every worker computes the same).
  static uint64_t RingBytes(int32_t workers);

 private:
  struct Peer {
    std::unique_ptr<SharedSegment> segment;  // the peer's own (this worker's for rank_)
    SegmentHeader* header = nullptr;
    RingControl* out = nullptr;   // the ring this worker writes to, in the peer's segment
    char* out_data = nullptr;
    RingControl* in = nullptr;    // the ring the peer writes to, in this worker's segment
    char* in_data = nullptr;
    uint64_t out_head = 0;        // this worker's copy of out->head (it alone writes it)
    uint64_t in_tail = 0;         // and of in->tail
    struct Send {
      Transfer transfer;  // the whole message
      size_t sent = 0;    // where the next record starts
      size_t end = 0;     // where this send stops (a relayed run sends part of a message)
    };
    std::deque<Send> sends;       // queued for the ring, in order
    // Where MatchReceive starts looking: the receive the peer's last record went to (a
    // message's records come one after another, and a pipelined call posts thousands).
    size_t receive_hint = 0;
  };
  struct Receive {
    Transfer transfer;
    ReceiveProgress progress;  // what has arrived (ring_reader.h)
  };

  ShmTransport(CoordinationClient& coordination, int32_t rank, std::vector<std::string> task_names,
               std::vector<Peer> peers, std::vector<std::unique_ptr<PeerArena>> arenas, bool crowded);

  // Moves what can move: queued sends into the peers' rings, records out of this worker's
  // rings into the posted receives. True when anything moved.
  absl::StatusOr<bool> Progress();
  absl::StatusOr<bool> PushSends(int32_t peer);
  // A relayed receive's record (ring_reader.h): consumed into the relay, and passed on.
  void RelayRun(ReceiveProgress& receive, const RecordHeader& record, const char* payload);
  absl::StatusOr<bool> Drain(int32_t peer);
  // The posted receive `record` continues (checked against what came before), or null
  // when no receive of this call is for its channel.
  absl::StatusOr<ReceiveProgress*> MatchReceive(int32_t peer, const RecordHeader& record);
  // Waits until a peer rings this worker's doorbell (or a slice of the wait passes);
  // fails when the deadline passed, a task died or a peer closed its communicator.
  absl::Status Wait(uint32_t seen, const Deadline& deadline);
  // Whether this call still has something to send to or receive from worker `w`: a peer
  // that closed its end after its last message is a failure only then.
  bool Awaits(int32_t w) const;
  absl::Status Fail(const std::string& error, bool timed_out, const Deadline& deadline);
  // Marks this worker's communicator closed and wakes every peer.
  void Close();
  // Called by the watcher when the coordination service reports a task's death.
  void OnPeerDeath(const absl::Status& death);

  CoordinationClient& coordination_;
  const int32_t rank_;
  const std::vector<std::string> task_names_;
  std::vector<Peer> peers_;  // by rank
  std::vector<std::unique_ptr<PeerArena>> arenas_;  // the peers' arenas by rank; empty: none shared
  SegmentHeader* self_;      // this worker's header
  const uint64_t ring_bytes_;
  const int64_t spin_ns_;
  const bool yield_;
  uint32_t tag_ = 0;
  std::vector<Receive> receives_;  // of the exchange in flight
  absl::Status failure_;
  Mutex died_mu_;
  absl::Status died_ ABSL_GUARDED_BY(died_mu_);
  std::atomic<bool> peer_died_{false};
  PeerDeathWatcher watcher_;  // last: started once everything above exists
};

}  // namespace distribute::shm

#endif  // DISTRIBUTE_CORE_SHM_SHM_TRANSPORT_H_
