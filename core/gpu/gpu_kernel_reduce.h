// One GPU reducing every replica's tensor with the plugin's kernel: what
// GpuReductionToOneDevice (replica context) and GpuCollective::ReduceOnDevice (cross-replica
// context) both do, and the peer read that HierarchicalCopy's pairs use too.
#ifndef DISTRIBUTE_CORE_GPU_GPU_KERNEL_REDUCE_H_
#define DISTRIBUTE_CORE_GPU_GPU_KERNEL_REDUCE_H_

#include <cstddef>
#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/kernels/reduce_op.h"
#include "core/gpu/gpu_replicas.h"
#include "core/tensor/tensor.h"

namespace distribute {

// The room a copy of `bytes` takes in scratch memory (256-byte aligned, as the kernel wants).
size_t ScratchBytes(size_t bytes);

// Replica `reader`'s view of `tensor` of replica `owner`: the memory itself when its GPU can
// read it in place, else a copy queued on reader's stream into `*scratch` (advanced past it).
absl::StatusOr<const void*> Readable(GpuReplicas& gpus, int32_t reader, int32_t owner,
                                     const Tensor& tensor, char** scratch);

// Queues on replica `root`'s stream: `output` = op over input_of(q) for every replica q, in
// the CPU kernels' order (MEAN: SUM, then a division by the replica count). Inputs root
// cannot read in place are copied into `scratch` first, which must then hold
// ScratchBytes(output's size) per replica.
absl::Status QueueReduceToOne(GpuReplicas& gpus, int32_t root, ReduceOp op,
                              absl::FunctionRef<const Tensor&(int32_t replica)> input_of,
                              const Tensor& output, char* scratch);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GPU_GPU_KERNEL_REDUCE_H_
