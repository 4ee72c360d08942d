// WatchedGet: a key that is set (now or later) is read; a key still unset at the deadline
// is kDeadlineExceeded; and a task that dies while the read waits fails it with
// kUnavailable naming the task, long before the deadline (without the watch the read
// would end at the 30 s deadline with kDeadlineExceeded, which the test tells apart).
#include "core/server/watched_get.h"

#include <thread>

#include "absl/status/status.h"
#include "core/server/coordination_service.h"
#include "core/server/local_coordination_client.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

constexpr uint64_t kIncarnation = 7;

CoordinationService::Options TwoWorkers() {
  CoordinationService::Options options;
  options.tasks = {"worker:0", "worker:1"};
  options.barrier_tasks = options.tasks;
  return options;
}

TEST(WatchedGetTest, ReadsAKeySetBeforeOrDuringTheWait) {
  CoordinationService service(TwoWorkers());
  LocalCoordinationClient client(&service, "worker:0");
  ASSERT_TRUE(IsOk(service.Set("now", "a")));
  absl::StatusOr<std::string> now = WatchedGet(client, "now", Deadline::AfterMs(30'000));
  ASSERT_TRUE(IsOk(now));
  EXPECT_EQ(*now, "a");
  // Set after several slices of the wait.
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(3 * kWatchedGetSliceMs));
    EXPECT_TRUE(IsOk(service.Set("later", "b")));
  });
  absl::StatusOr<std::string> later = WatchedGet(client, "later", Deadline::AfterMs(30'000));
  setter.join();
  ASSERT_TRUE(IsOk(later));
  EXPECT_EQ(*later, "b");
}

TEST(WatchedGetTest, AKeyNeverSetIsDeadlineExceeded) {
  CoordinationService service(TwoWorkers());
  LocalCoordinationClient client(&service, "worker:0");
  EXPECT_TRUE(HasError(WatchedGet(client, "never", Deadline::AfterMs(2 * kWatchedGetSliceMs + 50)),
                       absl::StatusCode::kDeadlineExceeded));
}

TEST(WatchedGetTest, ATaskThatDiesWhileItWaitsIsNamed) {
  CoordinationService service(TwoWorkers());
  LocalCoordinationClient client(&service, "worker:0");
  ASSERT_TRUE(IsOk(service.Register("worker:1", kIncarnation)));
  ASSERT_TRUE(IsOk(service.OpenWatch("worker:1", kIncarnation)));
  std::thread death([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(2 * kWatchedGetSliceMs));
    service.ReportConnectionClosed("worker:1", kIncarnation);
  });
  absl::StatusOr<std::string> value = WatchedGet(client, "worker:1's key", Deadline::AfterMs(30'000));
  death.join();
  EXPECT_TRUE(HasError(value, absl::StatusCode::kUnavailable, {"worker:1"}));
  // A death already known fails the read at once.
  EXPECT_TRUE(HasError(WatchedGet(client, "another key", Deadline::AfterMs(30'000)),
                       absl::StatusCode::kUnavailable, {"worker:1"}));
}

}  // namespace
}  // namespace distribute
