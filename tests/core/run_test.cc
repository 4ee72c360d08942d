// RunReplicas (Strategy.run over values): arguments unwrapped per replica, result slots
// merged as TF does; the replica-context guard and the rules for leaving a joined replica,
// which the C shim used to enforce itself.
#include "core/strategy/run.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/device/local_devices.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/strategy.h"
#include "core/strategy/thread_context.h"
#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"
#include "tests/core/strategy_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::LoadFloat;
using ::distribute::testing::StoreFloat;
using ::distribute::testing::ZeroTensor;

Tensor Scalar(double value, const std::string& device = "CPU:0") {
  Tensor t = ZeroTensor(DType::kFloat32, {}, device);
  StoreFloat(DType::kFloat32, t.data(), 0, value);
  return t;
}

double ScalarOf(const Value& value) {
  EXPECT_EQ(value.kind(), ValueKind::kTensor);
  return LoadFloat(DType::kFloat32, value.components().front().data(), 0);
}

class RunTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(4))); }

  static std::shared_ptr<Strategy> Mirrored(int32_t n) { return testing::MirroredOnCpus(n); }
};

// Replica r sees component r of a PerReplica argument and the tensor itself for a plain
// one; result 0 (r + 10 * arg) merges into a PerReplica value in replica order; result 1,
// filled by nobody, stays empty.
TEST_F(RunTest, UnwrapsArgumentsAndMergesResults) {
  std::shared_ptr<Strategy> strategy = Mirrored(3);
  absl::StatusOr<Value> per_replica =
      Value::PerReplica({Scalar(1, "CPU:0"), Scalar(2, "CPU:1"), Scalar(3, "CPU:2")});
  ASSERT_TRUE(IsOk(per_replica));
  const std::vector<Value> args = {*per_replica, Value(Scalar(100))};
  absl::StatusOr<std::vector<std::optional<Value>>> results = RunReplicas(
      *strategy, args, 2,
      [](ReplicaContext& context, std::span<const Value> replica_args,
         std::span<std::optional<Value>> slots) -> absl::Status {
        if (replica_args.size() != 2 || replica_args[0].kind() != ValueKind::kTensor ||
            replica_args[1].kind() != ValueKind::kTensor) {
          return absl::InternalError("arguments not unwrapped to tensors");
        }
        const double mine = LoadFloat(DType::kFloat32, replica_args[0].components().front().data(), 0);
        const double shared = LoadFloat(DType::kFloat32, replica_args[1].components().front().data(), 0);
        if (mine != context.replica_id() + 1 || shared != 100) return absl::InternalError("wrong values");
        slots[0] = Value(Scalar(context.replica_id() + 10 * mine));
        return absl::OkStatus();
      });
  ASSERT_TRUE(IsOk(results));
  ASSERT_EQ(results->size(), 2u);
  ASSERT_TRUE((*results)[0].has_value());
  EXPECT_FALSE((*results)[1].has_value());
  const Value& merged = *(*results)[0];
  ASSERT_EQ(merged.kind(), ValueKind::kPerReplica);
  ASSERT_EQ(merged.num_components(), 3);
  for (int32_t r = 0; r < 3; ++r) {
    absl::StatusOr<Value> component = merged.Component(r);
    ASSERT_TRUE(IsOk(component));
    EXPECT_EQ(ScalarOf(*component), r + 10.0 * (r + 1));
  }
}

// One replica: its result is returned as it is, not wrapped.
TEST_F(RunTest, OneReplicaResultIsTheValueItself) {
  std::shared_ptr<Strategy> strategy = Mirrored(1);
  absl::StatusOr<std::vector<std::optional<Value>>> results =
      RunReplicas(*strategy, {}, 1,
                  [](ReplicaContext&, std::span<const Value>, std::span<std::optional<Value>> slots) {
                    slots[0] = Value(Scalar(7));
                    return absl::OkStatus();
                  });
  ASSERT_TRUE(IsOk(results));
  EXPECT_EQ(ScalarOf(*(*results)[0]), 7.0);
}

TEST_F(RunTest, SlotFilledBySomeReplicasIsAnError) {
  std::shared_ptr<Strategy> strategy = Mirrored(2);
  absl::StatusOr<std::vector<std::optional<Value>>> results =
      RunReplicas(*strategy, {}, 1,
                  [](ReplicaContext& context, std::span<const Value>, std::span<std::optional<Value>> slots) {
                    if (context.replica_id() == 1) slots[0] = Value(Scalar(1));
                    return absl::OkStatus();
                  });
  EXPECT_TRUE(HasError(results, absl::StatusCode::kInvalidArgument,
                       {"result 0", "replica 1 returned a value but replica 0 did not"}));
}

TEST_F(RunTest, FirstReplicaErrorIsReturnedAndSlotsAreDropped) {
  std::shared_ptr<Strategy> strategy = Mirrored(2);
  absl::StatusOr<std::vector<std::optional<Value>>> results =
      RunReplicas(*strategy, {}, 1,
                  [](ReplicaContext& context, std::span<const Value>, std::span<std::optional<Value>> slots) {
                    slots[0] = Value(Scalar(1));
                    if (context.replica_id() == 1) return absl::NotFoundError("replica 1 failed");
                    return absl::OkStatus();
                  });
  EXPECT_TRUE(HasError(results, absl::StatusCode::kNotFound, {"replica 1 failed"}));
}

TEST_F(RunTest, RejectsBadArguments) {
  std::shared_ptr<Strategy> strategy = Mirrored(2);
  auto nothing = [](ReplicaContext&, std::span<const Value>, std::span<std::optional<Value>>) {
    return absl::OkStatus();
  };
  EXPECT_TRUE(HasError(RunReplicas(*strategy, {}, -1, nothing), absl::StatusCode::kInvalidArgument,
                       {"num_results is -1"}));
  // A PerReplica argument with the wrong number of components.
  absl::StatusOr<Value> three = Value::PerReplica({Scalar(1), Scalar(2), Scalar(3)});
  ASSERT_TRUE(IsOk(three));
  const std::vector<Value> args = {*three};
  EXPECT_TRUE(HasError(RunReplicas(*strategy, args, 0, nothing), absl::StatusCode::kInvalidArgument,
                       {"3 components", "2 replicas"}));
}

// The guard every context call starts with: only this thread's current replica context.
TEST_F(RunTest, CurrentReplicaContextGuard) {
  std::shared_ptr<Strategy> strategy = Mirrored(2);
  std::vector<ReplicaContext*> contexts(2, nullptr);
  std::vector<absl::Status> own(2), other(2);
  ASSERT_TRUE(IsOk(RunReplicas(*strategy, {}, 0,
                               [&](ReplicaContext& context, std::span<const Value>,
                                   std::span<std::optional<Value>>) {
                                 const auto r = static_cast<size_t>(context.replica_id());
                                 contexts[r] = &context;
                                 own[r] = RequireCurrentReplicaContext(context);
                                 return context.Sync();  // both contexts are recorded now
                               })));
  EXPECT_TRUE(IsOk(own[0]));
  EXPECT_TRUE(IsOk(own[1]));
  // With no scope this thread's context is the default one, not a finished run's.
  EXPECT_TRUE(IsOk(RequireCurrentReplicaContext(ReplicaContext::DefaultContext())));
  ReplicaContext stale(*strategy, 0, false);
  EXPECT_TRUE(HasError(RequireCurrentReplicaContext(stale), absl::StatusCode::kFailedPrecondition,
                       {"not this thread's current replica context"}));
  ASSERT_TRUE(IsOk(ThreadContext::Current().EnterScope(strategy)));
  EXPECT_TRUE(HasError(RequireCurrentReplicaContext(ReplicaContext::DefaultContext()),
                       absl::StatusCode::kFailedPrecondition));
  ASSERT_TRUE(IsOk(ThreadContext::Current().ExitScope(strategy.get())));
}

// Leaving a joined replica: only a joined context, on its thread, with no scope above it;
// a refused leave changes nothing, so the right one still works.
TEST_F(RunTest, LeaveReplicaRules) {
  std::shared_ptr<Strategy> strategy = Mirrored(1);
  ReplicaContext from_run(*strategy, 0, false);
  EXPECT_TRUE(HasError(strategy->LeaveReplica(from_run), absl::StatusCode::kFailedPrecondition,
                       {"handed to a replica function by run"}));
  absl::StatusOr<std::unique_ptr<ReplicaContext>> joined = strategy->JoinReplica(0);
  ASSERT_TRUE(IsOk(joined));
  ASSERT_TRUE(IsOk(ThreadContext::Current().EnterScope(strategy)));
  EXPECT_TRUE(HasError(strategy->LeaveReplica(**joined), absl::StatusCode::kFailedPrecondition,
                       {"every scope it entered"}));
  ASSERT_TRUE(IsOk(ThreadContext::Current().ExitScope(strategy.get())));
  EXPECT_EQ(ThreadContext::Current().replica_context(), joined->get());
  EXPECT_TRUE(IsOk(strategy->LeaveReplica(**joined)));
  EXPECT_EQ(ThreadContext::Current().replica_context(), &ReplicaContext::DefaultContext());
  // The replica id is free again.
  absl::StatusOr<std::unique_ptr<ReplicaContext>> again = strategy->JoinReplica(0);
  ASSERT_TRUE(IsOk(again));
  EXPECT_TRUE(IsOk(strategy->LeaveReplica(**again)));
}

// The strategy handle may be dropped while joined: the frame keeps it alive, and leaving
// releases it without touching freed memory (ASan checks).
TEST_F(RunTest, LeaveReleasesTheLastReference) {
  std::unique_ptr<ReplicaContext> joined;
  {
    std::shared_ptr<Strategy> strategy = Mirrored(1);
    absl::StatusOr<std::unique_ptr<ReplicaContext>> context = strategy->JoinReplica(0);
    ASSERT_TRUE(IsOk(context));
    joined = std::move(*context);
  }
  EXPECT_TRUE(IsOk(joined->strategy().LeaveReplica(*joined)));
}

}  // namespace
}  // namespace distribute
