#include "core/cuda/plugin_errors.h"

#include <cstdio>

#include "core/device/gpu_plugin_api.h"

namespace distribute::gpu_plugin {

ErrorMessage::ErrorMessage(char* err, size_t err_len) : err_(err), err_len_(err == nullptr ? 0 : err_len) {
  if (err_len_ > 0) err_[0] = '\0';
}

ErrorMessage& ErrorMessage::AppendV(const char* format, va_list args) {
  if (used_ + 1 >= err_len_) return *this;
  const int written = std::vsnprintf(err_ + used_, err_len_ - used_, format, args);
  if (written > 0) {
    used_ += static_cast<size_t>(written);
    if (used_ > err_len_ - 1) used_ = err_len_ - 1;  // truncated: vsnprintf kept the NUL
  }
  return *this;
}

ErrorMessage& ErrorMessage::Append(const char* format, ...) {
  va_list args;
  va_start(args, format);
  AppendV(format, args);
  va_end(args);
  return *this;
}

ErrorMessage& ErrorMessage::AppendDevice(int32_t device) {
  if (device == kNoDevice) return *this;
  if (device == DIST_GPU_HOST_DEVICE) return Append(" on host");
  return Append(" on GPU:%d", static_cast<int>(device));
}

int FailCuda(cudaError_t error, int32_t device, char* err, size_t err_len, const char* call_format,
             ...) {
  (void)cudaGetLastError();
  ErrorMessage message(err, err_len);
  va_list args;
  va_start(args, call_format);
  message.AppendV(call_format, args);
  va_end(args);
  message.AppendDevice(device).Append(": %s: %s", cudaGetErrorName(error), cudaGetErrorString(error));
  return 1;
}

int FailWith(char* err, size_t err_len, const char* format, ...) {
  ErrorMessage message(err, err_len);
  va_list args;
  va_start(args, format);
  message.AppendV(format, args);
  va_end(args);
  return 1;
}

}  // namespace distribute::gpu_plugin
