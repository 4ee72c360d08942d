// The collectives of one strategy's replicas in this process (DESIGN.md, "Collectives"):
// all-reduce with packing, all-gather, broadcast, merge, fail-together, abort and reset,
// every wait bounded by a Deadline. Each replica calls every method from its own thread
// with its index `replica` (0 ... size()-1); every replica must make the same calls in
// the same order, which each call checks before any data moves.
//
// Implementations, chosen from data by core/backend (never by `if` in an algorithm):
//   - LocalCollective: replicas that share a process, in shared memory, with one of the
//     in-process all-reduce algorithms (local_all_reduce.h);
//   - HierarchicalCollective: a multi-worker job: the local replicas combine in shared
//     memory, one replica makes the cross-worker step (CrossWorker over a Transport), and
//     every replica reads the result.
// A GPU (NCCL) collective is a third implementation of the same interface.
//
// What every implementation shares lives here: the local rendezvous that checks the
// replicas agree, merge_call (which always gathers this process's replicas only, as in
// TF's MultiWorkerMirroredStrategy), barriers, abort and reset. `workers()` is the
// cross-replica side: what a reduction in cross-replica context does across workers.
//
// Failures: a failed or expired wait aborts the rendezvous, releasing every replica with
// the cause, until Reset (which a strategy makes after each run). A failed cross-worker
// transport stays failed (CrossWorker).
//
// Thread-safety: replica r's calls from replica r's thread only; Abort from any thread;
// Reset while no replica is inside a call.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_COLLECTIVE_H_
#define DISTRIBUTE_CORE_COLLECTIVE_COLLECTIVE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/collective/local_rendezvous.h"
#include "core/kernels/reduce_op.h"
#include "core/collective/workers.h"
#include "core/device/device_spec.h"
#include "core/tensor/tensor.h"
#include "core/util/deadline.h"

namespace distribute {

class Collective {
 public:
  explicit Collective(int32_t local_replicas) : rendezvous_(local_replicas) {}
  virtual ~Collective() = default;
  Collective(const Collective&) = delete;
  Collective& operator=(const Collective&) = delete;

  // The replicas of this process.
  int32_t size() const { return rendezvous_.size(); }

  // Reduces inputs[i] of every replica into outputs[i] of every replica. Outputs are
  // allocated by each replica on its own device, with the inputs' dtype and shape; they
  // may alias the inputs.
  virtual absl::Status AllReduce(int32_t replica, ReduceOp op, std::span<const Tensor> inputs,
                                 std::span<const Tensor> outputs, const Deadline& deadline) = 0;

  // Concatenation of every replica's input along `axis` (already normalised to >= 0), in
  // replica order, as a new tensor on `device`.
  virtual absl::StatusOr<Tensor> AllGather(int32_t replica, const Tensor& input, int32_t axis,
                                           const DeviceSpec& device, const Deadline& deadline) = 0;

  // A copy of replica `root`'s input on `device` (`root` counts every replica of the job).
  virtual absl::StatusOr<Tensor> Broadcast(int32_t replica, const Tensor& input, int32_t root,
                                           const DeviceSpec& device, const Deadline& deadline) = 0;

  // A replica that cannot take part in a collective (its arguments failed a local check)
  // still meets the others, so that every replica fails the call with the same error,
  // naming the replicas at fault, instead of waiting for it until the deadline.
  virtual absl::Status FailTogether(int32_t replica, const absl::Status& error,
                                    const Deadline& deadline) = 0;

  // The job's workers, for cross-replica calls (one thread at a time).
  virtual Workers& workers() = 0;

  // A cross-replica reduction (one thread, no replica inside a call) of `components`, one
  // per replica of this process in replica order, into a new tensor on `destination`,
  // computed where the components live: GPU replicas reduce on the destination GPU instead
  // of through host copies. std::nullopt when this collective has no such path for the
  // call (the caller then reduces on the host; it always does for integer MEAN).
  virtual absl::StatusOr<std::optional<Tensor>> ReduceOnDevice(ReduceOp /*op*/,
                                                               std::span<const Tensor> /*components*/,
                                                               const DeviceSpec& /*destination*/,
                                                               const Deadline& /*deadline*/) {
    return std::nullopt;
  }

  // Every replica publishes `payload` (with `num_args` for the agreement check); replica
  // 0 runs `leader` over all payloads, in replica order; every replica gets the same
  // result (or its error).
  template <typename Payload, typename Result>
  absl::StatusOr<std::shared_ptr<const Result>> Merge(
      int32_t replica, const Payload& payload, int32_t num_args,
      absl::FunctionRef<absl::StatusOr<Result>(std::span<const Payload* const> payloads)> leader,
      const Deadline& deadline);

  // A plain rendezvous (after writes others read).
  absl::Status Sync(int32_t replica, const Deadline& deadline) {
    return rendezvous_.Arrive(replica, deadline);
  }
  void Abort(const absl::Status& cause) { rendezvous_.Abort(cause); }
  void Reset() { rendezvous_.Reset(); }

 protected:
  LocalRendezvous& rendezvous() { return rendezvous_; }
  // Publishes `call` after checking this replica's own inputs: in-process collectives
  // read host memory, so a tensor elsewhere fails the call on every replica.
  absl::Status Publish(int32_t replica, const PublishedCall& call, const Deadline& deadline);
  // What this replica checks of its own inputs before publishing them (once, not once per
  // replica). By default they must be in host memory, which in-process collectives read.
  virtual absl::Status CheckLocalInputs(std::span<const Tensor> inputs) const;

 private:
  LocalRendezvous rendezvous_;
};

template <typename Payload, typename Result>
absl::StatusOr<std::shared_ptr<const Result>> Collective::Merge(
    int32_t replica, const Payload& payload, int32_t num_args,
    absl::FunctionRef<absl::StatusOr<Result>(std::span<const Payload* const> payloads)> leader,
    const Deadline& deadline) {
  // The rendezvous carries untyped pointers; this function is the only place that gives
  // them their types back, and every pointer it casts was made here from the same types.
  auto erased = [&](std::span<const void* const> untyped)
      -> absl::StatusOr<std::shared_ptr<const void>> {
    std::vector<const Payload*> payloads;
    payloads.reserve(untyped.size());
    for (const void* p : untyped) payloads.push_back(static_cast<const Payload*>(p));
    absl::StatusOr<Result> result = leader(payloads);
    if (!result.ok()) return result.status();
    return std::shared_ptr<const void>(std::make_shared<const Result>(*std::move(result)));
  };
  absl::StatusOr<std::shared_ptr<const void>> shared =
      rendezvous_.Merge(replica, &payload, num_args, erased, deadline);
  if (!shared.ok()) return shared.status();
  return std::static_pointer_cast<const Result>(*std::move(shared));
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_COLLECTIVE_H_
