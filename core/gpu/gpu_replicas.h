// What one process's GPU replicas share for their collectives: each replica's device and
// stream, the NCCL communicators, which devices can read each other's memory, a scratch
// buffer per replica, and the sticky failure that stops them all.
//
// Failure: an error from a GPU (a failed kernel or copy, a communicator's asynchronous
// error) or a wait past its deadline aborts the communicators, so no queued collective can
// block a GPU forever, and every later collective fails at once with the first cause.
//
// Thread-safety: replica r's members from replica r's thread; Fail and failure() from any.
#ifndef DISTRIBUTE_CORE_GPU_GPU_REPLICAS_H_
#define DISTRIBUTE_CORE_GPU_GPU_REPLICAS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/collective/workers.h"
#include "core/device/device_spec.h"
#include "core/device/gpu_stream.h"
#include "core/gpu/nccl_communicators.h"
#include "core/tensor/buffer.h"
#include "core/util/deadline.h"

namespace distribute {

class GpuReplicas {
 public:
  // Streams, communicators and peer access for `devices` (distinct GPUs of this process).
  // `comms`: communicators spanning a multi-worker job (ConnectNcclJob), whose ranks
  // first_rank ... are these replicas; null: one per device of this process, made here.
  // `workers`: the job's workers, for what runs on the host (never null).
  static absl::StatusOr<std::unique_ptr<GpuReplicas>> Create(
      const std::vector<DeviceSpec>& devices, Workers* workers,
      std::unique_ptr<NcclCommunicators> comms = nullptr);

  int32_t size() const { return static_cast<int32_t>(devices_.size()); }
  const DeviceSpec& device(int32_t replica) const { return devices_[static_cast<size_t>(replica)]; }
  int32_t gpu(int32_t replica) const { return device(replica).index; }
  void* stream(int32_t replica) const { return streams_[static_cast<size_t>(replica)]->handle(); }
  NcclCommunicators& comms() { return *comms_; }
  // The job's workers (a single worker for one process) and its replica count (MEAN's
  // divisor; this process's replicas when it is alone).
  Workers& workers() { return *workers_; }
  int32_t job_replicas() const { return size() * workers_->num_workers(); }
  // Whether `reader`'s kernels can read `owner`'s memory in place.
  bool CanRead(int32_t reader, int32_t owner) const {
    return reader == owner || peer_[static_cast<size_t>(reader * size() + owner)];
  }

  // Replica `replica`'s scratch memory on its device, at least `bytes` long; valid until
  // its next call.
  absl::StatusOr<void*> Scratch(int32_t replica, size_t bytes);

  // Until everything queued on replica `replica`'s stream has finished. An error or the
  // deadline fails every replica (Fail) and is returned.
  absl::Status Wait(int32_t replica, const Deadline& deadline, absl::string_view what);

  // Stops the replicas' collectives for good (the first cause wins) and returns the cause.
  absl::Status Fail(const absl::Status& cause);
  // In a job: what a failure really was. A GPU error is often the echo of a peer's death
  // (its communicator went away); `explain` returns the death when the coordination service
  // knows of one, else the cause itself.
  void SetExplainer(absl::AnyInvocable<absl::Status(const absl::Status&)> explain) {
    explain_ = std::move(explain);
  }
  // OK, or why the replicas stopped.
  absl::Status failure() const { return comms_->failure(); }

 private:
  GpuReplicas() = default;

  std::vector<DeviceSpec> devices_;
  Workers* workers_ = nullptr;
  std::vector<std::unique_ptr<GpuStream>> streams_;
  std::unique_ptr<NcclCommunicators> comms_;
  std::vector<bool> peer_;  // size() x size(), reader-major
  std::vector<std::shared_ptr<Buffer>> scratch_;
  absl::AnyInvocable<absl::Status(const absl::Status&)> explain_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GPU_GPU_REPLICAS_H_
