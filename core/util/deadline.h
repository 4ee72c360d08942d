// A point in time after which a blocking wait gives up with DeadlineExceeded.
#ifndef DISTRIBUTE_CORE_UTIL_DEADLINE_H_
#define DISTRIBUTE_CORE_UTIL_DEADLINE_H_

#include <chrono>
#include <cstdint>

namespace distribute {

using Clock = std::chrono::steady_clock;

struct Deadline {
  Clock::time_point when;
  int64_t timeout_ms = 0;  // what the deadline was made from, for messages

  static Deadline AfterMs(int64_t timeout_ms) {
    return Deadline{Clock::now() + std::chrono::milliseconds(timeout_ms), timeout_ms};
  }
  bool Expired() const { return Clock::now() >= when; }
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_DEADLINE_H_
