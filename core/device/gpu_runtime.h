// Access to GPUs through the CUDA plugin, loaded with dlopen on first use so that the core
// library has no link-time dependency on CUDA.
#ifndef DISTRIBUTE_CORE_DEVICE_GPU_RUNTIME_H_
#define DISTRIBUTE_CORE_DEVICE_GPU_RUNTIME_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

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

  // ---- GPU replicas (gpu_runtime_replicas.cc): streams, reductions, NCCL -------------------
  // Errors name the CUDA or NCCL call and the device (the plugin's message).

  // FailedPrecondition unless GPUs were found and the plugin has the GPU-replica entries.
  absl::Status CheckReplicaSupport() const;
  absl::StatusOr<void*> CreateStream(int32_t device) const;
  void DestroyStream(int32_t device, void* stream) const;
  // Whether everything queued on `stream` has finished; an error when something failed.
  absl::StatusOr<bool> StreamDone(int32_t device, void* stream) const;
  absl::Status CopyAsync(int32_t dst_device, void* dst, int32_t src_device, const void* src,
                         size_t bytes, int32_t stream_device, void* stream) const;
  // Page-locked host memory, from which copies to a GPU run asynchronously.
  absl::StatusOr<void*> AllocatePinned(size_t bytes) const;
  void ReleasePinned(void* ptr) const;
  // Queues an element-wise reduction (plugin ABI `reduce`; dtype and op are their numbers).
  absl::Status Reduce(int32_t device, void* stream, int32_t dtype, int32_t op,
                      const void* const* inputs, int32_t num_inputs, void* output, size_t count,
                      int64_t divisor) const;
  // Whether `device` can now read `peer`'s memory.
  absl::StatusOr<bool> EnablePeerAccess(int32_t device, int32_t peer) const;

  using UniqueId = std::array<uint8_t, DIST_GPU_UNIQUE_ID_BYTES>;
  absl::StatusOr<UniqueId> NewUniqueId() const;
  // One communicator per device, rank i on devices[i].
  absl::StatusOr<std::vector<void*>> InitCommunicators(std::span<const int32_t> devices) const;
  // Starts creating rank `rank` of `nranks`; CommunicatorReady tells when it is usable.
  absl::StatusOr<void*> InitCommunicatorRank(int32_t device, int32_t nranks, const UniqueId& id,
                                             int32_t rank) const;
  // true: usable; false: still being created; an error when it failed.
  absl::StatusOr<bool> CommunicatorReady(void* comm) const;
  void AbortCommunicator(void* comm) const;
  void DestroyCommunicator(void* comm) const;
  absl::Status AllReduce(void* comm, void* stream, const void* send, void* recv, size_t count,
                         int32_t dtype, int32_t op) const;
  absl::Status AllGather(void* comm, void* stream, const void* send, void* recv,
                         size_t bytes) const;
  absl::Status Broadcast(void* comm, void* stream, const void* send, void* recv, size_t bytes,
                         int32_t root) const;

  // ---- Variable updates (gpu_runtime_updates.cc) --------------------------------------------
  // Whether the plugin can update GPU memory in place (else the caller updates a host copy).
  bool can_update_in_place() const { return has_update_entries_; }
  // target[i] += delta[i] / target[i] -= delta[i] for i < count, both in `device`'s memory,
  // with the CPU kernels' arithmetic; waited for (the device's default stream, as Copy).
  absl::Status AddInPlace(int32_t device, int32_t dtype, void* target, const void* delta, size_t count) const;
  absl::Status SubtractInPlace(int32_t device, int32_t dtype, void* target, const void* delta,
                               size_t count) const;

 private:
  GpuRuntime();

  const dist_gpu_plugin_v1* plugin_ = nullptr;
  int32_t device_count_ = 0;
  bool has_replica_entries_ = false;
  bool has_update_entries_ = false;
  std::string unavailable_reason_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_DEVICE_GPU_RUNTIME_H_
