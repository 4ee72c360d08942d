// Where the replicas of one process meet for every collective call: each publishes its
// call (PublishedCall), meets the others at a barrier, and every replica checks that all
// of them made the same call before anyone reads another's buffers. Algorithms then work
// on the published tensors in place, separated by further barriers.
//
// Thread-safety: replica r's calls come from replica r's thread only; Abort from any
// thread; Reset only while no replica is inside a call.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_LOCAL_RENDEZVOUS_H_
#define DISTRIBUTE_CORE_COLLECTIVE_LOCAL_RENDEZVOUS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/collective/all_reduce_stages.h"
#include "core/collective/barrier.h"
#include "core/collective/published_call.h"
#include "core/util/deadline.h"

namespace distribute {

// The most replicas one process's group can have (algorithms keep per-replica pointers on
// the stack).
inline constexpr int32_t kMaxLocalReplicas = 1024;

class LocalRendezvous {
 public:
  explicit LocalRendezvous(int32_t replicas);

  int32_t size() const { return n_; }

  // Publishes `call` for `replica` (or, when `local_check` failed, that failure in its
  // place), meets the others and checks that every replica made the same call. On a
  // disagreement every replica returns the same error, naming the replicas and what each
  // called; one replica's failed local check fails the call on all of them, with its reason.
  absl::Status Publish(int32_t replica, const PublishedCall& call, const absl::Status& local_check,
                       const Deadline& deadline);

  // Publish for an all-reduce, which small calls finish here (all_reduce_stages.h). When
  // `may_stage` (the algorithm reduces element by element in replica order) and the call
  // fits, it is staged first; when every replica staged the same call, each reduces the
  // stages into its own outputs and true is returned: the all-reduce is done, with no
  // further rendezvous. Otherwise (false) the call was published and agreed as by Publish
  // and the caller runs its algorithm. Every replica gets the same answer.
  absl::StatusOr<bool> PublishAllReduce(int32_t replica, const PublishedCall& call,
                                        const absl::Status& local_check, bool may_stage,
                                        const Deadline& deadline);

  // Replica q's published call; valid between its Publish and the next barrier that
  // ends the collective.
  const PublishedCall& call(int32_t q) const { return *calls_[static_cast<size_t>(q)].call; }

  // call(q).inputs[t].data() and call(q).outputs[t].data(), read for the first tensors
  // from q's slot, which the agreement check already brought into this core's cache.
  const void* input_data(int32_t q, size_t t) const {
    const CallSlot& slot = calls_[static_cast<size_t>(q)];
    return t < kSlotTensors ? slot.input_data[t] : slot.call->inputs[t].data();
  }
  void* output_data(int32_t q, size_t t) const {
    const CallSlot& slot = calls_[static_cast<size_t>(q)];
    return t < kSlotTensors ? slot.output_data[t] : slot.call->outputs[t].data();
  }

  // A plain rendezvous of every replica.
  absl::Status Arrive(int32_t replica, const Deadline& deadline) {
    return barrier_.Arrive(replica, deadline);
  }

  // What the leader of a merge sees (every replica's payload, in replica order) and
  // gives back (shared by every replica). Collective::Merge is the typed form.
  using ErasedMergeFn = absl::FunctionRef<absl::StatusOr<std::shared_ptr<const void>>(
      std::span<const void* const> payloads)>;
  absl::StatusOr<std::shared_ptr<const void>> Merge(int32_t replica, const void* payload,
                                                    int32_t num_args, ErasedMergeFn leader,
                                                    const Deadline& deadline);

  void Abort(const absl::Status& cause) { barrier_.Abort(cause); }
  void Reset() { barrier_.Reset(); }

 private:
  absl::Status CheckAgreement() const;
  // Publish's part after the meeting.
  absl::Status Agree(int32_t replica, const Deadline& deadline);

  const int32_t n_;
  Barrier barrier_;
  // Each replica's published call on a cache line of its own: every replica writes its
  // entry on every call, and entries sharing a line made each write wait for the line to
  // come back from the other replicas' cores. The line also carries the data pointers of
  // the call's first tensors: reaching them through the call, its Tensor and its Buffer
  // costs a cache miss at each step when those are new (a new output, a new gradient per
  // step), and a 2-8 KiB all-reduce with a new value per call took 10-20% longer so.
  static constexpr size_t kSlotTensors = 3;
  struct alignas(64) CallSlot {
    const PublishedCall* call = nullptr;
    const void* input_data[kSlotTensors] = {};
    void* output_data[kSlotTensors] = {};
  };
  static_assert(sizeof(CallSlot) == 64);
  // Sets `replica`'s slot to `call`.
  void Post(int32_t replica, const PublishedCall& call);
  std::vector<CallSlot> calls_;
  // Small all-reduces' staged copies; null for groups that do not stage.
  const std::unique_ptr<AllReduceStages> stages_;
  // Written by replica 0 between two barriers, read by every replica after the second.
  std::shared_ptr<const void> merge_result_;
  absl::Status merge_status_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_LOCAL_RENDEZVOUS_H_
