// Logical CPU devices, LocalDevice naming and ResolveLocalDevice. The expectations are the
// documented rules: CPUs first ("/job:localhost/replica:0/task:0/device:CPU:i"), then GPUs;
// 1 to 256 logical CPUs, defaulting to the hardware thread count.
#include "core/device/local_devices.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

int32_t GpuCount() { return GpuRuntime::Get().device_count(); }

// Restores the process-wide logical CPU count after each test.
class LocalDevicesTest : public ::testing::Test {
 protected:
  void SetUp() override { saved_ = LogicalCpuDeviceCount(); }
  void TearDown() override { ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(saved_))); }

 private:
  int32_t saved_ = 1;
};

// Declared first so that, when the whole binary runs in one process, nothing has changed
// the count yet (ctest runs each test in its own process).
TEST_F(LocalDevicesTest, DefaultCountIsTheHardwareThreadCountClamped) {
  const unsigned hw = std::thread::hardware_concurrency();
  const int32_t expected = hw == 0 ? 1 : (hw > 256 ? 256 : static_cast<int32_t>(hw));
  EXPECT_EQ(LogicalCpuDeviceCount(), expected);
  EXPECT_EQ(kMaxLogicalCpuDevices, 256);
}

TEST_F(LocalDevicesTest, SetAcceptsOneTo256) {
  for (int32_t count : {1, 2, 3, 8, 255, 256}) {
    ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(count)));
    EXPECT_EQ(LogicalCpuDeviceCount(), count);
    EXPECT_EQ(LocalDeviceCount(), count + GpuCount());
  }
}

TEST_F(LocalDevicesTest, SetRejectsOutOfRangeAndKeepsTheCount) {
  ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(4)));
  for (int32_t count : {0, -1, 257, 1000, std::numeric_limits<int32_t>::min(),
                        std::numeric_limits<int32_t>::max()}) {
    SCOPED_TRACE(count);
    EXPECT_TRUE(HasError(SetLogicalCpuDeviceCount(count), absl::StatusCode::kInvalidArgument,
                         {absl::StrCat(count), "1", "256"}));
    EXPECT_EQ(LogicalCpuDeviceCount(), 4);
  }
}

TEST_F(LocalDevicesTest, LocalDevicesAreCpusThenGpusNamedInFull) {
  ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(3)));
  const int32_t gpus = GpuCount();
  ASSERT_EQ(LocalDeviceCount(), 3 + gpus);
  for (int32_t i = 0; i < 3 + gpus; ++i) {
    SCOPED_TRACE(i);
    absl::StatusOr<DeviceSpec> device = LocalDevice(i);
    ASSERT_TRUE(IsOk(device));
    const bool cpu = i < 3;
    const std::string expected =
        cpu ? absl::StrCat("/job:localhost/replica:0/task:0/device:CPU:", i)
            : absl::StrCat("/job:localhost/replica:0/task:0/device:GPU:", i - 3);
    EXPECT_EQ(device->ToString(), expected);
    EXPECT_EQ(device->job, "localhost");
    EXPECT_EQ(device->replica, 0);
    EXPECT_EQ(device->task, 0);
    EXPECT_EQ(device->type, cpu ? DeviceType::kCpu : DeviceType::kGpu);
    EXPECT_EQ(device->index, cpu ? i : i - 3);
  }
}

TEST_F(LocalDevicesTest, LocalDeviceFollowsTheCpuCount) {
  ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(1)));
  EXPECT_TRUE(IsOk(LocalDevice(0)));
  if (GpuCount() == 0) {
    EXPECT_TRUE(HasError(LocalDevice(1), absl::StatusCode::kOutOfRange));
  }
  ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(2)));
  absl::StatusOr<DeviceSpec> second = LocalDevice(1);
  ASSERT_TRUE(IsOk(second));
  EXPECT_EQ(second->ToString(), "/job:localhost/replica:0/task:0/device:CPU:1");
}

TEST_F(LocalDevicesTest, LocalDeviceRejectsIndicesOutOfRange) {
  ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(2)));
  const int32_t total = 2 + GpuCount();
  for (int32_t index : {-1, total, total + 1, std::numeric_limits<int32_t>::min(),
                        std::numeric_limits<int32_t>::max()}) {
    SCOPED_TRACE(index);
    EXPECT_TRUE(HasError(LocalDevice(index), absl::StatusCode::kOutOfRange,
                         {absl::StrCat("index ", index), absl::StrCat(total)}));
  }
}

DeviceSpec Spec(DeviceType type, int32_t index) {
  DeviceSpec spec;
  spec.type = type;
  spec.index = index;
  return spec;
}

TEST_F(LocalDevicesTest, ResolveDefaultsToCpuZero) {
  absl::StatusOr<DeviceSpec> resolved = ResolveLocalDevice(DeviceSpec{});
  ASSERT_TRUE(IsOk(resolved));
  EXPECT_EQ(resolved->type, DeviceType::kCpu);
  EXPECT_EQ(resolved->index, 0);
  EXPECT_EQ(resolved->ToString(), "/device:CPU:0");

  resolved = ResolveLocalDevice(Spec(DeviceType::kCpu, -1));  // "CPU:*"
  ASSERT_TRUE(IsOk(resolved));
  EXPECT_EQ(resolved->index, 0);
}

TEST_F(LocalDevicesTest, ResolveKeepsJobReplicaAndTask) {
  DeviceSpec spec = Spec(DeviceType::kCpu, 0);
  spec.job = "localhost";
  spec.replica = 0;
  spec.task = 0;
  absl::StatusOr<DeviceSpec> resolved = ResolveLocalDevice(spec);
  ASSERT_TRUE(IsOk(resolved));
  EXPECT_EQ(resolved->ToString(), "/job:localhost/replica:0/task:0/device:CPU:0");
}

// A device of another job, replica or task belongs to another process (issue 13, item 11:
// "/job:ps/task:7/device:CPU:0" was accepted as CPU:0 of this one).
TEST_F(LocalDevicesTest, ResolveRefusesDevicesOfAnotherTask) {
  struct Case {
    const char* job;
    int32_t replica;
    int32_t task;
  };
  for (const Case& c : {Case{"ps", -1, 7}, Case{"worker", 0, 1}, Case{"worker", -1, -1},
                        Case{"localhost", -1, 1}, Case{"localhost", 1, 0}, Case{"", -1, 2},
                        Case{"", 3, -1}}) {
    DeviceSpec spec = Spec(DeviceType::kCpu, 0);
    spec.job = c.job;
    spec.replica = c.replica;
    spec.task = c.task;
    SCOPED_TRACE(spec.ToString());
    EXPECT_TRUE(HasError(ResolveLocalDevice(spec), absl::StatusCode::kInvalidArgument,
                         {absl::StrCat("device '", spec.ToString(), "'"),
                          "not a device of this process", "task /job:localhost/replica:0/task:0"}));
  }
  for (const Case& c : {Case{"", -1, -1}, Case{"localhost", -1, -1}, Case{"localhost", 0, 0},
                        Case{"", 0, -1}, Case{"", -1, 0}}) {
    DeviceSpec spec = Spec(DeviceType::kCpu, 0);
    spec.job = c.job;
    spec.replica = c.replica;
    spec.task = c.task;
    EXPECT_TRUE(IsOk(ResolveLocalDevice(spec))) << spec.ToString();
  }
  EXPECT_EQ(LocalTaskName(), "/job:localhost/replica:0/task:0");
}

TEST_F(LocalDevicesTest, ResolveChecksTheCpuIndex) {
  ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(4)));
  for (int32_t index = 0; index < 4; ++index) {
    absl::StatusOr<DeviceSpec> resolved = ResolveLocalDevice(Spec(DeviceType::kCpu, index));
    ASSERT_TRUE(IsOk(resolved));
    EXPECT_EQ(resolved->index, index);
  }
  EXPECT_TRUE(HasError(ResolveLocalDevice(Spec(DeviceType::kCpu, 4)), absl::StatusCode::kNotFound,
                       {"CPU:4", "4 logical CPU"}));
  EXPECT_TRUE(HasError(ResolveLocalDevice(Spec(DeviceType::kCpu, 1000)),
                       absl::StatusCode::kNotFound, {"CPU:1000"}));
}

TEST_F(LocalDevicesTest, ResolveGpuWithoutGpuIsFailedPrecondition) {
  if (GpuCount() > 0) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_TRUE(HasError(ResolveLocalDevice(Spec(DeviceType::kGpu, 0)),
                       absl::StatusCode::kFailedPrecondition, {"GPU:0"}));
  EXPECT_TRUE(HasError(ResolveLocalDevice(Spec(DeviceType::kGpu, -1)),
                       absl::StatusCode::kFailedPrecondition, {"GPU:0"}));
  EXPECT_TRUE(HasError(ResolveLocalDevice(Spec(DeviceType::kGpu, 3)),
                       absl::StatusCode::kFailedPrecondition, {"GPU:3"}));
}

TEST_F(LocalDevicesTest, GpuRuntimeWithoutGpuExplainsWhy) {
  if (GpuCount() > 0) GTEST_SKIP() << "this machine has a GPU";
  const GpuRuntime& gpu = GpuRuntime::Get();
  EXPECT_FALSE(gpu.unavailable_reason().empty());
  EXPECT_TRUE(HasError(gpu.CheckDevice(0), absl::StatusCode::kFailedPrecondition,
                       {"GPU:0", gpu.unavailable_reason()}));
  EXPECT_TRUE(HasError(gpu.Allocate(0, 16), absl::StatusCode::kFailedPrecondition));
  EXPECT_TRUE(HasError(gpu.Zero(0, nullptr, 16), absl::StatusCode::kFailedPrecondition));
  EXPECT_TRUE(HasError(gpu.Copy(DIST_GPU_HOST_DEVICE, nullptr, 0, nullptr, 16),
                       absl::StatusCode::kFailedPrecondition));
  gpu.Release(0, reinterpret_cast<void*>(0x1000));  // a no-op without a plugin
}

TEST_F(LocalDevicesTest, GpuRuntimeIsASingleton) {
  EXPECT_EQ(&GpuRuntime::Get(), &GpuRuntime::Get());
}

TEST_F(LocalDevicesTest, ResolveGpuWithGpu) {
  const int32_t gpus = GpuCount();
  if (gpus == 0) GTEST_SKIP() << "no GPU: " << GpuRuntime::Get().unavailable_reason();
  EXPECT_TRUE(GpuRuntime::Get().unavailable_reason().empty());
  for (int32_t index = 0; index < gpus; ++index) {
    absl::StatusOr<DeviceSpec> resolved = ResolveLocalDevice(Spec(DeviceType::kGpu, index));
    ASSERT_TRUE(IsOk(resolved));
    EXPECT_EQ(resolved->ToString(), absl::StrCat("/device:GPU:", index));
  }
  absl::StatusOr<DeviceSpec> any = ResolveLocalDevice(Spec(DeviceType::kGpu, -1));
  ASSERT_TRUE(IsOk(any));
  EXPECT_EQ(any->index, 0);
  EXPECT_TRUE(HasError(ResolveLocalDevice(Spec(DeviceType::kGpu, gpus)),
                       absl::StatusCode::kNotFound, {absl::StrCat("GPU:", gpus)}));
  EXPECT_TRUE(HasError(GpuRuntime::Get().CheckDevice(-1), absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace distribute
