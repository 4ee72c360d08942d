// GpuCollective::ReduceOnDevice: a cross-replica reduction of GPU components computed on the
// destination GPU, so strategy.reduce / reduce_to of GPU values moves no bytes through the
// host (the host path copies every component down and the result back up).
#include <optional>

#include "core/device/gpu_plugin_api.h"
#include "core/gpu/gpu_collective.h"
#include "core/gpu/gpu_kernel_reduce.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// Devices of this process (the caller is not in a job): the type and index say which.
bool SameLocalDevice(const DeviceSpec& a, const DeviceSpec& b) { return a.type == b.type && a.index == b.index; }

}  // namespace

absl::StatusOr<std::optional<Tensor>> GpuCollective::ReduceOnDevice(ReduceOp op,
                                                                    std::span<const Tensor> components,
                                                                    const DeviceSpec& destination,
                                                                    const Deadline& deadline) {
  const int32_t n = gpus_->size();
  // A job's other workers hold components this process does not; a failed collective may
  // have left a GPU unusable: the host path covers both.
  if (in_job() || static_cast<int32_t>(components.size()) != n || n > DIST_GPU_REDUCE_MAX_INPUTS ||
      !gpus_->failure().ok()) {
    return std::nullopt;
  }
  int32_t root = -1;
  for (int32_t r = 0; r < n; ++r) {
    if (!SameLocalDevice(components[static_cast<size_t>(r)].device(), gpus_->device(r))) return std::nullopt;
    if (SameLocalDevice(gpus_->device(r), destination)) root = r;
  }
  if (root < 0) return std::nullopt;
  const Tensor& first = components.front();
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> out_buffer, Buffer::Allocate(destination, first.byte_size(), false));
  ASSIGN_OR_RETURN(Tensor out, Tensor::FromBuffer(first.dtype(), first.shape(), std::move(out_buffer)));
  if (first.shape().num_elements() == 0) return std::optional<Tensor>(std::move(out));
  // Components the destination cannot read in place are copied next to it first, into
  // staging of this call's own (the replicas' scratch may be in use by another thread's run).
  bool copies = false;
  for (int32_t r = 0; r < n; ++r) copies = copies || !gpus_->CanRead(root, r);
  std::shared_ptr<Buffer> staging;
  if (copies) {
    ASSIGN_OR_RETURN(staging, Buffer::Allocate(destination, ScratchBytes(first.byte_size()) * static_cast<size_t>(n), false));
  }
  if (absl::Status queued = QueueReduceToOne(
          *gpus_, root, op, [&](int32_t r) -> const Tensor& { return components[static_cast<size_t>(r)]; }, out,
          staging != nullptr ? static_cast<char*>(staging->data()) : nullptr);
      !queued.ok()) {
    return gpus_->Fail(queued);  // a half-queued reduction leaves the GPU's state unknown
  }
  RETURN_IF_ERROR(gpus_->Wait(root, deadline, "a cross-replica reduction"));
  return std::optional<Tensor>(std::move(out));
}

}  // namespace distribute
