// The calling thread's current device, which every CUDA runtime call works on.
#ifndef DISTRIBUTE_CORE_CUDA_DEVICES_H_
#define DISTRIBUTE_CORE_CUDA_DEVICES_H_

#include <cstddef>
#include <cstdint>

namespace distribute::gpu_plugin {

// cudaSetDevice(device) for this thread; 0, or 1 with a message. Each entry that works on
// a device calls it first: CUDA keeps one current device per thread, and the thread may
// have come from work on another device (the core's or another library's).
int UseDevice(int32_t device, char* err, size_t err_len);

}  // namespace distribute::gpu_plugin

#endif  // DISTRIBUTE_CORE_CUDA_DEVICES_H_
