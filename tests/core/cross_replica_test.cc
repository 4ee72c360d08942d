// Cross-replica operations (Strategy.reduce / gather, StrategyExtended.batch_reduce_to and
// update) against expectations written out here, including TF's rules: MEAN along an
// axis divides by the true element count of a partial batch, and a value that is the
// same on every replica (not PerReplica) reduced with SUM across several replicas is an
// error while MEAN returns it.
#include "core/strategy/cross_replica.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/device/local_devices.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/strategy.h"
#include "core/strategy/thread_context.h"
#include "core/strategy/variable_ops.h"
#include "core/values/variable.h"
#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"
#include "tests/core/strategy_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::LoadFloat;
using ::distribute::testing::NumElements;
using ::distribute::testing::RoundToHalf;
using ::distribute::testing::StoreFloat;
using ::distribute::testing::ZeroTensor;

Tensor Make(std::vector<double> values, std::vector<int64_t> dims = {}, DType dtype = DType::kFloat32,
            const std::string& device = "CPU:0") {
  if (dims.empty()) dims = {static_cast<int64_t>(values.size())};
  Tensor t = ZeroTensor(dtype, dims, device);
  EXPECT_EQ(NumElements(t), values.size());
  for (size_t i = 0; i < values.size(); ++i) StoreFloat(dtype, t.data(), i, values[i]);
  return t;
}

std::vector<double> ValuesOf(const Tensor& t) {
  std::vector<double> out;
  for (size_t i = 0; i < NumElements(t); ++i) out.push_back(LoadFloat(t.dtype(), t.data(), i));
  return out;
}

// The tensor of a result value.
const Tensor& TensorOf(const absl::StatusOr<Value>& value) {
  static const Tensor empty = ZeroTensor(DType::kFloat32, {0});
  if (!value.ok() || value->kind() != ValueKind::kTensor) {
    ADD_FAILURE() << "not a tensor value: "
                  << (value.ok() ? std::string(ValueKindName(value->kind())) : value.status().ToString());
    return empty;
  }
  return value->components().front();
}

Value PerReplica(std::vector<Tensor> components) {
  absl::StatusOr<Value> value = Value::PerReplica(std::move(components));
  EXPECT_TRUE(IsOk(value));
  return *value;
}

class CrossReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(4)));
    two_ = Make2();
  }

  static std::shared_ptr<Strategy> Mirrored(int32_t n) { return testing::MirroredOnCpus(n); }
  static std::shared_ptr<Strategy> Make2() { return Mirrored(2); }

  // A variable of `strategy` created in its scope.
  static Value NewVariable(const std::shared_ptr<Strategy>& strategy, const Tensor& initial,
                           VariableSync sync, VariableAggregation aggregation) {
    EXPECT_TRUE(IsOk(ThreadContext::Current().EnterScope(strategy)));
    absl::StatusOr<Value> variable = CreateVariable(initial, sync, aggregation, "var");
    EXPECT_TRUE(IsOk(ThreadContext::Current().ExitScope(strategy.get())));
    EXPECT_TRUE(IsOk(variable));
    return *variable;
  }

  std::shared_ptr<Strategy> two_;
};

// ---- Reduce with an axis: partial batches ----

TEST_F(CrossReplicaTest, MeanAlongTheBatchAxisOfAPartialBatchDividesByItsSize) {
  // The reference page's example: a global batch of 8 over 2 replicas; the last batch
  // holds only 6 examples, split 4 + 2. MEAN along axis 0 divides by 6, not by 8.
  const Value last_batch = PerReplica({Make({8, 9, 10, 11}), Make({12, 13}, {}, DType::kFloat32, "CPU:1")});
  absl::StatusOr<Value> mean = Reduce(*two_, ReduceOp::kMean, last_batch, 0);
  ASSERT_TRUE(IsOk(mean));
  EXPECT_EQ(TensorOf(mean).shape().rank(), 0);
  EXPECT_EQ(ValuesOf(TensorOf(mean)), (std::vector<double>{(8 + 9 + 10 + 11 + 12 + 13) / 6.0}));
  EXPECT_EQ(TensorOf(mean).device(), two_->worker_devices()[0]);

  absl::StatusOr<Value> sum = Reduce(*two_, ReduceOp::kSum, last_batch, 0);
  EXPECT_EQ(ValuesOf(TensorOf(sum)), (std::vector<double>{63}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMax, last_batch, 0))), (std::vector<double>{13}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMin, last_batch, -1))), (std::vector<double>{8}));

  // A full batch of 8, 4 + 4, divides by 8.
  const Value full_batch = PerReplica({Make({0, 1, 2, 3}), Make({4, 5, 6, 7})});
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, full_batch, 0))), (std::vector<double>{3.5}));

  // Without an axis the components must agree.
  EXPECT_TRUE(HasError(Reduce(*two_, ReduceOp::kMean, last_batch, std::nullopt),
                       absl::StatusCode::kInvalidArgument, {"component 1 is float32[2]", "float32[4]"}));
}

TEST_F(CrossReplicaTest, ReduceAlongAnAxisOfHigherRankTensors) {
  // [4, 2] and [2, 2] along axis 0: per column.
  const Value batch = PerReplica({Make({1, 10, 2, 20, 3, 30, 4, 40}, {4, 2}), Make({5, 50, 6, 60}, {2, 2})});
  absl::StatusOr<Value> mean = Reduce(*two_, ReduceOp::kMean, batch, 0);
  EXPECT_EQ(TensorOf(mean).shape().dims(), (distribute::Dims{2}));
  EXPECT_EQ(ValuesOf(TensorOf(mean)), (std::vector<double>{21 / 6.0, 210 / 6.0}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kProduct, batch, -2))),
            (std::vector<double>{720, 720e6}));
  // Along axis 1 the batch sizes would have to agree.
  EXPECT_TRUE(HasError(Reduce(*two_, ReduceOp::kSum, batch, 1), absl::StatusCode::kInvalidArgument,
                       {"may differ only along axis 1"}));
  EXPECT_TRUE(HasError(Reduce(*two_, ReduceOp::kSum, batch, 2), absl::StatusCode::kInvalidArgument,
                       {"axis 2 is out of range"}));
  // [2, 3] and [2, 1] along axis 1: rows.
  const Value wide = PerReplica({Make({1, 2, 3, 4, 5, 6}, {2, 3}), Make({7, 8}, {2, 1})});
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kSum, wide, 1))), (std::vector<double>{13, 23}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, wide, -1))),
            (std::vector<double>{13 / 4.0, 23 / 4.0}));
}

TEST_F(CrossReplicaTest, ReduceAlongAnAxisInOtherDTypes) {
  // int32 MEAN is TF's truediv, a float64: (1 + 2 + 2) / 3 and (-1 - 2 - 2) / 3
  // (strategy.reduce(MEAN, v, axis=0) -> tf.float64 [1.6666666666666667, -1.6666666666666667]).
  const Value ints = PerReplica({Make({1, -1, 2, -2}, {2, 2}, DType::kInt32), Make({2, -2}, {1, 2}, DType::kInt32)});
  EXPECT_EQ(TensorOf(Reduce(*two_, ReduceOp::kMean, ints, 0)).dtype(), DType::kFloat64);
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, ints, 0))),
            (std::vector<double>{5.0 / 3.0, -5.0 / 3.0}));
  // int16 divides in float32 (tf.constant(5, tf.int16) / 3 is float32).
  const Value shorts = PerReplica({Make({1, 2}, {}, DType::kInt16), Make({2}, {}, DType::kInt16)});
  EXPECT_EQ(TensorOf(Reduce(*two_, ReduceOp::kMean, shorts, 0)).dtype(), DType::kFloat32);
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, shorts, 0))),
            (std::vector<double>{static_cast<double>(5.0f / 3.0f)}));
  // float16 accumulates in float32: 2048 + 1 + 1 + 2 = 2052 even though 2049 is no half,
  // and the mean (513) is exact.
  const Value halves = PerReplica({Make({2048, 1}, {}, DType::kFloat16), Make({1, 2}, {}, DType::kFloat16)});
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kSum, halves, 0))), (std::vector<double>{2052}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, halves, 0))), (std::vector<double>{513}));
  // bool: MIN is and, MAX or; SUM is undefined.
  const Value bools = PerReplica({Make({1, 1}, {}, DType::kBool), Make({0}, {}, DType::kBool)});
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMin, bools, 0))), (std::vector<double>{0}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMax, bools, 0))), (std::vector<double>{1}));
  EXPECT_TRUE(HasError(Reduce(*two_, ReduceOp::kSum, bools, 0), absl::StatusCode::kInvalidArgument,
                       {"bool"}));
}

TEST_F(CrossReplicaTest, AReplicaWithAnEmptyBatchContributesNothing) {
  // The last global batch can leave a replica with no examples at all.
  const Value floats = PerReplica({Make({3, 5, 7}), Make({}, {0})});
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, floats, 0))), (std::vector<double>{5}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kSum, floats, 0))), (std::vector<double>{15}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMin, floats, 0))), (std::vector<double>{3}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMax, floats, 0))), (std::vector<double>{7}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kProduct, floats, 0))), (std::vector<double>{105}));
  // The same with integers: the empty replica must not drag MIN down or MAX up.
  for (DType dtype : {DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64, DType::kUInt8}) {
    SCOPED_TRACE(testing::Name(dtype));
    const Value ints = PerReplica({Make({3, 5, 7}, {}, dtype), Make({}, {0}, dtype)});
    EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMin, ints, 0))), (std::vector<double>{3}));
    EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMax, ints, 0))), (std::vector<double>{7}));
    EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kSum, ints, 0))), (std::vector<double>{15}));
    EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, ints, 0))), (std::vector<double>{5}));
    if (dtype != DType::kUInt8) {
      const Value negative = PerReplica({Make({-3, -5, -7}, {}, dtype), Make({}, {0}, dtype)});
      EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMax, negative, 0))),
                (std::vector<double>{-3}));
      EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMin, negative, 0))),
                (std::vector<double>{-7}));
    }
  }
  // Nothing at all: MEAN is 0 / 0, NaN for floats and (a float64 NaN) for integers.
  const Value nothing = PerReplica({Make({}, {0}), Make({}, {0})});
  absl::StatusOr<Value> nan = Reduce(*two_, ReduceOp::kMean, nothing, 0);
  ASSERT_EQ(ValuesOf(TensorOf(nan)).size(), 1u);
  EXPECT_TRUE(std::isnan(ValuesOf(TensorOf(nan))[0]));
  const Value no_ints = PerReplica({Make({}, {0}, DType::kInt32), Make({}, {0}, DType::kInt32)});
  absl::StatusOr<Value> int_nan = Reduce(*two_, ReduceOp::kMean, no_ints, 0);
  ASSERT_EQ(ValuesOf(TensorOf(int_nan)).size(), 1u);
  EXPECT_EQ(TensorOf(int_nan).dtype(), DType::kFloat64);
  EXPECT_TRUE(std::isnan(ValuesOf(TensorOf(int_nan))[0]));
}

TEST_F(CrossReplicaTest, ANonPerReplicaValueAlongAnAxisCountsOncePerReplica) {
  // TF reduces it on every replica, then across them.
  const Value same = Value(Make({1, 2, 3}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kSum, same, 0))), (std::vector<double>{12}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, same, 0))), (std::vector<double>{2}));
}

// ---- Reduce without an axis ----

TEST_F(CrossReplicaTest, ReducePerReplicaValuesElementWise) {
  const Value value = PerReplica({Make({1, 2, 3}), Make({10, 20, 30}, {}, DType::kFloat32, "CPU:1")});
  absl::StatusOr<Value> sum = Reduce(*two_, ReduceOp::kSum, value, std::nullopt);
  EXPECT_EQ(ValuesOf(TensorOf(sum)), (std::vector<double>{11, 22, 33}));
  EXPECT_EQ(TensorOf(sum).device(), two_->worker_devices()[0]);
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, value, std::nullopt))),
            (std::vector<double>{5.5, 11, 16.5}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMin, value, std::nullopt))),
            (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kProduct, value, std::nullopt))),
            (std::vector<double>{10, 40, 90}));
  // The inputs are left alone.
  EXPECT_EQ(ValuesOf(value.components()[0]), (std::vector<double>{1, 2, 3}));
  // A component count other than the replica count.
  const Value three = PerReplica({Make({1}), Make({2}), Make({3})});
  EXPECT_TRUE(HasError(Reduce(*two_, ReduceOp::kSum, three, std::nullopt),
                       absl::StatusCode::kInvalidArgument, {"3 components", "2 replicas"}));
  // Integer MEAN is a float64, as TF's truediv gives: {-7, 7} and {0, 0} -> {-3.5, 3.5}.
  const Value ints = PerReplica({Make({-7, 7}, {}, DType::kInt32), Make({0, 0}, {}, DType::kInt32)});
  EXPECT_EQ(TensorOf(Reduce(*two_, ReduceOp::kMean, ints, std::nullopt)).dtype(), DType::kFloat64);
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, ints, std::nullopt))),
            (std::vector<double>{-3.5, 3.5}));
  // float16: 1 + 2^-11 computed in float32 and rounded once (a tie, to even: 1).
  const Value halves = PerReplica({Make({1}, {}, DType::kFloat16), Make({std::ldexp(1.0, -11)}, {}, DType::kFloat16)});
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kSum, halves, std::nullopt))),
            (std::vector<double>{RoundToHalf(1.0f + std::ldexp(1.0f, -11))}));
}

TEST_F(CrossReplicaTest, NonPerReplicaValueWithSumAcrossReplicasIsInvalidButMeanReturnsIt) {
  // TF: a value that is the same on every replica has no defined SUM across several
  // replicas; MEAN (and MIN / MAX) give the value itself.
  const Value tensor = Value(Make({1, 2}));
  EXPECT_TRUE(HasError(Reduce(*two_, ReduceOp::kSum, tensor, std::nullopt),
                       absl::StatusCode::kInvalidArgument, {"SUM", "2 replicas", "PerReplica"}));
  EXPECT_TRUE(HasError(Reduce(*two_, ReduceOp::kProduct, tensor, std::nullopt),
                       absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, tensor, std::nullopt))),
            (std::vector<double>{1, 2}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMin, tensor, std::nullopt))),
            (std::vector<double>{1, 2}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMax, tensor, std::nullopt))),
            (std::vector<double>{1, 2}));
  // Mirrored values and mirrored variables follow the same rule.
  absl::StatusOr<Value> mirrored = Value::Mirrored({Make({4}), Make({4}, {}, DType::kFloat32, "CPU:1")});
  ASSERT_TRUE(IsOk(mirrored));
  EXPECT_TRUE(HasError(Reduce(*two_, ReduceOp::kSum, *mirrored, std::nullopt),
                       absl::StatusCode::kInvalidArgument, {"Mirrored"}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, *mirrored, std::nullopt))),
            (std::vector<double>{4}));
  const Value variable = NewVariable(two_, Make({5, 6}), VariableSync::kOnWrite, VariableAggregation::kNone);
  EXPECT_TRUE(HasError(Reduce(*two_, ReduceOp::kSum, variable, std::nullopt),
                       absl::StatusCode::kInvalidArgument, {"MirroredVariable"}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kMean, variable, std::nullopt))),
            (std::vector<double>{5, 6}));
  // A SyncOnRead variable is per-replica: its copies are summed.
  const Value on_read = NewVariable(two_, Make({5, 6}), VariableSync::kOnRead, VariableAggregation::kSum);
  ASSERT_TRUE(IsOk(on_read.variable()->Assign(1, Make({1, 1}, {}, DType::kFloat32, "CPU:1"))));
  // Copy 0 holds the initial value (TF gives each copy the initial value).
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kSum, on_read, std::nullopt))),
            (std::vector<double>{6, 7}));
  // With one replica SUM is that value.
  std::shared_ptr<Strategy> one = Mirrored(1);
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*one, ReduceOp::kSum, tensor, std::nullopt))),
            (std::vector<double>{1, 2}));
  // bool cannot be summed either way.
  EXPECT_TRUE(HasError(Reduce(*one, ReduceOp::kSum, Value(Make({1}, {}, DType::kBool)), std::nullopt),
                       absl::StatusCode::kInvalidArgument, {"bool"}));
}

TEST_F(CrossReplicaTest, ReduceInsideAReplicaFunctionIsFailedPrecondition) {
  const Value value = PerReplica({Make({1}), Make({2})});
  std::vector<absl::Status> seen(2);
  ASSERT_TRUE(IsOk(two_->Run([&](ReplicaContext& c) -> absl::Status {
    seen[static_cast<size_t>(c.replica_id())] = Reduce(*two_, ReduceOp::kSum, value, std::nullopt).status();
    return absl::OkStatus();
  })));
  for (const absl::Status& s : seen) {
    EXPECT_TRUE(HasError(s, absl::StatusCode::kFailedPrecondition, {"reduce", "cross-replica"}));
  }
}

// ---- Gather ----

TEST_F(CrossReplicaTest, GatherConcatenatesComponents) {
  const Value rows = PerReplica({Make({1, 2, 3, 4, 5, 6}, {2, 3}), Make({7, 8, 9}, {1, 3})});
  absl::StatusOr<Value> gathered = Gather(*two_, rows, 0);
  EXPECT_EQ(TensorOf(gathered).shape().dims(), (distribute::Dims{3, 3}));
  EXPECT_EQ(ValuesOf(TensorOf(gathered)), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(TensorOf(gathered).device(), two_->worker_devices()[0]);

  const Value cols = PerReplica({Make({1, 2}, {2, 1}), Make({3, 4, 5, 6}, {2, 2})});
  absl::StatusOr<Value> by_col = Gather(*two_, cols, -1);
  EXPECT_EQ(TensorOf(by_col).shape().dims(), (distribute::Dims{2, 3}));
  EXPECT_EQ(ValuesOf(TensorOf(by_col)), (std::vector<double>{1, 3, 4, 2, 5, 6}));

  // An empty component.
  const Value with_empty = PerReplica({Make({}, {0, 2}), Make({1, 2}, {1, 2})});
  EXPECT_EQ(ValuesOf(TensorOf(Gather(*two_, with_empty, 0))), (std::vector<double>{1, 2}));

  // A value that is the same everywhere is gathered once per replica.
  absl::StatusOr<Value> repeated = Gather(*two_, Value(Make({1, 2})), 0);
  EXPECT_EQ(ValuesOf(TensorOf(repeated)), (std::vector<double>{1, 2, 1, 2}));

  EXPECT_TRUE(HasError(Gather(*two_, PerReplica({Make({1}, {1, 1}), Make({1, 2}, {1, 2})}), 0),
                       absl::StatusCode::kInvalidArgument, {"may differ only along axis 0"}));
  EXPECT_TRUE(HasError(Gather(*two_, PerReplica({Make({1}, {1}), Make({1}, {1}, DType::kInt32)}), 0),
                       absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(Gather(*two_, PerReplica({Make({1}, {1}), Make({1}, {1})}), 1),
                       absl::StatusCode::kInvalidArgument, {"axis 1"}));
  const std::vector<int64_t> scalar;
  EXPECT_TRUE(HasError(Gather(*two_, PerReplica({ZeroTensor(DType::kFloat32, scalar),
                                                 ZeroTensor(DType::kFloat32, scalar)}), 0),
                       absl::StatusCode::kInvalidArgument, {"scalar"}));
}

// ---- BatchReduceTo ----

TEST_F(CrossReplicaTest, BatchReduceToPlacesResultsOnTheirDestinations) {
  const Value x = PerReplica({Make({1, 2}), Make({3, 4}, {}, DType::kFloat32, "CPU:1")});
  const Value y = PerReplica({Make({10}), Make({20}, {}, DType::kFloat32, "CPU:1")});
  const Value variable = NewVariable(two_, Make({0}), VariableSync::kOnWrite, VariableAggregation::kSum);
  absl::StatusOr<Destinations> to_cpu1 = DestinationsOf("CPU:1");
  ASSERT_TRUE(IsOk(to_cpu1));
  ASSERT_EQ(to_cpu1->size(), 1u);
  absl::StatusOr<Destinations> to_variable = DestinationsOf(variable);
  ASSERT_TRUE(IsOk(to_variable));
  ASSERT_EQ(to_variable->size(), 2u);
  const Value values[] = {x, y};
  const Destinations destinations[] = {*to_cpu1, *to_variable};
  absl::StatusOr<std::vector<Value>> results = BatchReduceTo(*two_, ReduceOp::kSum, values, destinations);
  ASSERT_TRUE(IsOk(results));
  ASSERT_EQ(results->size(), 2u);
  // One destination: a tensor there.
  ASSERT_EQ((*results)[0].kind(), ValueKind::kTensor);
  EXPECT_EQ(ValuesOf((*results)[0].components()[0]), (std::vector<double>{4, 6}));
  EXPECT_EQ((*results)[0].components()[0].device(), (*to_cpu1)[0]);
  // Several: a Mirrored value with a copy on each.
  ASSERT_EQ((*results)[1].kind(), ValueKind::kMirrored);
  ASSERT_EQ((*results)[1].num_components(), 2);
  for (int32_t i = 0; i < 2; ++i) {
    const Tensor& copy = (*results)[1].components()[static_cast<size_t>(i)];
    EXPECT_EQ(ValuesOf(copy), (std::vector<double>{30}));
    EXPECT_EQ(copy.device(), two_->worker_devices()[static_cast<size_t>(i)]);
  }
  EXPECT_NE((*results)[1].components()[0].data(), (*results)[1].components()[1].data());

  // MEAN, and the destinations of a PerReplica value are its components' devices.
  absl::StatusOr<Destinations> of_x = DestinationsOf(x);
  ASSERT_TRUE(IsOk(of_x));
  const Destinations one_destination[] = {*of_x};
  const Value just_x[] = {x};
  absl::StatusOr<std::vector<Value>> mean = BatchReduceTo(*two_, ReduceOp::kMean, just_x, one_destination);
  ASSERT_TRUE(IsOk(mean));
  EXPECT_EQ(ValuesOf((*mean)[0].components()[1]), (std::vector<double>{2, 3}));

  // Errors name the value.
  const Value bad[] = {x, Value(Make({1}))};
  EXPECT_TRUE(HasError(BatchReduceTo(*two_, ReduceOp::kSum, bad, destinations),
                       absl::StatusCode::kInvalidArgument, {"value 1"}));
  EXPECT_FALSE(DestinationsOf("CPU:9").ok());
  EXPECT_FALSE(DestinationsOf("not a device").ok());
}

TEST_F(CrossReplicaTest, DefaultStrategyReturnsValuesUnchanged) {
  const std::shared_ptr<Strategy>& strategy = Strategy::Default();
  const Tensor t = Make({1, 2, 3});
  const Value values[] = {Value(t)};
  absl::StatusOr<Destinations> destinations = DestinationsOf(values[0]);
  ASSERT_TRUE(IsOk(destinations));
  const Destinations to[] = {*destinations};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
    absl::StatusOr<std::vector<Value>> results = BatchReduceTo(*strategy, op, values, to);
    ASSERT_TRUE(IsOk(results));
    ASSERT_EQ((*results)[0].kind(), ValueKind::kTensor);
    EXPECT_EQ((*results)[0].components()[0].data(), t.data()) << "the value was copied";
    EXPECT_EQ(ValuesOf((*results)[0].components()[0]), (std::vector<double>{1, 2, 3}));
  }
}

// ---- Update ----

TEST_F(CrossReplicaTest, UpdateRunsOncePerCopyAndGroupsTheResults) {
  const Value variable = NewVariable(two_, Make({1, 2}), VariableSync::kOnWrite, VariableAggregation::kNone);
  const Value delta = Value(Make({10, 20}));
  std::vector<int32_t> components;
  std::vector<bool> in_update;
  auto add = [&](const Value& target, std::span<const Value> args) -> absl::StatusOr<std::optional<Value>> {
    components.push_back(target.component_index());
    in_update.push_back(ThreadContext::Current().in_update());
    absl::Status status = AssignVariable(target, args[0], AssignKind::kAdd);
    if (!status.ok()) return status;
    absl::StatusOr<Tensor> now = ReadVariable(target);
    if (!now.ok()) return now.status();
    return std::optional<Value>(Value(*now));
  };
  const Value args[] = {delta};
  absl::StatusOr<std::optional<Value>> grouped = Update(*two_, variable, add, args, true);
  ASSERT_TRUE(IsOk(grouped));
  ASSERT_TRUE(grouped->has_value());
  EXPECT_EQ((*grouped)->kind(), ValueKind::kMirrored);
  ASSERT_EQ((*grouped)->num_components(), 2);
  EXPECT_EQ(ValuesOf((*grouped)->components()[0]), (std::vector<double>{11, 22}));
  EXPECT_EQ(ValuesOf((*grouped)->components()[1]), (std::vector<double>{11, 22}));
  EXPECT_EQ(components, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(in_update, (std::vector<bool>{true, true}));
  EXPECT_FALSE(ThreadContext::Current().in_update());

  absl::StatusOr<std::optional<Value>> ungrouped = Update(*two_, variable, add, args, false);
  ASSERT_TRUE(IsOk(ungrouped));
  ASSERT_TRUE(ungrouped->has_value());
  EXPECT_EQ((*ungrouped)->kind(), ValueKind::kPerReplica);
  EXPECT_EQ(ValuesOf((*ungrouped)->components()[1]), (std::vector<double>{21, 42}));

  // A Mirrored argument: copy i gets component i.
  absl::StatusOr<Value> per_copy = Value::Mirrored({Make({1, 1}), Make({2, 2}, {}, DType::kFloat32, "CPU:1")});
  ASSERT_TRUE(IsOk(per_copy));
  const Value mirrored_args[] = {*per_copy};
  ASSERT_TRUE(IsOk(Update(*two_, variable, add, mirrored_args, true)));
  EXPECT_EQ(ValuesOf(*variable.variable()->Snapshot(0)), (std::vector<double>{22, 43}));
  EXPECT_EQ(ValuesOf(*variable.variable()->Snapshot(1)), (std::vector<double>{23, 44}));

  // Nothing returned: nothing.
  auto quiet = [](const Value&, std::span<const Value>) -> absl::StatusOr<std::optional<Value>> {
    return std::optional<Value>();
  };
  absl::StatusOr<std::optional<Value>> none = Update(*two_, variable, quiet, {}, true);
  ASSERT_TRUE(IsOk(none));
  EXPECT_FALSE(none->has_value());
}

TEST_F(CrossReplicaTest, UpdateErrors) {
  const Value variable = NewVariable(two_, Make({1}), VariableSync::kOnWrite, VariableAggregation::kNone);
  auto identity = [](const Value&, std::span<const Value> args) -> absl::StatusOr<std::optional<Value>> {
    if (args.empty()) return std::optional<Value>();
    return std::optional<Value>(args[0]);
  };
  const Value per_replica[] = {PerReplica({Make({1}), Make({2})})};
  EXPECT_TRUE(HasError(Update(*two_, variable, identity, per_replica, true),
                       absl::StatusCode::kInvalidArgument, {"args[0]", "per-replica"}));
  absl::StatusOr<Value> three = Value::Mirrored({Make({1}), Make({1}), Make({1})});
  ASSERT_TRUE(IsOk(three));
  const Value wrong_count[] = {*three};
  EXPECT_TRUE(HasError(Update(*two_, variable, identity, wrong_count, true),
                       absl::StatusCode::kInvalidArgument, {"3 components", "2 copies"}));
  const Value not_a_variable = Value(Make({1}));
  EXPECT_TRUE(HasError(Update(*two_, not_a_variable, identity, {}, true),
                       absl::StatusCode::kInvalidArgument, {"needs a variable"}));
  // A result for one copy only.
  int calls = 0;
  auto first_only = [&](const Value&, std::span<const Value>) -> absl::StatusOr<std::optional<Value>> {
    if (calls++ == 0) return std::optional<Value>(Value(Make({0})));
    return std::optional<Value>();
  };
  EXPECT_TRUE(HasError(Update(*two_, variable, first_only, {}, true), absl::StatusCode::kInvalidArgument,
                       {"copy 1"}));
  // The function's error comes back.
  auto failing = [](const Value&, std::span<const Value>) -> absl::StatusOr<std::optional<Value>> {
    return absl::UnavailableError("device lost");
  };
  EXPECT_TRUE(HasError(Update(*two_, variable, failing, {}, true), absl::StatusCode::kUnavailable,
                       {"device lost"}));
  EXPECT_FALSE(ThreadContext::Current().in_update());
  // Not from a replica function.
  absl::Status inside;
  ASSERT_TRUE(IsOk(two_->Run([&](ReplicaContext& c) -> absl::Status {
    if (c.replica_id() == 0) inside = Update(*two_, variable, identity, {}, true).status();
    return absl::OkStatus();
  })));
  EXPECT_TRUE(HasError(inside, absl::StatusCode::kFailedPrecondition, {"update"}));
}

TEST_F(CrossReplicaTest, UpdateOfASingleCopyVariable) {
  absl::StatusOr<std::shared_ptr<Strategy>> central = Strategy::CreateCentralStorage({"CPU:0", "CPU:1"}, "");
  ASSERT_TRUE(IsOk(central));
  const Value variable = NewVariable(*central, Make({1}), VariableSync::kOnWrite, VariableAggregation::kNone);
  ASSERT_EQ(variable.num_components(), 1);
  int calls = 0;
  auto add = [&](const Value& target, std::span<const Value> args) -> absl::StatusOr<std::optional<Value>> {
    ++calls;
    absl::Status status = AssignVariable(target, args[0], AssignKind::kAdd);
    if (!status.ok()) return status;
    absl::StatusOr<Tensor> now = ReadVariable(target);
    if (!now.ok()) return now.status();
    return std::optional<Value>(Value(*now));
  };
  const Value args[] = {Value(Make({5}))};
  absl::StatusOr<std::optional<Value>> result = Update(**central, variable, add, args, true);
  ASSERT_TRUE(IsOk(result));
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(result->has_value());
  EXPECT_EQ((*result)->kind(), ValueKind::kTensor);
  EXPECT_EQ(ValuesOf((*result)->components()[0]), (std::vector<double>{6}));
}

TEST_F(CrossReplicaTest, DistributeValuesFromFunction) {
  absl::StatusOr<Value> value =
      DistributeValuesFromFunction(*two_, [](int32_t r, int32_t n) -> absl::StatusOr<std::optional<Value>> {
        EXPECT_EQ(n, 2);
        return Value(Make({static_cast<double>(r)}, {}, DType::kFloat32, absl::StrCat("CPU:", r)));
      });
  ASSERT_TRUE(IsOk(value));
  EXPECT_EQ(value->kind(), ValueKind::kPerReplica);
  EXPECT_EQ(ValuesOf(value->components()[1]), (std::vector<double>{1}));
  EXPECT_EQ(ValuesOf(TensorOf(Reduce(*two_, ReduceOp::kSum, *value, std::nullopt))), (std::vector<double>{1}));
}

TEST_F(CrossReplicaTest, DistributeValuesFromFunctionNamesTheReplicaAtFault) {
  EXPECT_TRUE(HasError(DistributeValuesFromFunction(
                           *two_, [](int32_t r, int32_t) -> absl::StatusOr<std::optional<Value>> {
                             if (r == 1) return std::nullopt;
                             return Value(Make({0}, {}));
                           }),
                       absl::StatusCode::kInvalidArgument, {"fn for replica 1 stored no value"}));
  const Value variable = NewVariable(two_, Make({0}, {}), VariableSync::kOnWrite, VariableAggregation::kSum);
  EXPECT_TRUE(HasError(DistributeValuesFromFunction(
                           *two_, [&](int32_t, int32_t) -> absl::StatusOr<std::optional<Value>> {
                             return variable;
                           }),
                       absl::StatusCode::kInvalidArgument, {"fn for replica 0", "not a tensor"}));
}

// value_container, variable_created_in_scope and colocate_vars_with, as the C API calls them.
TEST_F(CrossReplicaTest, ValueContainerCreatedInScopeAndColocation) {
  const Value variable = NewVariable(two_, Make({0}, {}), VariableSync::kOnWrite, VariableAggregation::kSum);
  absl::StatusOr<Value> copy = variable.Component(1);
  ASSERT_TRUE(IsOk(copy));
  const Value container = ValueContainer(*copy);
  EXPECT_EQ(container.variable(), variable.variable());
  EXPECT_EQ(container.component_index(), -1);
  const Value tensor(Make({1}, {}));
  EXPECT_EQ(ValueContainer(tensor).components().front().data(), tensor.components().front().data());

  absl::StatusOr<bool> created = VariableCreatedInScope(*two_, variable);
  ASSERT_TRUE(IsOk(created));
  EXPECT_TRUE(*created);
  std::shared_ptr<Strategy> other = Mirrored(2);
  created = VariableCreatedInScope(*other, variable);
  ASSERT_TRUE(IsOk(created));
  EXPECT_FALSE(*created);
  EXPECT_TRUE(HasError(VariableCreatedInScope(*two_, tensor), absl::StatusCode::kInvalidArgument,
                       {"not a variable"}));

  EXPECT_TRUE(HasError(ColocateVarsWithEnter(*two_, variable), absl::StatusCode::kFailedPrecondition,
                       {"scope"}));
  ASSERT_TRUE(IsOk(ThreadContext::Current().EnterScope(two_)));
  EXPECT_TRUE(HasError(ColocateVarsWithEnter(*two_, tensor), absl::StatusCode::kInvalidArgument,
                       {"not a variable"}));
  ASSERT_TRUE(IsOk(ColocateVarsWithEnter(*two_, variable)));
  EXPECT_EQ(ThreadContext::Current().colocation().size(), 2u);
  ASSERT_TRUE(IsOk(ThreadContext::Current().ColocateExit(two_.get())));
  ASSERT_TRUE(IsOk(ThreadContext::Current().ExitScope(two_.get())));
}

}  // namespace
}  // namespace distribute
