// The devices of this process: logical CPU devices and the GPUs the CUDA plugin found.
#ifndef DISTRIBUTE_CORE_DEVICE_LOCAL_DEVICES_H_
#define DISTRIBUTE_CORE_DEVICE_LOCAL_DEVICES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device/device_spec.h"

namespace distribute {

inline constexpr int32_t kMaxLogicalCpuDevices = 256;

// The job this process's devices are named in, as TF names a process's own devices.
inline constexpr char kLocalJob[] = "localhost";
// "/job:localhost/replica:0/task:0": the task whose devices are this process's.
std::string LocalTaskName();

// Logical CPU devices exposed by this process; defaults to the hardware thread count.
int32_t LogicalCpuDeviceCount();
absl::Status SetLogicalCpuDeviceCount(int32_t count);

// CPUs first, then GPUs.
int32_t LocalDeviceCount();

// The local device at `index`, named in full (/job:localhost/replica:0/task:0/device:...).
absl::StatusOr<DeviceSpec> LocalDevice(int32_t index);

// Resolves `spec` to a device of this process (type defaults to CPU, index to 0) and
// checks that it exists: InvalidArgument for a device of another job, replica or task
// (only "localhost", replica 0 and task 0 are this process, or the parts left out),
// NotFound for an index past the last device, FailedPrecondition for a GPU when no GPU
// is usable.
absl::StatusOr<DeviceSpec> ResolveLocalDevice(const DeviceSpec& spec);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_DEVICE_LOCAL_DEVICES_H_
