#include "core/collective/transport.h"

#include <cstring>

#include "absl/container/inlined_vector.h"

namespace distribute {
namespace {

// Room for the transfers of a job of up to this many workers without a heap allocation:
// an all-gather of headers starts every cross-worker call.
constexpr size_t kInlineWorkers = 8;

}  // namespace

absl::Status Transport::AllGather(const void* in, size_t bytes, void* out,
                                          const Deadline& deadline) {
  const absl::InlinedVector<size_t, kInlineWorkers> sizes(static_cast<size_t>(size()), bytes);
  return AllGatherV(in, sizes, out, deadline);
}

absl::Status Transport::AllGatherV(const void* in, std::span<const size_t> bytes, void* out,
                                           const Deadline& deadline) {
  absl::InlinedVector<Transfer, kInlineWorkers> sends, receives;
  char* block = static_cast<char*>(out);
  for (int32_t w = 0; w < size(); ++w) {
    if (w == rank()) {
      if (bytes[w] > 0 && block != in) std::memcpy(block, in, bytes[w]);
    } else {
      sends.push_back({w, 0, const_cast<void*>(in), bytes[rank()]});
      receives.push_back({w, 0, block, bytes[w]});
    }
    block += bytes[w];
  }
  return Exchange(sends, receives, deadline);
}

absl::Status Transport::Broadcast(void* data, size_t bytes, int32_t root,
                                          const Deadline& deadline) {
  absl::InlinedVector<Transfer, kInlineWorkers> sends, receives;
  if (rank() == root) {
    for (int32_t w = 0; w < size(); ++w) {
      if (w != root) sends.push_back({w, 0, data, bytes});
    }
  } else {
    receives.push_back({root, 0, data, bytes});
  }
  return Exchange(sends, receives, deadline);
}

}  // namespace distribute
