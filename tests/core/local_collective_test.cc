// In-process collectives through a Mirrored strategy's replica contexts (and LocalCollective
// directly, for in-place all-reduce and typed merge): every all-reduce algorithm against a reference
// computed here in double / int64, bit-identical results on every replica, agreement
// errors naming the replicas, all_gather, broadcast and merge_call.
#include "core/collective/local_collective.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/collective/cross_device_ops.h"
#include "core/device/local_devices.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/strategy.h"
#include "core/values/value.h"
#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsFloating;
using ::distribute::testing::IsOk;
using ::distribute::testing::LoadFloat;
using ::distribute::testing::LoadInt;
using ::distribute::testing::Name;
using ::distribute::testing::NumElements;
using ::distribute::testing::RoundFloatTo;
using ::distribute::testing::StoreFloat;
using ::distribute::testing::StoreInt;
using ::distribute::testing::WrapTo;
using ::distribute::testing::ZeroTensor;

const ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax,
                            ReduceOp::kProduct};

std::vector<std::string> CpuDevices(int32_t n) {
  std::vector<std::string> devices;
  for (int32_t i = 0; i < n; ++i) devices.push_back(absl::StrCat("CPU:", i));
  return devices;
}

std::shared_ptr<Strategy> Mirrored(int32_t n, std::optional<CrossDeviceOps> ops = std::nullopt) {
  EXPECT_TRUE(IsOk(SetLogicalCpuDeviceCount(8)));
  absl::StatusOr<std::shared_ptr<Strategy>> strategy = Strategy::CreateMirrored(CpuDevices(n), ops);
  EXPECT_TRUE(IsOk(strategy));
  return strategy.ok() ? *strategy : nullptr;
}

struct Algorithm {
  std::string name;
  CrossDeviceOps ops;
};

std::vector<Algorithm> AllAlgorithms() {
  std::vector<Algorithm> all;
  all.push_back({"SharedMemory(256)", *CrossDeviceOps::SharedMemory(256)});
  all.push_back({"SharedMemory(default)", *CrossDeviceOps::SharedMemory(0)});
  all.push_back({"ReductionToOneDevice(CPU:1)", *CrossDeviceOps::ReductionToOneDevice("CPU:1")});
  all.push_back({"ReductionToOneDevice()", *CrossDeviceOps::ReductionToOneDevice("")});
  all.push_back({"HierarchicalCopy(1)", *CrossDeviceOps::HierarchicalCopy(1)});
  all.push_back({"HierarchicalCopy(3)", *CrossDeviceOps::HierarchicalCopy(3)});
  return all;
}

// Runs `fn` on every replica; returns run's status and each replica's own.
struct RunResult {
  absl::Status run;
  std::vector<absl::Status> replicas;
};

template <typename Fn>
RunResult RunReplicas(Strategy& strategy, Fn&& fn) {
  RunResult result;
  result.replicas.resize(static_cast<size_t>(strategy.num_replicas()));
  result.run = strategy.Run([&](ReplicaContext& context) -> absl::Status {
    absl::Status status = fn(context);
    result.replicas[static_cast<size_t>(context.replica_id())] = status;
    return status;
  });
  return result;
}

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// The element `i` of tensor `t` on replica `r`: multiples of 0.5 in [-4, 4] for floats
// (so that float32 sums and products over up to five replicas are exact), integers in
// [-20, 20] ([0, 40] for uint8, so that sums fit even int8), 0 / 1 for bool.
double ValueFor(DType dtype, int32_t r, size_t t, size_t i) {
  const uint64_t h = Mix((static_cast<uint64_t>(r) << 48) ^ (static_cast<uint64_t>(t) << 32) ^ i);
  if (IsFloating(dtype)) return 0.5 * (static_cast<int64_t>(h % 17) - 8);
  if (dtype == DType::kBool) return static_cast<double>(h % 2);
  if (dtype == DType::kUInt8) return static_cast<double>(h % 41);
  return static_cast<double>(static_cast<int64_t>(h % 41) - 20);
}

Tensor Filled(DType dtype, const std::vector<int64_t>& dims, int32_t r, size_t t,
              const std::string& device) {
  Tensor tensor = ZeroTensor(dtype, dims, device);
  for (size_t i = 0; i < NumElements(tensor); ++i) {
    StoreFloat(dtype, tensor.data(), i, ValueFor(dtype, r, t, i));
  }
  return tensor;
}

// The reduction of element i over n replicas, as the dtype then holds it (a double that
// compares exactly with the decoded output).
double Reference(DType dtype, ReduceOp op, int32_t n, size_t t, size_t i) {
  if (dtype == DType::kBool) {
    bool all = true, any = false;
    for (int32_t r = 0; r < n; ++r) {
      all = all && ValueFor(dtype, r, t, i) != 0;
      any = any || ValueFor(dtype, r, t, i) != 0;
    }
    return op == ReduceOp::kMin ? all : any;
  }
  double sum = 0, product = 1, lo = INFINITY, hi = -INFINITY;
  for (int32_t r = 0; r < n; ++r) {
    const double v = ValueFor(dtype, r, t, i);
    sum += v;
    product *= v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (IsFloating(dtype)) {
    if (dtype == DType::kFloat64) {
      switch (op) {
        case ReduceOp::kSum: return sum;
        case ReduceOp::kMean: return sum / n;
        case ReduceOp::kMin: return lo;
        case ReduceOp::kMax: return hi;
        case ReduceOp::kProduct: return product;
      }
    }
    float acc = 0;
    switch (op) {
      case ReduceOp::kSum: acc = static_cast<float>(sum); break;
      case ReduceOp::kMean: acc = static_cast<float>(sum) / static_cast<float>(n); break;
      case ReduceOp::kMin: acc = static_cast<float>(lo); break;
      case ReduceOp::kMax: acc = static_cast<float>(hi); break;
      case ReduceOp::kProduct: acc = static_cast<float>(product); break;
    }
    return RoundFloatTo(dtype, acc);  // float32 accumulator, rounded once
  }
  const auto exact_sum = static_cast<int64_t>(sum);
  switch (op) {
    case ReduceOp::kSum: return static_cast<double>(WrapTo(dtype, exact_sum));
    case ReduceOp::kMean: {
      // TF: add_n wraps in the dtype, then truediv (float32 for 8- and 16-bit integers,
      // float64 for wider ones); one replica returns the value itself.
      const int64_t wrapped = WrapTo(dtype, exact_sum);
      if (n == 1) return static_cast<double>(wrapped);
      if (DTypeSize(dtype) <= 2) {
        return static_cast<double>(static_cast<float>(wrapped) / static_cast<float>(n));
      }
      return static_cast<double>(wrapped) / static_cast<double>(n);
    }
    case ReduceOp::kMin: return lo;
    case ReduceOp::kMax: return hi;
    case ReduceOp::kProduct: {
      uint64_t p = 1;
      for (int32_t r = 0; r < n; ++r) p *= static_cast<uint64_t>(static_cast<int64_t>(ValueFor(dtype, r, t, i)));
      return static_cast<double>(WrapTo(dtype, static_cast<int64_t>(p)));
    }
  }
  return 0;
}

struct Spec {
  DType dtype;
  std::vector<int64_t> dims;
};

// Different dtypes and sizes: single elements, sizes that are not multiples of 64 bytes,
// and tensors larger than a 256-byte pack.
const std::vector<Spec>& MixedSpecs() {
  static const std::vector<Spec> specs = {
      {DType::kFloat32, {1}},       {DType::kFloat64, {7}},     {DType::kInt32, {300}},
      {DType::kFloat16, {33}},      {DType::kBFloat16, {2, 500}}, {DType::kInt8, {17}},
      {DType::kUInt8, {65}},        {DType::kInt16, {3, 43}},   {DType::kInt64, {3}},
      {DType::kFloat32, {5, 13}},   {DType::kFloat16, {1}},     {DType::kInt8, {1}},
      {DType::kFloat32, {1000}},
  };
  return specs;
}

// Every replica all-reduces `specs` with `op`; checks each output against the reference
// and that all replicas hold the same bytes.
void CheckAllReduce(Strategy& strategy, const std::vector<Spec>& specs, ReduceOp op) {
  const int32_t n = strategy.num_replicas();
  std::vector<std::vector<Tensor>> outputs(static_cast<size_t>(n));
  const RunResult result = RunReplicas(strategy, [&](ReplicaContext& context) -> absl::Status {
    std::vector<Tensor> inputs;
    for (size_t t = 0; t < specs.size(); ++t) {
      inputs.push_back(Filled(specs[t].dtype, specs[t].dims, context.replica_id(), t,
                              context.device_name()));
    }
    absl::StatusOr<std::vector<Tensor>> reduced = context.BatchAllReduce(op, inputs);
    if (!reduced.ok()) return reduced.status();
    outputs[static_cast<size_t>(context.replica_id())] = *std::move(reduced);
    return absl::OkStatus();
  });
  ASSERT_TRUE(IsOk(result.run));
  for (int32_t r = 0; r < n; ++r) {
    const std::vector<Tensor>& mine = outputs[static_cast<size_t>(r)];
    ASSERT_EQ(mine.size(), specs.size());
    for (size_t t = 0; t < specs.size(); ++t) {
      const Tensor& out = mine[t];
      const DType out_dtype = n > 1 ? ReducedDType(specs[t].dtype, op) : specs[t].dtype;
      ASSERT_EQ(out.dtype(), out_dtype);
      ASSERT_EQ(out.shape().dims(), distribute::Dims(specs[t].dims.begin(), specs[t].dims.end()));
      EXPECT_EQ(out.device(), strategy.worker_devices()[static_cast<size_t>(r)])
          << "replica " << r << " tensor " << t;
      if (r == 0) {
        for (size_t i = 0; i < NumElements(out); ++i) {
          const double expected = Reference(specs[t].dtype, op, n, t, i);
          const double actual = specs[t].dtype == DType::kBool
                                    ? static_cast<double>(LoadInt(DType::kBool, out.data(), i))
                                    : LoadFloat(out_dtype, out.data(), i);
          ASSERT_EQ(actual, expected) << "tensor " << t << " (" << Name(specs[t].dtype)
                                      << ") element " << i;
        }
      } else {
        const Tensor& first = outputs[0][t];
        ASSERT_TRUE(out.byte_size() == 0 || std::memcmp(out.data(), first.data(), out.byte_size()) == 0)
            << "replica " << r << " tensor " << t << " differs from replica 0";
      }
    }
  }
}

TEST(LocalCollectiveAllReduceTest, EveryAlgorithmMatchesTheReference) {
  for (const Algorithm& algorithm : AllAlgorithms()) {
    for (int32_t n : {1, 2, 3, 4, 5}) {
      std::shared_ptr<Strategy> strategy = Mirrored(n, algorithm.ops);
      ASSERT_NE(strategy, nullptr);
      for (ReduceOp op : kAllOps) {
        SCOPED_TRACE(algorithm.name + " n=" + std::to_string(n) + " " +
                     std::string(ReduceOpName(op)));
        CheckAllReduce(*strategy, MixedSpecs(), op);
        if (HasFatalFailure()) return;
      }
      // bool: MIN is logical and, MAX logical or.
      const std::vector<Spec> bools = {{DType::kBool, {1}}, {DType::kBool, {300}}};
      for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
        SCOPED_TRACE(algorithm.name + " n=" + std::to_string(n) + " bool " +
                     std::string(ReduceOpName(op)));
        CheckAllReduce(*strategy, bools, op);
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(LocalCollectiveAllReduceTest, SingleTensorsAndEmptyBatches) {
  for (const Algorithm& algorithm : AllAlgorithms()) {
    SCOPED_TRACE(algorithm.name);
    std::shared_ptr<Strategy> strategy = Mirrored(3, algorithm.ops);
    ASSERT_NE(strategy, nullptr);
    CheckAllReduce(*strategy, {{DType::kFloat32, {1}}}, ReduceOp::kSum);
    CheckAllReduce(*strategy, {{DType::kInt64, {2, 2, 2}}}, ReduceOp::kMax);
    CheckAllReduce(*strategy, {{DType::kFloat32, {0}}, {DType::kInt32, {4}}}, ReduceOp::kSum);
    CheckAllReduce(*strategy, {}, ReduceOp::kSum);
    // Several runs of collectives on the same strategy keep working.
    for (int i = 0; i < 3; ++i) CheckAllReduce(*strategy, MixedSpecs(), ReduceOp::kMean);
  }
}

TEST(LocalCollectiveAllReduceTest, ArbitraryFloatsAreCloseToTheReferenceAndIdenticalOnEveryReplica) {
  for (const Algorithm& algorithm : AllAlgorithms()) {
    for (int32_t n : {3, 5}) {
      SCOPED_TRACE(algorithm.name + " n=" + std::to_string(n));
      std::shared_ptr<Strategy> strategy = Mirrored(n, algorithm.ops);
      ASSERT_NE(strategy, nullptr);
      constexpr size_t kCount = 1001;
      // values[r][i], the replicas' inputs as doubles.
      std::vector<std::vector<float>> values(static_cast<size_t>(n), std::vector<float>(kCount));
      std::mt19937 rng(42 + n);
      std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
      for (auto& v : values) {
        for (float& x : v) x = dist(rng);
      }
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
        std::vector<std::optional<Tensor>> outputs(static_cast<size_t>(n));
        const RunResult result = RunReplicas(*strategy, [&](ReplicaContext& context) -> absl::Status {
          Tensor input = ZeroTensor(DType::kFloat32, {static_cast<int64_t>(kCount)},
                                    context.device_name());
          std::memcpy(input.data(), values[static_cast<size_t>(context.replica_id())].data(),
                      kCount * sizeof(float));
          absl::StatusOr<Tensor> out = context.AllReduce(op, input);
          if (!out.ok()) return out.status();
          outputs[static_cast<size_t>(context.replica_id())] = *out;
          return absl::OkStatus();
        });
        ASSERT_TRUE(IsOk(result.run));
        for (size_t i = 0; i < kCount; ++i) {
          double sum = 0;
          for (int32_t r = 0; r < n; ++r) sum += values[static_cast<size_t>(r)][i];
          const double expected = op == ReduceOp::kMean ? sum / n : sum;
          const float actual = static_cast<const float*>(outputs[0]->data())[i];
          ASSERT_NEAR(actual, expected, 1e-3) << "element " << i;
        }
        for (int32_t r = 1; r < n; ++r) {
          ASSERT_EQ(std::memcmp(outputs[static_cast<size_t>(r)]->data(), outputs[0]->data(),
                                kCount * sizeof(float)),
                    0)
              << "replica " << r << " differs from replica 0";
        }
      }
    }
  }
}

// Integer sums wrap in every algorithm; MEAN must not: the double reference of the mean
// of 100 and 100 is 100, whatever the storage dtype.
// TF sums integers in their dtype (add_n wraps) and averages with truediv:
// tf.constant(100, tf.int8) + 100 is -56, and (-56) / 2 is float32 -28.0.
TEST(LocalCollectiveAllReduceTest, IntegerSumsWrapAndMeansDivideTheWrappedSumAsTf) {
  for (const Algorithm& algorithm : AllAlgorithms()) {
    SCOPED_TRACE(algorithm.name);
    std::shared_ptr<Strategy> strategy = Mirrored(2, algorithm.ops);
    ASSERT_NE(strategy, nullptr);
    struct Case {
      DType dtype;
      int64_t value;
      ReduceOp op;
      double expected;
    };
    const Case cases[] = {
        {DType::kInt8, 100, ReduceOp::kSum, -56},
        {DType::kInt8, 100, ReduceOp::kMean, -28.0},         // float32
        {DType::kUInt8, 200, ReduceOp::kMean, 72.0},         // 400 wraps to 144
        {DType::kInt16, 30000, ReduceOp::kMean, -2768.0},    // 60000 wraps to -5536
        {DType::kInt32, 2147483647, ReduceOp::kMean, -1.0},  // float64 of the wrapped -2
        {DType::kInt32, 2147483647, ReduceOp::kSum, -2},
        {DType::kInt64, 7, ReduceOp::kMean, 7.0},
    };
    for (const Case& c : cases) {
      std::vector<double> got(2, 0);
      const RunResult result = RunReplicas(*strategy, [&](ReplicaContext& context) -> absl::Status {
        Tensor input = ZeroTensor(c.dtype, {1}, context.device_name());
        StoreInt(c.dtype, input.data(), 0, c.value);
        absl::StatusOr<Tensor> out = context.AllReduce(c.op, input);
        if (!out.ok()) return out.status();
        if (out->dtype() != ReducedDType(c.dtype, c.op)) {
          return absl::InternalError(absl::StrCat("result dtype ", DTypeName(out->dtype())));
        }
        got[static_cast<size_t>(context.replica_id())] =
            c.op == ReduceOp::kMean ? LoadFloat(out->dtype(), out->data(), 0)
                                    : static_cast<double>(LoadInt(c.dtype, out->data(), 0));
        return absl::OkStatus();
      });
      ASSERT_TRUE(IsOk(result.run));
      EXPECT_EQ(got[0], c.expected) << Name(c.dtype) << " " << ReduceOpName(c.op) << " of "
                                    << c.value << " and " << c.value;
      EXPECT_EQ(got[1], got[0]);
    }
  }
}

// LocalCollective directly, with outputs that are the inputs (in-place all-reduce).
TEST(LocalCollectiveAllReduceTest, OutputsMayAliasInputs) {
  for (const Algorithm& algorithm : AllAlgorithms()) {
    for (int32_t n : {2, 3, 5}) {
      SCOPED_TRACE(algorithm.name + " n=" + std::to_string(n));
      const int32_t reduce_replica = algorithm.ops.reduce_device == "CPU:1" ? 1 : 0;
      LocalCollective group(n, MakeLocalAllReduce(algorithm.ops, n, reduce_replica));
      EXPECT_EQ(group.size(), n);
      const std::vector<Spec>& specs = MixedSpecs();
      std::vector<std::vector<Tensor>> tensors(static_cast<size_t>(n));
      for (int32_t r = 0; r < n; ++r) {
        for (size_t t = 0; t < specs.size(); ++t) {
          tensors[static_cast<size_t>(r)].push_back(Filled(specs[t].dtype, specs[t].dims, r, t, "CPU:0"));
        }
      }
      std::vector<absl::Status> statuses(static_cast<size_t>(n));
      auto body = [&](int32_t r) {
        const std::vector<Tensor>& mine = tensors[static_cast<size_t>(r)];
        statuses[static_cast<size_t>(r)] =
            group.AllReduce(r, ReduceOp::kSum, mine, mine, Deadline::AfterMs(30'000));
      };
      std::vector<std::thread> threads;
      for (int32_t r = 1; r < n; ++r) threads.emplace_back(body, r);
      body(0);
      for (std::thread& t : threads) t.join();
      for (int32_t r = 0; r < n; ++r) {
        ASSERT_TRUE(IsOk(statuses[static_cast<size_t>(r)])) << "replica " << r;
        for (size_t t = 0; t < specs.size(); ++t) {
          const Tensor& out = tensors[static_cast<size_t>(r)][t];
          for (size_t i = 0; i < NumElements(out); ++i) {
            ASSERT_EQ(LoadFloat(specs[t].dtype, out.data(), i),
                      Reference(specs[t].dtype, ReduceOp::kSum, n, t, i))
                << "replica " << r << " tensor " << t << " element " << i;
          }
        }
      }
    }
  }
}

// ---- agreement ----

// Runs a 3-replica step where `fn` makes each replica's call; every replica must get
// InvalidArgument whose message contains `parts`; the strategy works again afterwards.
template <typename Fn>
void ExpectDisagreement(Strategy& strategy, Fn&& fn, std::initializer_list<absl::string_view> parts) {
  const RunResult result = RunReplicas(strategy, fn);
  EXPECT_TRUE(HasError(result.run, absl::StatusCode::kInvalidArgument, parts));
  for (size_t r = 0; r < result.replicas.size(); ++r) {
    EXPECT_TRUE(HasError(result.replicas[r], absl::StatusCode::kInvalidArgument, parts))
        << "replica " << r;
  }
  CheckAllReduce(strategy, {{DType::kFloat32, {4}}}, ReduceOp::kSum);
}

TEST(LocalCollectiveAgreementTest, DifferentShapesDTypesOpsCountsAndKindsFailOnEveryReplica) {
  for (const Algorithm& algorithm : AllAlgorithms()) {
    SCOPED_TRACE(algorithm.name);
    std::shared_ptr<Strategy> strategy = Mirrored(3, algorithm.ops);
    ASSERT_NE(strategy, nullptr);
    // Shape.
    ExpectDisagreement(
        *strategy,
        [](ReplicaContext& c) {
          const int64_t size = c.replica_id() == 2 ? 5 : 4;
          return c.AllReduce(ReduceOp::kSum, ZeroTensor(DType::kFloat32, {size}, c.device_name()))
              .status();
        },
        {"replicas 0, 1 called all_reduce(SUM) of 1 tensor(s) float32[4]",
         "replica 2 called all_reduce(SUM) of 1 tensor(s) float32[5]"});
    // DType.
    ExpectDisagreement(
        *strategy,
        [](ReplicaContext& c) {
          const DType dtype = c.replica_id() == 0 ? DType::kInt32 : DType::kFloat32;
          return c.AllReduce(ReduceOp::kSum, ZeroTensor(dtype, {4}, c.device_name())).status();
        },
        {"replica 0 called", "int32[4]", "replicas 1, 2 called", "float32[4]"});
    // Op.
    ExpectDisagreement(
        *strategy,
        [](ReplicaContext& c) {
          const ReduceOp op = c.replica_id() == 1 ? ReduceOp::kMean : ReduceOp::kSum;
          return c.AllReduce(op, ZeroTensor(DType::kFloat32, {4}, c.device_name())).status();
        },
        {"replicas 0, 2 called all_reduce(SUM)", "replica 1 called all_reduce(MEAN)"});
    // Number of tensors.
    ExpectDisagreement(
        *strategy,
        [](ReplicaContext& c) {
          std::vector<Tensor> inputs(c.replica_id() == 2 ? 2 : 1,
                                     ZeroTensor(DType::kFloat32, {4}, c.device_name()));
          return c.BatchAllReduce(ReduceOp::kSum, inputs).status();
        },
        {"replicas 0, 1 called all_reduce(SUM) of 1 tensor(s)",
         "replica 2 called all_reduce(SUM) of 2 tensor(s)"});
    // Kind of collective.
    ExpectDisagreement(
        *strategy,
        [](ReplicaContext& c) {
          const Tensor t = ZeroTensor(DType::kFloat32, {4}, c.device_name());
          if (c.replica_id() == 0) return c.AllGather(t, 0).status();
          return c.AllReduce(ReduceOp::kSum, t).status();
        },
        {"replica 0 called all_gather", "replicas 1, 2 called all_reduce"});
    ExpectDisagreement(
        *strategy,
        [](ReplicaContext& c) {
          const Tensor t = ZeroTensor(DType::kFloat32, {4}, c.device_name());
          if (c.replica_id() == 1) return c.Broadcast(t, 0).status();
          return c.AllReduce(ReduceOp::kSum, t).status();
        },
        {"replica 1 called broadcast", "replicas 0, 2 called all_reduce"});
    // Broadcast from different sources.
    ExpectDisagreement(
        *strategy,
        [](ReplicaContext& c) {
          const Tensor t = ZeroTensor(DType::kFloat32, {4}, c.device_name());
          return c.Broadcast(t, c.replica_id() == 2 ? 1 : 0).status();
        },
        {"replicas 0, 1 called broadcast(from replica 0)", "replica 2 called broadcast(from replica 1)"});
    // all_gather: the gathered axis may differ, the others may not.
    ExpectDisagreement(
        *strategy,
        [](ReplicaContext& c) {
          const int64_t cols = c.replica_id() == 1 ? 4 : 3;
          return c.AllGather(ZeroTensor(DType::kFloat32, {2, cols}, c.device_name()), 0).status();
        },
        {"replicas 0, 2 called all_gather(axis 0) of float32[*, 3]",
         "replica 1 called all_gather(axis 0) of float32[*, 4]"});
  }
}

TEST(LocalCollectiveAgreementTest, ALocalErrorReleasesTheOthers) {
  // Replica 1 asks for a bool SUM, which it rejects before meeting the others: it still
  // meets them, and every replica fails the call with replica 1's reason instead of
  // waiting out the timeout.
  std::shared_ptr<Strategy> strategy = Mirrored(3);
  ASSERT_NE(strategy, nullptr);
  const auto start = Clock::now();
  const RunResult result = RunReplicas(*strategy, [](ReplicaContext& c) {
    const DType dtype = c.replica_id() == 1 ? DType::kBool : DType::kFloat32;
    return c.AllReduce(ReduceOp::kSum, ZeroTensor(dtype, {4}, c.device_name())).status();
  });
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 10.0);
  EXPECT_TRUE(HasError(result.run, absl::StatusCode::kInvalidArgument, {"bool"}));
  EXPECT_TRUE(HasError(result.replicas[1], absl::StatusCode::kInvalidArgument, {"bool", "SUM"}));
  EXPECT_TRUE(HasError(result.replicas[0], absl::StatusCode::kInvalidArgument, {"replica 1", "bool"}));
  EXPECT_TRUE(HasError(result.replicas[2], absl::StatusCode::kInvalidArgument, {"replica 1", "bool"}));
  CheckAllReduce(*strategy, {{DType::kFloat32, {4}}}, ReduceOp::kSum);
}

TEST(LocalCollectiveAgreementTest, AMissingReplicaTimesOutNamingIt) {
  std::shared_ptr<Strategy> strategy = Mirrored(3);
  ASSERT_NE(strategy, nullptr);
  ASSERT_TRUE(IsOk(strategy->SetTimeoutMs(200)));
  const RunResult result = RunReplicas(*strategy, [](ReplicaContext& c) -> absl::Status {
    if (c.replica_id() == 2) return absl::OkStatus();  // never joins the all-reduce
    return c.AllReduce(ReduceOp::kSum, ZeroTensor(DType::kFloat32, {4}, c.device_name())).status();
  });
  EXPECT_TRUE(HasError(result.run, absl::StatusCode::kDeadlineExceeded, {"replica 2"}));
  EXPECT_TRUE(IsOk(result.replicas[2]));
  for (size_t r : {size_t{0}, size_t{1}}) {
    EXPECT_FALSE(result.replicas[r].ok()) << "replica " << r;
    EXPECT_TRUE(absl::IsDeadlineExceeded(result.replicas[r]) || absl::IsAborted(result.replicas[r]))
        << result.replicas[r].ToString();
  }
  ASSERT_TRUE(IsOk(strategy->SetTimeoutMs(Strategy::kDefaultTimeoutMs)));
  CheckAllReduce(*strategy, {{DType::kFloat32, {4}}}, ReduceOp::kSum);
}

// ---- all_gather, broadcast, merge ----

// An int32 tensor whose element j on replica r is r * 1000 + j.
Tensor Numbered(const std::vector<int64_t>& dims, int32_t r, const std::string& device) {
  Tensor t = ZeroTensor(DType::kInt32, dims, device);
  for (size_t j = 0; j < NumElements(t); ++j) StoreInt(DType::kInt32, t.data(), j, r * 1000 + static_cast<int64_t>(j));
  return t;
}

TEST(LocalCollectiveAllGatherTest, ConcatenatesAlongTheAxisInReplicaOrder) {
  struct Case {
    std::string name;
    int32_t axis;                                          // as passed (may be negative)
    int32_t normalized;                                    // axis in [0, rank)
    std::vector<int64_t> (*dims)(int32_t replica);         // each replica's shape
  };
  const Case cases[] = {
      {"axis 0, rows r+1", 0, 0, [](int32_t r) { return std::vector<int64_t>{r + 1, 3}; }},
      {"axis 1, cols r+1", 1, 1, [](int32_t r) { return std::vector<int64_t>{2, r + 1}; }},
      {"axis -1, cols 2r+1", -1, 1, [](int32_t r) { return std::vector<int64_t>{2, 2 * r + 1}; }},
      {"axis 1 of 3, r (replica 0 empty)", 1, 1,
       [](int32_t r) { return std::vector<int64_t>{2, r, 3}; }},
      {"axis -3, equal", -3, 0, [](int32_t) { return std::vector<int64_t>{2, 2, 2}; }},
      {"rank 1", 0, 0, [](int32_t r) { return std::vector<int64_t>{3 - r}; }},
  };
  for (int32_t n : {1, 3}) {
    std::shared_ptr<Strategy> strategy = Mirrored(n);
    ASSERT_NE(strategy, nullptr);
    for (const Case& c : cases) {
      SCOPED_TRACE(c.name + " n=" + std::to_string(n));
      std::vector<std::optional<Tensor>> outputs(static_cast<size_t>(n));
      const RunResult result = RunReplicas(*strategy, [&](ReplicaContext& context) -> absl::Status {
        absl::StatusOr<Tensor> out =
            context.AllGather(Numbered(c.dims(context.replica_id()), context.replica_id(),
                                       context.device_name()),
                              c.axis);
        if (!out.ok()) return out.status();
        outputs[static_cast<size_t>(context.replica_id())] = *out;
        return absl::OkStatus();
      });
      ASSERT_TRUE(IsOk(result.run));
      // Expected: for each index of the leading axes, each replica's block in order.
      std::vector<int64_t> dims = c.dims(0);
      int64_t gathered = 0;
      for (int32_t r = 0; r < n; ++r) gathered += c.dims(r)[static_cast<size_t>(c.normalized)];
      dims[static_cast<size_t>(c.normalized)] = gathered;
      int64_t outer = 1, inner = 1;
      for (int32_t d = 0; d < static_cast<int32_t>(dims.size()); ++d) {
        if (d < c.normalized) outer *= dims[static_cast<size_t>(d)];
        if (d > c.normalized) inner *= dims[static_cast<size_t>(d)];
      }
      std::vector<int64_t> expected;
      for (int64_t o = 0; o < outer; ++o) {
        for (int32_t r = 0; r < n; ++r) {
          const int64_t block = c.dims(r)[static_cast<size_t>(c.normalized)] * inner;
          for (int64_t j = 0; j < block; ++j) expected.push_back(r * 1000 + o * block + j);
        }
      }
      for (int32_t r = 0; r < n; ++r) {
        ASSERT_TRUE(outputs[static_cast<size_t>(r)].has_value());
        const Tensor& out = *outputs[static_cast<size_t>(r)];
        EXPECT_EQ(out.dtype(), DType::kInt32);
        EXPECT_EQ(out.shape().dims(), distribute::Dims(dims.begin(), dims.end())) << "replica " << r;
        EXPECT_EQ(out.device(), strategy->worker_devices()[static_cast<size_t>(r)]);
        std::vector<int64_t> got;
        for (size_t j = 0; j < NumElements(out); ++j) got.push_back(LoadInt(DType::kInt32, out.data(), j));
        EXPECT_EQ(got, expected) << "replica " << r;
      }
    }
  }
}

TEST(LocalCollectiveAllGatherTest, BadAxesAndScalarsAreInvalidArgument) {
  std::shared_ptr<Strategy> strategy = Mirrored(2);
  ASSERT_NE(strategy, nullptr);
  for (int32_t axis : {2, -3}) {
    const RunResult result = RunReplicas(*strategy, [&](ReplicaContext& c) {
      return c.AllGather(ZeroTensor(DType::kFloat32, {2, 2}, c.device_name()), axis).status();
    });
    EXPECT_TRUE(HasError(result.run, absl::StatusCode::kInvalidArgument, {"axis", "rank 2"}));
  }
  const RunResult scalars = RunReplicas(*strategy, [&](ReplicaContext& c) {
    return c.AllGather(ZeroTensor(DType::kFloat32, {}, c.device_name()), 0).status();
  });
  EXPECT_TRUE(HasError(scalars.run, absl::StatusCode::kInvalidArgument, {"scalar"}));
  CheckAllReduce(*strategy, {{DType::kFloat32, {4}}}, ReduceOp::kSum);
}

TEST(LocalCollectiveBroadcastTest, EveryReplicaGetsTheSourcesTensor) {
  const int32_t n = 4;
  std::shared_ptr<Strategy> strategy = Mirrored(n);
  ASSERT_NE(strategy, nullptr);
  for (int32_t source = 0; source < n; ++source) {
    std::vector<std::optional<Tensor>> outputs(n);
    const RunResult result = RunReplicas(*strategy, [&](ReplicaContext& c) -> absl::Status {
      Tensor mine = Numbered({3, 5}, c.replica_id(), c.device_name());
      absl::StatusOr<Tensor> out = c.Broadcast(mine, source);
      if (!out.ok()) return out.status();
      if (out->data() == mine.data()) return absl::InternalError("broadcast returned the input itself");
      outputs[static_cast<size_t>(c.replica_id())] = *out;
      return absl::OkStatus();
    });
    ASSERT_TRUE(IsOk(result.run));
    const Tensor expected = Numbered({3, 5}, source, "CPU:0");
    for (int32_t r = 0; r < n; ++r) {
      ASSERT_TRUE(outputs[static_cast<size_t>(r)].has_value());
      const Tensor& out = *outputs[static_cast<size_t>(r)];
      EXPECT_EQ(out.shape().dims(), (distribute::Dims{3, 5}));
      EXPECT_EQ(out.device(), strategy->worker_devices()[static_cast<size_t>(r)]);
      EXPECT_EQ(std::memcmp(out.data(), expected.data(), expected.byte_size()), 0)
          << "source " << source << " replica " << r;
    }
  }
  const RunResult bad = RunReplicas(*strategy, [&](ReplicaContext& c) {
    return c.Broadcast(ZeroTensor(DType::kFloat32, {1}, c.device_name()), n).status();
  });
  EXPECT_TRUE(HasError(bad.run, absl::StatusCode::kInvalidArgument, {"source_replica 4"}));
}

TEST(LocalCollectiveMergeTest, LeaderSeesEveryReplicasArgumentsAndEachGetsItsPart) {
  const int32_t n = 3;
  std::shared_ptr<Strategy> strategy = Mirrored(n);
  ASSERT_NE(strategy, nullptr);
  std::atomic<int32_t> leader_calls{0};
  std::vector<int64_t> got(n, -1);
  std::vector<ValueKind> seen_kinds;
  std::vector<int64_t> seen_values;
  const RunResult result = RunReplicas(*strategy, [&](ReplicaContext& c) -> absl::Status {
    Tensor mine = ZeroTensor(DType::kInt64, {1}, c.device_name());
    StoreInt(DType::kInt64, mine.data(), 0, 10 * (c.replica_id() + 1));
    const Value args[] = {Value(mine)};
    absl::StatusOr<std::optional<Value>> merged = c.MergeCall(
        args, [&](std::span<const Value> gathered) -> absl::StatusOr<std::optional<Value>> {
          leader_calls.fetch_add(1);
          seen_kinds.push_back(gathered[0].kind());
          std::vector<Tensor> parts;
          int64_t total = 0;
          for (const Tensor& t : gathered[0].components()) {
            seen_values.push_back(LoadInt(DType::kInt64, t.data(), 0));
            total += LoadInt(DType::kInt64, t.data(), 0);
          }
          // Replica r gets total + r.
          for (int32_t r = 0; r < n; ++r) {
            Tensor part = ZeroTensor(DType::kInt64, {1});
            StoreInt(DType::kInt64, part.data(), 0, total + r);
            parts.push_back(part);
          }
          absl::StatusOr<Value> per_replica = Value::PerReplica(parts);
          if (!per_replica.ok()) return per_replica.status();
          return std::optional<Value>(*per_replica);
        });
    if (!merged.ok()) return merged.status();
    if (!merged->has_value()) return absl::InternalError("no merge result");
    absl::StatusOr<const Tensor*> tensor = (*merged)->AsTensor();
    if (!tensor.ok()) return tensor.status();
    got[static_cast<size_t>(c.replica_id())] = LoadInt(DType::kInt64, (*tensor)->data(), 0);
    return absl::OkStatus();
  });
  ASSERT_TRUE(IsOk(result.run));
  EXPECT_EQ(leader_calls.load(), 1);
  ASSERT_EQ(seen_kinds.size(), 1u);
  EXPECT_EQ(seen_kinds[0], ValueKind::kPerReplica);
  EXPECT_EQ(seen_values, (std::vector<int64_t>{10, 20, 30}));
  EXPECT_EQ(got, (std::vector<int64_t>{60, 61, 62}));
}

TEST(LocalCollectiveMergeTest, LeaderErrorsReachEveryReplica) {
  std::shared_ptr<Strategy> strategy = Mirrored(3);
  ASSERT_NE(strategy, nullptr);
  const RunResult result = RunReplicas(*strategy, [&](ReplicaContext& c) -> absl::Status {
    return c
        .MergeCall({}, [](std::span<const Value>) -> absl::StatusOr<std::optional<Value>> {
          return absl::FailedPreconditionError("merge fn refused");
        })
        .status();
  });
  EXPECT_TRUE(HasError(result.run, absl::StatusCode::kFailedPrecondition, {"merge fn refused"}));
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_TRUE(HasError(result.replicas[r], absl::StatusCode::kFailedPrecondition,
                         {"merge fn refused"}))
        << "replica " << r;
  }
  // Different argument counts disagree.
  const RunResult counts = RunReplicas(*strategy, [&](ReplicaContext& c) -> absl::Status {
    std::vector<Value> args;
    for (int32_t i = 0; i <= c.replica_id() / 2; ++i) {
      args.emplace_back(ZeroTensor(DType::kFloat32, {1}, c.device_name()));
    }
    return c
        .MergeCall(args, [](std::span<const Value>) -> absl::StatusOr<std::optional<Value>> {
          return std::optional<Value>();
        })
        .status();
  });
  EXPECT_TRUE(HasError(counts.run, absl::StatusCode::kInvalidArgument,
                       {"replicas 0, 1 called merge_call with 1 argument(s)",
                        "replica 2 called merge_call with 2 argument(s)"}));
}

TEST(LocalCollectiveMergeTest, DirectMergeRunsTheLeaderOnceOverAllPayloads) {
  const int32_t n = 4;
  LocalCollective group(n, MakeLocalAllReduce(CrossDeviceOps{}, n, 0));
  std::vector<int> payloads = {1, 2, 3, 4};
  std::vector<int> results(n, 0);
  std::vector<absl::Status> statuses(n);
  std::atomic<int> calls{0};
  auto body = [&](int32_t r) {
    for (int round = 0; round < 50; ++round) {
      absl::StatusOr<std::shared_ptr<const int>> merged = group.Merge<int, int>(
          r, payloads[static_cast<size_t>(r)], 1,
          [&](std::span<const int* const> all) -> absl::StatusOr<int> {
            calls.fetch_add(1);
            int sum = 0;
            for (const int* p : all) sum += *p;
            return sum + round;
          },
          Deadline::AfterMs(30'000));
      if (!merged.ok()) {
        statuses[static_cast<size_t>(r)] = merged.status();
        return;
      }
      results[static_cast<size_t>(r)] += **merged;
    }
  };
  std::vector<std::thread> threads;
  for (int32_t r = 1; r < n; ++r) threads.emplace_back(body, r);
  body(0);
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(calls.load(), 50);
  for (int32_t r = 0; r < n; ++r) {
    EXPECT_TRUE(IsOk(statuses[static_cast<size_t>(r)]));
    EXPECT_EQ(results[static_cast<size_t>(r)], 50 * 10 + 49 * 50 / 2) << "replica " << r;
  }
}

}  // namespace
}  // namespace distribute
