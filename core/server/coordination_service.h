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
  struct Options {
    // Every task that may register, by name ("chief:0", "worker:1", "ps:0").
    std::vector<std::string> tasks;
    // The tasks every barrier waits for (the workers: chief and worker tasks), in the
    // order messages list them.
    std::vector<std::string> barrier_tasks;
    // A connected task with no heartbeat for this long is lost.
    int64_t heartbeat_timeout_ms = 10000;
    size_t max_value_bytes = MaxValueBytes(kDefaultMaxMessageBytes);
  };

  // A lost task: `status` is kUnavailable naming it and how the loss was detected.
  struct TaskFailure {
    std::string task;
    absl::Status status;
  };

  // Whether the caller of a wait went away (its RPC was cancelled): polled while waiting.
  using CancelledFn = std::function<bool()>;

  // Starts the thread that checks heartbeats.
  explicit CoordinationService(Options options);
  ~CoordinationService();  // Shutdown()

  CoordinationService(const CoordinationService&) = delete;
  CoordinationService& operator=(const CoordinationService&) = delete;

  // Connects `task`. Registering again with the same incarnation is a no-op (a retried
  // RPC); a task that disconnected cleanly may register again. A task that registers
  // while another incarnation of it is connected restarted: the old one is marked lost and
  // the call fails (kFailedPrecondition), as does any registration of a lost task.
  // `expects_heartbeats` is false only for the chief, which lives in the service's process.
  absl::Status Register(absl::string_view task, uint64_t incarnation, bool expects_heartbeats = true)
      ABSL_LOCKS_EXCLUDED(mu_);
  // A clean shutdown of `task`: its loss is not a failure.
  absl::Status Disconnect(absl::string_view task, uint64_t incarnation) ABSL_LOCKS_EXCLUDED(mu_);
  // Fails with the task's loss when it was already declared lost.
  absl::Status Heartbeat(absl::string_view task, uint64_t incarnation) ABSL_LOCKS_EXCLUDED(mu_);
  // The gRPC layer saw the task's Watch stream close: lost, unless it disconnected first.
  void ReportConnectionClosed(absl::string_view task, uint64_t incarnation) ABSL_LOCKS_EXCLUDED(mu_);

  absl::Status Set(absl::string_view key, absl::string_view value) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until `key` is set, `deadline` passes (kDeadlineExceeded naming the key), the
  // caller goes away (kCancelled) or the service shuts down.
  absl::StatusOr<std::string> Get(absl::string_view key, const Deadline& deadline,
                                  const CancelledFn& cancelled = nullptr) ABSL_LOCKS_EXCLUDED(mu_);

  // `task` (a connected barrier task) arrives at barrier `name` and waits for the others.
  // A barrier that passed may be used again; one that failed (timeout: kDeadlineExceeded
  // naming the tasks that did not arrive; a lost task: kUnavailable naming it) stays
  // failed, and later calls with its name fail at once with the same status.
  absl::Status Barrier(absl::string_view name, absl::string_view task, const Deadline& deadline,
                       const CancelledFn& cancelled = nullptr) ABSL_LOCKS_EXCLUDED(mu_);

  // The first task lost, if any; else kUnavailable after Shutdown; else OK. Never blocks.
  absl::Status PeerHealth() ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until PeerHealth would fail or `deadline` passes (then OK).
  absl::Status WaitForPeerFailure(const Deadline& deadline) ABSL_LOCKS_EXCLUDED(mu_);
  // The failures from position `first` of the log on, waiting for at least one until
  // `deadline` (then empty). kUnavailable once the service has shut down and every failure
  // from `first` on has been handed out.
  absl::StatusOr<std::vector<TaskFailure>> WaitForFailures(size_t first, const Deadline& deadline)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Releases every waiter and stops the heartbeat thread; every later call fails with
  // kUnavailable. Idempotent.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  enum class Phase { kNotConnected, kConnected, kDisconnected, kLost };
  struct TaskState {
    Phase phase = Phase::kNotConnected;
    uint64_t incarnation = 0;
    bool expects_heartbeats = true;
    Clock::time_point last_heartbeat;
    absl::Status failure;  // why it was lost
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
  // Waits on cv_ until `deadline`, at most a short slice when `cancelled` must be polled.
  void WaitUntil(MutexLock& lock, const Deadline& deadline, const CancelledFn& cancelled)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MonitorHeartbeats() ABSL_LOCKS_EXCLUDED(mu_);

  const Options options_;
  const std::set<std::string> barrier_set_;

  Mutex mu_;
  // Every change of state notifies all: waiters re-check their own condition.
  std::condition_variable cv_;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
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
