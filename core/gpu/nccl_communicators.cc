#include "core/gpu/nccl_communicators.h"

#include <utility>

#include "core/device/gpu_runtime.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<std::unique_ptr<NcclCommunicators>> NcclCommunicators::Create(
    std::span<const int32_t> devices) {
  ASSIGN_OR_RETURN(std::vector<void*> comms, GpuRuntime::Get().InitCommunicators(devices));
  return std::unique_ptr<NcclCommunicators>(new NcclCommunicators(std::move(comms)));
}

std::unique_ptr<NcclCommunicators> NcclCommunicators::Adopt(std::vector<void*> comms) {
  return std::unique_ptr<NcclCommunicators>(new NcclCommunicators(std::move(comms)));
}

NcclCommunicators::NcclCommunicators(std::vector<void*> comms) {
  for (void* comm : comms) {
    auto rank = std::make_unique<Rank>();
    MutexLock lock(&rank->mu);
    rank->comm = comm;
    ranks_.push_back(std::move(rank));
  }
}

NcclCommunicators::~NcclCommunicators() {
  const GpuRuntime& gpu = GpuRuntime::Get();
  for (auto& rank : ranks_) {
    MutexLock lock(&rank->mu);
    // A communicator with an error may never finish a clean destroy: abort it instead.
    if (rank->comm != nullptr) {
      absl::StatusOr<bool> ready = gpu.CommunicatorReady(rank->comm);
      if (ready.ok() && *ready) {
        gpu.DestroyCommunicator(rank->comm);
      } else {
        gpu.AbortCommunicator(rank->comm);
      }
    }
    rank->comm = nullptr;
  }
}

absl::Status NcclCommunicators::Use(int32_t rank, absl::FunctionRef<absl::Status(void* comm)> enqueue) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  MutexLock lock(&r.mu);
  if (r.comm == nullptr) return failure();
  return enqueue(r.comm);
}

absl::Status NcclCommunicators::Check(int32_t rank) {
  Rank& r = *ranks_[static_cast<size_t>(rank)];
  MutexLock lock(&r.mu);
  if (r.comm == nullptr) return failure();
  absl::StatusOr<bool> ready = GpuRuntime::Get().CommunicatorReady(r.comm);
  return ready.status();
}

void NcclCommunicators::Abort(const absl::Status& cause) {
  {
    MutexLock lock(&mu_);
    if (!failure_.ok()) return;
    failure_ = cause;
  }
  const GpuRuntime& gpu = GpuRuntime::Get();
  for (auto& rank : ranks_) {
    MutexLock lock(&rank->mu);
    gpu.AbortCommunicator(rank->comm);
    rank->comm = nullptr;
  }
}

absl::Status NcclCommunicators::failure() const {
  MutexLock lock(&mu_);
  return failure_;
}

}  // namespace distribute
