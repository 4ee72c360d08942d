// CoordinationService without sockets: the key-value store, barriers (passing, reuse,
// timeouts naming exactly the missing tasks, sticky failures), liveness (heartbeat
// timeout, a closed connection, a clean disconnect that is no failure), and that Shutdown
// and cancelled callers release every waiter. Waits that must pass use long deadlines and
// waits that must fail short ones, so a loaded machine slows the tests down but never
// fails them.
#include "core/server/coordination_service.h"

#include <atomic>
#include <chrono>
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

constexpr int64_t kLongMs = 30'000;

CoordinationService::Options ThreeWorkers(int64_t heartbeat_timeout_ms = 60'000) {
  CoordinationService::Options options;
  options.tasks = {"worker:0", "worker:1", "worker:2", "ps:0"};
  options.barrier_tasks = {"worker:0", "worker:1", "worker:2"};
  options.heartbeat_timeout_ms = heartbeat_timeout_ms;
  options.max_value_bytes = 1024;
  return options;
}

// Registers every task of ThreeWorkers as incarnation 1..4.
void RegisterAll(CoordinationService& service) {
  ASSERT_TRUE(IsOk(service.Register("worker:0", 1, /*expects_heartbeats=*/false)));
  ASSERT_TRUE(IsOk(service.Register("worker:1", 2)));
  ASSERT_TRUE(IsOk(service.Register("worker:2", 3)));
  ASSERT_TRUE(IsOk(service.Register("ps:0", 4)));
}

TEST(CoordinationServiceTest, GetReturnsAValueSetEarlier) {
  CoordinationService service(ThreeWorkers());
  ASSERT_TRUE(IsOk(service.Set("k", std::string("a\0b", 3))));
  absl::StatusOr<std::string> value = service.Get("k", Deadline::AfterMs(0));
  ASSERT_TRUE(IsOk(value));
  EXPECT_EQ(*value, std::string("a\0b", 3));
  ASSERT_TRUE(IsOk(service.Set("k", "")));  // overwrite, with an empty value
  value = service.Get("k", Deadline::AfterMs(0));
  ASSERT_TRUE(IsOk(value));
  EXPECT_EQ(*value, "");
}

TEST(CoordinationServiceTest, BlockingGetWakesOnSet) {
  CoordinationService service(ThreeWorkers());
  absl::StatusOr<std::string> value;
  std::thread getter([&] { value = service.Get("late", Deadline::AfterMs(kLongMs)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(IsOk(service.Set("late", "value")));
  getter.join();
  ASSERT_TRUE(IsOk(value));
  EXPECT_EQ(*value, "value");
}

TEST(CoordinationServiceTest, GetTimesOutNamingTheKey) {
  CoordinationService service(ThreeWorkers());
  EXPECT_TRUE(HasError(service.Get("missing/key", Deadline::AfterMs(30)), absl::StatusCode::kDeadlineExceeded,
                       {"key 'missing/key' was not set within 30 ms"}));
}

TEST(CoordinationServiceTest, RejectsBadKeysAndOversizedValues) {
  CoordinationService service(ThreeWorkers());
  EXPECT_TRUE(HasError(service.Set("", "v"), absl::StatusCode::kInvalidArgument, {"key is empty"}));
  EXPECT_TRUE(HasError(service.Set(std::string(kMaxCoordinationKeyBytes + 1, 'k'), "v"),
                       absl::StatusCode::kInvalidArgument, {"too long", "4096"}));
  EXPECT_TRUE(HasError(service.Set("big", std::string(1025, 'v')), absl::StatusCode::kInvalidArgument,
                       {"'big'", "1025 bytes", "at most 1024"}));
  EXPECT_TRUE(IsOk(service.Set("fits", std::string(1024, 'v'))));
  EXPECT_TRUE(HasError(service.Get("", Deadline::AfterMs(0)), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(service.Barrier("", "worker:0", Deadline::AfterMs(0)),
                       absl::StatusCode::kInvalidArgument, {"barrier name is empty"}));
}

TEST(CoordinationServiceTest, BarrierPassesWhenAllArriveAndCanBeReused) {
  CoordinationService service(ThreeWorkers());
  RegisterAll(service);
  for (int round = 0; round < 3; ++round) {
    std::vector<absl::Status> results(3);
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) {
      threads.emplace_back([&, i] {
        results[i] = service.Barrier("step", "worker:" + std::to_string(i), Deadline::AfterMs(kLongMs));
      });
    }
    for (std::thread& t : threads) t.join();
    for (const absl::Status& result : results) EXPECT_TRUE(IsOk(result)) << "round " << round;
  }
}

TEST(CoordinationServiceTest, BarrierTimeoutNamesExactlyTheMissingTasks) {
  CoordinationService service(ThreeWorkers());
  RegisterAll(service);
  absl::Status first;
  std::thread waiter([&] { first = service.Barrier("startup", "worker:0", Deadline::AfterMs(kLongMs)); });
  const absl::Status timed_out = service.Barrier("startup", "worker:2", Deadline::AfterMs(50));
  waiter.join();
  EXPECT_TRUE(HasError(timed_out, absl::StatusCode::kDeadlineExceeded,
                       {"barrier 'startup' timed out after 50 ms: task worker:1 did not arrive"}));
  // The waiter with the longer deadline fails with the same status, and so does a late
  // arrival: a failed barrier stays failed.
  EXPECT_EQ(first, timed_out);
  EXPECT_EQ(service.Barrier("startup", "worker:1", Deadline::AfterMs(kLongMs)), timed_out);
}

TEST(CoordinationServiceTest, BarrierTimeoutListsSeveralMissingTasksInOrder) {
  CoordinationService service(ThreeWorkers());
  RegisterAll(service);
  EXPECT_TRUE(HasError(service.Barrier("b", "worker:0", Deadline::AfterMs(20)),
                       absl::StatusCode::kDeadlineExceeded,
                       {"barrier 'b' timed out after 20 ms: tasks worker:1, worker:2 did not arrive"}));
}

TEST(CoordinationServiceTest, BarrierChecksItsTask) {
  CoordinationService service(ThreeWorkers());
  ASSERT_TRUE(IsOk(service.Register("worker:0", 1, false)));
  ASSERT_TRUE(IsOk(service.Register("ps:0", 4)));
  EXPECT_TRUE(HasError(service.Barrier("b", "worker:9", Deadline::AfterMs(0)), absl::StatusCode::kInvalidArgument,
                       {"task 'worker:9' is not in the cluster"}));
  EXPECT_TRUE(HasError(service.Barrier("b", "ps:0", Deadline::AfterMs(0)), absl::StatusCode::kInvalidArgument,
                       {"task ps:0 cannot take part in barriers"}));
  EXPECT_TRUE(HasError(service.Barrier("b", "worker:1", Deadline::AfterMs(0)),
                       absl::StatusCode::kFailedPrecondition, {"task worker:1 has not connected"}));
}

TEST(CoordinationServiceTest, HeartbeatTimeoutMarksATaskLost) {
  CoordinationService service(ThreeWorkers(/*heartbeat_timeout_ms=*/100));
  ASSERT_TRUE(IsOk(service.Register("worker:0", 1, /*expects_heartbeats=*/false)));
  ASSERT_TRUE(IsOk(service.Register("worker:1", 2)));
  ASSERT_TRUE(IsOk(service.OpenWatch("worker:1", 2)));  // a real task, proven alive
  const absl::Status lost = service.WaitForPeerFailure(Deadline::AfterMs(kLongMs));
  EXPECT_TRUE(HasError(lost, absl::StatusCode::kUnavailable,
                       {"task worker:1 is unavailable: no heartbeat for 100 ms"}));
  EXPECT_EQ(service.PeerHealth(), lost);
  // The chief, which expects no heartbeats, is not lost; the lost task cannot rejoin.
  absl::StatusOr<std::vector<CoordinationService::TaskFailure>> failures =
      service.WaitForFailures(0, Deadline::AfterMs(0));
  ASSERT_TRUE(IsOk(failures));
  ASSERT_EQ(failures->size(), 1u);
  EXPECT_EQ((*failures)[0].task, "worker:1");
  EXPECT_EQ(service.Heartbeat("worker:1", 2), lost);
  EXPECT_TRUE(HasError(service.Register("worker:1", 7), absl::StatusCode::kFailedPrecondition,
                       {"worker:1", "restart the job"}));
}

TEST(CoordinationServiceTest, HeartbeatsKeepATaskAlive) {
  CoordinationService service(ThreeWorkers(/*heartbeat_timeout_ms=*/2'000));
  ASSERT_TRUE(IsOk(service.Register("worker:1", 2)));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(IsOk(service.Heartbeat("worker:1", 2)));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(IsOk(service.PeerHealth()));
  EXPECT_TRUE(HasError(service.Heartbeat("worker:1", 99), absl::StatusCode::kFailedPrecondition,
                       {"another incarnation"}));
}

TEST(CoordinationServiceTest, LostTaskFailsBlockedAndFutureBarriers) {
  CoordinationService service(ThreeWorkers());
  RegisterAll(service);
  absl::Status blocked;
  std::thread waiter([&] { blocked = service.Barrier("b", "worker:0", Deadline::AfterMs(kLongMs)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  service.ReportConnectionClosed("worker:2", 3);
  waiter.join();
  EXPECT_TRUE(HasError(blocked, absl::StatusCode::kUnavailable,
                       {"barrier 'b' failed: task worker:2 is unavailable: its connection to the "
                        "coordination service closed"}));
  EXPECT_TRUE(HasError(service.Barrier("other", "worker:1", Deadline::AfterMs(kLongMs)),
                       absl::StatusCode::kUnavailable, {"task worker:2 is unavailable"}));
  EXPECT_TRUE(HasError(service.PeerHealth(), absl::StatusCode::kUnavailable, {"worker:2"}));
}

TEST(CoordinationServiceTest, CleanDisconnectIsNotAFailure) {
  CoordinationService service(ThreeWorkers(/*heartbeat_timeout_ms=*/50));
  ASSERT_TRUE(IsOk(service.Register("worker:1", 2)));
  ASSERT_TRUE(IsOk(service.Disconnect("worker:1", 2)));
  service.ReportConnectionClosed("worker:1", 2);  // the stream closes after the Disconnect
  EXPECT_TRUE(IsOk(service.WaitForPeerFailure(Deadline::AfterMs(200))));  // nor a heartbeat timeout
  EXPECT_TRUE(IsOk(service.PeerHealth()));
  ASSERT_TRUE(IsOk(service.Register("worker:1", 5)));  // and it may come back
}

// A parameter-server job's worker: its loss is its own (peer health stays OK), and a
// restarted incarnation registers again; a task not declared recoverable still cannot.
TEST(CoordinationServiceTest, ARecoverableTaskComesBackAfterItsLoss) {
  CoordinationService::Options options = ThreeWorkers();
  options.recoverable_tasks = {"worker:2"};
  CoordinationService service(std::move(options));
  RegisterAll(service);
  service.ReportConnectionClosed("worker:2", 3);
  EXPECT_TRUE(IsOk(service.PeerHealth()));
  EXPECT_TRUE(IsOk(service.WaitForPeerFailure(Deadline::AfterMs(50))));
  ASSERT_TRUE(IsOk(service.Register("worker:2", 7)));
  EXPECT_TRUE(IsOk(service.Heartbeat("worker:2", 7)));
  EXPECT_TRUE(HasError(service.Heartbeat("worker:2", 3), absl::StatusCode::kFailedPrecondition, {"worker:2"}));
  service.ReportConnectionClosed("worker:1", 2);
  EXPECT_TRUE(HasError(service.Register("worker:1", 8), absl::StatusCode::kFailedPrecondition,
                       {"a lost task cannot rejoin"}));
  EXPECT_TRUE(HasError(service.PeerHealth(), absl::StatusCode::kUnavailable, {"worker:1"}));
}

TEST(CoordinationServiceTest, WatchersSeeEveryFailureInOrder) {
  CoordinationService service(ThreeWorkers());
  RegisterAll(service);
  absl::StatusOr<std::vector<CoordinationService::TaskFailure>> none =
      service.WaitForFailures(0, Deadline::AfterMs(10));
  ASSERT_TRUE(IsOk(none));
  EXPECT_TRUE(none->empty());
  service.ReportConnectionClosed("worker:2", 3);
  service.ReportConnectionClosed("ps:0", 4);
  service.ReportConnectionClosed("ps:0", 4);  // reported once
  absl::StatusOr<std::vector<CoordinationService::TaskFailure>> all =
      service.WaitForFailures(0, Deadline::AfterMs(kLongMs));
  ASSERT_TRUE(IsOk(all));
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].task, "worker:2");
  EXPECT_EQ((*all)[1].task, "ps:0");
  absl::StatusOr<std::vector<CoordinationService::TaskFailure>> rest =
      service.WaitForFailures(1, Deadline::AfterMs(kLongMs));
  ASSERT_TRUE(IsOk(rest));
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ((*rest)[0].task, "ps:0");
}

TEST(CoordinationServiceTest, FailuresLoggedBeforeShutdownAreStillHandedOut) {
  CoordinationService service(ThreeWorkers());
  RegisterAll(service);
  service.ReportConnectionClosed("worker:2", 3);
  service.Shutdown();
  absl::StatusOr<std::vector<CoordinationService::TaskFailure>> lost =
      service.WaitForFailures(0, Deadline::AfterMs(kLongMs));
  ASSERT_TRUE(IsOk(lost));
  ASSERT_EQ(lost->size(), 1u);
  EXPECT_EQ((*lost)[0].task, "worker:2");
  EXPECT_TRUE(HasError(service.WaitForFailures(1, Deadline::AfterMs(kLongMs)),
                       absl::StatusCode::kUnavailable, {"coordination service is shutting down"}));
}

TEST(CoordinationServiceTest, ShutdownReleasesEveryWaiter) {
  CoordinationService service(ThreeWorkers());
  RegisterAll(service);
  std::vector<absl::Status> results(4);
  std::vector<std::thread> threads;
  threads.emplace_back([&] { results[0] = service.Get("never", Deadline::AfterMs(kLongMs)).status(); });
  threads.emplace_back([&] { results[1] = service.Barrier("b", "worker:0", Deadline::AfterMs(kLongMs)); });
  threads.emplace_back([&] { results[2] = service.WaitForPeerFailure(Deadline::AfterMs(kLongMs)); });
  threads.emplace_back([&] { results[3] = service.WaitForFailures(0, Deadline::AfterMs(kLongMs)).status(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  service.Shutdown();
  for (std::thread& t : threads) t.join();
  for (const absl::Status& result : results) {
    EXPECT_TRUE(HasError(result, absl::StatusCode::kUnavailable, {"coordination service is shutting down"}));
  }
  EXPECT_TRUE(HasError(service.Set("k", "v"), absl::StatusCode::kUnavailable));
  service.Shutdown();  // idempotent
}

TEST(CoordinationServiceTest, CancelledCallerIsReleased) {
  CoordinationService service(ThreeWorkers());
  RegisterAll(service);
  std::atomic<bool> gone{false};
  const CoordinationService::RemoteCaller caller{[&] { return gone.load(); }};
  absl::Status get;
  absl::Status barrier;
  std::thread getter([&] { get = service.Get("never", Deadline::AfterMs(kLongMs), &caller).status(); });
  std::thread arriver([&] { barrier = service.Barrier("b", "worker:1", Deadline::AfterMs(kLongMs), &caller); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  gone = true;
  getter.join();
  arriver.join();
  EXPECT_TRUE(HasError(get, absl::StatusCode::kCancelled));
  EXPECT_TRUE(HasError(barrier, absl::StatusCode::kCancelled));
}

}  // namespace
}  // namespace distribute
