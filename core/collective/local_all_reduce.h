// The in-process all-reduce algorithms (tf.distribute's CrossDeviceOps), each a strategy
// object of LocalCollective: it runs on every replica's thread after the call has been
// published in the rendezvous, reads every replica's inputs in place and writes every
// replica's outputs. Which one a strategy uses is data (CrossDeviceOps), chosen once by
// MakeLocalAllReduce.
//
// All are deterministic: the same inputs on the same replica count give bit-identical
// results on every run and on every replica.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_LOCAL_ALL_REDUCE_H_
#define DISTRIBUTE_CORE_COLLECTIVE_LOCAL_ALL_REDUCE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "core/collective/cross_device_ops.h"
#include "core/collective/local_rendezvous.h"
#include "core/kernels/reduce_op.h"
#include "core/tensor/buffer.h"
#include "core/util/deadline.h"

namespace distribute {

class LocalAllReduce {
 public:
  virtual ~LocalAllReduce() = default;
  // Every replica calls Run, with the all-reduce published in `group` by every replica.
  virtual absl::Status Run(LocalRendezvous& group, int32_t replica, ReduceOp op,
                           const Deadline& deadline) = 0;
  // Whether every output element is ReduceRange over the replicas' inputs in replica
  // order: small calls may then be reduced from staged copies (all_reduce_stages.h) with
  // the same bits.
  virtual bool ReducesInReplicaOrder() const { return false; }
};

// The algorithm `ops` names. `reduce_replica`: the replica ReductionToOneDevice reduces on.
std::unique_ptr<LocalAllReduce> MakeLocalAllReduce(const CrossDeviceOps& ops, int32_t replicas,
                                                   int32_t reduce_replica);

// Reduce-scatter + all-gather in shared memory: the tensors are laid out in a virtual
// buffer, each replica reduces one contiguous slice of it from every replica's inputs and
// writes that slice of every replica's outputs (every byte read once and written once).
// Tensors are fused into packs of at most `bytes_per_pack`, one rendezvous per pack.
class SharedMemoryAllReduce final : public LocalAllReduce {
 public:
  explicit SharedMemoryAllReduce(int64_t bytes_per_pack) : bytes_per_pack_(bytes_per_pack) {}
  absl::Status Run(LocalRendezvous& group, int32_t replica, ReduceOp op,
                   const Deadline& deadline) override;
  bool ReducesInReplicaOrder() const override { return true; }

 private:
  const int64_t bytes_per_pack_;
};

// TF's ReductionToOneDevice: one replica reduces everything, then every replica copies
// the result.
class ReductionToOneDevice final : public LocalAllReduce {
 public:
  explicit ReductionToOneDevice(int32_t root) : root_(root) {}
  absl::Status Run(LocalRendezvous& group, int32_t replica, ReduceOp op,
                   const Deadline& deadline) override;
  bool ReducesInReplicaOrder() const override { return true; }

 private:
  const int32_t root_;
};

// TF's HierarchicalCopyAllReduce: the tensors in `num_packs` packs; within a pack the
// replicas' partial results (accumulator precision) combine pairwise in a binary tree and
// replica 0's total is copied out by every replica.
class HierarchicalCopyAllReduce final : public LocalAllReduce {
 public:
  HierarchicalCopyAllReduce(int32_t num_packs, int32_t replicas)
      : num_packs_(num_packs), scratch_(static_cast<size_t>(replicas)) {}
  absl::Status Run(LocalRendezvous& group, int32_t replica, ReduceOp op,
                   const Deadline& deadline) override;

 private:
  absl::Status ReducePack(LocalRendezvous& group, int32_t replica, ReduceOp op, size_t first,
                          size_t last, const Deadline& deadline);

  const int32_t num_packs_;
  // Each replica's partial results for the current pack; each replica writes only its own.
  std::vector<std::vector<std::shared_ptr<Buffer>>> scratch_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_LOCAL_ALL_REDUCE_H_
