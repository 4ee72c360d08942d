// A point in time after which a blocking wait gives up with DeadlineExceeded.
#ifndef DISTRIBUTE_CORE_UTIL_DEADLINE_H_
#define DISTRIBUTE_CORE_UTIL_DEADLINE_H_

#include <chrono>
#include <cstdint>

namespace distribute {

using Clock = std::chrono::steady_clock;

struct Deadline {
  // The longest wait a deadline stands for: about 3 years. A longer timeout (up to
  // INT64_MAX ms, which would overflow the clock's nanoseconds) waits this long instead,
  // leaving room for the graces added to deadlines.
  static constexpr int64_t kMaxTimeoutMs = int64_t{100'000'000'000};

  Clock::time_point when;
  int64_t timeout_ms = 0;  // what the deadline was made from, for messages

  static Deadline AfterMs(int64_t timeout_ms) {
    const int64_t bounded = timeout_ms < kMaxTimeoutMs ? timeout_ms : kMaxTimeoutMs;
    return Deadline{Clock::now() + std::chrono::milliseconds(bounded), timeout_ms};
  }
  bool Expired() const { return Clock::now() >= when; }
  // The time left, at least 1 ms: for waits (Gloo's) that take a duration and would read
  // zero or less as an error.
  std::chrono::milliseconds RemainingAtLeast1Ms() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(when - Clock::now());
    return left > std::chrono::milliseconds(1) ? left : std::chrono::milliseconds(1);
  }
  // This deadline, or `slice_ms` from now if that comes first (a wait cut into slices).
  Deadline Within(int64_t slice_ms) const {
    const Clock::time_point slice = Clock::now() + std::chrono::milliseconds(slice_ms);
    return Deadline{slice < when ? slice : when, timeout_ms};
  }
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_DEADLINE_H_
