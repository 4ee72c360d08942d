// InputContext::Create: a caller-built context is validated; its batch split follows TF.
#include "core/input/input_context.h"

#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

TEST(InputContextTest, CreateValidates) {
  absl::StatusOr<InputContext> context = InputContext::Create(2, 1, 4);
  ASSERT_TRUE(IsOk(context));
  EXPECT_EQ(context->num_input_pipelines(), 2);
  EXPECT_EQ(context->input_pipeline_id(), 1);
  EXPECT_EQ(context->num_replicas_in_sync(), 4);
  absl::StatusOr<int64_t> per_replica = context->PerReplicaBatchSize(32);
  ASSERT_TRUE(IsOk(per_replica));
  EXPECT_EQ(*per_replica, 8);
  EXPECT_TRUE(HasError(InputContext::Create(0, 0, 1), absl::StatusCode::kInvalidArgument,
                       {"num_input_pipelines is 0"}));
  EXPECT_TRUE(HasError(InputContext::Create(2, 2, 1), absl::StatusCode::kInvalidArgument,
                       {"input_pipeline_id is 2", "0 to 1"}));
  EXPECT_TRUE(HasError(InputContext::Create(1, -1, 1), absl::StatusCode::kInvalidArgument,
                       {"input_pipeline_id"}));
  EXPECT_TRUE(HasError(InputContext::Create(1, 0, 0), absl::StatusCode::kInvalidArgument,
                       {"num_replicas_in_sync is 0"}));
}

}  // namespace
}  // namespace distribute
