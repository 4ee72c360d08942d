// A reusable barrier for the replicas of one group: spins briefly, then parks; every wait
// has a deadline; Abort releases every waiter at once. It is the rendezvous under every
// in-process collective, merge_call and replica step.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_BARRIER_H_
#define DISTRIBUTE_CORE_COLLECTIVE_BARRIER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "core/util/cpu_board.h"
#include "core/util/deadline.h"
#include "core/util/mutex.h"

namespace distribute {

class Barrier {
 public:
  explicit Barrier(int32_t participants);

  int32_t participants() const { return n_; }

  // The generation the next completed meeting ends. For a participant that has not yet
  // arrived it cannot move: it names the meeting that participant's next Arrive joins.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

  // Blocks `replica` until all participants arrived. On an expired deadline the barrier
  // is aborted (so the others are released too) and DeadlineExceeded, naming the replicas
  // that never arrived, is returned; after Abort, Aborted with the cause.
  absl::Status Arrive(int32_t replica, const Deadline& deadline);

  // Fails every current and future wait until Reset. The first cause wins.
  void Abort(const absl::Status& cause);
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // The first abort cause (OK when not aborted).
  absl::Status abort_cause() const;

  // Back to a fresh state. Only while no thread is inside Arrive.
  void Reset();

 private:
  absl::Status AbortedStatus() const;

  // One cache line per kind of traffic: the arrivals' read-modify-writes do not queue
  // behind the waiters' polling of the generation (on one line, every arrival's increment
  // waited for the line to come back from the polling cores: most of a small call's time).
  const int32_t n_;
  const int64_t spin_budget_ns_;
  const bool yield_;  // more participants than cores: yield instead of spinning
  alignas(64) std::atomic<int32_t> arrived_{0};
  alignas(64) std::atomic<uint64_t> generation_{0};  // polled by waiters
  std::atomic<bool> aborted_{false};                  // polled with it
  std::atomic<int32_t> sleepers_{0};
  // The generation each replica last arrived at, to name the missing ones on timeout; one
  // line per replica, written by it alone.
  struct alignas(64) ArrivalRecord {
    std::atomic<uint64_t> generation{0};
  };
  std::unique_ptr<ArrivalRecord[]> arrived_at_;
  CpuBoard cpus_;  // where each replica arrived last: a waiter on a missing one's core yields
  mutable Mutex mu_;
  std::condition_variable cv_;
  absl::Status abort_cause_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_BARRIER_H_
