// The all-reduce algorithms of GPU replicas (TF's CrossDeviceOps on GPUs), each run on
// every replica's thread after the call was published and agreed in the rendezvous. Every
// published input is on its replica's GPU (GpuCollective stages other inputs there first);
// every output is on its replica's GPU. Run returns when this replica's outputs are final.
//
//   NcclAllReduce             NCCL's all-reduce, tensors packed per dtype (nccl_pack_plan.h);
//                             int16 and bool, which NCCL lacks, are reduced on the host
//   GpuReductionToOneDevice   one replica's GPU reduces every input with the plugin's
//                             kernel (reading peers in place where it can), then every
//                             replica copies the result
//   GpuHierarchicalCopy       pairs of GPUs reduce in a binary tree, then every replica
//                             copies replica 0's total
//
// Determinism: the kernel algorithms combine in a fixed order and are bit-reproducible run
// to run. NCCL's all-reduce is reproducible only with the same NCCL version, GPU count,
// topology and a fixed algorithm and protocol (NCCL_ALGO, NCCL_PROTO); its order differs
// from the CPU collectives', so its float results may differ from them in the last bits.
#ifndef DISTRIBUTE_CORE_GPU_GPU_ALL_REDUCE_H_
#define DISTRIBUTE_CORE_GPU_GPU_ALL_REDUCE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "core/collective/cross_device_ops.h"
#include "core/collective/local_rendezvous.h"
#include "core/kernels/reduce_op.h"
#include "core/gpu/gpu_replicas.h"
#include "core/gpu/nccl_pack_plan.h"
#include "core/util/deadline.h"

namespace distribute {

class GpuAllReduce {
 public:
  virtual ~GpuAllReduce() = default;
  virtual absl::Status Run(GpuReplicas& gpus, LocalRendezvous& group, int32_t replica,
                           ReduceOp op, const Deadline& deadline) = 0;
};

// The algorithm `ops` names for GPU replicas of one process (a multi-worker job always
// uses NcclAllReduce: its CrossDeviceOps do not apply across workers). The in-process CPU algorithm (SharedMemory,
// also the default) means NCCL on GPUs, packed by its bytes_per_pack.
std::unique_ptr<GpuAllReduce> MakeGpuAllReduce(const CrossDeviceOps& ops, int32_t replicas,
                                               int32_t reduce_replica);

class NcclAllReduce final : public GpuAllReduce {
 public:
  NcclAllReduce(PackPolicy policy, int32_t replicas);
  absl::Status Run(GpuReplicas& gpus, LocalRendezvous& group, int32_t replica, ReduceOp op,
                   const Deadline& deadline) override;

 private:
  // The tensors NCCL has no type for, reduced on the host in the CPU collectives' order.
  absl::Status ReduceOnHost(GpuReplicas& gpus, LocalRendezvous& group, int32_t replica,
                            ReduceOp op, const std::vector<size_t>& tensors,
                            const Deadline& deadline);

  const PackPolicy policy_;
  // Each replica's host copies of its inputs for ReduceOnHost; each writes only its own.
  std::vector<std::vector<std::vector<char>>> host_inputs_;
  // Replica 0's results of ReduceOnHost (read by every replica after a rendezvous).
  std::vector<std::vector<char>> host_results_;
  absl::Status host_status_;
};

class GpuReductionToOneDevice final : public GpuAllReduce {
 public:
  explicit GpuReductionToOneDevice(int32_t root) : root_(root) {}
  absl::Status Run(GpuReplicas& gpus, LocalRendezvous& group, int32_t replica, ReduceOp op,
                   const Deadline& deadline) override;

 private:
  const int32_t root_;
};

class GpuHierarchicalCopy final : public GpuAllReduce {
 public:
  absl::Status Run(GpuReplicas& gpus, LocalRendezvous& group, int32_t replica, ReduceOp op,
                   const Deadline& deadline) override;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GPU_GPU_ALL_REDUCE_H_
