// How the plugin reports failure: a NUL-terminated message in the caller's err buffer
// (err_len bytes, truncated to fit) that names the CUDA or NCCL call and the device, e.g.
// "cudaMalloc of 4096 bytes on GPU:1: cudaErrorMemoryAllocation: out of memory". Nothing
// here allocates, throws or prints: the plugin's entries are called through a C table.
#ifndef DISTRIBUTE_CORE_CUDA_PLUGIN_ERRORS_H_
#define DISTRIBUTE_CORE_CUDA_PLUGIN_ERRORS_H_

#include <cuda_runtime_api.h>

#include <cstdarg>
#include <cstddef>
#include <cstdint>

namespace distribute::gpu_plugin {

// Where a message says no device: calls that are not about one (cudaGetDeviceCount).
inline constexpr int32_t kNoDevice = INT32_MIN;

// Builds a message in err[0, err_len), always NUL-terminated, dropping what does not fit.
class ErrorMessage {
 public:
  ErrorMessage(char* err, size_t err_len);

  ErrorMessage& Append(const char* format, ...) __attribute__((format(printf, 2, 3)));
  ErrorMessage& AppendV(const char* format, va_list args);
  // " on GPU:n", " on host" for DIST_GPU_HOST_DEVICE, nothing for kNoDevice.
  ErrorMessage& AppendDevice(int32_t device);

 private:
  char* err_;
  size_t err_len_;
  size_t used_ = 0;
};

// Writes "<call> on GPU:<device>: <cudaErrorName>: <description>", where <call> is
// printf-formatted from call_format, and returns 1. Also clears the thread's last-error
// record, so that the check after a later kernel launch does not report this failure again.
int FailCuda(cudaError_t error, int32_t device, char* err, size_t err_len, const char* call_format,
             ...) __attribute__((format(printf, 5, 6)));

// Writes a printf-formatted message (a bad argument, an unsupported dtype) and returns 1.
int FailWith(char* err, size_t err_len, const char* format, ...) __attribute__((format(printf, 3, 4)));

}  // namespace distribute::gpu_plugin

#endif  // DISTRIBUTE_CORE_CUDA_PLUGIN_ERRORS_H_
