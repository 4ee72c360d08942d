// One GPU stream (an ordered queue of work on one device) and the host-side wait for it.
// Work queued on a stream finishes later; Wait polls it (spinning briefly, then sleeping
// in growing steps) until it has finished, failed, or the deadline passes. A GPU wait never
// blocks inside the driver, so a stalled kernel (a collective whose peer never came)
// cannot hang the calling thread past its deadline.
#ifndef DISTRIBUTE_CORE_DEVICE_GPU_STREAM_H_
#define DISTRIBUTE_CORE_DEVICE_GPU_STREAM_H_

#include <cstdint>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/util/deadline.h"

namespace distribute {

class GpuStream {
 public:
  // `yield`: whether the spinning wait gives up the core between polls. The GPU does the
  // work waited for, so spinning costs nobody anything unless the process's busy threads
  // (replicas, NCCL's proxy) outnumber its cores; yielding adds a system call per poll.
  static absl::StatusOr<std::unique_ptr<GpuStream>> Create(int32_t device, bool yield = true);
  ~GpuStream();
  GpuStream(const GpuStream&) = delete;
  GpuStream& operator=(const GpuStream&) = delete;

  int32_t device() const { return device_; }
  void* handle() const { return handle_; }

  // Until everything queued so far has finished. `what` names the work for the messages;
  // `poll` (called between polls of the stream) reports errors that arrive elsewhere, such
  // as a communicator's asynchronous failure. DeadlineExceeded when the deadline passes.
  absl::Status Wait(const Deadline& deadline, absl::string_view what,
                    absl::FunctionRef<absl::Status()> poll);
  absl::Status Wait(const Deadline& deadline, absl::string_view what) {
    return Wait(deadline, what, [] { return absl::OkStatus(); });
  }

 private:
  GpuStream(int32_t device, void* handle, bool yield) : device_(device), handle_(handle), yield_(yield) {}

  const int32_t device_;
  void* const handle_;
  const bool yield_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_DEVICE_GPU_STREAM_H_
