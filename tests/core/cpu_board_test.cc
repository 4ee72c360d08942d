// CpuBoard: which awaited thread last ran on the caller's core, checked by pinning threads
// to CPUs; and a barrier and a replica pool whose threads all share one core (where the
// board makes waiters yield) still run in lock step.
#include "core/util/cpu_board.h"

#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "core/collective/barrier.h"
#include "core/strategy/replica_pool.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::IsOk;

// The CPUs this process may use, in order.
std::vector<int> UsableCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// Pins the calling thread to `cpu` for the scope, then restores its mask.
class PinnedTo {
 public:
  explicit PinnedTo(int cpu) {
    pthread_getaffinity_np(pthread_self(), sizeof saved_, &saved_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ok_ = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0 && sched_getcpu() == cpu;
  }
  ~PinnedTo() { pthread_setaffinity_np(pthread_self(), sizeof saved_, &saved_); }
  bool ok() const { return ok_; }

 private:
  cpu_set_t saved_;
  bool ok_ = false;
};

TEST(CpuBoardTest, AnUnmarkedBoardSharesNothing) {
  const CpuBoard board(3);
  EXPECT_FALSE(board.SharesCore([](int32_t) { return true; }));
}

TEST(CpuBoardTest, AThreadMarkedHereSharesThisCoreOnlyWhileAwaited) {
  const std::vector<int> cpus = UsableCpus();
  ASSERT_FALSE(cpus.empty());
  PinnedTo pin(cpus[0]);
  ASSERT_TRUE(pin.ok());
  CpuBoard board(2);
  board.Mark(1);
  EXPECT_TRUE(board.SharesCore([](int32_t slot) { return slot == 1; }));
  EXPECT_FALSE(board.SharesCore([](int32_t slot) { return slot == 0; }));
}

TEST(CpuBoardTest, AThreadOnAnotherCoreIsNotShared) {
  const std::vector<int> cpus = UsableCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one usable CPU";
  CpuBoard board(2);
  std::thread other([&] {
    PinnedTo pin(cpus[1]);
    ASSERT_TRUE(pin.ok());
    board.Mark(1);
  });
  other.join();
  {
    PinnedTo pin(cpus[0]);
    ASSERT_TRUE(pin.ok());
    EXPECT_FALSE(board.SharesCore([](int32_t) { return true; }));
  }
  {
    PinnedTo pin(cpus[1]);
    ASSERT_TRUE(pin.ok());
    EXPECT_TRUE(board.SharesCore([](int32_t) { return true; }));
  }
}

// Two threads on one core pass a barrier 2000 times: every generation in lock step (no
// thread sees the other's counter more than one round apart).
TEST(CpuBoardTest, ABarrierWhoseThreadsShareOneCoreStaysInLockStep) {
  const std::vector<int> cpus = UsableCpus();
  ASSERT_FALSE(cpus.empty());
  constexpr int kRounds = 2000;
  Barrier barrier(2);
  std::atomic<int> rounds[2] = {0, 0};
  std::atomic<bool> skew{false};
  auto body = [&](int32_t me) {
    PinnedTo pin(cpus[0]);
    for (int i = 0; i < kRounds; ++i) {
      rounds[me].store(i + 1);
      ASSERT_TRUE(IsOk(barrier.Arrive(me, Deadline::AfterMs(30000))));
      if (rounds[1 - me].load() < i + 1) skew = true;
      ASSERT_TRUE(IsOk(barrier.Arrive(me, Deadline::AfterMs(30000))));
    }
  };
  std::thread other(body, 1);
  body(0);
  other.join();
  EXPECT_FALSE(skew.load());
  EXPECT_EQ(rounds[0].load(), kRounds);
  EXPECT_EQ(rounds[1].load(), kRounds);
}

TEST(CpuBoardTest, AReplicaPoolWhoseThreadsShareOneCoreRunsEveryStep) {
  const std::vector<int> cpus = UsableCpus();
  ASSERT_FALSE(cpus.empty());
  PinnedTo pin(cpus[0]);  // the pool's threads inherit the caller's mask
  ASSERT_TRUE(pin.ok());
  ReplicaPool pool(3);
  std::atomic<int64_t> sum{0};
  constexpr int kSteps = 1000;
  for (int step = 0; step < kSteps; ++step) {
    pool.Run([&](int32_t r) { sum.fetch_add(r + 1); });
  }
  EXPECT_EQ(sum.load(), int64_t{kSteps} * (1 + 2 + 3));
}

}  // namespace
}  // namespace distribute
