// A meeting point for calls that must be in flight together: each caller waits until
// `parties` calls arrived, or gives up after 10 s and says so, so that code which makes the
// calls one after another fails a test instead of hanging it (ParameterServerStrategy's
// shards and batches sent to their ps tasks at once).
#ifndef DISTRIBUTE_TESTS_CORE_CALL_RENDEZVOUS_H_
#define DISTRIBUTE_TESTS_CORE_CALL_RENDEZVOUS_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/status/status.h"

namespace distribute::testing {

class Rendezvous {
 public:
  explicit Rendezvous(int parties) : parties_(parties) {}
  absl::Status ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (++arrived_ == parties_) cv_.notify_all();
    if (cv_.wait_for(lock, std::chrono::seconds(10), [&] { return arrived_ >= parties_; })) {
      return absl::OkStatus();
    }
    return absl::DeadlineExceededError("the other calls never came while this one waited: they were not made at once");
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int parties_;
  int arrived_ = 0;
};

}  // namespace distribute::testing

#endif  // DISTRIBUTE_TESTS_CORE_CALL_RENDEZVOUS_H_
