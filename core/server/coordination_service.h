// The coordination service's state, hosted by the chief: a key-value store with blocking
// get, named barriers over the worker tasks, and the liveness of every task. Pure C++ (the
// gRPC handlers in grpc_coordination_service.cc and the chief's in-process client both
// call it), so it is tested without sockets.
//
// Liveness. A task registers with the incarnation of its server; from then on it is
// connected until it disconnects cleanly (not a failure) or is lost: its heartbeats stop
// for heartbeat_timeout_ms (a stopped or hung process), or the gRPC layer reports that its
// connection closed (a dead process). A lost task stays lost. Every loss is appended to a
// log of failures that watchers read; from then on PeerHealth and every barrier, blocked
// or future, fail with kUnavailable naming the first task lost.
//
// Registration. A task registers once per incarnation. A second Register of a task whose
// incarnation is connected and alive (its heartbeats are current) is refused and changes
// nothing: whoever sends it, an impostor holding the job's token or a restarted process
// whose old incarnation is not yet known dead, must not take a live task's place or kill
// it. A restarted task is still handled as TensorFlow does, with the job failing and
// naming it (a recoverable task, Options::recoverable_tasks, may come back once its old
// incarnation is lost): its old incarnation's death is noticed when its Watch stream closes (within
// about 100 ms) or its heartbeats stop (heartbeat_timeout_ms; a Register that finds them
// stopped that long declares it lost at once), and a lost task cannot rejoin. A task that
// disconnected cleanly may register again (a worker that restarts its server on purpose).
// A registration holds the task's place only once it proved it is alive by opening its
// Watch stream, which a real task does right after registering: until then a second
// Register is told to retry (kUnavailable naming the case) for kUnprovenHoldMs, and
// after that replaces it; an unproven registration silent past the heartbeat timeout is
// dropped without failing the job (an impostor's Register, with no watch and no
// heartbeat, cannot hold a task's place or blame it).
//
// Caps (coordination_limits.h): the key-value store's bytes and keys, the barriers, and the
// waits of remote callers pending at once; past each, kResourceExhausted naming the cap, with
// nothing changed. Each task keeps at most one Watch stream open.
//
// Nothing here blocks for ever: every wait has a deadline, a wait for a remote caller also
// ends when the caller goes away, and Shutdown releases every waiter with kUnavailable
// "coordination service is shutting down".
//
// Thread-safety: safe.
#ifndef DISTRIBUTE_CORE_SERVER_COORDINATION_SERVICE_H_
#define DISTRIBUTE_CORE_SERVER_COORDINATION_SERVICE_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/server/coordination_limits.h"
#include "core/util/deadline.h"
#include "core/util/mutex.h"

namespace distribute {

class CoordinationService {
 public:
  // How long a registration that has not opened its Watch stream keeps another Register
  // waiting (see "Registration" above).
  static constexpr int64_t kUnprovenHoldMs = 1000;

  struct Options {
    // Every task that may register, by name ("chief:0", "worker:1", "ps:0").
    std::vector<std::string> tasks;
    // The tasks every barrier waits for (the workers: chief and worker tasks), in the
    // order messages list them.
    std::vector<std::string> barrier_tasks;
    // A connected task with no heartbeat for this long is lost.
    int64_t heartbeat_timeout_ms = 10000;
    size_t max_value_bytes = MaxValueBytes(kDefaultMaxMessageBytes);
    // The key-value store's cap on the bytes of keys and values together (an overwrite
    // counts the new value's size less the old one's) and on its keys; the cap on barriers.
    size_t max_store_bytes = kDefaultMaxStoreBytes;
    size_t max_store_keys = kDefaultMaxStoreKeys;
    size_t max_barriers = kDefaultMaxBarriers;
    // How many waits of remote callers (Get, Barrier) may pend at once.
    size_t max_pending_waits = kMinDefaultPendingWaits;
    // Tasks that may come back (the worker tasks of a parameter-server job, whose
    // coordinator re-queues their closures): losing one is no failure of the job (peer
    // health stays OK), and a new incarnation may register once the old one is lost.
    std::vector<std::string> recoverable_tasks;
  };

  // A lost task: `status` is kUnavailable naming it and how the loss was detected.
  struct TaskFailure {
    std::string task;
    absl::Status status;
  };

  // The caller of a wait at the other end of an RPC. Its wait holds one of the server's
  // threads, so at most max_pending_waits such waits pend at once; `cancelled` says
  // whether the caller went away (its RPC was cancelled), polled while waiting. The
  // chief's own calls, in process, are neither capped nor cancelled.
  struct RemoteCaller {
    std::function<bool()> cancelled;
  };

  // Starts the thread that checks heartbeats.
  explicit CoordinationService(Options options);
  ~CoordinationService();  // Shutdown()

  CoordinationService(const CoordinationService&) = delete;
  CoordinationService& operator=(const CoordinationService&) = delete;

  // Connects `task` (see "Registration" above). Registering again with the same
  // incarnation is a no-op (a retried RPC). kAlreadyExists, changing nothing, while another
  // incarnation of the task is connected and alive; kFailedPrecondition for a lost task
  // (including an old incarnation found silent for heartbeat_timeout_ms, which this call
  // declares lost); kUnavailable after CloseRegistrations or Shutdown.
  // `expects_heartbeats` is false only for the chief, which lives in the service's process.
  absl::Status Register(absl::string_view task, uint64_t incarnation, bool expects_heartbeats = true)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A clean shutdown of `task`: its loss is not a failure.
  absl::Status Disconnect(absl::string_view task, uint64_t incarnation) ABSL_LOCKS_EXCLUDED(mu_);
  // Fails with the task's loss when it was already declared lost.
  absl::Status Heartbeat(absl::string_view task, uint64_t incarnation) ABSL_LOCKS_EXCLUDED(mu_);
  // The gRPC layer opens the task's Watch stream: the task must be connected as
  // `incarnation` (kFailedPrecondition otherwise) and have no other stream open
  // (kAlreadyExists). Counts as a heartbeat.
  absl::Status OpenWatch(absl::string_view task, uint64_t incarnation) ABSL_LOCKS_EXCLUDED(mu_);
  // The gRPC layer saw the task's Watch stream close: lost, unless it disconnected first.
  void ReportConnectionClosed(absl::string_view task, uint64_t incarnation) ABSL_LOCKS_EXCLUDED(mu_);

  // kResourceExhausted when the store would pass max_store_bytes or max_store_keys.
  absl::Status Set(absl::string_view key, absl::string_view value) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until `key` is set, `deadline` passes (kDeadlineExceeded naming the key), the
  // remote caller goes away (kCancelled) or the service shuts down. kResourceExhausted,
  // at once, when a remote caller would wait while max_pending_waits others do.
  absl::StatusOr<std::string> Get(absl::string_view key, const Deadline& deadline,
                                  const RemoteCaller* remote = nullptr) ABSL_LOCKS_EXCLUDED(mu_);

  // `task` (a connected barrier task) arrives at barrier `name` and waits for the others.
  // A barrier that passed may be used again; one that failed (timeout: kDeadlineExceeded
  // naming the tasks that did not arrive; a lost task: kUnavailable naming it) stays
  // failed, and later calls with its name fail at once with the same status. A new name
  // counts against max_barriers, and a remote caller's wait against max_pending_waits
  // (kResourceExhausted, without arriving).
  absl::Status Barrier(absl::string_view name, absl::string_view task, const Deadline& deadline,
                       const RemoteCaller* remote = nullptr) ABSL_LOCKS_EXCLUDED(mu_);

  // The first task lost, if any; else kUnavailable after Shutdown; else OK. Never blocks.
  absl::Status PeerHealth() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until PeerHealth would fail or `deadline` passes (then OK).
  absl::Status WaitForPeerFailure(const Deadline& deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // The failures from position `first` of the log on, waiting for at least one until
  // `deadline` (then empty). kUnavailable once the service has shut down and every failure
  // from `first` on has been handed out.
  absl::StatusOr<std::vector<TaskFailure>> WaitForFailures(size_t first, const Deadline& deadline)
      ABSL_LOCKS_EXCLUDED(mu_);

  // From now on Register fails as it does after Shutdown (kUnavailable "coordination
  // service is shutting down"), so a task looking for the next service on this address
  // retries instead of joining this one; connected tasks carry on. Idempotent.
  void CloseRegistrations() ABSL_LOCKS_EXCLUDED(mu_);

  // Releases every waiter and stops the heartbeat thread; every later call fails with
  // kUnavailable. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class Phase { kNotConnected, kConnected, kDisconnected, kLost };
  struct TaskState {
    Phase phase = Phase::kNotConnected;
    uint64_t incarnation = 0;
    bool expects_heartbeats = true;
    bool watching = false;  // its Watch stream is open
    // It opened its Watch stream (or is the chief): a registration that has not yet holds
    // the task's place only briefly (kUnprovenHoldMs) against another, and is dropped, not
    // lost, once silent.
    bool proven = false;
    Clock::time_point registered_at;
    Clock::time_point last_heartbeat;
    absl::Status failure;  // why it was lost
    bool recoverable = false;  // Options::recoverable_tasks
  };
  struct BarrierState {
    uint64_t generation = 0;      // passes so far; a waiter of generation g passes when it grows
    std::set<std::string> arrived;
    absl::Status failure;         // sticky
  };

  // The task's state, or InvalidArgument for a name outside the cluster.
  absl::StatusOr<TaskState*> FindTask(absl::string_view task) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK when `task` is connected as `incarnation`, else why not.
  absl::Status CheckConnected(absl::string_view task, const TaskState& state, uint64_t incarnation) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MarkLost(const std::string& task, TaskState& state, absl::string_view reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string MissingTasks(const BarrierState& barrier) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a connected task's heartbeats have stopped for heartbeat_timeout_ms.
  bool Silent(const TaskState& state, Clock::time_point now) const;
  // ResourceExhausted unless the store can take `added_bytes` more (`new_key`: and one
  // more key); `what` names the key ("key 'k' (12 bytes with its key)").
  absl::Status CheckStoreRoom(absl::string_view what, size_t added_bytes, bool new_key) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ResourceExhausted when a remote caller's wait would pass max_pending_waits; `what`
  // names the call ("a Get of key 'k'").
  absl::Status CheckWaitRoom(absl::string_view what, const RemoteCaller* remote) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits on cv_ until `deadline`, at most a short slice when a remote caller must be
  // polled for cancellation.
  void WaitUntil(MutexLock& lock, const Deadline& deadline, const RemoteCaller* remote)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MonitorHeartbeats() ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  const std::set<std::string> barrier_set_;

  Mutex mu_;
  // Every change of state notifies all: waiters re-check their own condition.
  std::condition_variable cv_;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  bool registrations_closed_ ABSL_GUARDED_BY(mu_) = false;
  size_t store_bytes_ ABSL_GUARDED_BY(mu_) = 0;     // of keys and values
  size_t pending_waits_ ABSL_GUARDED_BY(mu_) = 0;   // of remote callers
  absl::flat_hash_map<std::string, TaskState> tasks_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> values_ ABSL_GUARDED_BY(mu_);
  // Node map: a waiter keeps a reference to its barrier across waits.
  absl::node_hash_map<std::string, BarrierState> barriers_ ABSL_GUARDED_BY(mu_);
  std::vector<TaskFailure> failures_ ABSL_GUARDED_BY(mu_);

  std::once_flag shutdown_once_;
  std::thread monitor_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_COORDINATION_SERVICE_H_
