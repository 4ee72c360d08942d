#include "core/device/local_devices.h"

#include <algorithm>
#include <atomic>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

int32_t DefaultCpuCount() {
  const unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int32_t>(std::clamp<unsigned>(hw, 1, kMaxLogicalCpuDevices));
}

std::atomic<int32_t>& CpuCount() {
  static std::atomic<int32_t> count{DefaultCpuCount()};
  return count;
}

}  // namespace

std::string LocalTaskName() { return absl::StrCat("/job:", kLocalJob, "/replica:0/task:0"); }

int32_t LogicalCpuDeviceCount() { return CpuCount().load(std::memory_order_relaxed); }

absl::Status SetLogicalCpuDeviceCount(int32_t count) {
  if (count < 1 || count > kMaxLogicalCpuDevices) {
    return absl::InvalidArgumentError(absl::StrCat("logical CPU device count ", count,
                                                   " is out of range: expected 1 to ",
                                                   kMaxLogicalCpuDevices));
  }
  CpuCount().store(count, std::memory_order_relaxed);
  return absl::OkStatus();
}

int32_t LocalDeviceCount() {
  return LogicalCpuDeviceCount() + GpuRuntime::Get().device_count();
}

absl::StatusOr<DeviceSpec> LocalDevice(int32_t index) {
  const int32_t cpus = LogicalCpuDeviceCount();
  const int32_t total = cpus + GpuRuntime::Get().device_count();
  if (index < 0 || index >= total) {
    return absl::OutOfRangeError(absl::StrCat("local device index ", index,
                                              " is out of range: this process has ", total,
                                              " local devices"));
  }
  DeviceSpec spec;
  spec.job = kLocalJob;
  spec.replica = 0;
  spec.task = 0;
  spec.type = index < cpus ? DeviceType::kCpu : DeviceType::kGpu;
  spec.index = index < cpus ? index : index - cpus;
  return spec;
}

absl::StatusOr<DeviceSpec> ResolveLocalDevice(const DeviceSpec& spec) {
  // A device of another job or task is another process's: accepting it as one of ours
  // would run replicas (or place tensors) here under a name that says they are elsewhere.
  const bool local_job = spec.job.empty() || spec.job == kLocalJob;
  if (!local_job || spec.replica > 0 || spec.task > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device ", Quoted(spec.ToString()), " is not a device of this process, which is task ",
        LocalTaskName(), ": a device name may only name job '", kLocalJob,
        "', replica 0 and task 0 (or leave them out, as in 'CPU:0')"));
  }
  DeviceSpec resolved = spec.WithDefaults();
  if (resolved.type == DeviceType::kGpu) {
    RETURN_IF_ERROR(GpuRuntime::Get().CheckDevice(resolved.index));
    return resolved;
  }
  const int32_t cpus = LogicalCpuDeviceCount();
  if (resolved.index >= cpus) {
    return absl::NotFoundError(absl::StrCat(
        "device CPU:", resolved.index, " does not exist: this process has ", cpus,
        " logical CPU devices (see dist_set_logical_cpu_device_count)"));
  }
  return resolved;
}

}  // namespace distribute
