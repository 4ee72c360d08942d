// Barrier: lock-step generations (checked with counters that nobody passes early),
// deadlines naming the missing replicas, Abort, Reset, and more threads than cores.
// Timings are only generous upper bounds ("released within 1 s").
#include "core/collective/barrier.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using std::chrono::milliseconds;

constexpr int64_t kLongMs = 30'000;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Runs `generations` rounds over `n` threads. Before arriving at generation g a thread
// counts itself in arrived[g]; once released it checks that all n arrived at g and that
// nobody has arrived at g + 2 (impossible before this thread arrives at g + 1).
void RunLockStep(Barrier& barrier, int32_t n, int32_t generations) {
  std::vector<std::atomic<int32_t>> arrived(static_cast<size_t>(generations) + 2);
  for (auto& a : arrived) a.store(0);
  std::atomic<int32_t> early{0};
  std::atomic<int32_t> errors{0};
  std::atomic<int64_t> work{0};
  auto body = [&](int32_t replica) {
    for (int32_t g = 0; g < generations; ++g) {
      // Uneven work so that threads reach the barrier at different times.
      if ((g + replica) % 7 == 0) {
        for (int i = 0; i < 200; ++i) work.fetch_add(1, std::memory_order_relaxed);
      }
      arrived[static_cast<size_t>(g)].fetch_add(1, std::memory_order_seq_cst);
      if (!barrier.Arrive(replica, Deadline::AfterMs(kLongMs)).ok()) {
        errors.fetch_add(1);
        return;
      }
      if (arrived[static_cast<size_t>(g)].load(std::memory_order_seq_cst) != n) early.fetch_add(1);
      if (arrived[static_cast<size_t>(g) + 2].load(std::memory_order_seq_cst) != 0) early.fetch_add(1);
    }
  };
  std::vector<std::thread> threads;
  for (int32_t r = 1; r < n; ++r) threads.emplace_back(body, r);
  body(0);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(early.load(), 0) << "a thread passed the barrier before everyone arrived";
  for (int32_t g = 0; g < generations; ++g) {
    ASSERT_EQ(arrived[static_cast<size_t>(g)].load(), n) << "generation " << g;
  }
}

TEST(BarrierTest, ThreadsPassManyGenerationsInLockStep) {
  for (int32_t n : {2, 3, 8}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    Barrier barrier(n);
    EXPECT_EQ(barrier.participants(), n);
    RunLockStep(barrier, n, n == 8 ? 400 : 2000);
    EXPECT_FALSE(barrier.aborted());
    EXPECT_TRUE(IsOk(barrier.abort_cause()));
  }
}

TEST(BarrierTest, PayloadsWrittenBeforeArrivingAreReadIntactAfterTheMeeting) {
  // Each replica writes (its id, the generation, a checksum) into its payload for the
  // meeting, arrives, and reads every other replica's payload for that meeting: it must
  // be exactly what that replica wrote, although replicas that left the meeting already
  // write their payloads for the next one. Uneven work makes some replicas run ahead.
  for (int32_t n : {2, 3, 5}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    Barrier barrier(n);
    std::atomic<int32_t> wrong{0};
    std::atomic<int64_t> work{0};
    auto body = [&](int32_t replica) {
      for (uint64_t g = 0; g < 3000; ++g) {
        if (barrier.generation(replica) != g) {
          wrong.fetch_add(1);
          return;
        }
        uint64_t words[Barrier::kPayloadBytes / sizeof(uint64_t)];
        for (size_t k = 0; k < std::size(words); ++k) words[k] = (g * 131 + static_cast<uint64_t>(replica)) * 7 + k;
        std::memcpy(barrier.payload(replica, g), words, sizeof words);
        if ((g + static_cast<uint64_t>(replica)) % 5 == 0) {
          for (int i = 0; i < 300; ++i) work.fetch_add(1, std::memory_order_relaxed);
        }
        if (!barrier.Arrive(replica, Deadline::AfterMs(kLongMs)).ok()) {
          wrong.fetch_add(1);
          return;
        }
        for (int32_t q = 0; q < n; ++q) {
          uint64_t theirs[std::size(words)];
          std::memcpy(theirs, barrier.payload(q, g), sizeof theirs);
          for (size_t k = 0; k < std::size(theirs); ++k) {
            if (theirs[k] != (g * 131 + static_cast<uint64_t>(q)) * 7 + k) wrong.fetch_add(1);
          }
        }
      }
    };
    std::vector<std::thread> threads;
    for (int32_t r = 1; r < n; ++r) threads.emplace_back(body, r);
    body(0);
    for (std::thread& t : threads) t.join();
    EXPECT_EQ(wrong.load(), 0);
  }
}

TEST(BarrierTest, SingleParticipantNeverWaits) {
  Barrier barrier(1);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(barrier.generation(0), static_cast<uint64_t>(i));
    ASSERT_TRUE(IsOk(barrier.Arrive(0, Deadline::AfterMs(1))));
  }
  EXPECT_EQ(barrier.generation(0), 1000u);
}

// Alone, a participant takes a shortcut through Arrive; an abort still stops it, and a
// reset lets it meet again.
TEST(BarrierTest, SingleParticipantStillSeesAnAbort) {
  Barrier barrier(1);
  ASSERT_TRUE(IsOk(barrier.Arrive(0, Deadline::AfterMs(kLongMs))));
  barrier.Abort(absl::UnavailableError("worker 1 is gone"));
  EXPECT_TRUE(HasError(barrier.Arrive(0, Deadline::AfterMs(kLongMs)), absl::StatusCode::kAborted,
                       {"worker 1 is gone"}));
  barrier.Reset();
  EXPECT_TRUE(IsOk(barrier.Arrive(0, Deadline::AfterMs(kLongMs))));
}

TEST(BarrierTest, OversubscribedStillCompletes) {
  // Eight threads on however few cores this machine has: waiters must not spin away the
  // cores the late threads need.
  const auto start = Clock::now();
  Barrier barrier(8);
  RunLockStep(barrier, 8, 300);
  EXPECT_LT(SecondsSince(start), 15.0);
}

TEST(BarrierTest, DeadlineNamesTheMissingReplicaAndAbortsTheOthers) {
  Barrier barrier(3);
  absl::Status waiter_status;
  double waiter_seconds = 0;
  // Replica 1 waits with a long deadline; replica 0 arrives later with a short one;
  // replica 2 never comes.
  std::thread waiter([&] {
    const auto start = Clock::now();
    waiter_status = barrier.Arrive(1, Deadline::AfterMs(kLongMs));
    waiter_seconds = SecondsSince(start);
  });
  std::this_thread::sleep_for(milliseconds(50));
  const absl::Status timed_out = barrier.Arrive(0, Deadline::AfterMs(150));
  waiter.join();
  EXPECT_TRUE(HasError(timed_out, absl::StatusCode::kDeadlineExceeded,
                       {"replica 2", "150 ms"}));
  EXPECT_FALSE(HasError(timed_out, absl::StatusCode::kDeadlineExceeded, {"replica 1"}))
      << timed_out.ToString();
  // The other waiter is released at once rather than waiting out its own deadline.
  EXPECT_TRUE(HasError(waiter_status, absl::StatusCode::kAborted, {"replica 2"}));
  EXPECT_LT(waiter_seconds, 5.0);
  EXPECT_TRUE(barrier.aborted());
  EXPECT_TRUE(HasError(barrier.abort_cause(), absl::StatusCode::kDeadlineExceeded, {"replica 2"}));
  // The latecomer finds the barrier aborted and does not wait.
  const auto start = Clock::now();
  EXPECT_TRUE(HasError(barrier.Arrive(2, Deadline::AfterMs(kLongMs)), absl::StatusCode::kAborted));
  EXPECT_LT(SecondsSince(start), 1.0);
}

TEST(BarrierTest, DeadlineNamesEveryMissingReplica) {
  Barrier barrier(4);
  const absl::Status status = barrier.Arrive(0, Deadline::AfterMs(50));
  EXPECT_TRUE(HasError(status, absl::StatusCode::kDeadlineExceeded, {"replicas 1, 2, 3"}));
}

TEST(BarrierTest, AbortReleasesWaitersAtOnce) {
  Barrier barrier(3);
  std::vector<absl::Status> statuses(2);
  std::vector<Clock::time_point> released(2);
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      statuses[static_cast<size_t>(r)] = barrier.Arrive(r, Deadline::AfterMs(kLongMs));
      released[static_cast<size_t>(r)] = Clock::now();
    });
  }
  std::this_thread::sleep_for(milliseconds(100));  // let them park
  const auto abort_at = Clock::now();
  barrier.Abort(absl::CancelledError("user stopped the step"));
  for (std::thread& t : threads) t.join();
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_TRUE(HasError(statuses[r], absl::StatusCode::kAborted, {"user stopped the step"}))
        << "replica " << r;
    EXPECT_LT(std::chrono::duration<double>(released[r] - abort_at).count(), 1.0)
        << "replica " << r;
  }
  EXPECT_TRUE(barrier.aborted());
  EXPECT_TRUE(HasError(barrier.abort_cause(), absl::StatusCode::kCancelled,
                       {"user stopped the step"}));
  // Later waits fail immediately; the first cause wins over later ones.
  barrier.Abort(absl::InternalError("second cause"));
  EXPECT_TRUE(HasError(barrier.abort_cause(), absl::StatusCode::kCancelled));
  EXPECT_TRUE(HasError(barrier.Arrive(2, Deadline::AfterMs(kLongMs)), absl::StatusCode::kAborted,
                       {"user stopped the step"}));
}

TEST(BarrierTest, AbortWithOkStatusStillAborts) {
  Barrier barrier(2);
  barrier.Abort(absl::OkStatus());
  EXPECT_TRUE(barrier.aborted());
  EXPECT_FALSE(barrier.abort_cause().ok());
  EXPECT_TRUE(HasError(barrier.Arrive(0, Deadline::AfterMs(kLongMs)), absl::StatusCode::kAborted));
}

TEST(BarrierTest, ResetMakesItUsableAgain) {
  Barrier barrier(3);
  barrier.Abort(absl::AbortedError("first run failed"));
  EXPECT_TRUE(HasError(barrier.Arrive(0, Deadline::AfterMs(kLongMs)), absl::StatusCode::kAborted));
  barrier.Reset();
  EXPECT_FALSE(barrier.aborted());
  EXPECT_TRUE(IsOk(barrier.abort_cause()));
  RunLockStep(barrier, 3, 200);

  // After a timeout too, including the arrivals the timed-out generation left counted.
  EXPECT_TRUE(HasError(barrier.Arrive(1, Deadline::AfterMs(20)), absl::StatusCode::kDeadlineExceeded,
                       {"replicas 0, 2"}));
  barrier.Reset();
  RunLockStep(barrier, 3, 200);
  // A fresh timeout after the reset names only this generation's missing replicas.
  std::thread early([&] { (void)barrier.Arrive(2, Deadline::AfterMs(kLongMs)); });
  std::this_thread::sleep_for(milliseconds(50));
  const absl::Status status = barrier.Arrive(0, Deadline::AfterMs(100));
  early.join();
  EXPECT_TRUE(HasError(status, absl::StatusCode::kDeadlineExceeded, {"replica 1 "}));
}

}  // namespace
}  // namespace distribute
