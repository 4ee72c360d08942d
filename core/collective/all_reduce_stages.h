// Small in-process all-reduces in one rendezvous instead of two. The usual path publishes
// pointers to each replica's tensors, meets, reduces from the others' buffers in place and
// meets again, so that nobody reuses an input (or the published call on its stack) while
// another still reads it. For a few KiB that second meeting is most of the time. Here each
// replica first copies its inputs and its call's signature (op, dtypes, shapes) into a
// stage of its own; after the one meeting every replica checks the signatures and reduces
// all the stages, in replica order, into its own outputs: the same ReduceRange, element by
// element, as SharedMemoryAllReduce and ReductionToOneDevice, so the same bits.
//
// A one-tensor call of a few bytes (its signature and data within Barrier::kPayloadBytes,
// e.g. float32[8] or a scalar) is staged in the barrier's own arrival record: the line a
// waiter reads to learn that replica q arrived also carries q's signature and data, and
// the whole all-reduce costs each replica one transfer of each other replica's line.
// Larger calls are staged in a slot of their own and marked in the record.
//
// Stages are double-buffered by the barrier generation: replica q writes stage (q, g & 1)
// before it arrives at generation g; the others read it after g completes and before they
// arrive at g + 1; q writes that buffer again only at g + 2, after g + 1 completed, which
// needs everyone's arrival at g + 1. The barrier orders the writes before the reads.
//
// Thread-safety: Stage by replica q's thread for stage q only; the rest by any replica,
// between the meeting of `generation` and its own next arrival.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_ALL_REDUCE_STAGES_H_
#define DISTRIBUTE_CORE_COLLECTIVE_ALL_REDUCE_STAGES_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/collective/barrier.h"
#include "core/collective/published_call.h"
#include "core/kernels/reduce_op.h"
#include "core/tensor/tensor.h"

namespace distribute {

class AllReduceStages {
 public:
  // Inputs up to this many bytes (each tensor 64-byte aligned) are staged: above it the
  // staged copy and every replica reading every input cost more than the second meeting
  // (2 replicas, dist-bench: staging won at 512 B and 1 KiB, lost at 2 KiB).
  static constexpr size_t kMaxBytes = 1024;
  static constexpr int32_t kMaxTensors = 8;
  static constexpr int32_t kMaxDims = 16;  // over all tensors of the call
  // Every replica reads every stage: beyond a handful of replicas the reads cost more
  // than the meeting they save.
  static constexpr int32_t kMaxReplicas = 8;

  // Whether a group of `replicas` stages at all (2 ... kMaxReplicas).
  static bool UsefulFor(int32_t replicas) { return replicas >= 2 && replicas <= kMaxReplicas; }

  // Stages in `barrier`'s payloads (which must outlive this) and in slots of its own.
  AllReduceStages(int32_t replicas, Barrier& barrier);
  ~AllReduceStages();
  AllReduceStages(const AllReduceStages&) = delete;
  AllReduceStages& operator=(const AllReduceStages&) = delete;

  // Whether `call` can be staged: an all-reduce of 1 ... kMaxTensors host tensors with
  // host outputs, at most kMaxDims dimensions and kMaxBytes of inputs in all.
  static bool Fits(const PublishedCall& call);

  // Copies `call`'s signature and inputs (Fits) into `replica`'s stage for `generation`.
  void Stage(int32_t replica, uint64_t generation, const PublishedCall& call);

  // Starts loading the other replicas' stages of `call` (this replica's call, staged for
  // `generation`) into this core's cache, once the meeting completed: a call staged in
  // slots reads each other replica's signature line and data lines, and without this the
  // signature's miss and then the data's come one after the other.
  void Prefetch(int32_t replica, uint64_t generation, const PublishedCall& call) const;

  // Whether every replica staged a call for `generation` and all staged the same call:
  // the same answer on every replica.
  bool AllAgree(uint64_t generation) const;

  // Reduces every replica's staged inputs of `generation`, in replica order, into
  // `outputs` (this replica's, with the staged dtypes and shapes). MEAN divides by the
  // replica count.
  void Reduce(uint64_t generation, ReduceOp op, std::span<const Tensor> outputs) const;

 private:
  struct Slot;
  const Slot& slot(int32_t replica, uint64_t generation) const;
  // Whether `call` is staged in the barrier record itself.
  static bool InRecord(const PublishedCall& call);
  void StageInSlot(int32_t replica, uint64_t generation, const PublishedCall& call);

  const int32_t n_;
  Barrier& barrier_;
  std::unique_ptr<Slot[]> slots_;  // 2 per replica
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_ALL_REDUCE_STAGES_H_
