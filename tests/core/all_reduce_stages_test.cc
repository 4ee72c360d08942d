// Small all-reduces from staged copies (all_reduce_stages.h): which calls fit, the agreement
// check on the signatures, the double buffering by generation, and, through a Mirrored
// strategy, that a staged call gives the same bits as the two-meeting path, that replicas
// which stage and replicas which do not still fail a disagreeing call together, and that
// thousands of back-to-back calls (replicas running a call ahead) never read a stale stage.
#include "core/collective/all_reduce_stages.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/collective/cross_device_ops.h"
#include "core/kernels/reduce_kernels.h"
#include "core/device/local_devices.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/strategy.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::FloatTensor;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::LoadFloat;
using ::distribute::testing::StoreFloat;
using ::distribute::testing::ZeroTensor;

// Stages over a barrier of their own (the records of small calls are its payloads).
struct Staged {
  explicit Staged(int32_t n) : barrier(n), stages(n, barrier) {}
  Barrier barrier;
  AllReduceStages stages;
};

PublishedCall AllReduceCall(ReduceOp op, const std::vector<Tensor>& inputs,
                            const std::vector<Tensor>& outputs) {
  return PublishedCall{.kind = CallKind::kAllReduce, .op = op, .inputs = inputs, .outputs = outputs};
}

TEST(AllReduceStagesTest, OnlySmallHostAllReducesFit) {
  const std::vector<Tensor> one = {ZeroTensor(DType::kFloat32, {2})};
  EXPECT_TRUE(AllReduceStages::Fits(AllReduceCall(ReduceOp::kSum, one, one)));
  // Exactly kMaxBytes fits; a byte more does not.
  constexpr int64_t kMax = static_cast<int64_t>(AllReduceStages::kMaxBytes);
  const std::vector<Tensor> full = {ZeroTensor(DType::kUInt8, {kMax})};
  const std::vector<Tensor> over = {ZeroTensor(DType::kUInt8, {kMax + 1})};
  EXPECT_TRUE(AllReduceStages::Fits(AllReduceCall(ReduceOp::kSum, full, full)));
  EXPECT_FALSE(AllReduceStages::Fits(AllReduceCall(ReduceOp::kSum, over, over)));
  // Each tensor starts on a 64-byte line: 1 byte + (kMaxBytes - 64) bytes is kMaxBytes
  // staged, one byte more is over.
  const std::vector<Tensor> padded = {ZeroTensor(DType::kUInt8, {1}), ZeroTensor(DType::kUInt8, {kMax - 64})};
  const std::vector<Tensor> padded_over = {ZeroTensor(DType::kUInt8, {1}),
                                           ZeroTensor(DType::kUInt8, {kMax - 63})};
  EXPECT_TRUE(AllReduceStages::Fits(AllReduceCall(ReduceOp::kSum, padded, padded)));
  EXPECT_FALSE(AllReduceStages::Fits(AllReduceCall(ReduceOp::kSum, padded_over, padded_over)));
  // Tensor count and dimensions.
  const std::vector<Tensor> eight(AllReduceStages::kMaxTensors, ZeroTensor(DType::kFloat32, {1}));
  const std::vector<Tensor> nine(AllReduceStages::kMaxTensors + 1, ZeroTensor(DType::kFloat32, {1}));
  EXPECT_TRUE(AllReduceStages::Fits(AllReduceCall(ReduceOp::kSum, eight, eight)));
  EXPECT_FALSE(AllReduceStages::Fits(AllReduceCall(ReduceOp::kSum, nine, nine)));
  const std::vector<Tensor> deep = {ZeroTensor(DType::kFloat32, std::vector<int64_t>(8, 1)),
                                    ZeroTensor(DType::kFloat32, std::vector<int64_t>(8, 1))};
  const std::vector<Tensor> deeper = {ZeroTensor(DType::kFloat32, std::vector<int64_t>(8, 1)),
                                      ZeroTensor(DType::kFloat32, std::vector<int64_t>(9, 1))};
  EXPECT_TRUE(AllReduceStages::Fits(AllReduceCall(ReduceOp::kSum, deep, deep)));
  EXPECT_FALSE(AllReduceStages::Fits(AllReduceCall(ReduceOp::kSum, deeper, deeper)));
  // Not an all-reduce, or no tensors, or outputs that do not pair with the inputs.
  PublishedCall gather = AllReduceCall(ReduceOp::kSum, one, one);
  gather.kind = CallKind::kAllGather;
  EXPECT_FALSE(AllReduceStages::Fits(gather));
  EXPECT_FALSE(AllReduceStages::Fits(AllReduceCall(ReduceOp::kSum, {}, {})));
  EXPECT_FALSE(AllReduceStages::Fits(AllReduceCall(ReduceOp::kSum, one, {})));
  EXPECT_TRUE(AllReduceStages::UsefulFor(2));
  EXPECT_FALSE(AllReduceStages::UsefulFor(1));
  EXPECT_FALSE(AllReduceStages::UsefulFor(AllReduceStages::kMaxReplicas + 1));
}

TEST(AllReduceStagesTest, ReducesEveryStageInReplicaOrderWithTheKernelsBits) {
  // 3 replicas, two tensors: float32 values whose sum depends on the order (1e8 + 1 - 1e8),
  // and float16 ones whose sums round (3003); the expected bits are ReduceRange's over the originals.
  constexpr int32_t n = 3;
  Staged staged(n);
  AllReduceStages& stages = staged.stages;
  std::vector<std::vector<Tensor>> inputs(n);
  const std::vector<double> big = {1e8, 1, -1e8};
  for (int32_t r = 0; r < n; ++r) {
    inputs[r] = {FloatTensor(DType::kFloat32, {big[r], 0.1 * r, -3.5}),
                 FloatTensor(DType::kFloat16, {0.125 * (r + 1), 1000.0 + r, 7, 0.0009765625}, {2, 2})};
  }
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    SCOPED_TRACE(ReduceOpName(op));
    const uint64_t generation = static_cast<uint64_t>(op) + 10;
    for (int32_t r = 0; r < n; ++r) {
      stages.Stage(r, generation, AllReduceCall(op, inputs[r], inputs[r]));
    }
    ASSERT_TRUE(stages.AllAgree(generation));
    const std::vector<Tensor> outputs = {ZeroTensor(DType::kFloat32, {3}), ZeroTensor(DType::kFloat16, {2, 2})};
    stages.Reduce(generation, op, outputs);
    for (size_t t = 0; t < outputs.size(); ++t) {
      const void* originals[n];
      for (int32_t r = 0; r < n; ++r) originals[r] = inputs[r][t].data();
      Tensor expected = ZeroTensor(outputs[t].dtype(), {static_cast<int64_t>(outputs[t].shape().num_elements())});
      void* destination = expected.data();
      ReduceRange(outputs[t].dtype(), op, originals, n, &destination, 1, 0,
                  static_cast<size_t>(outputs[t].shape().num_elements()), n);
      EXPECT_EQ(std::memcmp(outputs[t].data(), expected.data(), expected.byte_size()), 0) << "tensor " << t;
    }
  }
}

double Awkward(int32_t r, size_t i);  // order-sensitive values, below

TEST(AllReduceStagesTest, CallsInTheBarrierRecordAndInSlotsGiveTheKernelsBits) {
  // One-tensor calls whose signature and data fit the barrier record's payload (a scalar,
  // float32[8] exactly, [2, 3]) and calls past it that go to the slots (float32[9],
  // float64[4, 2], rank 5 and 6, float32[256]): each gives ReduceRange's bits over the
  // originals.
  constexpr int32_t n = 3;
  const std::vector<std::pair<DType, std::vector<int64_t>>> cases = {
      {DType::kFloat32, {}}, {DType::kFloat32, {8}}, {DType::kInt32, {2, 3}},
      {DType::kFloat32, {9}}, {DType::kFloat64, {4, 2}}, {DType::kFloat16, {1, 1, 1, 1, 3}},
      {DType::kFloat32, {1, 1, 1, 1, 1, 2}}, {DType::kFloat32, {256}}};
  Staged staged(n);
  uint64_t generation = 0;
  for (const auto& [dtype, dims] : cases) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax}) {
      SCOPED_TRACE(absl::StrCat(DTypeName(dtype), " rank ", dims.size(), " ", ReduceOpName(op)));
      std::vector<std::vector<Tensor>> inputs(n);
      for (int32_t r = 0; r < n; ++r) {
        Tensor t = ZeroTensor(dtype, dims);
        for (int64_t i = 0; i < t.shape().num_elements(); ++i) {
          // Exact in the dtype (the helper insists); float32/64 sums depend on the order.
          const double v = dtype == DType::kInt32     ? static_cast<double>(7 * r - i)
                           : dtype == DType::kFloat16 ? 0.25 * static_cast<double>(3 * r + i) - 1.0
                                                      : Awkward(r, static_cast<size_t>(i)) * 1e-6;
          StoreFloat(dtype, t.data(), static_cast<size_t>(i), v);
        }
        inputs[r] = {t};
        staged.stages.Stage(r, generation, AllReduceCall(op, inputs[r], inputs[r]));
      }
      ASSERT_TRUE(staged.stages.AllAgree(generation));
      const std::vector<Tensor> out = {ZeroTensor(dtype, dims)};
      staged.stages.Reduce(generation, op, out);
      const void* originals[n];
      for (int32_t r = 0; r < n; ++r) originals[r] = inputs[r][0].data();
      Tensor expected = ZeroTensor(dtype, dims);
      void* destination = expected.data();
      ReduceRange(dtype, op, originals, n, &destination, 1, 0, static_cast<size_t>(expected.shape().num_elements()), n);
      EXPECT_EQ(std::memcmp(out[0].data(), expected.data(), expected.byte_size()), 0);
      ++generation;
    }
  }
  // A call in the record on one replica and in a slot on another never agrees.
  const std::vector<Tensor> small = {ZeroTensor(DType::kFloat32, {8})};
  const std::vector<Tensor> large = {ZeroTensor(DType::kFloat32, {9})};
  staged.stages.Stage(0, generation, AllReduceCall(ReduceOp::kSum, small, small));
  staged.stages.Stage(1, generation, AllReduceCall(ReduceOp::kSum, large, large));
  staged.stages.Stage(2, generation, AllReduceCall(ReduceOp::kSum, small, small));
  EXPECT_FALSE(staged.stages.AllAgree(generation));
  // Nor do two slot calls of different shapes.
  ++generation;
  const std::vector<Tensor> larger = {ZeroTensor(DType::kFloat32, {10})};
  staged.stages.Stage(0, generation, AllReduceCall(ReduceOp::kSum, large, large));
  staged.stages.Stage(1, generation, AllReduceCall(ReduceOp::kSum, large, large));
  staged.stages.Stage(2, generation, AllReduceCall(ReduceOp::kSum, larger, larger));
  EXPECT_FALSE(staged.stages.AllAgree(generation));
}

TEST(AllReduceStagesTest, AnyDifferenceInTheCallOrAMissingStageDisagrees) {
  constexpr int32_t n = 2;
  const std::vector<Tensor> base = {ZeroTensor(DType::kFloat32, {4})};
  const std::vector<std::vector<Tensor>> others = {
      {ZeroTensor(DType::kFloat32, {5})},                                    // shape
      {ZeroTensor(DType::kFloat32, {4, 1})},                                 // rank
      {ZeroTensor(DType::kInt32, {4})},                                      // dtype
      {ZeroTensor(DType::kFloat32, {4}), ZeroTensor(DType::kFloat32, {4})},  // count
  };
  uint64_t generation = 0;
  for (const std::vector<Tensor>& other : others) {
    Staged staged(n);
  AllReduceStages& stages = staged.stages;
    stages.Stage(0, generation, AllReduceCall(ReduceOp::kSum, base, base));
    stages.Stage(1, generation, AllReduceCall(ReduceOp::kSum, other, other));
    EXPECT_FALSE(stages.AllAgree(generation)) << other[0].shape().rank() << " " << other.size();
    ++generation;
  }
  Staged staged(n);
  AllReduceStages& stages = staged.stages;
  stages.Stage(0, 7, AllReduceCall(ReduceOp::kSum, base, base));
  stages.Stage(1, 7, AllReduceCall(ReduceOp::kMean, base, base));
  EXPECT_FALSE(stages.AllAgree(7)) << "op";
  // Replica 1 staged nothing for generation 9 (its buffer of that parity holds 7).
  stages.Stage(0, 9, AllReduceCall(ReduceOp::kSum, base, base));
  EXPECT_FALSE(stages.AllAgree(9));
  EXPECT_FALSE(Staged(n).stages.AllAgree(0)) << "nothing staged yet";
}

TEST(AllReduceStagesTest, TheNextGenerationLeavesTheCurrentOneIntact) {
  constexpr int32_t n = 2;
  Staged staged(n);
  AllReduceStages& stages = staged.stages;
  const std::vector<Tensor> ones = {FloatTensor(DType::kFloat32, {1, 1})};
  const std::vector<Tensor> twos = {FloatTensor(DType::kFloat32, {2, 2})};
  for (int32_t r = 0; r < n; ++r) stages.Stage(r, 4, AllReduceCall(ReduceOp::kSum, ones, ones));
  // A replica that ran ahead stages generation 5 while another still reduces 4.
  stages.Stage(0, 5, AllReduceCall(ReduceOp::kSum, twos, twos));
  ASSERT_TRUE(stages.AllAgree(4));
  const std::vector<Tensor> out = {ZeroTensor(DType::kFloat32, {2})};
  stages.Reduce(4, ReduceOp::kSum, out);
  EXPECT_EQ(LoadFloat(DType::kFloat32, out[0].data(), 0), 2.0);
  EXPECT_EQ(LoadFloat(DType::kFloat32, out[0].data(), 1), 2.0);
}

// ---- Through a Mirrored strategy ----

std::shared_ptr<Strategy> Mirrored(int32_t n, const CrossDeviceOps& ops) {
  EXPECT_TRUE(IsOk(SetLogicalCpuDeviceCount(8)));
  std::vector<std::string> devices;
  for (int32_t i = 0; i < n; ++i) devices.push_back(absl::StrCat("CPU:", i));
  absl::StatusOr<std::shared_ptr<Strategy>> strategy = Strategy::CreateMirrored(devices, ops);
  EXPECT_TRUE(IsOk(strategy));
  return strategy.ok() ? *strategy : nullptr;
}

// Order-sensitive float32 values: replica r's element i.
double Awkward(int32_t r, size_t i) {
  const double scale[] = {1e8, 1.0, -1e8, 0.3};
  return scale[r % 4] * (1.0 + 0.001 * static_cast<double>(i % 13)) + 0.1 * static_cast<double>(r);
}

TEST(AllReduceStagesTest, AStagedCallGivesTheBitsOfTheTwoMeetingPath) {
  // 250 float32 (1000 bytes) are staged; 300 (1200 bytes) go the usual way. Their first
  // 250 elements are the same inputs and must give the same bits.
  for (const CrossDeviceOps& ops : {*CrossDeviceOps::SharedMemory(0), *CrossDeviceOps::ReductionToOneDevice("")}) {
    for (int32_t n : {2, 3, 4}) {
      SCOPED_TRACE(absl::StrCat(n, " replicas"));
      std::shared_ptr<Strategy> strategy = Mirrored(n, ops);
      ASSERT_NE(strategy, nullptr);
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kProduct}) {
        std::vector<std::optional<Tensor>> small(static_cast<size_t>(n)), large(static_cast<size_t>(n));
        const absl::Status run = strategy->Run([&](ReplicaContext& c) -> absl::Status {
          const int32_t r = c.replica_id();
          Tensor a = ZeroTensor(DType::kFloat32, {250}, c.device_name());
          Tensor b = ZeroTensor(DType::kFloat32, {300}, c.device_name());
          for (size_t i = 0; i < 300; ++i) {
            if (i < 250) StoreFloat(DType::kFloat32, a.data(), i, Awkward(r, i));
            StoreFloat(DType::kFloat32, b.data(), i, Awkward(r, i));
          }
          absl::StatusOr<Tensor> x = c.AllReduce(op, a);
          if (!x.ok()) return x.status();
          absl::StatusOr<Tensor> y = c.AllReduce(op, b);
          if (!y.ok()) return y.status();
          small[static_cast<size_t>(r)] = *std::move(x);
          large[static_cast<size_t>(r)] = *std::move(y);
          return absl::OkStatus();
        });
        ASSERT_TRUE(IsOk(run));
        for (int32_t r = 0; r < n; ++r) {
          ASSERT_TRUE(small[r].has_value() && large[0].has_value());
          EXPECT_EQ(std::memcmp(small[r]->data(), large[0]->data(), 1000), 0)
              << ReduceOpName(op) << ", replica " << r;
        }
      }
    }
  }
}

TEST(AllReduceStagesTest, AStagingAndANonStagingReplicaStillFailTogether) {
  std::shared_ptr<Strategy> strategy = Mirrored(2, *CrossDeviceOps::SharedMemory(0));
  ASSERT_NE(strategy, nullptr);
  std::vector<absl::Status> statuses(2);
  const absl::Status run = strategy->Run([&](ReplicaContext& c) -> absl::Status {
    // Replica 0's 8 bytes are staged, replica 1's 8000 are not.
    const int64_t size = c.replica_id() == 0 ? 2 : 2000;
    statuses[static_cast<size_t>(c.replica_id())] =
        c.AllReduce(ReduceOp::kSum, ZeroTensor(DType::kFloat32, {size}, c.device_name())).status();
    // The replicas go on to the next collective, a staged one.
    absl::StatusOr<Tensor> next =
        c.AllReduce(ReduceOp::kSum, FloatTensor(DType::kFloat32, {1.5, -2}));
    if (!next.ok()) return next.status();
    if (LoadFloat(DType::kFloat32, next->data(), 0) != 3.0 ||
        LoadFloat(DType::kFloat32, next->data(), 1) != -4.0) {
      return absl::InternalError("wrong sum after the disagreement");
    }
    return absl::OkStatus();
  });
  EXPECT_TRUE(IsOk(run));
  for (const absl::Status& status : statuses) {
    EXPECT_TRUE(HasError(status, absl::StatusCode::kInvalidArgument,
                         {"replica 0 called all_reduce(SUM) of 1 tensor(s) float32[2]",
                          "replica 1 called all_reduce(SUM) of 1 tensor(s) float32[2000]"}));
  }
}

TEST(AllReduceStagesTest, BackToBackCallsNeverReadAStaleStage) {
  // Every iteration's inputs differ, so a replica reading another's previous (or next)
  // stage gets a wrong sum. Other collectives in between move the generation's parity.
  constexpr int64_t kIterations = 20000;
  for (int32_t n : {2, 4}) {
    SCOPED_TRACE(absl::StrCat(n, " replicas"));
    std::shared_ptr<Strategy> strategy = Mirrored(n, *CrossDeviceOps::SharedMemory(0));
    ASSERT_NE(strategy, nullptr);
    const absl::Status run = strategy->Run([&](ReplicaContext& c) -> absl::Status {
      const int32_t r = c.replica_id();
      Tensor input = ZeroTensor(DType::kInt64, {3}, c.device_name());
      auto* v = static_cast<int64_t*>(input.data());
      for (int64_t i = 0; i < kIterations; ++i) {
        v[0] = i;
        v[1] = r;
        v[2] = i * (r + 1);
        absl::StatusOr<Tensor> sum = c.AllReduce(ReduceOp::kSum, input);
        if (!sum.ok()) return sum.status();
        const auto* s = static_cast<const int64_t*>(sum->data());
        const int64_t expected[3] = {n * i, n * (n - 1) / 2, i * n * (n + 1) / 2};
        for (int k = 0; k < 3; ++k) {
          if (s[k] != expected[k]) {
            return absl::InternalError(absl::StrCat("iteration ", i, " element ", k, ": ", s[k],
                                                    ", expected ", expected[k]));
          }
        }
        if (i % 7 == 3) RETURN_IF_ERROR(c.Sync());
        if (i % 11 == 5) {
          absl::StatusOr<Tensor> b = c.Broadcast(input, 0);
          if (!b.ok()) return b.status();
        }
      }
      return absl::OkStatus();
    });
    EXPECT_TRUE(IsOk(run)) << run;
  }
}

}  // namespace
}  // namespace distribute
