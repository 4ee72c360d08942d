// The backend factory picks from data: one process gets a LocalCollective following its
// CrossDeviceOps and a SingleWorker; device kinds and communication options that no
// backend serves are refused before anything connects. And SingleWorker, the workers of a
// one-process job, against results computed here.
#include "core/backend/collective_backend.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/backend/transport_factory.h"
#include "core/collective/local_collective.h"
#include "core/collective/single_worker.h"
#include "core/device/local_devices.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

std::vector<DeviceSpec> Cpus(int32_t n) {
  std::vector<DeviceSpec> devices;
  for (int32_t i = 0; i < n; ++i) {
    DeviceSpec spec;
    spec.type = DeviceType::kCpu;
    spec.index = i;
    devices.push_back(spec.WithDefaults());
  }
  return devices;
}

TEST(CollectiveBackendTest, OneProcessIsALocalCollectiveWithOneWorker) {
  ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(4)));
  for (const CrossDeviceOps& ops :
       {*CrossDeviceOps::SharedMemory(0), *CrossDeviceOps::HierarchicalCopy(2),
        *CrossDeviceOps::ReductionToOneDevice("CPU:2"), *CrossDeviceOps::ReductionToOneDevice("")}) {
    BackendRequest request;
    request.devices = Cpus(3);
    request.ops = ops;
    absl::StatusOr<std::unique_ptr<CollectiveBackend>> backend = CreateCollectiveBackend(request);
    ASSERT_TRUE(IsOk(backend));
    EXPECT_NE(dynamic_cast<LocalCollective*>(&(*backend)->collective()), nullptr);
    EXPECT_EQ((*backend)->collective().size(), 3);
    EXPECT_NE(dynamic_cast<SingleWorker*>(&(*backend)->workers()), nullptr);
    EXPECT_EQ((*backend)->num_workers(), 1);
    EXPECT_EQ((*backend)->worker_index(), 0);
  }
}

TEST(CollectiveBackendTest, WhatNoBackendServesIsRefusedUpFront) {
  BackendRequest request;
  EXPECT_TRUE(HasError(CreateCollectiveBackend(request), absl::StatusCode::kInvalidArgument,
                       {"at least one replica"}));
  request.devices = Cpus(1);
  DeviceSpec gpu;
  gpu.type = DeviceType::kGpu;
  gpu.index = 0;
  request.devices.push_back(gpu.WithDefaults());
  EXPECT_TRUE(HasError(CreateCollectiveBackend(request), absl::StatusCode::kInvalidArgument,
                       {"CPU:0", "GPU:0", "all CPU devices or all GPUs"}));
  request.devices = Cpus(2);
  request.ops.algorithm = AllReduceAlgorithm::kReductionToOneDevice;
  request.ops.reduce_device = "CPU:99";  // no such logical device here
  EXPECT_FALSE(CreateCollectiveBackend(request).ok());

  unsetenv(kSharedMemoryEnv);
  CommunicationOptions options;
  EXPECT_EQ(*ChooseTransport(options, DeviceType::kCpu), TransportKind::kSharedMemoryOnOneHost);
  options.implementation = CommunicationImplementation::kRing;
  EXPECT_EQ(*ChooseTransport(options, DeviceType::kCpu), TransportKind::kSharedMemoryOnOneHost);
  options.shared_memory = SharedMemoryMode::kOff;
  EXPECT_EQ(*ChooseTransport(options, DeviceType::kCpu), TransportKind::kGlooTcp);
  options.shared_memory = SharedMemoryMode::kOn;
  EXPECT_EQ(*ChooseTransport(options, DeviceType::kCpu), TransportKind::kSharedMemory);
  // AUTO defers to the environment; the options' own choice comes first.
  options.shared_memory = SharedMemoryMode::kAuto;
  setenv(kSharedMemoryEnv, "off", 1);
  EXPECT_EQ(*ChooseTransport(options, DeviceType::kCpu), TransportKind::kGlooTcp);
  setenv(kSharedMemoryEnv, "on", 1);
  EXPECT_EQ(*ChooseTransport(options, DeviceType::kCpu), TransportKind::kSharedMemory);
  options.shared_memory = SharedMemoryMode::kOff;
  EXPECT_EQ(*ChooseTransport(options, DeviceType::kCpu), TransportKind::kGlooTcp);
  options.shared_memory = SharedMemoryMode::kAuto;
  setenv(kSharedMemoryEnv, "sometimes", 1);
  EXPECT_TRUE(HasError(ChooseTransport(options, DeviceType::kCpu), absl::StatusCode::kInvalidArgument,
                       {"DIST_SHARED_MEMORY", "sometimes", "auto, on or off"}));
  unsetenv(kSharedMemoryEnv);
  options.shared_memory = static_cast<SharedMemoryMode>(7);
  EXPECT_TRUE(HasError(options.Validate(), absl::StatusCode::kInvalidArgument, {"shared memory mode 7"}));
  options.shared_memory = SharedMemoryMode::kAuto;
  options.implementation = CommunicationImplementation::kNccl;
  EXPECT_TRUE(HasError(ChooseTransport(options, DeviceType::kCpu), absl::StatusCode::kFailedPrecondition,
                       {"NCCL needs GPU replicas"}));
  // GPU workers' host side (what NCCL does not carry) travels like CPU workers' data.
  for (CommunicationImplementation impl : {CommunicationImplementation::kAuto, CommunicationImplementation::kNccl}) {
    options.implementation = impl;
    absl::StatusOr<TransportKind> kind = ChooseTransport(options, DeviceType::kGpu);
    ASSERT_TRUE(IsOk(kind));
    EXPECT_EQ(*kind, TransportKind::kSharedMemoryOnOneHost);
  }
}

TEST(SingleWorkerTest, TheCrossWorkerStepIsTheLocalResult) {
  SingleWorker workers;
  const Deadline deadline = Deadline::AfterMs(1000);
  // A pack of two accumulators (float32 partial sums of 4 replicas), MEAN over 4.
  const float pack[2] = {10.0f, -6.0f};
  float out_a[2] = {0, 0};
  float out_b[2] = {0, 0};
  void* outputs[2] = {out_a, out_b};
  const Workers::Segment segment{DType::kFloat32, 2, 0, std::span<void* const>(outputs, 2)};
  ASSERT_TRUE(IsOk(workers.AllReduce(ReduceOp::kMean, pack, sizeof pack,
                                     std::span<const Workers::Segment>(&segment, 1), 4, "x", deadline)));
  EXPECT_EQ(out_a[0], 2.5f);
  EXPECT_EQ(out_a[1], -1.5f);
  EXPECT_EQ(std::memcmp(out_a, out_b, sizeof out_a), 0);

  // Three local arrays of int32, SUM and MAX, written over the first input.
  int32_t a[3] = {1, -5, 7}, b[3] = {2, 9, -7}, c[3] = {4, 0, 100};
  const void* inputs[3] = {a, b, c};
  int32_t sum[3];
  ASSERT_TRUE(IsOk(workers.AllReduceLocal(ReduceOp::kSum, DType::kInt32, inputs, 3, 3, sum, 3, "s", deadline)));
  EXPECT_EQ(sum[0], 7);
  EXPECT_EQ(sum[1], 4);
  EXPECT_EQ(sum[2], 100);
  ASSERT_TRUE(IsOk(workers.AllReduceLocal(ReduceOp::kMax, DType::kInt32, inputs, 3, 3, a, 3, "m", deadline)));
  EXPECT_EQ(a[0], 4);
  EXPECT_EQ(a[1], 9);
  EXPECT_EQ(a[2], 100);

  float data[2] = {1.0f, 2.0f};
  ASSERT_TRUE(IsOk(workers.Broadcast(data, sizeof data, 0, "b", deadline)));
  EXPECT_EQ(data[1], 2.0f);
  EXPECT_EQ(workers.num_workers(), 1);
  EXPECT_EQ(workers.worker(), 0);
}

}  // namespace
}  // namespace distribute
