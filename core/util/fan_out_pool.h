// Runs the groups of one request at once: the calls of a group one after another, in order,
// and different groups on different threads. ParameterServerStrategy uses it to send a
// sharded variable's shards to their ps tasks together (one group per task), so that an
// access costs about one round trip instead of one per shard.
//
// The caller takes part: it runs groups itself until none is left unstarted, then waits
// for those the pool's threads started. So a request always finishes, even when every
// pool thread is busy with other callers' groups (it then runs as if there were no pool),
// and a pool of zero threads runs everything on the caller.
//
// Thread-safety: safe; any number of threads may call Run at once.
#ifndef DISTRIBUTE_CORE_UTIL_FAN_OUT_POOL_H_
#define DISTRIBUTE_CORE_UTIL_FAN_OUT_POOL_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "core/util/mutex.h"

namespace distribute {

class FanOutPool {
 public:
  // The most threads a pool may have: a request's groups beyond it run on the caller.
  static constexpr int32_t kMaxThreads = 16;

  // At most `threads` helper threads (clamped to 0 ... kMaxThreads), started as requests
  // queue more groups than there are idle threads, named "dist-fanout-<i>". They inherit
  // the CPU affinity of the thread whose request started them.
  explicit FanOutPool(int32_t threads);
  ~FanOutPool();  // waits for the groups its threads are running; none is queued then
  FanOutPool(const FanOutPool&) = delete;
  FanOutPool& operator=(const FanOutPool&) = delete;

  // Calls `call(i)` for every index i of every group: a group's indices in the order
  // given, one after another; different groups concurrently. Every call runs, whatever
  // the others return (each bounds its own wait). Returns OK, or the error of the lowest
  // index that failed. Returns only after every call has returned.
  absl::Status Run(std::span<const std::vector<int32_t>> groups,
                   absl::FunctionRef<absl::Status(int32_t)> call);

 private:
  struct Request;

  // Starts threads while queued helper slots outnumber idle threads (at most num_threads_;
  // none when the system refuses a thread: the callers then run their groups themselves).
  void GrowForQueue() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ThreadLoop(int32_t id);
  // Runs groups of `request` until none is left unstarted.
  static void RunUnstartedGroups(Request& request);

  const int32_t num_threads_;
  Mutex mu_;
  std::condition_variable work_cv_;
  std::deque<std::shared_ptr<Request>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
  size_t idle_ ABSL_GUARDED_BY(mu_) = 0;  // threads waiting for work
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_FAN_OUT_POOL_H_
