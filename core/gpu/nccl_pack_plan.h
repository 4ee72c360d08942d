// How an all-reduce's tensors travel through NCCL: NCCL reduces one dtype per call, so
// tensors are grouped by dtype (in order of first appearance) and, within a dtype, fused
// into packs (TF's NcclAllReduce num_packs, or CommunicationOptions' bytes_per_pack): a pack
// of several tensors is copied into one scratch buffer, reduced by one call and copied out.
// Host-side logic only, so it is tested on CPU.
#ifndef DISTRIBUTE_CORE_GPU_NCCL_PACK_PLAN_H_
#define DISTRIBUTE_CORE_GPU_NCCL_PACK_PLAN_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"

namespace distribute {

struct PackPolicy {
  // > 0: each dtype's tensors are split into this many packs of about equal bytes
  // (consecutive tensors; fewer packs when there are fewer tensors).
  int32_t num_packs = 0;
  // > 0 (and num_packs == 0): consecutive tensors of a dtype fill packs of at most this many
  // bytes; a larger tensor travels alone. Both 0: every tensor travels alone.
  int64_t bytes_per_pack = 0;
};

struct NcclPack {
  DType dtype;
  std::vector<size_t> tensors;  // indices into the all-reduce's tensors, ascending
  size_t elements = 0;          // of all of them together
  size_t scratch_offset = 0;    // bytes into the scratch buffer (packs of 2+ tensors)
};

struct NcclPlan {
  std::vector<NcclPack> packs;
  size_t scratch_bytes = 0;  // what the packs of several tensors need, end to end
};

// Whether NCCL has a type for `dtype` (not int16 or bool).
bool HasNcclType(DType dtype);

NcclPlan PlanNcclPacks(std::span<const Tensor> tensors, const PackPolicy& policy);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GPU_NCCL_PACK_PLAN_H_
