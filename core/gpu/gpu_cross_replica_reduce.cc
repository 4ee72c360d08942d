// GpuCollective::ReduceOnDevice: a cross-replica reduction of GPU components computed on the
// destination GPU, so strategy.reduce / reduce_to of GPU values moves no bytes through the
// host (the host path copies every component down and the result back up).
#include <algorithm>
#include <optional>

#include "core/device/gpu_plugin_api.h"
#include "core/device/gpu_runtime.h"
#include "core/gpu/gpu_collective.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

size_t Aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

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
  const size_t count = static_cast<size_t>(first.shape().num_elements());
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> out_buffer, Buffer::Allocate(destination, first.byte_size(), false));
  ASSIGN_OR_RETURN(Tensor out, Tensor::FromBuffer(first.dtype(), first.shape(), std::move(out_buffer)));
  if (count == 0) return std::optional<Tensor>(std::move(out));
  // Components the destination cannot read in place are copied next to it first. The
  // staging is this call's own (the replicas' scratch may be in use by another thread's run).
  int32_t unreadable = 0;
  for (int32_t r = 0; r < n; ++r) unreadable += gpus_->CanRead(root, r) ? 0 : 1;
  std::shared_ptr<Buffer> staging;
  if (unreadable > 0) {
    ASSIGN_OR_RETURN(staging, Buffer::Allocate(destination, Aligned(first.byte_size()) * static_cast<size_t>(unreadable), false));
  }
  const GpuRuntime& gpu = GpuRuntime::Get();
  const int32_t device = gpus_->gpu(root);
  void* const stream = gpus_->stream(root);
  std::vector<const void*> sources(static_cast<size_t>(n));
  auto queue = [&]() -> absl::Status {
    char* next = staging != nullptr ? static_cast<char*>(staging->data()) : nullptr;
    for (int32_t r = 0; r < n; ++r) {
      const Tensor& component = components[static_cast<size_t>(r)];
      if (gpus_->CanRead(root, r)) {
        sources[static_cast<size_t>(r)] = component.data();
        continue;
      }
      RETURN_IF_ERROR(gpu.CopyAsync(device, next, gpus_->gpu(r), component.data(), component.byte_size(),
                                    device, stream));
      sources[static_cast<size_t>(r)] = next;
      next += Aligned(component.byte_size());
    }
    const bool mean = op == ReduceOp::kMean;
    return gpu.Reduce(device, stream, static_cast<int32_t>(first.dtype()),
                      static_cast<int32_t>(mean ? ReduceOp::kSum : op), sources.data(), n, out.data(),
                      count, mean ? n : 1);
  };
  if (absl::Status queued = queue(); !queued.ok()) return gpus_->Fail(queued);
  RETURN_IF_ERROR(gpus_->Wait(root, deadline, "a cross-replica reduction"));
  return std::optional<Tensor>(std::move(out));
}

}  // namespace distribute
