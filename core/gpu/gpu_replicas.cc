#include "core/gpu/gpu_replicas.h"

#include <utility>

#include "core/device/gpu_runtime.h"
#include "core/util/spin.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<std::unique_ptr<GpuReplicas>> GpuReplicas::Create(
    const std::vector<DeviceSpec>& devices, Workers* workers, std::unique_ptr<NcclCommunicators> comms) {
  const GpuRuntime& gpu = GpuRuntime::Get();
  RETURN_IF_ERROR(gpu.CheckReplicaSupport());
  auto replicas = std::unique_ptr<GpuReplicas>(new GpuReplicas());
  replicas->devices_ = devices;
  replicas->workers_ = workers;
  std::vector<int32_t> indices;
  // Each replica's thread waits on its stream; NCCL adds a proxy thread.
  const bool yield = Oversubscribed(static_cast<int32_t>(devices.size()) + 1);
  for (const DeviceSpec& device : devices) {
    ASSIGN_OR_RETURN(std::unique_ptr<GpuStream> stream, GpuStream::Create(device.index, yield));
    replicas->streams_.push_back(std::move(stream));
    indices.push_back(device.index);
  }
  if (comms != nullptr) {
    replicas->comms_ = std::move(comms);
  } else {
    ASSIGN_OR_RETURN(replicas->comms_, NcclCommunicators::Create(indices));
  }
  const size_t n = devices.size();
  replicas->peer_.assign(n * n, false);
  for (size_t reader = 0; reader < n; ++reader) {
    for (size_t owner = 0; owner < n; ++owner) {
      if (reader == owner) continue;
      // Where the hardware cannot, the algorithms copy first instead of reading in place.
      ASSIGN_OR_RETURN(const bool enabled, gpu.EnablePeerAccess(indices[reader], indices[owner]));
      replicas->peer_[reader * n + owner] = enabled;
    }
  }
  replicas->scratch_.resize(n);
  return replicas;
}

absl::StatusOr<void*> GpuReplicas::Scratch(int32_t replica, size_t bytes) {
  std::shared_ptr<Buffer>& scratch = scratch_[static_cast<size_t>(replica)];
  if (scratch == nullptr || scratch->size() < bytes) {
    scratch.reset();  // free the old one first: device memory is scarce
    ASSIGN_OR_RETURN(scratch, Buffer::Allocate(device(replica), bytes, false));
  }
  return scratch->data();
}

absl::Status GpuReplicas::Wait(int32_t replica, const Deadline& deadline, absl::string_view what) {
  absl::Status status = streams_[static_cast<size_t>(replica)]->Wait(
      deadline, what, [&] { return comms_->Check(replica); });
  if (!status.ok()) return Fail(status);
  return absl::OkStatus();
}

absl::Status GpuReplicas::Fail(const absl::Status& cause) {
  comms_->Abort(explain_ ? explain_(cause) : cause);
  return comms_->failure();
}

}  // namespace distribute
