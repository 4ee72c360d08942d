// CommunicationOptions: validation bounds in milliseconds, and the replicas per worker
// resolved from the options, DIST_REPLICAS_PER_WORKER, or TF's default of one.
#include "core/collective/communication_options.h"

#include <cstdlib>

#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

TEST(CommunicationOptionsTest, TimeoutBoundsInMilliseconds) {
  CommunicationOptions options;
  EXPECT_EQ(options.TimeoutMsOr(60000), 60000);
  options.timeout_ms = 1;
  EXPECT_TRUE(IsOk(options.Validate()));
  EXPECT_EQ(options.TimeoutMsOr(60000), 1);
  options.timeout_ms = int64_t{7} * 24 * 3600 * 1000;
  EXPECT_TRUE(IsOk(options.Validate()));
  options.timeout_ms += 1;
  EXPECT_TRUE(HasError(options.Validate(), absl::StatusCode::kInvalidArgument, {"timeout_ms"}));
  options.timeout_ms = -1;
  EXPECT_TRUE(HasError(options.Validate(), absl::StatusCode::kInvalidArgument, {"timeout_ms is -1"}));
}

TEST(CommunicationOptionsTest, ReplicasPerWorker) {
  ASSERT_EQ(unsetenv(kReplicasPerWorkerEnv), 0);
  CommunicationOptions options;
  absl::StatusOr<int32_t> count = options.ResolveReplicasPerWorker();
  ASSERT_TRUE(IsOk(count));
  EXPECT_EQ(*count, 1);  // TF: one replica per worker

  ASSERT_EQ(setenv(kReplicasPerWorkerEnv, "3", 1), 0);
  count = options.ResolveReplicasPerWorker();
  ASSERT_TRUE(IsOk(count));
  EXPECT_EQ(*count, 3);

  options.replicas_per_worker = 2;  // the options win over the environment
  count = options.ResolveReplicasPerWorker();
  ASSERT_TRUE(IsOk(count));
  EXPECT_EQ(*count, 2);

  options.replicas_per_worker = 0;
  for (const char* bad : {"0", "-2", "2x", "", "257", "99999999999"}) {
    ASSERT_EQ(setenv(kReplicasPerWorkerEnv, bad, 1), 0);
    EXPECT_TRUE(HasError(options.ResolveReplicasPerWorker(), absl::StatusCode::kInvalidArgument,
                         {"DIST_REPLICAS_PER_WORKER", "expected an integer from 1 to 256"}))
        << bad;
  }
  ASSERT_EQ(unsetenv(kReplicasPerWorkerEnv), 0);

  options.replicas_per_worker = 257;
  EXPECT_TRUE(HasError(options.Validate(), absl::StatusCode::kInvalidArgument, {"replicas_per_worker"}));
  options.replicas_per_worker = -1;
  EXPECT_TRUE(HasError(options.Validate(), absl::StatusCode::kInvalidArgument, {"replicas_per_worker"}));
}

TEST(CommunicationOptionsTest, SharedTensorsFromTheEnvironment) {
  ASSERT_EQ(unsetenv(kSharedTensorsEnv), 0);
  absl::StatusOr<bool> share = SharedTensorsFromEnvironment();
  ASSERT_TRUE(IsOk(share));
  EXPECT_TRUE(*share);  // the default
  for (const auto& [value, expected] : std::vector<std::pair<const char*, bool>>{{"on", true}, {"", true}, {"off", false}}) {
    ASSERT_EQ(setenv(kSharedTensorsEnv, value, 1), 0);
    share = SharedTensorsFromEnvironment();
    ASSERT_TRUE(IsOk(share)) << value;
    EXPECT_EQ(*share, expected) << value;
  }
  for (const char* bad : {"OFF", "0", "no", "offf"}) {
    ASSERT_EQ(setenv(kSharedTensorsEnv, bad, 1), 0);
    EXPECT_TRUE(HasError(SharedTensorsFromEnvironment(), absl::StatusCode::kInvalidArgument,
                         {"DIST_SHARED_TENSORS", "expected on or off"}))
        << bad;
  }
  ASSERT_EQ(unsetenv(kSharedTensorsEnv), 0);
}

}  // namespace
}  // namespace distribute
