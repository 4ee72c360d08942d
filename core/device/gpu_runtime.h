// Access to GPUs through the CUDA plugin, loaded with dlopen on first use so that the core
// library has no link-time dependency on CUDA.
#ifndef DISTRIBUTE_CORE_DEVICE_GPU_RUNTIME_H_
#define DISTRIBUTE_CORE_DEVICE_GPU_RUNTIME_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device/gpu_plugin_api.h"

namespace distribute {

class GpuRuntime {
 public:
  // The process-wide runtime. The first call looks for the plugin: $DIST_CUDA_PLUGIN if
  // set, else libdistribute_cuda.so.0 beside libdistribute, else on the loader path.
  static const GpuRuntime& Get();

  // Number of GPUs found; 0 when there is no plugin, driver or device.
  int32_t device_count() const { return device_count_; }

  // Why device_count() is 0; "" when GPUs were found.
  const std::string& unavailable_reason() const { return unavailable_reason_; }

  // FailedPrecondition naming what is missing when `index` is not a usable GPU.
  absl::Status CheckDevice(int32_t index) const;

  absl::StatusOr<void*> Allocate(int32_t device, size_t bytes) const;
  void Release(int32_t device, void* ptr) const;
  // Device DIST_GPU_HOST_DEVICE (-1) is host memory.
  absl::Status Copy(int32_t dst_device, void* dst, int32_t src_device, const void* src,
                    size_t bytes) const;
  absl::Status Zero(int32_t device, void* ptr, size_t bytes) const;

 private:
  GpuRuntime();

  const dist_gpu_plugin_v1* plugin_ = nullptr;
  int32_t device_count_ = 0;
  std::string unavailable_reason_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_DEVICE_GPU_RUNTIME_H_
