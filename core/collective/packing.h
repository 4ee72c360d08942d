// How the collectives lay tensors out: every tensor of a fused call starts 64-byte aligned
// in a virtual buffer (so that a slice boundary never splits an element and every slice
// starts on a cache line), and small tensors are fused into packs of bounded size
// (TF's packing, Horovod's fusion, DDP's buckets).
#ifndef DISTRIBUTE_CORE_COLLECTIVE_PACKING_H_
#define DISTRIBUTE_CORE_COLLECTIVE_PACKING_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "core/tensor/tensor.h"

namespace distribute {

inline constexpr size_t kPackAlign = 64;

inline size_t RoundUp(size_t value, size_t to) { return (value + to - 1) / to * to; }

// Packs as [first, last) tensor ranges; a call of a few tensors (most are) allocates none.
using PackRanges = absl::InlinedVector<std::pair<size_t, size_t>, 4>;

// Tensors [first, last) split into consecutive packs of at most `bytes` each (a tensor
// larger than that is a pack of its own).
inline PackRanges SplitIntoPacks(std::span<const Tensor> tensors, size_t first, size_t last, size_t bytes) {
  PackRanges packs;
  size_t start = first;
  size_t filled = 0;
  for (size_t t = first; t < last; ++t) {
    const size_t size = tensors[t].byte_size();
    if (t > start && filled + size > bytes) {
      packs.emplace_back(start, t);
      start = t;
      filled = 0;
    }
    filled += size;
  }
  if (start < last) packs.emplace_back(start, last);
  return packs;
}

// `count` packs of about equal bytes over all of `tensors`.
inline PackRanges SplitEvenly(std::span<const Tensor> tensors, int32_t count) {
  size_t total = 0;
  for (const Tensor& t : tensors) total += t.byte_size();
  const size_t target = std::max<size_t>(1, RoundUp(total, static_cast<size_t>(count)) / count);
  return SplitIntoPacks(tensors, 0, tensors.size(), target);
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_PACKING_H_
