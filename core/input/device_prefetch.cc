#include "core/input/device_prefetch.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "core/input/distribution.h"
#include "core/util/deadline.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// A transfer to a GPU that takes this long has a GPU that stopped: fail instead of hanging.
constexpr int64_t kTransferTimeoutMs = 300'000;

}  // namespace

DevicePrefetcher::DevicePrefetcher(std::vector<DeviceSpec> workers)
    : workers_(std::move(workers)), replicas_(workers_.size()) {}

DevicePrefetcher::~DevicePrefetcher() {
  // The staging memory may still be read by a transfer: wait before freeing it.
  WaitAll().IgnoreError();
  const GpuRuntime& gpu = GpuRuntime::Get();
  for (Replica& replica : replicas_) {
    for (auto& [memory, bytes] : replica.pinned) gpu.ReleasePinned(memory);
  }
}

absl::StatusOr<Tensor> DevicePrefetcher::StageTensor(size_t r, size_t c, const Tensor& tensor) {
  const DeviceSpec& worker = workers_[r];
  if (worker.type != DeviceType::kGpu || !tensor.in_host_memory()) return PlaceTensor(tensor, worker);
  const GpuRuntime& gpu = GpuRuntime::Get();
  Replica& replica = replicas_[r];
  if (replica.stream == nullptr) {
    ASSIGN_OR_RETURN(replica.stream, GpuStream::Create(worker.index));
  }
  if (replica.pinned.size() <= c) replica.pinned.resize(c + 1, {nullptr, 0});
  auto& [memory, capacity] = replica.pinned[c];
  const size_t bytes = tensor.byte_size();
  if (capacity < bytes) {
    gpu.ReleasePinned(memory);  // no transfer reads it: Take waited for the last one
    memory = nullptr;
    capacity = 0;
    ASSIGN_OR_RETURN(memory, gpu.AllocatePinned(bytes));
    capacity = bytes;
  }
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, Buffer::Allocate(worker, bytes, false));
  if (bytes > 0) {
    std::memcpy(memory, tensor.data(), bytes);
    RETURN_IF_ERROR(gpu.CopyAsync(worker.index, buffer->data(), DIST_GPU_HOST_DEVICE, memory, bytes,
                                  worker.index, replica.stream->handle()));
  }
  return Tensor::FromBuffer(tensor.dtype(), tensor.shape(), std::move(buffer));
}

absl::Status DevicePrefetcher::Stage(std::vector<Element> by_replica) {
  if (has_staged_) return absl::InternalError("a batch is already staged for the devices");
  if (by_replica.size() != workers_.size()) {
    return absl::InternalError(absl::StrCat("a batch for ", by_replica.size(), " replicas, expected ",
                                            workers_.size()));
  }
  for (size_t r = 0; r < by_replica.size(); ++r) {
    for (size_t c = 0; c < by_replica[r].size(); ++c) {
      absl::StatusOr<Tensor> staged = StageTensor(r, c, by_replica[r][c]);
      if (!staged.ok()) {
        // The transfers queued so far write into buffers about to be freed: let them land.
        WaitAll().IgnoreError();
        return staged.status();
      }
      by_replica[r][c] = *std::move(staged);
    }
  }
  staged_ = std::move(by_replica);
  has_staged_ = true;
  return absl::OkStatus();
}

absl::Status DevicePrefetcher::WaitAll() {
  const Deadline deadline = Deadline::AfterMs(kTransferTimeoutMs);
  for (Replica& replica : replicas_) {
    if (replica.stream == nullptr) continue;
    RETURN_IF_ERROR(replica.stream->Wait(deadline, "copying a batch"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Element>> DevicePrefetcher::Take() {
  if (!has_staged_) return absl::InternalError("no batch is staged for the devices");
  has_staged_ = false;
  RETURN_IF_ERROR(WaitAll());
  return std::move(staged_);
}

}  // namespace distribute
