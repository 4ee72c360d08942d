// CoordinationService's registration rule without sockets: a second Register of a live
// task is refused and harms nothing; an old incarnation silent past the heartbeat timeout
// is declared lost (the job fails naming the task, as TensorFlow's does on a restart); a
// task that disconnected cleanly may come back; CloseRegistrations turns new tasks away
// while connected ones carry on; one Watch stream per task; and no error message names a
// connected task's incarnation.
#include <chrono>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/server/coordination_service.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

constexpr int64_t kLongMs = 30'000;
constexpr uint64_t kLiveIncarnation = 0x5eed5eed5eed5eedull;

CoordinationService::Options TwoWorkers(int64_t heartbeat_timeout_ms = 60'000) {
  CoordinationService::Options options;
  options.tasks = {"worker:0", "worker:1"};
  options.barrier_tasks = {"worker:0", "worker:1"};
  options.heartbeat_timeout_ms = heartbeat_timeout_ms;
  return options;
}

TEST(CoordinationRegistrationTest, ASecondRegistrationOfALiveTaskIsRefusedAndHarmsNothing) {
  CoordinationService service(TwoWorkers());
  ASSERT_TRUE(IsOk(service.Register("worker:0", 1, /*expects_heartbeats=*/false)));
  ASSERT_TRUE(IsOk(service.Register("worker:1", kLiveIncarnation)));
  ASSERT_TRUE(IsOk(service.OpenWatch("worker:1", kLiveIncarnation)));  // a real task proves it is alive
  ASSERT_TRUE(IsOk(service.Register("worker:1", kLiveIncarnation)));  // a retried Register is fine
  EXPECT_TRUE(HasError(service.Register("worker:1", 42), absl::StatusCode::kAlreadyExists,
                       {"task worker:1 is already registered by a live incarnation",
                        "refused and changes nothing"}));
  // The chief, which sends no heartbeats, is live for as long as the service.
  EXPECT_TRUE(HasError(service.Register("worker:0", 42), absl::StatusCode::kAlreadyExists));
  // Nobody was lost, and the live incarnation carries on.
  EXPECT_TRUE(IsOk(service.PeerHealth()));
  EXPECT_TRUE(IsOk(service.Heartbeat("worker:1", kLiveIncarnation)));
  std::thread chief([&] { EXPECT_TRUE(IsOk(service.Barrier("after", "worker:0", Deadline::AfterMs(kLongMs)))); });
  EXPECT_TRUE(IsOk(service.Barrier("after", "worker:1", Deadline::AfterMs(kLongMs))));
  chief.join();
}

TEST(CoordinationRegistrationTest, ARestartWhoseOldIncarnationFellSilentFailsTheJobNamingTheTask) {
  // The monitor would notice too; a Register that comes first declares the loss itself.
  CoordinationService service(TwoWorkers(/*heartbeat_timeout_ms=*/100));
  ASSERT_TRUE(IsOk(service.Register("worker:1", kLiveIncarnation)));
  ASSERT_TRUE(IsOk(service.OpenWatch("worker:1", kLiveIncarnation)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_TRUE(HasError(service.Register("worker:1", 42), absl::StatusCode::kFailedPrecondition,
                       {"task worker:1 is unavailable: no heartbeat for 100 ms", "restart the job"}));
  EXPECT_TRUE(HasError(service.PeerHealth(), absl::StatusCode::kUnavailable, {"worker:1"}));
}

// Issue 43, finding 5: a Register as worker:1 that never opens its watch (an impostor in a
// job without a token, or a task started twice) blocked the real worker with ALREADY_EXISTS,
// and the job failed 10 s later blaming the real worker. Now it holds the place only
// briefly (the real task is told to retry, naming the case), then the real task takes it,
// and nobody is lost.
TEST(CoordinationRegistrationTest, ARegistrationWithoutAWatchHoldsNothing) {
  CoordinationService service(TwoWorkers());
  ASSERT_TRUE(IsOk(service.Register("worker:1", 42)));  // the impostor: no watch, no heartbeat
  EXPECT_TRUE(HasError(service.Register("worker:1", kLiveIncarnation), absl::StatusCode::kUnavailable,
                       {"task worker:1 was registered", "has not opened its watch stream", "an impostor",
                        "retry"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(CoordinationService::kUnprovenHoldMs + 100));
  ASSERT_TRUE(IsOk(service.Register("worker:1", kLiveIncarnation)));
  ASSERT_TRUE(IsOk(service.OpenWatch("worker:1", kLiveIncarnation)));
  EXPECT_TRUE(IsOk(service.PeerHealth()));
  // The impostor can no longer act for the task; the real one holds it against a new one.
  EXPECT_TRUE(HasError(service.Heartbeat("worker:1", 42), absl::StatusCode::kFailedPrecondition));
  EXPECT_TRUE(HasError(service.Register("worker:1", 43), absl::StatusCode::kAlreadyExists));
}

TEST(CoordinationRegistrationTest, AnUnprovenRegistrationFallingSilentIsDroppedNotLost) {
  CoordinationService service(TwoWorkers(/*heartbeat_timeout_ms=*/100));
  ASSERT_TRUE(IsOk(service.Register("worker:1", 42)));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the monitor drops it
  EXPECT_TRUE(IsOk(service.PeerHealth()));
  ASSERT_TRUE(IsOk(service.Register("worker:1", kLiveIncarnation)));
  ASSERT_TRUE(IsOk(service.OpenWatch("worker:1", kLiveIncarnation)));
  EXPECT_TRUE(IsOk(service.PeerHealth()));
}

TEST(CoordinationRegistrationTest, ARestartWhoseOldConnectionClosedCannotRejoin) {
  CoordinationService service(TwoWorkers());
  ASSERT_TRUE(IsOk(service.Register("worker:1", kLiveIncarnation)));
  ASSERT_TRUE(IsOk(service.OpenWatch("worker:1", kLiveIncarnation)));
  service.ReportConnectionClosed("worker:1", kLiveIncarnation);  // the old process died
  EXPECT_TRUE(HasError(service.Register("worker:1", 42), absl::StatusCode::kFailedPrecondition,
                       {"task worker:1 is unavailable", "restart the job"}));
  EXPECT_TRUE(HasError(service.PeerHealth(), absl::StatusCode::kUnavailable, {"worker:1"}));
}

TEST(CoordinationRegistrationTest, ATaskThatDisconnectedMayComeBack) {
  CoordinationService service(TwoWorkers());
  ASSERT_TRUE(IsOk(service.Register("worker:1", kLiveIncarnation)));
  ASSERT_TRUE(IsOk(service.Disconnect("worker:1", kLiveIncarnation)));
  ASSERT_TRUE(IsOk(service.Register("worker:1", 42)));
  EXPECT_TRUE(IsOk(service.Heartbeat("worker:1", 42)));
  EXPECT_TRUE(IsOk(service.PeerHealth()));
}

TEST(CoordinationRegistrationTest, ClosedRegistrationsTurnNewTasksAwayAndKeepConnectedOnes) {
  CoordinationService service(TwoWorkers());
  ASSERT_TRUE(IsOk(service.Register("worker:0", 1, /*expects_heartbeats=*/false)));
  ASSERT_TRUE(IsOk(service.Register("worker:1", kLiveIncarnation)));
  ASSERT_TRUE(IsOk(service.Disconnect("worker:1", kLiveIncarnation)));
  service.CloseRegistrations();
  service.CloseRegistrations();  // idempotent
  EXPECT_TRUE(HasError(service.Register("worker:1", 42), absl::StatusCode::kUnavailable,
                       {"coordination service is shutting down", "registers no more tasks"}));
  EXPECT_TRUE(IsOk(service.Set("k", "v")));
  EXPECT_EQ(*service.Get("k", Deadline::AfterMs(0)), "v");
  EXPECT_TRUE(IsOk(service.PeerHealth()));
}

TEST(CoordinationRegistrationTest, ATaskWatchesOnce) {
  CoordinationService service(TwoWorkers());
  EXPECT_TRUE(HasError(service.OpenWatch("worker:1", kLiveIncarnation), absl::StatusCode::kFailedPrecondition,
                       {"has not connected"}));
  ASSERT_TRUE(IsOk(service.Register("worker:1", kLiveIncarnation)));
  EXPECT_TRUE(HasError(service.OpenWatch("worker:1", 42), absl::StatusCode::kFailedPrecondition,
                       {"another incarnation"}));
  ASSERT_TRUE(IsOk(service.OpenWatch("worker:1", kLiveIncarnation)));
  EXPECT_TRUE(HasError(service.OpenWatch("worker:1", kLiveIncarnation), absl::StatusCode::kAlreadyExists,
                       {"task worker:1 already has its watch stream open"}));
  EXPECT_TRUE(IsOk(service.PeerHealth()));  // the refused second stream harmed nothing
}

TEST(CoordinationRegistrationTest, NoMessageNamesTheConnectedIncarnation) {
  CoordinationService service(TwoWorkers());
  ASSERT_TRUE(IsOk(service.Register("worker:1", kLiveIncarnation)));
  const std::string decimal = absl::StrCat(kLiveIncarnation);
  const std::string hex = absl::StrCat(absl::Hex(kLiveIncarnation));
  for (const absl::Status& status :
       {service.Register("worker:1", 42), service.Heartbeat("worker:1", 42), service.Disconnect("worker:1", 42),
        service.OpenWatch("worker:1", 42)}) {
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.message().find(decimal), absl::string_view::npos) << status;
    EXPECT_EQ(status.message().find(hex), absl::string_view::npos) << status;
  }
  EXPECT_TRUE(IsOk(service.PeerHealth()));
}

}  // namespace
}  // namespace distribute
