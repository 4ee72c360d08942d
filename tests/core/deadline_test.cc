// Deadline::AfterMsCoarse against AfterMs read around it: never earlier, at most one
// coarse tick later; timeouts beyond kMaxTimeoutMs are bounded alike.
#include "core/util/deadline.h"

#include <time.h>

#include <chrono>

#include "gtest/gtest.h"

namespace distribute {
namespace {

std::chrono::nanoseconds CoarseTick() {
  timespec resolution{};
  EXPECT_EQ(clock_getres(CLOCK_MONOTONIC_COARSE, &resolution), 0);
  return std::chrono::seconds(resolution.tv_sec) + std::chrono::nanoseconds(resolution.tv_nsec);
}

TEST(DeadlineTest, TheCoarseDeadlineIsNeverEarlierAndAtMostATickLater) {
  const std::chrono::nanoseconds tick = CoarseTick();
  for (int64_t timeout_ms : {int64_t{0}, int64_t{1}, int64_t{50}, int64_t{20000}}) {
    for (int i = 0; i < 1000; ++i) {
      const Deadline before = Deadline::AfterMs(timeout_ms);
      const Deadline coarse = Deadline::AfterMsCoarse(timeout_ms);
      const Deadline after = Deadline::AfterMs(timeout_ms);
      ASSERT_GE(coarse.when, before.when) << timeout_ms << " ms";
      ASSERT_LE(coarse.when, after.when + tick) << timeout_ms << " ms";
      ASSERT_EQ(coarse.timeout_ms, timeout_ms);
    }
  }
}

TEST(DeadlineTest, HugeTimeoutsAreBoundedLikeAfterMs) {
  const int64_t huge = INT64_MAX;
  const Deadline coarse = Deadline::AfterMsCoarse(huge);
  const Deadline exact = Deadline::AfterMs(huge);
  EXPECT_EQ(coarse.timeout_ms, huge);
  EXPECT_LE(coarse.when, exact.when + CoarseTick());
  EXPECT_GE(coarse.when + std::chrono::seconds(1), exact.when);
}

}  // namespace
}  // namespace distribute
