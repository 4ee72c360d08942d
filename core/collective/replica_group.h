// The replicas of one process acting together: every collective call (all-reduce,
// all-gather, broadcast, merge) is made by all of them, meets at a shared barrier, is
// checked for agreement (kind, op, dtype, shapes) and then executed in shared memory.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_REPLICA_GROUP_H_
#define DISTRIBUTE_CORE_COLLECTIVE_REPLICA_GROUP_H_

#include <any>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/collective/barrier.h"
#include "core/collective/cross_device_ops.h"
#include "core/collective/cross_worker.h"
#include "core/collective/reduce_op.h"
#include "core/tensor/tensor.h"
#include "core/util/deadline.h"

namespace distribute {

class ReplicaGroup {
 public:
  // What merge's leader function sees: every replica's payload, in replica order; what it
  // returns is handed to every replica.
  using MergeFn = absl::FunctionRef<absl::StatusOr<std::shared_ptr<void>>(
      std::span<const void* const> payloads)>;

  ReplicaGroup(int32_t replicas, CrossDeviceOps ops, int32_t reduce_replica);

  int32_t size() const { return n_; }
  Barrier& barrier() { return barrier_; }
  const CrossDeviceOps& ops() const { return ops_; }

  // Reduces inputs[i] of every replica into outputs[i] of every replica. Outputs are
  // allocated by each replica on its own device, with the inputs' dtype and shape; they
  // may alias the inputs.
  absl::Status AllReduce(int32_t replica, ReduceOp op, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const Deadline& deadline);

  // Concatenation of every replica's input along `axis` (already normalised to >= 0),
  // in replica order, as a new tensor on `device`.
  absl::StatusOr<Tensor> AllGather(int32_t replica, const Tensor& input, int32_t axis,
                                   const DeviceSpec& device, const Deadline& deadline);

  // A copy of replica `root`'s input on `device`.
  absl::StatusOr<Tensor> Broadcast(int32_t replica, const Tensor& input, int32_t root,
                                   const DeviceSpec& device, const Deadline& deadline);

  // Every replica publishes `payload` (with `num_args` for the agreement check); replica
  // 0 runs `fn` over all payloads; every replica gets its result (or its error).
  absl::StatusOr<std::shared_ptr<void>> Merge(int32_t replica, const void* payload,
                                              int32_t num_args, MergeFn fn,
                                              const Deadline& deadline);

  // A replica that cannot take part in a collective (its arguments failed a local check)
  // still meets the others, so that every replica fails the call with the same error,
  // naming the replicas at fault, instead of waiting for it until the deadline.
  absl::Status FailTogether(int32_t replica, const absl::Status& error, const Deadline& deadline);

  // A plain rendezvous (used after writes that others read).
  absl::Status Sync(int32_t replica, const Deadline& deadline) {
    return barrier_.Arrive(replica, deadline);
  }

  // Multi-worker (MultiWorkerMirroredStrategy): every collective spans all workers'
  // replicas. The replicas of this process combine their values, replica 0 makes the
  // cross-worker step, and every replica gets the result. Set before the first collective.
  void SetCrossWorker(std::shared_ptr<CrossWorker> cross_worker) {
    cross_worker_ = std::move(cross_worker);
  }
  CrossWorker* cross_worker() const { return cross_worker_.get(); }

  void Abort(const absl::Status& cause) { barrier_.Abort(cause); }
  void Reset() { barrier_.Reset(); }

 private:
  struct Slot;

  // Publishes `slot`, meets the others, and checks that every replica made the same call.
  absl::Status Publish(int32_t replica, const Slot& slot, const Deadline& deadline);
  // Publish, and in a multi-worker group, a failure here tells the other workers too (so
  // they fail the call at once instead of waiting for this one).
  absl::Status PublishEverywhere(int32_t replica, const Slot& slot, const Deadline& deadline);
  absl::Status CheckAgreement() const;
  void SharedMemoryReduce(int32_t replica, ReduceOp op, size_t first, size_t last) const;
  absl::Status ReduceToOne(int32_t replica, ReduceOp op, size_t first, size_t last,
                           const Deadline& deadline);
  absl::Status HierarchicalReduce(int32_t replica, ReduceOp op, size_t first, size_t last,
                                  const Deadline& deadline);

  // The multi-worker forms of the collectives (replica_group_multi_worker.cc).
  absl::Status MultiWorkerAllReduce(int32_t replica, ReduceOp op, std::span<const Tensor> inputs,
                                    const Deadline& deadline);
  // Tensors [first_tensor, last_tensor) of the published call, as one pack.
  absl::Status MultiWorkerAllReducePack(int32_t replica, ReduceOp op, size_t first_tensor,
                                        size_t last_tensor, const Deadline& deadline);
  absl::StatusOr<Tensor> MultiWorkerAllGather(int32_t replica, const Tensor& input, int32_t axis,
                                              const DeviceSpec& device, const Deadline& deadline);
  absl::StatusOr<Tensor> MultiWorkerBroadcast(int32_t replica, const Tensor& input, int32_t root,
                                              const DeviceSpec& device, const Deadline& deadline);
  // Every replica's copy of the tensor replica 0 left in cross_result_ (or its error).
  absl::StatusOr<Tensor> TakeCrossResult(int32_t replica, const DeviceSpec& device,
                                         const Deadline& deadline);

  const int32_t n_;
  const CrossDeviceOps ops_;
  const int32_t reduce_replica_;
  Barrier barrier_;
  std::vector<const Slot*> slots_;
  // Scratch per replica for HierarchicalCopy packs; each replica touches only its own.
  std::vector<std::vector<std::shared_ptr<Buffer>>> packs_;
  std::shared_ptr<void> merge_result_;
  absl::Status merge_status_;
  // Multi-worker state: written by replica 0 between two barriers, read by all after.
  std::shared_ptr<CrossWorker> cross_worker_;
  std::shared_ptr<Buffer> pack_;
  absl::Status cross_status_;
  std::optional<Tensor> cross_result_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_REPLICA_GROUP_H_
