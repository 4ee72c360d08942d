// Concatenation of row-major arrays along one axis: block b is [outer, rows_b, inner]
// (contiguous bytes), the result [outer, sum of rows_b, inner]. Every all-gather and
// gather ends with it.
#ifndef DISTRIBUTE_CORE_TENSOR_CONCATENATE_H_
#define DISTRIBUTE_CORE_TENSOR_CONCATENATE_H_

#include <cstdint>
#include <cstring>
#include <span>

#include "core/tensor/tensor.h"

namespace distribute {

// A host tensor's bytes (an empty tensor may have no buffer at all).
inline std::span<const char> BytesOf(const Tensor& tensor) {
  if (tensor.byte_size() == 0) return {};
  return {static_cast<const char*>(tensor.data()), tensor.byte_size()};
}

// Writes the blocks' bytes to `out` in concatenated order: for each of the `outer` leading
// indices, that index's part (block.size() / outer bytes) of every block in turn.
inline void ConcatenateAlongAxis(std::span<const std::span<const char>> blocks, int64_t outer,
                                 char* out) {
  if (outer <= 0) return;
  for (int64_t o = 0; o < outer; ++o) {
    for (const std::span<const char>& block : blocks) {
      const size_t part = block.size() / static_cast<size_t>(outer);
      if (part == 0) continue;  // an empty tensor may have no buffer at all
      std::memcpy(out, block.data() + static_cast<size_t>(o) * part, part);
      out += part;
    }
  }
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_TENSOR_CONCATENATE_H_
