// Persistent replica threads: replica 0 runs on the caller of Run, replicas 1..n-1 on
// threads created once with the pool and reused for every step. Idle threads spin briefly
// and then park, so back-to-back steps cost microseconds and idle strategies cost nothing.
#ifndef DISTRIBUTE_CORE_STRATEGY_REPLICA_POOL_H_
#define DISTRIBUTE_CORE_STRATEGY_REPLICA_POOL_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "core/util/cpu_board.h"
#include "core/util/mutex.h"

namespace distribute {

class ReplicaPool {
 public:
  explicit ReplicaPool(int32_t replicas);
  ~ReplicaPool();
  ReplicaPool(const ReplicaPool&) = delete;
  ReplicaPool& operator=(const ReplicaPool&) = delete;

  int32_t size() const { return n_; }

  // Calls task(r) for every replica concurrently (task(0) on this thread) and returns when
  // all have returned. `task` must not throw. One Run at a time.
  void Run(absl::FunctionRef<void(int32_t)> task);

  // True on one of this pool's worker threads.
  bool OnWorkerThread() const;

 private:
  void WorkerLoop(int32_t replica);
  void Wake();

  const int32_t n_;
  const int64_t spin_budget_ns_;
  const bool yield_;  // more replicas than cores: yield instead of spinning
  std::vector<std::thread> threads_;
  // Written by Run before the epoch is published (release) and read by workers after they
  // observe it (acquire).
  const absl::FunctionRef<void(int32_t)>* task_ = nullptr;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<int32_t> remaining_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<int32_t> parked_workers_{0};
  std::atomic<bool> caller_parked_{false};
  Mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  CpuBoard cpus_;  // where the caller (0) and each worker last ran: waiters on their core yield
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_REPLICA_POOL_H_
