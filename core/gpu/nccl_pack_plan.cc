#include "core/gpu/nccl_pack_plan.h"

#include <algorithm>

namespace distribute {
namespace {

// Scratch regions start on 256-byte boundaries, the alignment cudaMalloc gives, so every
// pack's kernels see the alignment of a fresh allocation.
constexpr size_t kScratchAlign = 256;

size_t Bytes(const Tensor& t) { return t.byte_size(); }

// Splits `members` (one dtype, in order) into at most `parts` runs of about equal bytes.
std::vector<std::vector<size_t>> SplitEvenly(std::span<const Tensor> tensors,
                                             const std::vector<size_t>& members, int32_t parts) {
  size_t total = 0;
  for (size_t i : members) total += Bytes(tensors[i]);
  std::vector<std::vector<size_t>> runs;
  const size_t count = std::min(members.size(), static_cast<size_t>(parts));
  size_t done = 0;
  size_t next = 0;
  for (size_t k = 0; k < count; ++k) {
    std::vector<size_t> run;
    // Each run takes tensors until it reaches its share of what is left, but leaves at
    // least one tensor for every run after it.
    const size_t share = (total - done + (count - k) - 1) / (count - k);
    size_t bytes = 0;
    while (next < members.size() && (run.empty() || bytes < share) &&
           members.size() - next > count - k - 1) {
      bytes += Bytes(tensors[members[next]]);
      run.push_back(members[next++]);
    }
    done += bytes;
    runs.push_back(std::move(run));
  }
  while (next < members.size()) runs.back().push_back(members[next++]);
  return runs;
}

std::vector<std::vector<size_t>> FillUpTo(std::span<const Tensor> tensors,
                                          const std::vector<size_t>& members, int64_t limit) {
  std::vector<std::vector<size_t>> runs;
  size_t bytes = 0;
  for (size_t i : members) {
    const size_t size = Bytes(tensors[i]);
    if (runs.empty() || bytes + size > static_cast<size_t>(limit)) {
      runs.emplace_back();
      bytes = 0;
    }
    runs.back().push_back(i);
    bytes += size;
  }
  return runs;
}

}  // namespace

bool HasNcclType(DType dtype) { return dtype != DType::kInt16 && dtype != DType::kBool; }

NcclPlan PlanNcclPacks(std::span<const Tensor> tensors, const PackPolicy& policy) {
  std::vector<DType> order;
  std::vector<std::vector<size_t>> by_dtype;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto it = std::find(order.begin(), order.end(), tensors[i].dtype());
    const auto d = static_cast<size_t>(it - order.begin());
    if (it == order.end()) {
      order.push_back(tensors[i].dtype());
      by_dtype.emplace_back();
    }
    by_dtype[d].push_back(i);
  }
  NcclPlan plan;
  for (size_t d = 0; d < order.size(); ++d) {
    std::vector<std::vector<size_t>> runs;
    if (policy.num_packs > 0) {
      runs = SplitEvenly(tensors, by_dtype[d], policy.num_packs);
    } else if (policy.bytes_per_pack > 0) {
      runs = FillUpTo(tensors, by_dtype[d], policy.bytes_per_pack);
    } else {
      for (size_t i : by_dtype[d]) runs.push_back({i});
    }
    for (std::vector<size_t>& run : runs) {
      NcclPack pack{order[d], std::move(run)};
      size_t bytes = 0;
      for (size_t i : pack.tensors) {
        pack.elements += static_cast<size_t>(tensors[i].shape().num_elements());
        bytes += Bytes(tensors[i]);
      }
      if (pack.tensors.size() > 1) {
        pack.scratch_offset = plan.scratch_bytes;
        plan.scratch_bytes += (bytes + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
      }
      plan.packs.push_back(std::move(pack));
    }
  }
  return plan;
}

}  // namespace distribute
