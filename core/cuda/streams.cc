// Streams: the ordered queues that copies, reductions and collectives are put on.
#include <cuda_runtime_api.h>

#include "core/cuda/devices.h"
#include "core/cuda/plugin_entries.h"
#include "core/cuda/plugin_errors.h"

namespace distribute::gpu_plugin {

int StreamCreate(int32_t device, void** out_stream, char* err, size_t err_len) {
  *out_stream = nullptr;
  if (UseDevice(device, err, err_len) != 0) return 1;
  cudaStream_t stream = nullptr;
  // Non-blocking: work on the legacy default stream (the synchronous copy and zero) neither
  // waits for nor is waited for by these streams, so a stuck collective cannot stall them.
  const cudaError_t error = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (error != cudaSuccess) return FailCuda(error, device, err, err_len, "cudaStreamCreateWithFlags");
  *out_stream = stream;
  return 0;
}

void StreamDestroy(int32_t device, void* stream) {
  if (stream == nullptr) return;
  // Returns at once; CUDA frees the stream when the work still queued on it has finished.
  if (cudaSetDevice(device) == cudaSuccess) (void)cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  (void)cudaGetLastError();  // the caller ignores failures: keep them out of later checks
}

int StreamQuery(int32_t device, void* stream, char* err, size_t err_len) {
  if (UseDevice(device, err, err_len) != 0) return -1;
  const cudaError_t error = cudaStreamQuery(static_cast<cudaStream_t>(stream));
  if (error == cudaSuccess) return 0;
  if (error == cudaErrorNotReady) return 1;
  FailCuda(error, device, err, err_len, "cudaStreamQuery");
  return -1;
}

}  // namespace distribute::gpu_plugin
