// The GPU replicas' collectives (core/gpu) on the fake GPU plugin (tests/gpu_fake): every
// all-reduce algorithm against sums computed here, packing plans, all-gather and
// broadcast between devices, staging of host inputs, no peer access, a stalled GPU hitting
// the deadline (and staying failed), out-of-memory errors naming the device. The fake hands
// out device pointers that fault when the core dereferences them, so a host read of GPU
// memory anywhere on these paths crashes the test.
#include "core/gpu/gpu_collective.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "core/gpu/nccl_bootstrap.h"
#include "core/gpu/nccl_pack_plan.h"
#include "core/collective/cross_worker.h"
#include "core/shm/shm_transport.h"
#include "core/tensor/half.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"
#include "core/server/coordination_service.h"
#include "core/server/local_coordination_client.h"
#include "tests/core/worker_threads.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

// The runtime loads its plugin once, on first use: point it at the fake (with 4 devices)
// before any test runs, unless the environment already chose.
const bool kFakePlugin = [] {
  setenv("DIST_CUDA_PLUGIN", DIST_FAKE_GPU_PLUGIN, 0);
  setenv("DIST_FAKE_GPU_COUNT", "4", 0);
  return true;
}();

std::vector<DeviceSpec> Gpus(int32_t n) {
  std::vector<DeviceSpec> devices;
  for (int32_t i = 0; i < n; ++i) {
    DeviceSpec spec;
    spec.type = DeviceType::kGpu;
    spec.index = i;
    devices.push_back(spec);
  }
  return devices;
}

template <typename T>
Tensor Make(const std::string& device, DType dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(dtype);
  desc.dims = dims;
  desc.byte_size = values.size() * sizeof(T);
  desc.device = device;
  absl::StatusOr<Tensor> t = Tensor::Create(desc, values.data());
  EXPECT_TRUE(IsOk(t));
  return *t;
}

Tensor Empty(const Tensor& like) {
  absl::StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::Allocate(like.device(), like.byte_size(), false);
  EXPECT_TRUE(IsOk(buffer));
  return *Tensor::FromBuffer(like.dtype(), like.shape(), *buffer);
}

template <typename T>
std::vector<T> Read(const Tensor& t) {
  absl::StatusOr<Tensor> host = t.CopyTo("CPU:0");
  EXPECT_TRUE(IsOk(host));
  std::vector<T> out(host->byte_size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), host->data(), host->byte_size());
  return out;
}

// fn(replica) on one thread per replica.
void OnReplicas(int32_t n, const std::function<void(int32_t)>& fn) {
  std::vector<std::thread> threads;
  for (int32_t r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (std::thread& t : threads) t.join();
}

std::unique_ptr<GpuCollective> MakeCollective(int32_t n, const CrossDeviceOps& ops, int32_t root = 0) {
  absl::StatusOr<std::unique_ptr<GpuCollective>> collective = GpuCollective::Create(Gpus(n), ops, root);
  EXPECT_TRUE(IsOk(collective));
  return collective.ok() ? *std::move(collective) : nullptr;
}

Deadline Soon() { return Deadline::AfterMs(10'000); }

std::vector<CrossDeviceOps> EveryAlgorithm() {
  return {CrossDeviceOps{}, *CrossDeviceOps::NcclAllReduce(0), *CrossDeviceOps::NcclAllReduce(1),
          *CrossDeviceOps::NcclAllReduce(2), *CrossDeviceOps::SharedMemory(64),
          *CrossDeviceOps::ReductionToOneDevice(""), *CrossDeviceOps::HierarchicalCopy(1)};
}

std::string Describe(const CrossDeviceOps& ops) {
  return absl::StrCat("algorithm ", static_cast<int>(ops.algorithm), " packs ", ops.num_packs,
                      " bytes_per_pack ", ops.bytes_per_pack);
}

TEST(GpuRuntimeTest, TheFakePluginHasTheReplicaEntries) {
  ASSERT_TRUE(kFakePlugin);
  const GpuRuntime& gpu = GpuRuntime::Get();
  EXPECT_EQ(gpu.device_count(), 4) << gpu.unavailable_reason();
  EXPECT_TRUE(IsOk(gpu.CheckReplicaSupport()));
}

TEST(NcclPackPlanTest, GroupsByDTypeAndSplitsIntoPacks) {
  const std::string cpu = "CPU:0";
  std::vector<Tensor> tensors = {
      Make<float>(cpu, DType::kFloat32, {4}, {1, 2, 3, 4}),
      Make<int32_t>(cpu, DType::kInt32, {2}, {1, 2}),
      Make<float>(cpu, DType::kFloat32, {2}, {1, 2}),
      Make<float>(cpu, DType::kFloat32, {8}, std::vector<float>(8)),
      Make<int16_t>(cpu, DType::kInt16, {1}, {7}),
  };
  // No packing: one pack per tensor, dtypes in order of first appearance.
  NcclPlan alone = PlanNcclPacks(tensors, PackPolicy{});
  ASSERT_EQ(alone.packs.size(), 5u);
  EXPECT_EQ(alone.packs[0].tensors, std::vector<size_t>({0}));
  EXPECT_EQ(alone.packs[1].tensors, std::vector<size_t>({2}));
  EXPECT_EQ(alone.packs[3].dtype, DType::kInt32);
  EXPECT_EQ(alone.scratch_bytes, 0u);
  // One pack per dtype: the three float32 tensors (14 elements) share a scratch region.
  NcclPlan one = PlanNcclPacks(tensors, PackPolicy{.num_packs = 1});
  ASSERT_EQ(one.packs.size(), 3u);
  EXPECT_EQ(one.packs[0].tensors, std::vector<size_t>({0, 2, 3}));
  EXPECT_EQ(one.packs[0].elements, 14u);
  EXPECT_EQ(one.scratch_bytes, 256u);
  EXPECT_FALSE(HasNcclType(one.packs[2].dtype));
  // Two packs of float32: about half of the 56 bytes each, the last tensor alone.
  NcclPlan two = PlanNcclPacks(tensors, PackPolicy{.num_packs = 2});
  EXPECT_EQ(two.packs[0].tensors, std::vector<size_t>({0, 2}));
  EXPECT_EQ(two.packs[1].tensors, std::vector<size_t>({3}));
  // More packs than tensors: one tensor each.
  EXPECT_EQ(PlanNcclPacks(tensors, PackPolicy{.num_packs = 9}).packs.size(), 5u);
  // Filled up to 24 bytes: [0 2] (24 bytes), [3] (32 bytes, alone).
  NcclPlan filled = PlanNcclPacks(tensors, PackPolicy{.bytes_per_pack = 24});
  EXPECT_EQ(filled.packs[0].tensors, std::vector<size_t>({0, 2}));
  EXPECT_EQ(filled.packs[1].tensors, std::vector<size_t>({3}));
}

// Every algorithm, 2 to 4 GPUs, SUM/MEAN/MAX over float32 and int32, against sums here.
TEST(GpuCollectiveTest, EveryAlgorithmReducesLikeTheHost) {
  for (const CrossDeviceOps& ops : EveryAlgorithm()) {
    for (int32_t n = 2; n <= 4; ++n) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax}) {
        SCOPED_TRACE(absl::StrCat(Describe(ops), ", ", n, " GPUs, op ", ReduceOpName(op)));
        std::unique_ptr<GpuCollective> collective = MakeCollective(n, ops, n - 1);
        ASSERT_NE(collective, nullptr);
        OnReplicas(n, [&](int32_t r) {
          const std::string gpu = absl::StrCat("GPU:", r);
          std::vector<Tensor> in = {
              Make<float>(gpu, DType::kFloat32, {5}, {1.f * r, 2, 3.5f, -1.f * r, 8}),
              Make<float>(gpu, DType::kFloat32, {2}, {0.25f * (r + 1), 100}),
          };
          if (op != ReduceOp::kMean) in.push_back(Make<int32_t>(gpu, DType::kInt32, {3}, {r, -r, 7}));
          std::vector<Tensor> out;
          for (const Tensor& t : in) out.push_back(Empty(t));
          ASSERT_TRUE(IsOk(collective->AllReduce(r, op, in, out, Soon())));
          // Independent expectations: replica r contributed r-dependent values.
          auto combine = [&](auto f) {
            double acc = f(0);
            for (int32_t q = 1; q < n; ++q) acc = op == ReduceOp::kMax ? std::max(acc, f(q)) : acc + f(q);
            return op == ReduceOp::kMean ? acc / n : acc;
          };
          const std::vector<float> a = Read<float>(out[0]);
          EXPECT_FLOAT_EQ(a[0], combine([](int q) { return 1.0 * q; }));
          EXPECT_FLOAT_EQ(a[2], combine([](int) { return 3.5; }));
          EXPECT_FLOAT_EQ(a[3], combine([](int q) { return -1.0 * q; }));
          EXPECT_FLOAT_EQ(Read<float>(out[1])[0], combine([](int q) { return 0.25 * (q + 1); }));
          if (op != ReduceOp::kMean) {
            const std::vector<int32_t> c = Read<int32_t>(out[2]);
            EXPECT_EQ(c[0], combine([](int q) { return 1.0 * q; }));
            EXPECT_EQ(c[1], combine([](int q) { return -1.0 * q; }));
          }
          EXPECT_EQ(out[0].device().index, r);
        });
        collective->Reset();
      }
    }
  }
}

// int16 and bool have no NCCL type: reduced on the host, with the same results.
TEST(GpuCollectiveTest, DTypesWithoutAnNcclTypeStillReduce) {
  std::unique_ptr<GpuCollective> collective = MakeCollective(3, CrossDeviceOps{});
  OnReplicas(3, [&](int32_t r) {
    const std::string gpu = absl::StrCat("GPU:", r);
    std::vector<Tensor> in = {Make<int16_t>(gpu, DType::kInt16, {2}, {static_cast<int16_t>(r + 1), -3}),
                              Make<float>(gpu, DType::kFloat32, {1}, {1.5f})};
    std::vector<Tensor> out = {Empty(in[0]), Empty(in[1])};
    ASSERT_TRUE(IsOk(collective->AllReduce(r, ReduceOp::kSum, in, out, Soon())));
    EXPECT_EQ(Read<int16_t>(out[0]), std::vector<int16_t>({6, -9}));
    EXPECT_EQ(Read<float>(out[1]), std::vector<float>({4.5f}));
  });
  collective->Reset();
  OnReplicas(3, [&](int32_t r) {
    const std::string gpu = absl::StrCat("GPU:", r);
    std::vector<Tensor> in = {Make<uint8_t>(gpu, DType::kBool, {2}, {1, static_cast<uint8_t>(r == 1)})};
    std::vector<Tensor> out = {Empty(in[0])};
    ASSERT_TRUE(IsOk(collective->AllReduce(r, ReduceOp::kMax, in, out, Soon())));  // logical OR
    EXPECT_EQ(Read<uint8_t>(out[0]), std::vector<uint8_t>({1, 1}));
  });
}

// float16 through NCCL and through the kernels: 1 + 2 + 4 (exact in half precision).
TEST(GpuCollectiveTest, HalfPrecisionReduces) {
  for (const CrossDeviceOps& ops : EveryAlgorithm()) {
    SCOPED_TRACE(Describe(ops));
    std::unique_ptr<GpuCollective> collective = MakeCollective(3, ops);
    OnReplicas(3, [&](int32_t r) {
      const std::string gpu = absl::StrCat("GPU:", r);
      const uint16_t mine = FloatToHalf(static_cast<float>(1 << r));
      std::vector<Tensor> in = {Make<uint16_t>(gpu, DType::kFloat16, {1}, {mine})};
      std::vector<Tensor> out = {Empty(in[0])};
      ASSERT_TRUE(IsOk(collective->AllReduce(r, ReduceOp::kSum, in, out, Soon())));
      EXPECT_EQ(HalfToFloat(Read<uint16_t>(out[0])[0]), 7.0f);
    });
  }
}

// Inputs in host memory, and outputs aliasing inputs, are fine.
TEST(GpuCollectiveTest, HostInputsAndInPlaceOutputs) {
  std::unique_ptr<GpuCollective> collective = MakeCollective(2, CrossDeviceOps{});
  OnReplicas(2, [&](int32_t r) {
    const std::string gpu = absl::StrCat("GPU:", r);
    Tensor on_host = Make<float>("CPU:0", DType::kFloat32, {2}, {1.f, 2.f * r});
    Tensor in_place = Make<float>(gpu, DType::kFloat32, {1}, {10.f});
    std::vector<Tensor> in = {on_host, in_place};
    std::vector<Tensor> out = {Empty(Make<float>(gpu, DType::kFloat32, {2}, {0, 0})), in_place};
    ASSERT_TRUE(IsOk(collective->AllReduce(r, ReduceOp::kSum, in, out, Soon())));
    EXPECT_EQ(Read<float>(out[0]), std::vector<float>({2.f, 2.f}));
    EXPECT_EQ(Read<float>(in_place), std::vector<float>({20.f}));
  });
}

// Without peer access the kernel algorithms copy the peers' inputs first.
TEST(GpuCollectiveTest, WithoutPeerAccessTheKernelsCopyFirst) {
  setenv("DIST_FAKE_GPU_NO_PEER", "1", 1);
  for (const CrossDeviceOps& ops : {*CrossDeviceOps::ReductionToOneDevice(""), *CrossDeviceOps::HierarchicalCopy(1)}) {
    SCOPED_TRACE(Describe(ops));
    std::unique_ptr<GpuCollective> collective = MakeCollective(4, ops, 2);
    OnReplicas(4, [&](int32_t r) {
      const std::string gpu = absl::StrCat("GPU:", r);
      std::vector<Tensor> in = {Make<double>(gpu, DType::kFloat64, {2}, {1.0 * r, 1.0})};
      std::vector<Tensor> out = {Empty(in[0])};
      ASSERT_TRUE(IsOk(collective->AllReduce(r, ReduceOp::kSum, in, out, Soon())));
      EXPECT_EQ(Read<double>(out[0]), std::vector<double>({6.0, 4.0}));
    });
  }
  unsetenv("DIST_FAKE_GPU_NO_PEER");
}

TEST(GpuCollectiveTest, AllGatherAlongEitherAxisAndBroadcast) {
  std::unique_ptr<GpuCollective> collective = MakeCollective(3, CrossDeviceOps{});
  OnReplicas(3, [&](int32_t r) {
    const std::string gpu = absl::StrCat("GPU:", r);
    DeviceSpec mine;
    mine.type = DeviceType::kGpu;
    mine.index = r;
    // Replica r has r+1 rows of [10r, 10r+1]: gathered along axis 0 they stack.
    std::vector<int32_t> rows;
    for (int32_t i = 0; i <= r; ++i) rows.insert(rows.end(), {10 * r, 10 * r + 1});
    Tensor input = Make<int32_t>(gpu, DType::kInt32, {r + 1, 2}, rows);
    absl::StatusOr<Tensor> stacked = collective->AllGather(r, input, 0, mine, Soon());
    ASSERT_TRUE(IsOk(stacked));
    EXPECT_EQ(stacked->shape().dims(), distribute::Dims({6, 2}));
    EXPECT_EQ(Read<int32_t>(*stacked),
              std::vector<int32_t>({0, 1, 10, 11, 10, 11, 20, 21, 20, 21, 20, 21}));
    // Along axis 1 with 2 rows each: row i is every replica's row i side by side.
    Tensor pair = Make<int32_t>(gpu, DType::kInt32, {2, 1}, {r, 100 + r});
    absl::StatusOr<Tensor> side = collective->AllGather(r, pair, 1, DeviceSpec{}.WithDefaults(), Soon());
    ASSERT_TRUE(IsOk(side));
    EXPECT_EQ(side->device().type, DeviceType::kCpu);
    EXPECT_EQ(Read<int32_t>(*side), std::vector<int32_t>({0, 1, 2, 100, 101, 102}));
    absl::StatusOr<Tensor> copy = collective->Broadcast(r, Make<float>(gpu, DType::kFloat32, {1}, {1.f + r}), 2, mine, Soon());
    ASSERT_TRUE(IsOk(copy));
    EXPECT_EQ(copy->device().index, r);
    EXPECT_EQ(Read<float>(*copy), std::vector<float>({3.f}));
  });
}

// A GPU that never finishes fails the call at the deadline on every replica, naming the
// device; the communicators are aborted and every later call fails with the same cause.
// Cross-replica reduce of GPU components (strategy.reduce / reduce_to): on the destination
// GPU, with or without peer access, with the host path's results.
TEST(GpuCrossReplicaReduceTest, ReducesOnTheDestinationGpu) {
  for (const bool peer : {true, false}) {
    if (!peer) setenv("DIST_FAKE_GPU_NO_PEER", "1", 1);
    std::unique_ptr<GpuCollective> collective = MakeCollective(4, CrossDeviceOps{});
    std::vector<Tensor> f32;
    std::vector<Tensor> half;
    std::vector<Tensor> i64;
    for (int32_t r = 0; r < 4; ++r) {
      const std::string gpu = absl::StrCat("GPU:", r);
      f32.push_back(Make<float>(gpu, DType::kFloat32, {3}, {1.f + r, -2.f * r, 0.5f}));
      half.push_back(Make<uint16_t>(gpu, DType::kFloat16, {1}, {FloatToHalf(static_cast<float>(1 << r))}));
      i64.push_back(Make<int64_t>(gpu, DType::kInt64, {2}, {int64_t{1} << (40 + r), -r}));
    }
    const DeviceSpec destination = Gpus(3)[2];
    struct Case {
      ReduceOp op;
      std::vector<float> expected;
    };
    for (const Case& c : {Case{ReduceOp::kSum, {10.f, -12.f, 2.f}}, Case{ReduceOp::kMean, {2.5f, -3.f, 0.5f}},
                          Case{ReduceOp::kMin, {1.f, -6.f, 0.5f}}, Case{ReduceOp::kMax, {4.f, 0.f, 0.5f}},
                          Case{ReduceOp::kProduct, {24.f, 0.f, 0.0625f}}}) {
      SCOPED_TRACE(absl::StrCat("peer ", peer, ", op ", ReduceOpName(c.op)));
      absl::StatusOr<std::optional<Tensor>> out = collective->ReduceOnDevice(c.op, f32, destination, Soon());
      ASSERT_TRUE(IsOk(out));
      ASSERT_TRUE(out->has_value());
      EXPECT_EQ((*out)->device().type, DeviceType::kGpu);
      EXPECT_EQ((*out)->device().index, 2);
      EXPECT_EQ(Read<float>(**out), c.expected);
    }
    absl::StatusOr<std::optional<Tensor>> h = collective->ReduceOnDevice(ReduceOp::kSum, half, destination, Soon());
    ASSERT_TRUE(IsOk(h) && h->has_value());
    EXPECT_EQ(HalfToFloat(Read<uint16_t>(**h)[0]), 15.0f);
    absl::StatusOr<std::optional<Tensor>> big = collective->ReduceOnDevice(ReduceOp::kSum, i64, Gpus(1)[0], Soon());
    ASSERT_TRUE(IsOk(big) && big->has_value());
    EXPECT_EQ(Read<int64_t>(**big), std::vector<int64_t>({int64_t{15} << 40, -6}));
    if (!peer) unsetenv("DIST_FAKE_GPU_NO_PEER");
  }
}

// What the GPUs cannot do alone is left to the host path (std::nullopt), never an error.
TEST(GpuCrossReplicaReduceTest, LeavesOtherDestinationsAndPlacementsToTheHost) {
  std::unique_ptr<GpuCollective> collective = MakeCollective(2, CrossDeviceOps{});
  const std::vector<Tensor> on_gpus = {Make<float>("GPU:0", DType::kFloat32, {1}, {1.f}),
                                       Make<float>("GPU:1", DType::kFloat32, {1}, {2.f})};
  const DeviceSpec cpu = DeviceSpec{}.WithDefaults();
  absl::StatusOr<std::optional<Tensor>> out = collective->ReduceOnDevice(ReduceOp::kSum, on_gpus, cpu, Soon());
  ASSERT_TRUE(IsOk(out));
  EXPECT_FALSE(out->has_value());  // a host destination
  out = collective->ReduceOnDevice(ReduceOp::kSum, on_gpus, Gpus(4)[3], Soon());
  ASSERT_TRUE(IsOk(out));
  EXPECT_FALSE(out->has_value());  // a GPU that is no replica's
  const std::vector<Tensor> mixed = {on_gpus[0], Make<float>("CPU:0", DType::kFloat32, {1}, {2.f})};
  out = collective->ReduceOnDevice(ReduceOp::kSum, mixed, Gpus(1)[0], Soon());
  ASSERT_TRUE(IsOk(out));
  EXPECT_FALSE(out->has_value());  // a component away from its replica's GPU
  out = collective->ReduceOnDevice(ReduceOp::kSum, std::span<const Tensor>(on_gpus).first(1), Gpus(1)[0], Soon());
  ASSERT_TRUE(IsOk(out));
  EXPECT_FALSE(out->has_value());  // not one component per replica
}

TEST(GpuCollectiveTest, AStalledGpuHitsTheDeadlineAndStaysFailed) {
  std::unique_ptr<GpuCollective> collective = MakeCollective(2, CrossDeviceOps{});
  setenv("DIST_FAKE_GPU_STALL", "1", 1);
  OnReplicas(2, [&](int32_t r) {
    const std::string gpu = absl::StrCat("GPU:", r);
    std::vector<Tensor> in = {Make<float>(gpu, DType::kFloat32, {1}, {1.f})};
    std::vector<Tensor> out = {Empty(in[0])};
    absl::Status status = collective->AllReduce(r, ReduceOp::kSum, in, out, Deadline::AfterMs(1000));
    EXPECT_TRUE(status.code() == absl::StatusCode::kDeadlineExceeded ||
                status.code() == absl::StatusCode::kAborted)
        << status;
    EXPECT_NE(status.message().find("GPU:"), std::string::npos) << status;
  });
  unsetenv("DIST_FAKE_GPU_STALL");
  collective->Reset();
  OnReplicas(2, [&](int32_t r) {
    std::vector<Tensor> in = {Make<float>(absl::StrCat("GPU:", r), DType::kFloat32, {1}, {1.f})};
    std::vector<Tensor> out = {Empty(in[0])};
    EXPECT_TRUE(HasError(collective->AllReduce(r, ReduceOp::kSum, in, out, Soon()),
                         absl::StatusCode::kDeadlineExceeded, {"did not finish within the 1000 ms"}));
  });
}

TEST(GpuCollectiveTest, OutOfDeviceMemoryNamesTheDevice) {
  setenv("DIST_FAKE_GPU_MEMORY", "1024", 1);
  DeviceSpec gpu1;
  gpu1.type = DeviceType::kGpu;
  gpu1.index = 1;
  EXPECT_TRUE(HasError(Buffer::Allocate(gpu1, 4096, false), absl::StatusCode::kResourceExhausted,
                       {"GPU:1", "out of memory"}));
  unsetenv("DIST_FAKE_GPU_MEMORY");
}

// ---- A multi-worker job: two workers (threads) of two GPUs each, one NCCL communicator ----

// fn(worker, replica, collective) on every replica of a 2 x 2 job; each worker's
// collective runs over ConnectNcclJob's communicators and a shared-memory host transport.
void OnJob(const std::function<void(int32_t, int32_t, GpuCollective&)>& fn) {
  testing::RunWorkerThreads(2, [&](int32_t w, CoordinationClient& client,
                                   const std::vector<std::string>& names, const std::string& prefix) {
    const Deadline deadline = Deadline::AfterMs(20'000);
    const NcclJob job{&client, prefix, w, 2};
    const int32_t gpus[2] = {0, 1};
    absl::StatusOr<std::unique_ptr<NcclCommunicators>> comms = ConnectNcclJob(job, gpus, deadline);
    ASSERT_TRUE(IsOk(comms));
    auto host = shm::ShmTransport::Connect(client, prefix + "host/", w, names, deadline);
    ASSERT_TRUE(IsOk(host));
    auto workers = std::make_shared<CrossWorker>(std::unique_ptr<Transport>(std::move(*host)));
    absl::StatusOr<std::unique_ptr<GpuCollective>> collective =
        GpuCollective::CreateForJob(Gpus(2), std::move(*comms), workers, nullptr);
    ASSERT_TRUE(IsOk(collective));
    OnReplicas(2, [&](int32_t r) { fn(w, r, **collective); });
  });
}

TEST(GpuJobTest, CollectivesSpanEveryGpuOfTheJob) {
  OnJob([](int32_t w, int32_t r, GpuCollective& collective) {
    const int32_t rank = 2 * w + r;  // 0 ... 3
    const std::string gpu = absl::StrCat("GPU:", r);
    DeviceSpec mine;
    mine.type = DeviceType::kGpu;
    mine.index = r;
    // NCCL: SUM of rank + 1 is 10, MEAN 2.5; int16 goes through the host transport.
    std::vector<Tensor> in = {Make<float>(gpu, DType::kFloat32, {2}, {rank + 1.f, 1.f}),
                              Make<int16_t>(gpu, DType::kInt16, {1}, {static_cast<int16_t>(rank)})};
    std::vector<Tensor> out = {Empty(in[0]), Empty(in[1])};
    ASSERT_TRUE(IsOk(collective.AllReduce(r, ReduceOp::kSum, in, out, Soon())));
    EXPECT_EQ(Read<float>(out[0]), std::vector<float>({10.f, 4.f}));
    EXPECT_EQ(Read<int16_t>(out[1]), std::vector<int16_t>({6}));
    std::vector<Tensor> mean_in = {in[0]};
    std::vector<Tensor> mean_out = {Empty(in[0])};
    ASSERT_TRUE(IsOk(collective.AllReduce(r, ReduceOp::kMean, mean_in, mean_out, Soon())));
    EXPECT_EQ(Read<float>(mean_out[0]), std::vector<float>({2.5f, 1.f}));
    // Broadcast from rank 3 (worker 1's second replica).
    absl::StatusOr<Tensor> copy = collective.Broadcast(r, Make<float>(gpu, DType::kFloat32, {1}, {100.f + rank}), 3, mine, Soon());
    ASSERT_TRUE(IsOk(copy));
    EXPECT_EQ(Read<float>(*copy), std::vector<float>({103.f}));
    // All-gather along axis 0, rank q bringing q + 1 rows of [q].
    Tensor rows = Make<int32_t>(gpu, DType::kInt32, {rank + 1}, std::vector<int32_t>(static_cast<size_t>(rank + 1), rank));
    absl::StatusOr<Tensor> all = collective.AllGather(r, rows, 0, mine, Soon());
    ASSERT_TRUE(IsOk(all));
    EXPECT_EQ(all->device().index, r);
    EXPECT_EQ(Read<int32_t>(*all), std::vector<int32_t>({0, 1, 1, 2, 2, 2, 3, 3, 3, 3}));
  });
}

// Workers that make different calls fail them on every worker with the same message,
// instead of leaving NCCL waiting; a worker whose replica fails a local check makes the
// other worker fail too.
TEST(GpuJobTest, DisagreementsAndLocalFailuresFailEveryWorker) {
  OnJob([](int32_t w, int32_t r, GpuCollective& collective) {
    const std::string gpu = absl::StrCat("GPU:", r);
    const int64_t length = w == 0 ? 2 : 3;
    std::vector<Tensor> in = {Make<float>(gpu, DType::kFloat32, {length}, std::vector<float>(static_cast<size_t>(length), 1.f))};
    std::vector<Tensor> out = {Empty(in[0])};
    EXPECT_TRUE(HasError(collective.AllReduce(r, ReduceOp::kSum, in, out, Soon()),
                         absl::StatusCode::kInvalidArgument, {"workers disagree", "float32[", "something else"}));
  });
  OnJob([](int32_t w, int32_t r, GpuCollective& collective) {
    const std::string gpu = absl::StrCat("GPU:", r);
    if (w == 1) {
      EXPECT_TRUE(HasError(collective.FailTogether(r, absl::InvalidArgumentError("bad input here"), Soon()),
                           absl::StatusCode::kInvalidArgument, {"bad input here"}));
    } else {
      std::vector<Tensor> in = {Make<float>(gpu, DType::kFloat32, {1}, {1.f})};
      std::vector<Tensor> out = {Empty(in[0])};
      EXPECT_TRUE(HasError(collective.AllReduce(r, ReduceOp::kSum, in, out, Soon()),
                           absl::StatusCode::kAborted, {"worker(s) 1 could not take part"}));
    }
  });
}

// A worker that dies while the others wait for it in an NCCL collective: the coordination
// service's report aborts the communicators and the collective fails at once with
// UNAVAILABLE naming the task, long before its deadline.
TEST(GpuJobTest, APeersDeathAbortsTheCommunicatorsWithUnavailable) {
  CoordinationService::Options options;
  options.tasks = {"worker:0", "worker:1"};
  options.barrier_tasks = options.tasks;
  CoordinationService service(options);
  constexpr uint64_t kIncarnation = 7;
  ASSERT_TRUE(IsOk(service.Register("worker:1", kIncarnation, /*expects_heartbeats=*/false)));
  ASSERT_TRUE(IsOk(service.OpenWatch("worker:1", kIncarnation)));
  const std::vector<std::string> names = options.tasks;
  std::vector<std::thread> workers;
  for (int32_t w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      LocalCoordinationClient client(&service, names[static_cast<size_t>(w)]);
      const Deadline setup = Deadline::AfterMs(20'000);
      const int32_t gpus[2] = {0, 1};
      absl::StatusOr<std::unique_ptr<NcclCommunicators>> comms =
          ConnectNcclJob(NcclJob{&client, "death/", w, 2}, gpus, setup);
      ASSERT_TRUE(IsOk(comms));
      auto host = shm::ShmTransport::Connect(client, "death/host/", w, names, setup);
      ASSERT_TRUE(IsOk(host));
      auto cross = std::make_shared<CrossWorker>(std::unique_ptr<Transport>(std::move(*host)));
      absl::StatusOr<std::unique_ptr<GpuCollective>> collective =
          GpuCollective::CreateForJob(Gpus(2), std::move(*comms), cross, &client);
      ASSERT_TRUE(IsOk(collective));
      if (w == 1) {  // dies instead of taking part
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        service.ReportConnectionClosed("worker:1", kIncarnation);
        return;
      }
      const auto start = std::chrono::steady_clock::now();
      OnReplicas(2, [&](int32_t r) {
        std::vector<Tensor> in = {Make<float>(absl::StrCat("GPU:", r), DType::kFloat32, {1}, {1.f})};
        std::vector<Tensor> out = {Empty(in[0])};
        EXPECT_TRUE(HasError((*collective)->AllReduce(r, ReduceOp::kSum, in, out, Deadline::AfterMs(20'000)),
                             absl::StatusCode::kUnavailable, {"worker:1"}));
      });
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    });
  }
  for (std::thread& t : workers) t.join();
}

// A worker whose ranks never come: the others' communicator creation ends at the deadline,
// naming their ranks.
TEST(GpuJobTest, ACommunicatorWithAMissingWorkerEndsAtTheDeadline) {
  testing::RunWorkerThreads(2, [&](int32_t w, CoordinationClient& client, const std::vector<std::string>&,
                                   const std::string& prefix) {
    const int32_t gpus[2] = {0, 1};
    // Worker 1 says how many GPUs it has but never creates its ranks.
    if (w == 1) {
      ASSERT_TRUE(IsOk(client.Set(prefix + "nccl/gpus/1", "2")));
      return;
    }
    const NcclJob job{&client, prefix, 0, 2};
    EXPECT_TRUE(HasError(ConnectNcclJob(job, gpus, Deadline::AfterMs(300)), absl::StatusCode::kDeadlineExceeded,
                         {"4 ranks", "ranks 0, 1 were still waiting"}));
  });
}

// Two workers on one GPU: NCCL's "Duplicate GPU detected" (seen on an H100) becomes a
// FAILED_PRECONDITION that says what to do; other failures pass through unchanged.
TEST(NcclBootstrapTest, TwoWorkersOnOneGpuAreExplained) {
  const absl::Status duplicate = absl::InternalError(
      "the NCCL communicator failed: ncclInvalidUsage: invalid usage; NCCL: Duplicate GPU detected : rank 1 and "
      "rank 0 both on CUDA device 60");
  const absl::Status explained = ExplainNcclCreationFailure(duplicate);
  EXPECT_EQ(explained.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(explained.message(), "CUDA_VISIBLE_DEVICES per worker"));
  EXPECT_TRUE(absl::StrContains(explained.message(), "rank 1 and rank 0 both on CUDA device 60"));
  const absl::Status other = absl::InternalError("ncclSystemError: a socket closed");
  EXPECT_EQ(ExplainNcclCreationFailure(other), other);
  EXPECT_TRUE(ExplainNcclCreationFailure(absl::OkStatus()).ok());
}

TEST(GpuJobTest, WorkersWithDifferentGpuCountsAreRefused) {
  testing::RunWorkerThreads(2, [&](int32_t w, CoordinationClient& client, const std::vector<std::string>&,
                                   const std::string& prefix) {
    const int32_t gpus[2] = {0, 1};
    const NcclJob job{&client, prefix, w, 2};
    EXPECT_TRUE(HasError(ConnectNcclJob(job, std::span<const int32_t>(gpus, w == 0 ? 2 : 1), Soon()),
                         absl::StatusCode::kInvalidArgument, {"must bring as many GPUs"}));
  });
}

}  // namespace
}  // namespace distribute
