// Variable (the state: copies, snapshots, assignments, compatibility errors) and the
// strategy's variable rules written out here from TF: replica-context writes aggregate
// with the variable's aggregation, SyncOnRead variables read as the aggregate of their
// copies and take value / copies for a SUM assignment in cross-replica context.
#include "core/values/variable.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "core/device/local_devices.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/strategy.h"
#include "core/strategy/thread_context.h"
#include "core/strategy/variable_ops.h"
#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::FloatsOf;
using ::distribute::testing::HasError;
using ::distribute::testing::IntsOf;
using ::distribute::testing::IsOk;
using ::distribute::testing::LoadFloat;
using ::distribute::testing::LoadInt;
using ::distribute::testing::NumElements;
using ::distribute::testing::RoundToHalf;
using ::distribute::testing::StoreFloat;
using ::distribute::testing::StoreInt;
using ::distribute::testing::ZeroTensor;

Tensor Floats(std::vector<double> values, std::vector<int64_t> dims = {},
              const std::string& device = "CPU:0", DType dtype = DType::kFloat32) {
  if (dims.empty()) dims = {static_cast<int64_t>(values.size())};
  Tensor t = ZeroTensor(dtype, dims, device);
  for (size_t i = 0; i < values.size(); ++i) StoreFloat(dtype, t.data(), i, values[i]);
  return t;
}

Tensor Ints(DType dtype, std::vector<int64_t> values, const std::string& device = "CPU:0") {
  Tensor t = ZeroTensor(dtype, {static_cast<int64_t>(values.size())}, device);
  for (size_t i = 0; i < values.size(); ++i) StoreInt(dtype, t.data(), i, values[i]);
  return t;
}

// A plain variable with one copy of `initial` (copied, so the variable owns its buffer).
std::shared_ptr<Variable> MakeVariable(const Tensor& initial, const std::string& name = "v",
                                       int copies = 1) {
  std::vector<Tensor> storage;
  for (int i = 0; i < copies; ++i) {
    absl::StatusOr<Tensor> copy = initial.CopyTo(absl::StrCat("CPU:", i));
    EXPECT_TRUE(IsOk(copy));
    storage.push_back(*copy);
  }
  return std::make_shared<Variable>(name, copies == 1 ? ValueKind::kVariable : ValueKind::kMirroredVariable,
                                    VariableSync::kOnWrite, VariableAggregation::kNone,
                                    std::move(storage), 0);
}

std::vector<double> Read(const Variable& v, int32_t copy = 0) {
  absl::StatusOr<Tensor> snapshot = v.Snapshot(copy);
  EXPECT_TRUE(IsOk(snapshot));
  return snapshot.ok() ? FloatsOf(*snapshot) : std::vector<double>{};
}

class VariableTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(4))); }
};

TEST_F(VariableTest, Properties) {
  std::shared_ptr<Variable> v = MakeVariable(Floats({1, 2, 3, 4}, {2, 2}), "weights", 2);
  EXPECT_EQ(v->name(), "weights");
  EXPECT_EQ(v->kind(), ValueKind::kMirroredVariable);
  EXPECT_EQ(v->sync(), VariableSync::kOnWrite);
  EXPECT_EQ(v->aggregation(), VariableAggregation::kNone);
  EXPECT_EQ(v->dtype(), DType::kFloat32);
  EXPECT_EQ(v->shape().dims(), (distribute::Dims{2, 2}));
  EXPECT_EQ(v->num_copies(), 2);
  EXPECT_EQ(v->device(0).index, 0);
  EXPECT_EQ(v->device(1).index, 1);
  EXPECT_EQ(v->strategy_id(), 0u);
}

TEST_F(VariableTest, SnapshotIsACopyThatNeverChanges) {
  std::shared_ptr<Variable> v = MakeVariable(Floats({1, 2, 3}));
  absl::StatusOr<Tensor> snapshot = v->Snapshot(0);
  ASSERT_TRUE(IsOk(snapshot));
  EXPECT_EQ(FloatsOf(*snapshot), (std::vector<double>{1, 2, 3}));
  absl::StatusOr<Tensor> second = v->Snapshot(0);
  ASSERT_TRUE(IsOk(second));
  EXPECT_NE(snapshot->data(), second->data()) << "snapshots share a buffer";
  // Writing the variable leaves the snapshot alone, and writing the snapshot the variable.
  ASSERT_TRUE(IsOk(v->Assign(0, Floats({7, 8, 9}))));
  EXPECT_EQ(FloatsOf(*snapshot), (std::vector<double>{1, 2, 3}));
  StoreFloat(DType::kFloat32, snapshot->data(), 0, -1);
  EXPECT_EQ(Read(*v), (std::vector<double>{7, 8, 9}));
}

TEST_F(VariableTest, AssignCopiesTheValue) {
  std::shared_ptr<Variable> v = MakeVariable(Floats({0, 0}));
  Tensor value = Floats({5, 6});
  ASSERT_TRUE(IsOk(v->Assign(0, value)));
  StoreFloat(DType::kFloat32, value.data(), 0, 100);  // the caller reuses its tensor
  EXPECT_EQ(Read(*v), (std::vector<double>{5, 6}));
}

TEST_F(VariableTest, AssignAddAndAssignSub) {
  std::shared_ptr<Variable> v = MakeVariable(Floats({1, 2, 3, 4}));
  ASSERT_TRUE(IsOk(v->AssignAdd(0, Floats({0.5, -1, 10, 0}))));
  EXPECT_EQ(Read(*v), (std::vector<double>{1.5, 1, 13, 4}));
  ASSERT_TRUE(IsOk(v->AssignSub(0, Floats({1.5, 1, 3, 8}))));
  EXPECT_EQ(Read(*v), (std::vector<double>{0, 0, 10, -4}));

  // Integers wrap.
  auto i8 = MakeVariable(Ints(DType::kInt8, {100, -128}));
  ASSERT_TRUE(IsOk(i8->AssignAdd(0, Ints(DType::kInt8, {100, 0}))));
  ASSERT_TRUE(IsOk(i8->AssignSub(0, Ints(DType::kInt8, {0, 1}))));
  absl::StatusOr<Tensor> i8_value = i8->Snapshot(0);
  ASSERT_TRUE(IsOk(i8_value));
  EXPECT_EQ(IntsOf(*i8_value), (std::vector<int64_t>{-56, 127}));
  auto u8 = MakeVariable(Ints(DType::kUInt8, {0}));
  ASSERT_TRUE(IsOk(u8->AssignSub(0, Ints(DType::kUInt8, {1}))));
  EXPECT_EQ(IntsOf(*u8->Snapshot(0)), (std::vector<int64_t>{255}));
  auto i64 = MakeVariable(Ints(DType::kInt64, {std::numeric_limits<int64_t>::max()}));
  ASSERT_TRUE(IsOk(i64->AssignAdd(0, Ints(DType::kInt64, {1}))));
  EXPECT_EQ(IntsOf(*i64->Snapshot(0)), (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));

  // float16 adds in float32 and rounds once: 2048 + 1 is a tie, to even (2048);
  // 2048 + 3 rounds to 2052.
  auto half = MakeVariable(Floats({2048, 2048}, {}, "CPU:0", DType::kFloat16));
  ASSERT_TRUE(IsOk(half->AssignAdd(0, Floats({1, 3}, {}, "CPU:0", DType::kFloat16))));
  EXPECT_EQ(Read(*half), (std::vector<double>{RoundToHalf(2049.0f), RoundToHalf(2051.0f)}));
  EXPECT_EQ(Read(*half), (std::vector<double>{2048, 2052}));
}

// A copy on a GPU is updated on the GPU (the CUDA plugin's kernels) with the CPU's bits,
// whether the delta lives on the same GPU, another one or the host.
TEST_F(VariableTest, AGpuCopyIsUpdatedInPlaceWithTheCpusArithmetic) {
  if (GpuRuntime::Get().device_count() == 0) GTEST_SKIP() << "no GPU: " << GpuRuntime::Get().unavailable_reason();
  const int32_t gpus = GpuRuntime::Get().device_count();
  auto on = [](const Tensor& t, const std::string& device) {
    absl::StatusOr<Tensor> copy = t.CopyTo(device);
    EXPECT_TRUE(IsOk(copy));
    return *copy;
  };
  auto gpu_variable = [&](const Tensor& initial) {
    return std::make_shared<Variable>("g", ValueKind::kVariable, VariableSync::kOnWrite,
                                      VariableAggregation::kNone, std::vector<Tensor>{on(initial, "GPU:0")}, 0);
  };
  const std::string other = gpus > 1 ? "GPU:1" : "GPU:0";
  auto Read = [&](const Variable& var) { return FloatsOf(on(*var.Snapshot(0), "CPU:0")); };
  std::shared_ptr<Variable> v = gpu_variable(Floats({1, 2, 3, 4}));
  ASSERT_TRUE(IsOk(v->AssignAdd(0, Floats({0.5, -1, 10, 0}))));                 // from the host
  EXPECT_EQ(Read(*v), (std::vector<double>{1.5, 1, 13, 4}));
  ASSERT_TRUE(IsOk(v->AssignSub(0, on(Floats({1.5, 1, 3, 8}), "GPU:0"))));      // beside it
  EXPECT_EQ(Read(*v), (std::vector<double>{0, 0, 10, -4}));
  ASSERT_TRUE(IsOk(v->AssignAdd(0, on(Floats({1, 1, 1, 1}), other))));         // another GPU
  EXPECT_EQ(Read(*v), (std::vector<double>{1, 1, 11, -3}));
  EXPECT_EQ(v->device(0).type, DeviceType::kGpu);

  auto i8 = gpu_variable(Ints(DType::kInt8, {100, -128}));
  ASSERT_TRUE(IsOk(i8->AssignAdd(0, Ints(DType::kInt8, {100, 0}))));
  ASSERT_TRUE(IsOk(i8->AssignSub(0, Ints(DType::kInt8, {0, 1}))));
  EXPECT_EQ(IntsOf(on(*i8->Snapshot(0), "CPU:0")), (std::vector<int64_t>{-56, 127}));
  auto u8 = gpu_variable(Ints(DType::kUInt8, {0}));
  ASSERT_TRUE(IsOk(u8->AssignSub(0, Ints(DType::kUInt8, {1}))));
  EXPECT_EQ(IntsOf(on(*u8->Snapshot(0), "CPU:0")), (std::vector<int64_t>{255}));
  auto i64 = gpu_variable(Ints(DType::kInt64, {std::numeric_limits<int64_t>::min()}));
  ASSERT_TRUE(IsOk(i64->AssignSub(0, Ints(DType::kInt64, {1}))));
  EXPECT_EQ(IntsOf(on(*i64->Snapshot(0), "CPU:0")), (std::vector<int64_t>{std::numeric_limits<int64_t>::max()}));

  // float16 and bfloat16 in float32, rounded once at the store: 2048 + 1 and 2052 - 0.5...
  // 2048 - 0.5 = 2047.5 ties (spacing 1 below 2048) and goes to the even neighbour.
  auto half = gpu_variable(Floats({2048, 2048}, {}, "CPU:0", DType::kFloat16));
  ASSERT_TRUE(IsOk(half->AssignAdd(0, Floats({1, 3}, {}, "CPU:0", DType::kFloat16))));
  EXPECT_EQ(Read(*half), (std::vector<double>{2048, 2052}));
  ASSERT_TRUE(IsOk(half->AssignSub(0, Floats({0.5, 4}, {}, "CPU:0", DType::kFloat16))));
  EXPECT_EQ(Read(*half), (std::vector<double>{RoundToHalf(2047.5f), RoundToHalf(2048.0f)}));
  auto bf16 = gpu_variable(Floats({1, 256}, {}, "CPU:0", DType::kBFloat16));
  ASSERT_TRUE(IsOk(bf16->AssignSub(0, Floats({0.25, 1}, {}, "CPU:0", DType::kBFloat16))));
  // The host's result for the same bits is the expectation.
  auto host = MakeVariable(Floats({1, 256}, {}, "CPU:0", DType::kBFloat16));
  ASSERT_TRUE(IsOk(host->AssignSub(0, Floats({0.25, 1}, {}, "CPU:0", DType::kBFloat16))));
  EXPECT_EQ(Read(*bf16), Read(*host));
}

TEST_F(VariableTest, BoolCannotBeAddedToOrSubtractedFrom) {
  auto b = MakeVariable(Ints(DType::kBool, {1, 0}), "flags");
  EXPECT_TRUE(HasError(b->AssignAdd(0, Ints(DType::kBool, {1, 1})),
                       absl::StatusCode::kInvalidArgument, {"'flags'", "bool"}));
  EXPECT_TRUE(HasError(b->AssignSub(0, Ints(DType::kBool, {1, 1})),
                       absl::StatusCode::kInvalidArgument, {"'flags'", "bool"}));
  EXPECT_EQ(IntsOf(*b->Snapshot(0)), (std::vector<int64_t>{1, 0}));
  ASSERT_TRUE(IsOk(b->Assign(0, Ints(DType::kBool, {0, 1}))));
  EXPECT_EQ(IntsOf(*b->Snapshot(0)), (std::vector<int64_t>{0, 1}));
}

TEST_F(VariableTest, IncompatibleValuesAreRejectedAndChangeNothing) {
  std::shared_ptr<Variable> v = MakeVariable(Floats({1, 2, 3, 4}, {2, 2}), "kernel");
  EXPECT_TRUE(IsOk(v->CheckCompatible(Floats({0, 0, 0, 0}, {2, 2}))));
  const Tensor wrong_dtype = ZeroTensor(DType::kInt32, {2, 2});
  const Tensor wrong_shape = Floats({0, 0, 0, 0});
  const Tensor wrong_rank = Floats({0, 0, 0, 0}, {1, 2, 2});
  EXPECT_TRUE(HasError(v->CheckCompatible(wrong_dtype), absl::StatusCode::kInvalidArgument,
                       {"variable 'kernel' is float32[2, 2]", "int32[2, 2]"}));
  EXPECT_TRUE(HasError(v->CheckCompatible(wrong_shape), absl::StatusCode::kInvalidArgument,
                       {"float32[2, 2]", "float32[4]"}));
  EXPECT_TRUE(HasError(v->CheckCompatible(wrong_rank), absl::StatusCode::kInvalidArgument,
                       {"float32[1, 2, 2]"}));
  for (const Tensor* bad : {&wrong_dtype, &wrong_shape, &wrong_rank}) {
    EXPECT_TRUE(HasError(v->Assign(0, *bad), absl::StatusCode::kInvalidArgument, {"'kernel'"}));
    EXPECT_TRUE(HasError(v->AssignAdd(0, *bad), absl::StatusCode::kInvalidArgument, {"'kernel'"}));
    EXPECT_TRUE(HasError(v->AssignSub(0, *bad), absl::StatusCode::kInvalidArgument, {"'kernel'"}));
  }
  EXPECT_EQ(Read(*v), (std::vector<double>{1, 2, 3, 4}));
}

TEST_F(VariableTest, CopiesOutOfRange) {
  std::shared_ptr<Variable> v = MakeVariable(Floats({1}), "x", 2);
  for (int32_t copy : {-1, 2, 100}) {
    EXPECT_TRUE(HasError(v->Snapshot(copy), absl::StatusCode::kOutOfRange,
                         {"'x' has 2 copies", absl::StrCat("no copy ", copy)}));
    EXPECT_TRUE(HasError(v->Assign(copy, Floats({1})), absl::StatusCode::kOutOfRange));
    EXPECT_TRUE(HasError(v->AssignAdd(copy, Floats({1})), absl::StatusCode::kOutOfRange));
    EXPECT_TRUE(HasError(v->AssignSub(copy, Floats({1})), absl::StatusCode::kOutOfRange));
  }
}

TEST_F(VariableTest, AssignAllWritesEveryCopyOrNone) {
  std::shared_ptr<Variable> v = MakeVariable(Floats({0, 0}), "m", 3);
  ASSERT_TRUE(IsOk(v->AssignAll({Floats({1, 2}), Floats({3, 4}), Floats({5, 6})})));
  EXPECT_EQ(Read(*v, 0), (std::vector<double>{1, 2}));
  EXPECT_EQ(Read(*v, 1), (std::vector<double>{3, 4}));
  EXPECT_EQ(Read(*v, 2), (std::vector<double>{5, 6}));
  absl::StatusOr<std::vector<Tensor>> all = v->SnapshotAll();
  ASSERT_TRUE(IsOk(all));
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ(FloatsOf((*all)[2]), (std::vector<double>{5, 6}));
  EXPECT_EQ((*all)[1].device().index, 1);

  EXPECT_TRUE(HasError(v->AssignAll({Floats({9, 9})}), absl::StatusCode::kInvalidArgument,
                       {"'m' has 3 copies but 1 values"}));
  // The last value is bad: the first two copies must stay as they were.
  EXPECT_TRUE(HasError(v->AssignAll({Floats({9, 9}), Floats({9, 9}), Floats({9, 9, 9})}),
                       absl::StatusCode::kInvalidArgument, {"float32[3]"}));
  EXPECT_EQ(Read(*v, 0), (std::vector<double>{1, 2}));
  EXPECT_EQ(Read(*v, 1), (std::vector<double>{3, 4}));
  EXPECT_EQ(Read(*v, 2), (std::vector<double>{5, 6}));
}

TEST_F(VariableTest, ConcurrentAssignAddsAreNotLost) {
  std::shared_ptr<Variable> v = MakeVariable(Ints(DType::kInt64, {0, 0}));
  const Tensor one = Ints(DType::kInt64, {1, 2});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) ASSERT_TRUE(IsOk(v->AssignAdd(0, one)));
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(IntsOf(*v->Snapshot(0)), (std::vector<int64_t>{8000, 16000}));
}

TEST_F(VariableTest, SyncAndAggregationFromInt) {
  EXPECT_EQ(*VariableSyncFromInt(0), VariableSync::kAuto);
  EXPECT_EQ(*VariableSyncFromInt(3), VariableSync::kOnRead);
  EXPECT_TRUE(HasError(VariableSyncFromInt(4), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(VariableSyncFromInt(-1), absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(*VariableAggregationFromInt(1), VariableAggregation::kSum);
  EXPECT_EQ(*VariableAggregationFromInt(3), VariableAggregation::kOnlyFirstReplica);
  EXPECT_TRUE(HasError(VariableAggregationFromInt(4), absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(VariableAggregationName(VariableAggregation::kMean), "MEAN");
  EXPECT_EQ(VariableAggregationName(VariableAggregation::kOnlyFirstReplica), "ONLY_FIRST_REPLICA");
}

// ---- the strategy's rules (variable_ops) ----

// Enters `strategy`'s scope on this thread for the lifetime of the object.
class ScopeGuard {
 public:
  explicit ScopeGuard(std::shared_ptr<Strategy> strategy) : strategy_(std::move(strategy)) {
    EXPECT_TRUE(IsOk(ThreadContext::Current().EnterScope(strategy_)));
  }
  ~ScopeGuard() { EXPECT_TRUE(IsOk(ThreadContext::Current().ExitScope(strategy_.get()))); }

 private:
  std::shared_ptr<Strategy> strategy_;
};

std::shared_ptr<Strategy> Mirrored(int32_t n) {
  std::vector<std::string> devices;
  for (int32_t i = 0; i < n; ++i) devices.push_back(absl::StrCat("CPU:", i));
  absl::StatusOr<std::shared_ptr<Strategy>> strategy = Strategy::CreateMirrored(devices, std::nullopt);
  EXPECT_TRUE(IsOk(strategy));
  return *strategy;
}

Value NewVariable(const std::shared_ptr<Strategy>& strategy, const Tensor& initial, VariableSync sync,
                  VariableAggregation aggregation, const std::string& name = "v") {
  ScopeGuard scope(strategy);
  absl::StatusOr<Value> variable = CreateVariable(initial, sync, aggregation, name);
  EXPECT_TRUE(IsOk(variable));
  return *variable;
}

std::vector<double> ReadCopy(const Value& variable, int32_t copy) {
  return Read(*variable.variable(), copy);
}

TEST_F(VariableTest, MirroredStrategyCreatesOneCopyPerReplica) {
  std::shared_ptr<Strategy> strategy = Mirrored(2);
  const Value on_write = NewVariable(strategy, Floats({1, 2}), VariableSync::kAuto,
                                     VariableAggregation::kNone, "w");
  EXPECT_EQ(on_write.kind(), ValueKind::kMirroredVariable);
  EXPECT_EQ(on_write.num_components(), 2);
  EXPECT_EQ(on_write.variable()->device(1), strategy->worker_devices()[1]);
  EXPECT_EQ(ReadCopy(on_write, 1), (std::vector<double>{1, 2}));
  const Value on_read = NewVariable(strategy, Floats({1, 2}), VariableSync::kOnRead,
                                    VariableAggregation::kSum, "r");
  EXPECT_EQ(on_read.kind(), ValueKind::kSyncOnReadVariable);
  // Names are made unique within the strategy.
  const Value again = NewVariable(strategy, Floats({1}), VariableSync::kAuto,
                                  VariableAggregation::kNone, "w");
  EXPECT_EQ(again.variable()->name(), "w_1");
  // A name a user took explicitly is skipped, as TF's unique names do.
  EXPECT_EQ(NewVariable(strategy, Floats({1}), VariableSync::kAuto, VariableAggregation::kNone, "w_2")
                .variable()->name(),
            "w_2");
  EXPECT_EQ(NewVariable(strategy, Floats({1}), VariableSync::kAuto, VariableAggregation::kNone, "w")
                .variable()->name(),
            "w_3");
  // Thousands of variables of one name (each suffix found at once, not by rescanning).
  std::string last;
  for (int i = 0; i < 3000; ++i) {
    last = NewVariable(strategy, Floats({1}), VariableSync::kAuto, VariableAggregation::kNone, "many")
               .variable()->name();
  }
  EXPECT_EQ(last, "many_2999");
  {
    ScopeGuard scope(strategy);
    EXPECT_TRUE(HasError(CreateVariable(Floats({1}), VariableSync::kNone,
                                        VariableAggregation::kNone, "n"),
                         absl::StatusCode::kInvalidArgument, {"NONE"}));
  }
}

// TF refuses an integer variable with MEAN aggregation when it is created (the mean of
// integer updates is not an integer); the refusal names the variable and the rule, and
// uses no name.
TEST_F(VariableTest, IntegerVariablesCannotHaveMeanAggregation) {
  std::shared_ptr<Strategy> strategy = Mirrored(2);
  ScopeGuard scope(strategy);
  for (DType dtype : {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64, DType::kUInt8}) {
    for (VariableSync sync : {VariableSync::kOnWrite, VariableSync::kOnRead}) {
      EXPECT_TRUE(HasError(CreateVariable(Ints(dtype, {1}), sync, VariableAggregation::kMean, "step"),
                           absl::StatusCode::kInvalidArgument,
                           {"variable 'step'", DTypeName(dtype), "MEAN aggregation needs a floating-point"}));
    }
  }
  // Floats and the other aggregations are fine; the failed calls took no name.
  absl::StatusOr<Value> mean = CreateVariable(Floats({1}), VariableSync::kOnWrite,
                                              VariableAggregation::kMean, "step");
  ASSERT_TRUE(IsOk(mean));
  EXPECT_EQ(mean->variable()->name(), "step");
  EXPECT_TRUE(IsOk(CreateVariable(Ints(DType::kInt64, {1}), VariableSync::kOnWrite,
                                  VariableAggregation::kSum, "count")));
}

// Every replica assigns its own value (replica r: r + 1) in replica context.
absl::Status AssignFromReplicas(Strategy& strategy, const Value& variable, AssignKind kind,
                                std::vector<absl::Status>* statuses = nullptr) {
  if (statuses != nullptr) statuses->assign(static_cast<size_t>(strategy.num_replicas()), absl::OkStatus());
  return strategy.Run([&](ReplicaContext& context) -> absl::Status {
    const double mine = context.replica_id() + 1;
    absl::Status status = AssignVariable(variable, Value(Floats({mine, 10 * mine})), kind);
    if (statuses != nullptr) (*statuses)[static_cast<size_t>(context.replica_id())] = status;
    return status;
  });
}

TEST_F(VariableTest, ReplicaContextAssignmentsAggregate) {
  std::shared_ptr<Strategy> strategy = Mirrored(3);
  // SUM: 1 + 2 + 3 on every copy.
  const Value sum = NewVariable(strategy, Floats({0, 0}), VariableSync::kOnWrite,
                                VariableAggregation::kSum, "sum");
  ASSERT_TRUE(IsOk(AssignFromReplicas(*strategy, sum, AssignKind::kAssign)));
  for (int32_t c = 0; c < 3; ++c) EXPECT_EQ(ReadCopy(sum, c), (std::vector<double>{6, 60})) << c;
  ASSERT_TRUE(IsOk(AssignFromReplicas(*strategy, sum, AssignKind::kAdd)));
  for (int32_t c = 0; c < 3; ++c) EXPECT_EQ(ReadCopy(sum, c), (std::vector<double>{12, 120})) << c;
  // MEAN: (1 + 2 + 3) / 3.
  const Value mean = NewVariable(strategy, Floats({10, 10}), VariableSync::kOnWrite,
                                 VariableAggregation::kMean, "mean");
  ASSERT_TRUE(IsOk(AssignFromReplicas(*strategy, mean, AssignKind::kSub)));
  for (int32_t c = 0; c < 3; ++c) EXPECT_EQ(ReadCopy(mean, c), (std::vector<double>{8, -10})) << c;
  // ONLY_FIRST_REPLICA: replica 0's value.
  const Value first = NewVariable(strategy, Floats({0, 0}), VariableSync::kOnWrite,
                                  VariableAggregation::kOnlyFirstReplica, "first");
  ASSERT_TRUE(IsOk(AssignFromReplicas(*strategy, first, AssignKind::kAssign)));
  for (int32_t c = 0; c < 3; ++c) EXPECT_EQ(ReadCopy(first, c), (std::vector<double>{1, 10})) << c;
  // NONE: an error on every replica, nothing written.
  const Value none = NewVariable(strategy, Floats({4, 4}), VariableSync::kOnWrite,
                                 VariableAggregation::kNone, "none");
  std::vector<absl::Status> statuses;
  EXPECT_TRUE(HasError(AssignFromReplicas(*strategy, none, AssignKind::kAssign, &statuses),
                       absl::StatusCode::kInvalidArgument, {"'none'", "aggregation NONE"}));
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_TRUE(HasError(statuses[r], absl::StatusCode::kInvalidArgument)) << "replica " << r;
  }
  for (int32_t c = 0; c < 3; ++c) EXPECT_EQ(ReadCopy(none, c), (std::vector<double>{4, 4})) << c;
}

TEST_F(VariableTest, SyncOnReadVariablesKeepPerReplicaCopiesAndReadTheAggregate) {
  std::shared_ptr<Strategy> strategy = Mirrored(2);
  const Value sum = NewVariable(strategy, Floats({0, 0}), VariableSync::kOnRead,
                                VariableAggregation::kSum, "acc");
  ASSERT_TRUE(IsOk(AssignFromReplicas(*strategy, sum, AssignKind::kAssign)));
  EXPECT_EQ(ReadCopy(sum, 0), (std::vector<double>{1, 10}));
  EXPECT_EQ(ReadCopy(sum, 1), (std::vector<double>{2, 20}));
  // In cross-replica context the read is the SUM of the copies ...
  absl::StatusOr<Tensor> total = ReadVariable(sum);
  ASSERT_TRUE(IsOk(total));
  EXPECT_EQ(FloatsOf(*total), (std::vector<double>{3, 30}));
  // ... and in replica context each replica reads its own copy.
  std::vector<std::vector<double>> seen(2);
  ASSERT_TRUE(IsOk(strategy->Run([&](ReplicaContext& c) -> absl::Status {
    absl::StatusOr<Tensor> mine = ReadVariable(sum);
    if (!mine.ok()) return mine.status();
    seen[static_cast<size_t>(c.replica_id())] = FloatsOf(*mine);
    return absl::OkStatus();
  })));
  EXPECT_EQ(seen[0], (std::vector<double>{1, 10}));
  EXPECT_EQ(seen[1], (std::vector<double>{2, 20}));
  // A cross-replica assignment of a SUM variable gives each copy value / copies, so that
  // the read gives the value back.
  ASSERT_TRUE(IsOk(AssignVariable(sum, Value(Floats({10, 3})), AssignKind::kAssign)));
  EXPECT_EQ(ReadCopy(sum, 0), (std::vector<double>{5, 1.5}));
  EXPECT_EQ(ReadCopy(sum, 1), (std::vector<double>{5, 1.5}));
  EXPECT_EQ(FloatsOf(*ReadVariable(sum)), (std::vector<double>{10, 3}));
  EXPECT_TRUE(HasError(AssignVariable(sum, Value(Floats({1, 1})), AssignKind::kAdd),
                       absl::StatusCode::kInvalidArgument, {"'acc'", "SUM"}));

  const Value mean = NewVariable(strategy, Floats({0, 0}), VariableSync::kOnRead,
                                 VariableAggregation::kMean, "avg");
  ASSERT_TRUE(IsOk(AssignFromReplicas(*strategy, mean, AssignKind::kAssign)));
  EXPECT_EQ(FloatsOf(*ReadVariable(mean)), (std::vector<double>{1.5, 15}));
  ASSERT_TRUE(IsOk(AssignVariable(mean, Value(Floats({4, 4})), AssignKind::kAssign)));
  EXPECT_EQ(ReadCopy(mean, 0), (std::vector<double>{4, 4}));
  ASSERT_TRUE(IsOk(AssignVariable(mean, Value(Floats({1, 2})), AssignKind::kAdd)));
  EXPECT_EQ(ReadCopy(mean, 1), (std::vector<double>{5, 6}));

  const Value none = NewVariable(strategy, Floats({0}), VariableSync::kOnRead,
                                 VariableAggregation::kNone, "raw");
  EXPECT_TRUE(HasError(ReadVariable(none), absl::StatusCode::kInvalidArgument, {"'raw'", "NONE"}));
}

TEST_F(VariableTest, CrossReplicaAssignmentOfMirroredVariables) {
  std::shared_ptr<Strategy> strategy = Mirrored(2);
  const Value v = NewVariable(strategy, Floats({0, 0}), VariableSync::kOnWrite,
                              VariableAggregation::kNone, "mv");
  // One value for every copy.
  ASSERT_TRUE(IsOk(AssignVariable(v, Value(Floats({1, 2})), AssignKind::kAssign)));
  EXPECT_EQ(ReadCopy(v, 0), (std::vector<double>{1, 2}));
  EXPECT_EQ(ReadCopy(v, 1), (std::vector<double>{1, 2}));
  // A Mirrored value: component i to copy i.
  absl::StatusOr<Value> mirrored = Value::Mirrored({Floats({3, 3}), Floats({4, 4}, {}, "CPU:1")});
  ASSERT_TRUE(IsOk(mirrored));
  ASSERT_TRUE(IsOk(AssignVariable(v, *mirrored, AssignKind::kAdd)));
  EXPECT_EQ(ReadCopy(v, 0), (std::vector<double>{4, 5}));
  EXPECT_EQ(ReadCopy(v, 1), (std::vector<double>{5, 6}));
  // A PerReplica value has no single meaning here.
  absl::StatusOr<Value> per_replica = Value::PerReplica({Floats({1, 1}), Floats({2, 2})});
  ASSERT_TRUE(IsOk(per_replica));
  EXPECT_TRUE(HasError(AssignVariable(v, *per_replica, AssignKind::kAssign),
                       absl::StatusCode::kInvalidArgument, {"PerReplica", "'mv'"}));
  // Incompatible: nothing written.
  EXPECT_TRUE(HasError(AssignVariable(v, Value(Floats({1, 2, 3})), AssignKind::kAssign),
                       absl::StatusCode::kInvalidArgument, {"'mv'"}));
  EXPECT_EQ(ReadCopy(v, 0), (std::vector<double>{4, 5}));
  // One copy through its component view.
  ASSERT_TRUE(IsOk(AssignVariable(Value::VariableComponent(v.variable(), 1), Value(Floats({9, 9})),
                                  AssignKind::kAssign)));
  EXPECT_EQ(ReadCopy(v, 0), (std::vector<double>{4, 5}));
  EXPECT_EQ(ReadCopy(v, 1), (std::vector<double>{9, 9}));
}

// Component snapshots and device names of a variable value, as the C API lends them out.
TEST_F(VariableTest, ComponentSnapshotIsACopyOfTheCopy) {
  Tensor initial = ZeroTensor(DType::kFloat32, {2});
  StoreFloat(DType::kFloat32, initial.data(), 0, 1.5);
  std::shared_ptr<Variable> variable = MakeVariable(initial, "w", 2);
  const Value whole = Value::OfVariable(variable);
  absl::StatusOr<Tensor> snapshot = whole.ComponentSnapshot(1);
  ASSERT_TRUE(IsOk(snapshot));
  EXPECT_EQ(FloatsOf(*snapshot), (std::vector<double>{1.5, 0}));
  EXPECT_EQ(snapshot->device_name(), "/device:CPU:1");
  // Writing the snapshot does not reach the variable.
  StoreFloat(DType::kFloat32, snapshot->data(), 0, 9);
  EXPECT_EQ(Read(*variable, 1), (std::vector<double>{1.5, 0}));
  EXPECT_TRUE(HasError(whole.ComponentSnapshot(2), absl::StatusCode::kOutOfRange, {"index 2"}));

  absl::StatusOr<const std::string*> name = whole.VariableDeviceName(1);
  ASSERT_TRUE(IsOk(name));
  EXPECT_EQ(**name, "/device:CPU:1");
  // A component view has one device: its copy's.
  const Value view = Value::VariableComponent(variable, 1);
  name = view.VariableDeviceName(0);
  ASSERT_TRUE(IsOk(name));
  EXPECT_EQ(**name, "/device:CPU:1");
  EXPECT_TRUE(HasError(view.VariableDeviceName(1), absl::StatusCode::kOutOfRange));
  EXPECT_TRUE(HasError(Value(initial).VariableDeviceName(0), absl::StatusCode::kInvalidArgument,
                       {"not a variable"}));
}

}  // namespace
}  // namespace distribute
