#include "core/collective/transport.h"

#include <cstring>
#include <vector>

namespace distribute {

absl::Status Transport::AllGather(const void* in, size_t bytes, void* out,
                                          const Deadline& deadline) {
  std::vector<size_t> sizes(static_cast<size_t>(size()), bytes);
  return AllGatherV(in, sizes, out, deadline);
}

absl::Status Transport::AllGatherV(const void* in, std::span<const size_t> bytes, void* out,
                                           const Deadline& deadline) {
  std::vector<Transfer> sends, receives;
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
  std::vector<Transfer> sends, receives;
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
