// A reusable barrier for the replicas of one group: spins briefly, then parks; every wait
// has a deadline; Abort releases every waiter at once. It is the rendezvous under every
// in-process collective, merge_call and replica step.
//
// Arrival is a flag per replica, not a shared counter: replica r announces that it reached
// meeting g by writing g + 1 into its own record, and waits until every other record says
// g + 1. Each record sits on a cache line of its own together with a small payload that r
// writes before announcing (a tiny all-reduce's inputs, all_reduce_stages.h), so that a
// waiter's one read of the line that releases it also brings that replica's data. With a
// counter, the last arrival's increment and its release of the waiters were two transfers
// of shared lines in a row, and the staged data two more.
//
// Records are double-buffered by meeting parity: r writes record (r, g & 1) for meeting g;
// the others read it after g completes and before they arrive at g + 1, and r writes it
// again only for g + 2, which it reaches after g + 1 completed, i.e. after everyone arrived
// at g + 1 and so finished reading.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_BARRIER_H_
#define DISTRIBUTE_CORE_COLLECTIVE_BARRIER_H_

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "core/util/cpu_board.h"
#include "core/util/deadline.h"
#include "core/util/mutex.h"

namespace distribute {

class Barrier {
 public:
  // Bytes of payload each replica may publish with each arrival.
  static constexpr size_t kPayloadBytes = 56;

  explicit Barrier(int32_t participants);

  int32_t participants() const { return n_; }

  // The meeting `replica`'s next Arrive joins (the same number on every replica for the
  // same meeting). Only `replica`'s own thread moves it.
  uint64_t generation(int32_t replica) const { return own_[replica].next; }

  // `replica`'s payload for meeting `generation`: written by it before it arrives there,
  // readable by every replica after that meeting completed and before its own next arrival.
  unsigned char* payload(int32_t replica, uint64_t generation) {
    return record(replica, generation).payload;
  }
  const unsigned char* payload(int32_t replica, uint64_t generation) const {
    return record(replica, generation).payload;
  }

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
  // One replica's announcement for meetings of one parity, and its payload.
  struct alignas(64) Record {
    std::atomic<uint64_t> reached{0};  // g + 1 once the replica arrived at meeting g
    unsigned char payload[kPayloadBytes];
  };
  static_assert(sizeof(Record) == 64);
  // What only the replica's own thread touches, off the polled lines.
  struct alignas(64) Own {
    uint64_t next = 0;
  };

  Record& record(int32_t replica, uint64_t generation) {
    return records_[2 * static_cast<size_t>(replica) + (generation & 1)];
  }
  const Record& record(int32_t replica, uint64_t generation) const {
    return records_[2 * static_cast<size_t>(replica) + (generation & 1)];
  }
  bool Reached(int32_t replica, uint64_t generation, std::memory_order order) const {
    return record(replica, generation).reached.load(order) == generation + 1;
  }
  absl::Status AbortedStatus() const;

  const int32_t n_;
  const int64_t spin_budget_ns_;
  const bool yield_;  // more participants than cores: yield instead of spinning
  std::unique_ptr<Record[]> records_;  // 2 per replica
  std::unique_ptr<Own[]> own_;
  alignas(64) std::atomic<bool> aborted_{false};  // polled by waiters, written once
  alignas(64) std::atomic<int32_t> sleepers_{0};  // read by every arrival, written by parkers
  CpuBoard cpus_;  // where each replica arrived last: a waiter on a missing one's core yields
  mutable Mutex mu_;
  std::condition_variable cv_;
  absl::Status abort_cause_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_BARRIER_H_
