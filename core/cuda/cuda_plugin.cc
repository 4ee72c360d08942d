// libdistribute_cuda.so.0: the CUDA plugin. It links the CUDA runtime (and later NCCL) so
// that libdistribute itself never does; the core loads it with dlopen on first GPU use.
// Only the runtime API is used: a driver-API call would add a NEEDED libcuda.so.1 and make
// dlopen fail on machines without a driver (see notes/toolchain.md).
#include <cuda_runtime.h>

#include <cstdio>

#include "core/device/gpu_plugin_api.h"

namespace {

int Fail(cudaError_t error, const char* what, char* err, size_t err_len) {
  std::snprintf(err, err_len, "%s: %s (%s)", what, cudaGetErrorString(error),
                cudaGetErrorName(error));
  return 1;
}

int DeviceCount(int32_t* out_count, char* err, size_t err_len) {
  int count = 0;  // cudaGetDeviceCount leaves it unchanged on error
  const cudaError_t error = cudaGetDeviceCount(&count);
  *out_count = 0;
  if (error != cudaSuccess) return Fail(error, "cudaGetDeviceCount", err, err_len);
  *out_count = count;
  return 0;
}

int Allocate(int32_t device, size_t bytes, void** out_ptr, char* err, size_t err_len) {
  cudaError_t error = cudaSetDevice(device);
  if (error != cudaSuccess) return Fail(error, "cudaSetDevice", err, err_len);
  error = cudaMalloc(out_ptr, bytes);
  if (error != cudaSuccess) return Fail(error, "cudaMalloc", err, err_len);
  return 0;
}

void Release(int32_t device, void* ptr) {
  if (cudaSetDevice(device) == cudaSuccess) cudaFree(ptr);
}

int Copy(int32_t dst_device, void* dst, int32_t src_device, const void* src, size_t bytes,
         char* err, size_t err_len) {
  cudaError_t error;
  if (dst_device >= 0 && src_device >= 0 && dst_device != src_device) {
    error = cudaMemcpyPeer(dst, dst_device, src, src_device, bytes);
  } else {
    const int32_t active = dst_device >= 0 ? dst_device : src_device;
    error = cudaSetDevice(active >= 0 ? active : 0);
    if (error == cudaSuccess) error = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  }
  if (error != cudaSuccess) return Fail(error, "cudaMemcpy", err, err_len);
  return 0;
}

int Zero(int32_t device, void* ptr, size_t bytes, char* err, size_t err_len) {
  cudaError_t error = cudaSetDevice(device);
  if (error == cudaSuccess) error = cudaMemset(ptr, 0, bytes);
  if (error == cudaSuccess) error = cudaDeviceSynchronize();
  if (error != cudaSuccess) return Fail(error, "cudaMemset", err, err_len);
  return 0;
}

const dist_gpu_plugin_v1 kPlugin = {
    sizeof(dist_gpu_plugin_v1), DIST_GPU_PLUGIN_ABI_VERSION, DeviceCount, Allocate, Release, Copy,
    Zero,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const dist_gpu_plugin_v1* dist_gpu_plugin_get(void) {
  return &kPlugin;
}
