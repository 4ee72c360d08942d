// ReplicaPool: task(r) once per replica per run, replica 0 on the caller, the others on
// persistent threads; many back-to-back runs; destruction joins the threads.
#include "core/strategy/replica_pool.h"

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace distribute {
namespace {

TEST(ReplicaPoolTest, RunCallsEveryReplicaExactlyOnce) {
  for (int32_t n : {1, 2, 3, 4, 8}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    ReplicaPool pool(n);
    EXPECT_EQ(pool.size(), n);
    for (int run = 0; run < 20; ++run) {
      std::vector<std::atomic<int32_t>> calls(static_cast<size_t>(n));
      for (auto& c : calls) c.store(0);
      std::atomic<int32_t> out_of_range{0};
      pool.Run([&](int32_t r) {
        if (r < 0 || r >= n) {
          out_of_range.fetch_add(1);
          return;
        }
        calls[static_cast<size_t>(r)].fetch_add(1);
      });
      // Run returned: every task has returned, so the counts are final.
      EXPECT_EQ(out_of_range.load(), 0);
      for (int32_t r = 0; r < n; ++r) {
        ASSERT_EQ(calls[static_cast<size_t>(r)].load(), 1) << "replica " << r << " run " << run;
      }
    }
  }
}

TEST(ReplicaPoolTest, ReplicaZeroRunsOnTheCallerOthersOnPersistentThreads) {
  constexpr int32_t kReplicas = 4;
  ReplicaPool pool(kReplicas);
  std::vector<std::thread::id> first(kReplicas);
  pool.Run([&](int32_t r) { first[static_cast<size_t>(r)] = std::this_thread::get_id(); });
  EXPECT_EQ(first[0], std::this_thread::get_id());
  std::set<std::thread::id> distinct(first.begin(), first.end());
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kReplicas)) << "replicas shared a thread";
  for (int run = 0; run < 50; ++run) {
    std::vector<std::thread::id> ids(kReplicas);
    pool.Run([&](int32_t r) { ids[static_cast<size_t>(r)] = std::this_thread::get_id(); });
    ASSERT_EQ(ids, first) << "run " << run << " used different threads";
  }
}

TEST(ReplicaPoolTest, ReplicasRunConcurrently) {
  // Every replica waits for all the others inside the task: this completes only if the
  // tasks of one run are live at the same time.
  constexpr int32_t kReplicas = 3;
  ReplicaPool pool(kReplicas);
  for (int run = 0; run < 20; ++run) {
    std::atomic<int32_t> entered{0};
    pool.Run([&](int32_t) {
      entered.fetch_add(1);
      while (entered.load() < kReplicas) std::this_thread::yield();
    });
    EXPECT_EQ(entered.load(), kReplicas);
  }
}

TEST(ReplicaPoolTest, TenThousandBackToBackRuns) {
  for (int32_t n : {2, 3}) {
    ReplicaPool pool(n);
    std::atomic<int64_t> calls{0};
    std::vector<int64_t> per_replica(static_cast<size_t>(n), 0);  // each slot written by one thread
    for (int run = 0; run < 10000; ++run) {
      pool.Run([&](int32_t r) {
        calls.fetch_add(1, std::memory_order_relaxed);
        ++per_replica[static_cast<size_t>(r)];
      });
    }
    EXPECT_EQ(calls.load(), 10000 * n);
    for (int32_t r = 0; r < n; ++r) EXPECT_EQ(per_replica[static_cast<size_t>(r)], 10000) << r;
  }
}

TEST(ReplicaPoolTest, WritesOfATaskAreVisibleAfterRun) {
  ReplicaPool pool(3);
  std::vector<int64_t> values(3, 0);
  for (int64_t run = 1; run <= 1000; ++run) {
    pool.Run([&](int32_t r) { values[static_cast<size_t>(r)] = run * 10 + r; });
    for (int32_t r = 0; r < 3; ++r) ASSERT_EQ(values[static_cast<size_t>(r)], run * 10 + r);
  }
}

// Counts thread exits: a thread_local with a destructor, touched by the worker tasks.
std::atomic<int32_t> exited_threads{0};
struct ExitProbe {
  bool touched = false;
  ~ExitProbe() {
    if (touched) exited_threads.fetch_add(1);
  }
};
thread_local ExitProbe exit_probe;

TEST(ReplicaPoolTest, DestructionJoinsTheThreads) {
  exited_threads.store(0);
  auto pool = std::make_unique<ReplicaPool>(4);
  pool->Run([](int32_t r) {
    if (r != 0) exit_probe.touched = true;
  });
  EXPECT_EQ(exited_threads.load(), 0);
  pool.reset();
  // The destructor returned only after the three worker threads exited (their
  // thread_local destructors ran).
  EXPECT_EQ(exited_threads.load(), 3);
}

TEST(ReplicaPoolTest, DestroyingAnIdleOrUnusedPoolReturns) {
  for (int i = 0; i < 20; ++i) {
    ReplicaPool unused(4);
  }
  ReplicaPool used(3);
  used.Run([](int32_t) {});
  // Let the workers park before destruction.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

TEST(ReplicaPoolTest, OnWorkerThread) {
  ReplicaPool pool(3);
  ReplicaPool other(2);
  EXPECT_FALSE(pool.OnWorkerThread());
  std::vector<int> on_pool(3, -1), on_other(3, -1);
  pool.Run([&](int32_t r) {
    on_pool[static_cast<size_t>(r)] = pool.OnWorkerThread();
    on_other[static_cast<size_t>(r)] = other.OnWorkerThread();
  });
  // Replica 0 runs on the caller, which is not a worker thread.
  EXPECT_EQ(on_pool, (std::vector<int>{0, 1, 1}));
  EXPECT_EQ(on_other, (std::vector<int>{0, 0, 0}));
  EXPECT_FALSE(pool.OnWorkerThread());
}

// Replica threads carry their replica's name; replica 0 is the caller's thread, whose
// name the pool leaves alone.
TEST(ReplicaPoolTest, ReplicaThreadsAreNamedAfterTheirReplica) {
  constexpr int32_t kReplicas = 3;
  char caller_before[16] = {};
  ASSERT_EQ(pthread_getname_np(pthread_self(), caller_before, sizeof caller_before), 0);
  ReplicaPool pool(kReplicas);
  std::vector<std::string> names(kReplicas);
  pool.Run([&](int32_t r) {
    char name[16] = {};
    if (pthread_getname_np(pthread_self(), name, sizeof name) == 0) names[static_cast<size_t>(r)] = name;
  });
  EXPECT_EQ(names[0], std::string(caller_before));
  EXPECT_EQ(names[1], "dist-replica-1");
  EXPECT_EQ(names[2], "dist-replica-2");
}

}  // namespace
}  // namespace distribute
