// The collectives of a multi-worker job (MultiWorkerMirroredStrategy), hierarchical as in
// DESIGN.md: this process's replicas combine their values in shared memory (in
// accumulator precision, each replica one slice), replica 0 makes the cross-worker step
// through CrossWorker, and every replica then reads the result. Every call spans every
// worker's replicas: replica ids in Broadcast count the whole job.
//
// A replica that cannot take part, or a disagreement among the local replicas, is told
// to the other workers (whose leaders would otherwise wait for this one), so that every
// worker fails the call at once.
//
// Thread-safety: as Collective.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_HIERARCHICAL_COLLECTIVE_H_
#define DISTRIBUTE_CORE_COLLECTIVE_HIERARCHICAL_COLLECTIVE_H_

#include <memory>
#include <optional>

#include "core/collective/call_description_cache.h"
#include "core/collective/collective.h"
#include "core/collective/cross_worker.h"
#include "core/tensor/buffer.h"

namespace distribute {

class HierarchicalCollective final : public Collective {
 public:
  // `bytes_per_pack`: the largest pack of the cross-worker all-reduce (CommunicationOptions).
  HierarchicalCollective(int32_t replicas, std::shared_ptr<CrossWorker> cross_worker,
                         int64_t bytes_per_pack)
      : Collective(replicas), cross_worker_(std::move(cross_worker)), bytes_per_pack_(bytes_per_pack) {}

  absl::Status AllReduce(int32_t replica, ReduceOp op, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const Deadline& deadline) override;
  absl::StatusOr<Tensor> AllGather(int32_t replica, const Tensor& input, int32_t axis,
                                   const DeviceSpec& device, const Deadline& deadline) override;
  absl::StatusOr<Tensor> Broadcast(int32_t replica, const Tensor& input, int32_t root,
                                   const DeviceSpec& device, const Deadline& deadline) override;
  absl::Status FailTogether(int32_t replica, const absl::Status& error,
                            const Deadline& deadline) override;
  Workers& workers() override { return *cross_worker_; }

 private:
  // `published` (the local Publish's status), after telling the other workers when it is a
  // failure of this worker's call rather than of a wait.
  absl::Status TellOtherWorkers(int32_t replica, absl::Status published, const Deadline& deadline);
  // Tensors [first_tensor, last_tensor) of the published call, as one cross-worker pack.
  absl::Status AllReducePack(int32_t replica, ReduceOp op, size_t first_tensor,
                             size_t last_tensor, const Deadline& deadline);
  // Every replica's copy of the tensor replica 0 left in cross_result_ (or its error);
  // replica 0 keeps that tensor itself, after the others copied it.
  absl::StatusOr<Tensor> TakeCrossResult(int32_t replica, const DeviceSpec& device,
                                         const Deadline& deadline);

  const std::shared_ptr<CrossWorker> cross_worker_;
  const int64_t bytes_per_pack_;
  // Written by replica 0 between two barriers, read by every replica after the second.
  std::shared_ptr<Buffer> pack_;
  absl::Status cross_status_;
  std::optional<Tensor> cross_result_;  // a new tensor on replica 0's device
  CallDescriptionCache described_;  // replica 0's: the signature of its cross-worker calls
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_HIERARCHICAL_COLLECTIVE_H_
