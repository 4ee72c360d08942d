// Devices: how many there are, making one current, and letting one read another's memory.
#include "core/cuda/devices.h"

#include <cuda_runtime_api.h>

#include "core/cuda/plugin_entries.h"
#include "core/cuda/plugin_errors.h"

namespace distribute::gpu_plugin {

int UseDevice(int32_t device, char* err, size_t err_len) {
  if (device < 0) {
    return FailWith(err, err_len, "GPU:%d is not a device (expected an index from 0)",
                    static_cast<int>(device));
  }
  const cudaError_t error = cudaSetDevice(device);
  if (error != cudaSuccess) return FailCuda(error, device, err, err_len, "cudaSetDevice");
  return 0;
}

int DeviceCount(int32_t* out_count, char* err, size_t err_len) {
  *out_count = 0;
  int count = 0;  // cudaGetDeviceCount leaves it unchanged on error
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) return FailCuda(error, kNoDevice, err, err_len, "cudaGetDeviceCount");
  *out_count = count;
  return 0;
}

int EnablePeerAccess(int32_t device, int32_t peer, int32_t* out_enabled, char* err,
                     size_t err_len) {
  *out_enabled = 0;
  if (UseDevice(device, err, err_len) != 0) return 1;
  if (device == peer) {  // a device always reads its own memory
    *out_enabled = 1;
    return 0;
  }
  int can_access = 0;
  cudaError_t error = cudaDeviceCanAccessPeer(&can_access, device, peer);
  if (error != cudaSuccess) {
    return FailCuda(error, device, err, err_len, "cudaDeviceCanAccessPeer of GPU:%d",
                    static_cast<int>(peer));
  }
  if (can_access == 0) return 0;  // no P2P path (e.g. across PCIe root complexes): not an error
  error = cudaDeviceEnablePeerAccess(peer, 0);
  if (error == cudaErrorPeerAccessAlreadyEnabled) {
    // Enabling twice is harmless, but the runtime records it as this thread's last error,
    // which the next kernel-launch check would report: clear it.
    (void)cudaGetLastError();
  } else if (error != cudaSuccess) {
    return FailCuda(error, device, err, err_len, "cudaDeviceEnablePeerAccess of GPU:%d",
                    static_cast<int>(peer));
  }
  *out_enabled = 1;
  return 0;
}

}  // namespace distribute::gpu_plugin
