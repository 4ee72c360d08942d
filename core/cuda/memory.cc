// Device memory, page-locked host memory, and copies between them (device
// DIST_GPU_HOST_DEVICE is host memory). Pointers are unified virtual addresses, so one
// cudaMemcpyAsync with cudaMemcpyDefault covers host<->device and same-device copies; only
// copies between two devices go through cudaMemcpyPeerAsync, which works without peer access.
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>

#include "core/cuda/block_cache.h"
#include "core/cuda/devices.h"
#include "core/cuda/plugin_entries.h"
#include "core/cuda/plugin_errors.h"
#include "core/device/gpu_plugin_api.h"

namespace distribute::gpu_plugin {
namespace {

const char* Side(int32_t device, char (&buffer)[16]) {
  if (device == DIST_GPU_HOST_DEVICE) return "host";
  std::snprintf(buffer, sizeof buffer, "GPU:%d", static_cast<int>(device));
  return buffer;
}

// Queues the copy on `stream` of `stream_device`.
int QueueCopy(int32_t dst_device, void* dst, int32_t src_device, const void* src, size_t bytes,
              int32_t stream_device, cudaStream_t stream, char* err, size_t err_len) {
  if (UseDevice(stream_device, err, err_len) != 0) return 1;
  if (dst_device >= 0 && src_device >= 0 && dst_device != src_device) {
    const cudaError_t error = cudaMemcpyPeerAsync(dst, dst_device, src, src_device, bytes, stream);
    if (error != cudaSuccess) {
      return FailCuda(error, stream_device, err, err_len,
                      "cudaMemcpyPeerAsync of %zu bytes from GPU:%d to GPU:%d", bytes,
                      static_cast<int>(src_device), static_cast<int>(dst_device));
    }
    return 0;
  }
  const cudaError_t error = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream);
  if (error != cudaSuccess) {
    char src_name[16];
    char dst_name[16];
    return FailCuda(error, stream_device, err, err_len, "cudaMemcpyAsync of %zu bytes from %s to %s",
                    bytes, Side(src_device, src_name), Side(dst_device, dst_name));
  }
  return 0;
}

// Synchronous calls run on the legacy default stream and wait for that stream alone.
// cudaDeviceSynchronize would also wait for every other stream of the device, NCCL's
// kernels included, and hang for as long as a collective waits on a lost peer. The core's
// streams (StreamCreate) and NCCL's are non-blocking, so the legacy stream does not wait
// for them either.
int WaitLegacyStream(int32_t device, const char* what, char* err, size_t err_len) {
  const cudaError_t error = cudaStreamSynchronize(cudaStreamLegacy);
  if (error != cudaSuccess) {
    return FailCuda(error, device, err, err_len, "cudaStreamSynchronize after %s", what);
  }
  return 0;
}

}  // namespace

// Device memory comes from the device's stream-ordered pool (cudaMallocAsync on the legacy
// stream), whose frees need no device-wide synchronisation: cudaFree waits for every stream
// of the device, NCCL's kernels included. The core frees a buffer only after the work that
// used it has finished, so freeing in the legacy stream's order is safe. Freed blocks wait in
// a BlockCache for the next request of their size, which then costs no CUDA call at all; when
// the device runs out of memory the cache goes back to the pool and the allocation is tried
// again. The pool is the device's default one and keeps its default release threshold (0):
// what does not fit the cache goes back to the driver at the next synchronisation, which a
// free past the cache makes at once, so NCCL's own allocations and the application's (which do
// not come from this pool) find it. Devices without memory pools use cudaMalloc and cudaFree.
namespace {

constexpr int kMaxDevices = 64;
// Idle blocks kept per device: memory no other allocator of the process can use until this
// plugin runs out itself (then the cache goes back to the pool).
constexpr size_t kCachedBytesPerDevice = size_t{1} << 30;

BlockCache& Cache(int32_t device) {
  static BlockCache* caches[kMaxDevices] = {};
  static std::once_flag created;
  std::call_once(created, [] {
    for (BlockCache*& cache : caches) cache = new BlockCache(kCachedBytesPerDevice);  // never freed
  });
  return *caches[device];
}
// Per device: 0 not checked yet, 1 pools, 2 no pools.
std::atomic<int> pool_state[kMaxDevices];

bool UsesPool(int32_t device) {
  if (device < 0 || device >= kMaxDevices) return false;
  int state = pool_state[device].load(std::memory_order_acquire);
  if (state == 0) {
    int supported = 0;
    const bool usable =
        cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device) == cudaSuccess && supported != 0;
    (void)cudaGetLastError();
    state = usable ? 1 : 2;
    pool_state[device].store(state, std::memory_order_release);
  }
  return state == 1;
}

}  // namespace

int Allocate(int32_t device, size_t bytes, void** out_ptr, char* err, size_t err_len) {
  *out_ptr = nullptr;
  if (UseDevice(device, err, err_len) != 0) return 1;
  if (UsesPool(device)) {
    const size_t rounded = BlockCache::RoundUp(bytes);
    if (rounded == 0) return FailWith(err, err_len, "GPU:%d: %zu bytes is not a size", static_cast<int>(device), bytes);
    BlockCache& cache = Cache(device);
    if (void* block = cache.Take(rounded)) {
      *out_ptr = block;
      return 0;
    }
    cudaError_t error = cudaMallocAsync(out_ptr, rounded, cudaStreamLegacy);
    if (error == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // not sticky: clear it and retry with the cache's blocks
      for (void* idle : cache.Drain()) (void)cudaFreeAsync(idle, cudaStreamLegacy);
      error = cudaMallocAsync(out_ptr, rounded, cudaStreamLegacy);
    }
    if (error != cudaSuccess) {
      *out_ptr = nullptr;
      return FailCuda(error, device, err, err_len, "cudaMallocAsync of %zu bytes", bytes);
    }
    // Ready for the core's (non-blocking) streams once the legacy stream has run it.
    if (WaitLegacyStream(device, "cudaMallocAsync", err, err_len) != 0) {
      (void)cudaFreeAsync(*out_ptr, cudaStreamLegacy);
      *out_ptr = nullptr;
      return 1;
    }
    cache.Track(*out_ptr, rounded);
    return 0;
  }
  const cudaError_t error = cudaMalloc(out_ptr, bytes);
  if (error != cudaSuccess) {
    *out_ptr = nullptr;
    return FailCuda(error, device, err, err_len, "cudaMalloc of %zu bytes", bytes);
  }
  return 0;
}

void Release(int32_t device, void* ptr) {
  if (ptr == nullptr) return;
  const bool pooled = UsesPool(device);
  if (pooled && Cache(device).Give(ptr)) return;  // idle until its size is asked for
  if (cudaSetDevice(device) == cudaSuccess) {
    if (pooled) {
      // The wait lets the pool hand the block back to the driver now (its release threshold
      // is 0), not at some later synchronisation that another allocator may not wait for.
      if (cudaFreeAsync(ptr, cudaStreamLegacy) == cudaSuccess) (void)cudaStreamSynchronize(cudaStreamLegacy);
    } else {
      (void)cudaFree(ptr);
    }
  }
  (void)cudaGetLastError();  // the caller ignores failures: keep them out of later checks
}

int Copy(int32_t dst_device, void* dst, int32_t src_device, const void* src, size_t bytes,
         char* err, size_t err_len) {
  if (bytes == 0) return 0;
  // The destination's device runs the copy (the source's for a copy to host; device 0's
  // context for host-to-host).
  const int32_t device = dst_device >= 0 ? dst_device : (src_device >= 0 ? src_device : 0);
  if (QueueCopy(dst_device, dst, src_device, src, bytes, device, cudaStreamLegacy, err, err_len) != 0) {
    return 1;
  }
  return WaitLegacyStream(device, "a copy", err, err_len);
}

int Zero(int32_t device, void* ptr, size_t bytes, char* err, size_t err_len) {
  if (bytes == 0) return 0;
  if (UseDevice(device, err, err_len) != 0) return 1;
  const cudaError_t error = cudaMemsetAsync(ptr, 0, bytes, cudaStreamLegacy);
  if (error != cudaSuccess) {
    return FailCuda(error, device, err, err_len, "cudaMemsetAsync of %zu bytes", bytes);
  }
  return WaitLegacyStream(device, "cudaMemsetAsync", err, err_len);
}

int CopyAsync(int32_t dst_device, void* dst, int32_t src_device, const void* src, size_t bytes,
              int32_t stream_device, void* stream, char* err, size_t err_len) {
  if (bytes == 0) return 0;
  return QueueCopy(dst_device, dst, src_device, src, bytes, stream_device,
                   static_cast<cudaStream_t>(stream), err, err_len);
}

int HostAllocatePinned(size_t bytes, void** out_ptr, char* err, size_t err_len) {
  *out_ptr = nullptr;
  // Portable: the memory counts as pinned for every device, not only the current one.
  const cudaError_t error = cudaHostAlloc(out_ptr, bytes, cudaHostAllocPortable);
  if (error != cudaSuccess) {
    *out_ptr = nullptr;
    return FailCuda(error, DIST_GPU_HOST_DEVICE, err, err_len, "cudaHostAlloc of %zu bytes", bytes);
  }
  return 0;
}

void HostReleasePinned(void* ptr) {
  if (ptr == nullptr) return;
  (void)cudaFreeHost(ptr);
  (void)cudaGetLastError();  // the caller ignores failures: keep them out of later checks
}

}  // namespace distribute::gpu_plugin
