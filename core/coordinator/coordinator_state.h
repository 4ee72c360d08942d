// The coordinator's shared state (coordinator.h): the closure queue, the remote values it
// resolves and each worker task's bookkeeping, all under one mutex. The queue's rules
// live in coordinator_state.cc; what a worker's thread does with a closure (make the
// resources it needs, send it, read the answer, probe a lost worker) in worker_dispatch.cc.
#ifndef DISTRIBUTE_CORE_COORDINATOR_COORDINATOR_STATE_H_
#define DISTRIBUTE_CORE_COORDINATOR_COORDINATOR_STATE_H_

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/coordinator/coordinator.h"
#include "core/coordinator/wire_values.h"
#include "core/util/deadline.h"

namespace distribute::coordinator {

struct Closure {
  uint64_t id = 0;
  std::string function;
  std::vector<closures::Argument> arguments;  // iterators hold their resource id
  std::vector<std::shared_ptr<PerWorkerResource>> iterators;  // what the worker must hold first
  std::shared_ptr<RemoteValue> value;
};

struct WorkerSlot {
  std::string task;
  int32_t index = 0;  // its place among the coordinator's workers: its input pipeline
  std::unique_ptr<ClosureClient> client;
  uint64_t incarnation = 0;  // the last one it answered with; 0: none yet
  bool lost = false;
  std::string lost_why;
  std::map<uint64_t, uint64_t> created;  // resource id -> the incarnation it was made in
  std::thread thread;
};

struct CoordinatorState : std::enable_shared_from_this<CoordinatorState> {
  std::mutex mu;
  std::condition_variable cv;
  std::shared_ptr<Strategy> strategy;
  uint64_t coordinator_id = 0;
  std::deque<std::shared_ptr<Closure>> queue;
  int64_t in_flight = 0;
  std::optional<absl::Status> error;  // the first closure error not reported yet
  bool shutdown = false;
  uint64_t next_closure = 1;
  uint64_t next_resource = 1;
  Clock::time_point last_progress = Clock::now();
  // The latest deadline of a closure request sent to a worker: while one is in flight, join
  // and fetch wait at least until it passed (and the closure went back to the queue, or
  // finished), since a hung worker answers nothing before then.
  Clock::time_point latest_request_deadline;
  std::vector<std::unique_ptr<WorkerSlot>> workers;
  // Resources whose last handle went away: each worker drops those it holds. A mutex of
  // its own (taken after `mu` when both are), since a resource may die while `mu` is held
  // (a cancelled closure was its last owner).
  std::mutex released_mu;
  std::set<uint64_t> released;

  int64_t timeout_ms() const { return strategy->timeout_ms(); }
  closures::Session Session() const;

  // ---- the queue (coordinator_state.cc) ----

  // Resolves `closure` (mu held), once.
  void Resolve(const std::shared_ptr<Closure>& closure, absl::Status status, std::optional<Tensor> result);
  // Cancels every queued closure (mu held).
  void CancelQueued();
  // A closure that ran (or failed) on a worker: its value resolves, and a failure becomes
  // the queue's error.
  void Finish(const std::shared_ptr<Closure>& closure, absl::Status status, std::optional<Tensor> result);
  // A closure its worker was lost under goes back to the front of the queue.
  void PutBack(const std::shared_ptr<Closure>& closure);
  // The queue's error, reported once (mu held).
  absl::Status TakeError();
  std::string LostWorkers() const;
  void MarkLost(WorkerSlot& worker, const absl::Status& why);

  // How long after a request's deadline its closure is surely back in the queue.
  static constexpr std::chrono::milliseconds kPutBackGrace{1000};

  // Waits (lock held) until `done()`, failing when no closure finished or went back to the
  // queue (its worker lost) for the timeout, and no request in flight may still end. Bounded: a lost worker gets no closure until
  // it answers a ping, so once every worker is lost nothing moves the window.
  template <typename Done>
  absl::Status WaitProgress(std::unique_lock<std::mutex>& lock, absl::string_view what, Done done) {
    const Clock::time_point start = Clock::now();
    while (!done()) {
      const auto timeout = std::chrono::milliseconds(timeout_ms());
      Clock::time_point limit = std::max(last_progress, start) + timeout;
      if (in_flight > 0) limit = std::max(limit, latest_request_deadline + kPutBackGrace);
      if (Clock::now() >= limit) {
        return absl::DeadlineExceededError(absl::StrCat(
            what, ": no closure finished or was put back for ", timeout_ms(), " ms (", queue.size(), " queued, ", in_flight,
            " running; ", LostWorkers(), ")"));
      }
      cv.wait_until(lock, limit);
    }
    return absl::OkStatus();
  }

  // ---- a worker's thread (worker_dispatch.cc) ----

  // Takes closures from the queue and runs them on `worker` until shutdown.
  void Run(WorkerSlot& worker);
  void Process(WorkerSlot& worker, const std::shared_ptr<Closure>& closure);
  bool Probe(WorkerSlot& worker);
  absl::Status EnsureResource(WorkerSlot& worker, const std::shared_ptr<PerWorkerResource>& resource,
                              bool* lost);
  // The worker's released resources dropped there; an error when it did not answer.
  absl::Status FlushReleases(WorkerSlot& worker);
  // A request's deadline (the strategy's timeout from now), noted as the latest in flight.
  Deadline RequestDeadline();
};

}  // namespace distribute::coordinator

#endif  // DISTRIBUTE_CORE_COORDINATOR_COORDINATOR_STATE_H_
