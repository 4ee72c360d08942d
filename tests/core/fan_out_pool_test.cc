// FanOutPool: every call of every group runs once, a group's calls in order, different
// groups at once (shown by a rendezvous that sequential calls could never reach: they would
// give up after its bound and the test fails), the lowest failing index's error after every
// call has run, and progress with no threads or with more callers than threads.
#include "core/util/fan_out_pool.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

// Waits until `parties` threads have arrived, or gives up after 10 s (a bound, so that a
// pool that runs groups one after another fails the test instead of hanging it).
class Rendezvous {
 public:
  explicit Rendezvous(int parties) : parties_(parties) {}
  bool ArriveAndWait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (++arrived_ == parties_) cv_.notify_all();
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return arrived_ >= parties_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int parties_;
  int arrived_ = 0;
};

TEST(FanOutPoolTest, RunsEveryCallOnceAndAGroupInOrder) {
  FanOutPool pool(4);
  const std::vector<std::vector<int32_t>> groups = {{0, 3, 5}, {1, 4}, {2}, {6, 7, 8, 9}};
  std::mutex mu;
  std::vector<int32_t> seen;
  std::vector<int> calls(10, 0);
  ASSERT_TRUE(IsOk(pool.Run(groups, [&](int32_t i) {
    std::lock_guard<std::mutex> lock(mu);
    ++calls[static_cast<size_t>(i)];
    seen.push_back(i);
    return absl::OkStatus();
  })));
  EXPECT_EQ(calls, std::vector<int>(10, 1));
  // Within each group, its indices appear in the order given.
  for (const std::vector<int32_t>& group : groups) {
    size_t position = 0;
    for (int32_t i : seen) {
      if (position < group.size() && i == group[position]) ++position;
    }
    EXPECT_EQ(position, group.size());
  }
}

TEST(FanOutPoolTest, GroupsRunAtOnce) {
  FanOutPool pool(3);
  const std::vector<std::vector<int32_t>> groups = {{0}, {1}, {2}, {3}};
  Rendezvous all_four(4);
  std::atomic<int> met{0};
  ASSERT_TRUE(IsOk(pool.Run(groups, [&](int32_t) {
    if (all_four.ArriveAndWait()) met.fetch_add(1);
    return absl::OkStatus();
  })));
  EXPECT_EQ(met.load(), 4);
}

TEST(FanOutPoolTest, WithoutThreadsTheCallerRunsEverything) {
  FanOutPool pool(0);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<int32_t> order;
  ASSERT_TRUE(IsOk(pool.Run(std::vector<std::vector<int32_t>>{{0, 1}, {2}, {3}}, [&](int32_t i) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(i);
    return absl::OkStatus();
  })));
  EXPECT_EQ(order, (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(FanOutPoolTest, ReturnsTheLowestFailingIndexAfterEveryCall) {
  FanOutPool pool(2);
  std::atomic<int> calls{0};
  // Index 4 fails first in its group; index 1 fails after index 0 succeeded in another.
  const absl::Status status =
      pool.Run(std::vector<std::vector<int32_t>>{{4, 2}, {0, 1, 5}, {3}}, [&](int32_t i) {
        calls.fetch_add(1);
        if (i == 4) return absl::UnavailableError("four");
        if (i == 1) return absl::InvalidArgumentError("one");
        if (i == 5) return absl::InternalError("five");
        return absl::OkStatus();
      });
  EXPECT_TRUE((HasError(status, absl::StatusCode::kInvalidArgument, {"one"})));
  EXPECT_EQ(calls.load(), 6);
  EXPECT_TRUE(IsOk(pool.Run(std::vector<std::vector<int32_t>>{}, [](int32_t) {
    return absl::InternalError("never called");
  })));
}

TEST(FanOutPoolTest, TheLowestFailingIndexWinsWithinAGroupToo) {
  FanOutPool pool(2);
  const absl::Status status = pool.Run(std::vector<std::vector<int32_t>>{{4, 2}, {3}}, [](int32_t i) {
    return absl::InternalError(absl::StrCat("index ", i));
  });
  EXPECT_TRUE((HasError(status, absl::StatusCode::kInternal, {"index 2"})));
}

TEST(FanOutPoolTest, AThrowingCallIsAnErrorNotAnEscape) {
  FanOutPool pool(2);
  std::atomic<int> calls{0};
  const absl::Status status = pool.Run(std::vector<std::vector<int32_t>>{{0}, {1}, {2}}, [&](int32_t i) {
    calls.fetch_add(1);
    if (i == 1) throw std::runtime_error("out of memory, say");
    return absl::OkStatus();
  });
  EXPECT_TRUE((HasError(status, absl::StatusCode::kInternal, {"call 1", "out of memory, say"})));
  EXPECT_EQ(calls.load(), 3);
}

TEST(FanOutPoolTest, ConcurrentCallersGetHelpersOfTheirOwn) {
  // Four callers, each with two groups that must meet: a pool that grows only to one
  // request's need (one helper) could not hold all four rendezvous at once.
  FanOutPool pool(8);
  Rendezvous everyone(8);
  std::atomic<int> met{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      EXPECT_TRUE(IsOk(pool.Run(std::vector<std::vector<int32_t>>{{0}, {1}}, [&](int32_t) {
        if (everyone.ArriveAndWait()) met.fetch_add(1);
        return absl::OkStatus();
      })));
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(met.load(), 8);
}

TEST(FanOutPoolTest, MoreCallersThanThreadsAllFinish) {
  FanOutPool pool(1);
  constexpr int kCallers = 8;
  constexpr int kRounds = 200;
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&] {
      const std::vector<std::vector<int32_t>> groups = {{0, 1}, {2}, {3, 4}};
      for (int r = 0; r < kRounds; ++r) {
        EXPECT_TRUE(IsOk(pool.Run(groups, [&](int32_t i) {
          total.fetch_add(i + 1);
          return absl::OkStatus();
        })));
      }
    });
  }
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), int64_t{kCallers} * kRounds * (1 + 2 + 3 + 4 + 5));
}

TEST(FanOutPoolTest, ThreadCountIsClamped) {
  // More groups than kMaxThreads + 1: the rest run on the caller, and every call runs.
  FanOutPool pool(1000);
  std::vector<std::vector<int32_t>> groups;
  for (int32_t g = 0; g < 40; ++g) groups.push_back({g});
  std::atomic<int> calls{0};
  std::mutex mu;
  std::set<std::thread::id> threads;
  for (int round = 0; round < 20; ++round) {
    ASSERT_TRUE(IsOk(pool.Run(groups, [&](int32_t) {
      calls.fetch_add(1);
      std::lock_guard<std::mutex> lock(mu);
      threads.insert(std::this_thread::get_id());
      return absl::OkStatus();
    })));
  }
  EXPECT_EQ(calls.load(), 20 * 40);
  EXPECT_LE(threads.size(), static_cast<size_t>(FanOutPool::kMaxThreads) + 1);  // the helpers and the caller
  FanOutPool negative(-5);
  EXPECT_TRUE(IsOk(negative.Run(groups, [](int32_t) { return absl::OkStatus(); })));
}

}  // namespace
}  // namespace distribute
