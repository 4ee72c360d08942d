#include "core/device/gpu_stream.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "core/util/spin.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// Kernels of a training step take microseconds to milliseconds: spin for the short ones,
// then sleep in steps that grow to 1 ms so a long wait costs little CPU.
constexpr int64_t kSpinNs = 50'000;
constexpr auto kFirstSleep = std::chrono::microseconds(20);
constexpr auto kLongestSleep = std::chrono::microseconds(1000);

}  // namespace

absl::StatusOr<std::unique_ptr<GpuStream>> GpuStream::Create(int32_t device, bool yield) {
  ASSIGN_OR_RETURN(void* handle, GpuRuntime::Get().CreateStream(device));
  return std::unique_ptr<GpuStream>(new GpuStream(device, handle, yield));
}

GpuStream::~GpuStream() { GpuRuntime::Get().DestroyStream(device_, handle_); }

absl::Status GpuStream::Wait(const Deadline& deadline, absl::string_view what,
                             absl::FunctionRef<absl::Status()> poll) {
  const GpuRuntime& gpu = GpuRuntime::Get();
  absl::Status failure;
  auto finished = [&] {
    absl::StatusOr<bool> done = gpu.StreamDone(device_, handle_);
    if (!done.ok()) {
      failure = done.status();
      return true;
    }
    return *done;
  };
  if (SpinUntil(kSpinNs, finished, yield_)) return failure;
  auto sleep = kFirstSleep;
  while (true) {
    if (finished()) return failure;
    RETURN_IF_ERROR(poll());
    if (deadline.Expired()) {
      return absl::DeadlineExceededError(absl::StrCat(
          what, " on GPU:", device_, " did not finish within the ", deadline.timeout_ms,
          " ms deadline"));
    }
    std::this_thread::sleep_for(sleep);
    sleep = std::min(sleep * 2, kLongestSleep);
  }
}

}  // namespace distribute
