#include "core/util/deadline.h"

#include <time.h>

namespace distribute {
namespace {

// The coarse clock's resolution (its tick), read once; 0 when the clock is unavailable.
int64_t CoarseTickNs() {
  static const int64_t tick = [] {
    timespec resolution{};
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &resolution) != 0) return int64_t{0};
    return static_cast<int64_t>(resolution.tv_sec) * 1'000'000'000 + resolution.tv_nsec;
  }();
  return tick;
}

}  // namespace

Deadline Deadline::AfterMsCoarse(int64_t timeout_ms) {
  const int64_t tick_ns = CoarseTickNs();
  timespec now{};
  // steady_clock is CLOCK_MONOTONIC (libstdc++ on Linux), whose coarse reading lags it by
  // less than one tick: adding the tick keeps the deadline at or after AfterMs's.
  if (tick_ns <= 0 || clock_gettime(CLOCK_MONOTONIC_COARSE, &now) != 0) return AfterMs(timeout_ms);
  const int64_t bounded = timeout_ms < kMaxTimeoutMs ? timeout_ms : kMaxTimeoutMs;
  const Clock::time_point coarse(std::chrono::duration_cast<Clock::duration>(
      std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec + tick_ns)));
  return Deadline{coarse + std::chrono::milliseconds(bounded), timeout_ms};
}

}  // namespace distribute
