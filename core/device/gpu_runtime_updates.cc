// The variable-update half of GpuRuntime: a GPU copy of a variable updated where it lives,
// instead of a host round trip of the whole variable per update. Addition is the plugin's
// `reduce` (SUM of target and delta), subtraction its `difference`; both keep the CPU
// kernels' arithmetic, so a variable on a GPU holds the bits a CPU copy would.
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

constexpr size_t kErrLen = 512;

// Until the device's default stream has run what was queued on it. Unbounded, as a
// synchronous copy is: that stream never waits for a collective (the replicas' streams and
// NCCL's are non-blocking), only for the update just queued.
absl::Status WaitDefaultStream(const GpuRuntime& gpu, int32_t device) {
  for (int polls = 0;; ++polls) {
    ASSIGN_OR_RETURN(const bool done, gpu.StreamDone(device, nullptr));
    if (done) return absl::OkStatus();
    if (polls < 1000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
}

}  // namespace

absl::Status GpuRuntime::AddInPlace(int32_t device, int32_t dtype, void* target, const void* delta,
                                    size_t count) const {
  const void* inputs[2] = {target, delta};
  RETURN_IF_ERROR(Reduce(device, nullptr, dtype, /*SUM*/ 1, inputs, 2, target, count, 0));
  return WaitDefaultStream(*this, device);
}

absl::Status GpuRuntime::SubtractInPlace(int32_t device, int32_t dtype, void* target, const void* delta,
                                         size_t count) const {
  if (!has_update_entries_) {
    return absl::FailedPreconditionError("the CUDA plugin has no `difference` entry (built before it)");
  }
  if (count == 0) return absl::OkStatus();
  char err[kErrLen] = "";
  if (plugin_->difference(device, nullptr, dtype, target, delta, target, count, err, sizeof err) != 0) {
    return absl::InternalError(absl::StrCat("queuing a subtraction of ", count, " elements on GPU:", device,
                                            " failed: ", err[0] ? err : "no message"));
  }
  return WaitDefaultStream(*this, device);
}

}  // namespace distribute
