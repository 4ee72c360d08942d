#include <algorithm>

#include "core/collective/local_all_reduce.h"
#include "core/collective/packing.h"
#include "core/kernels/reduce_kernels.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// Replica `replica`'s slice of tensors [first, last), laid out one after another (each
// 64-byte aligned): reduced from every replica's inputs into every replica's outputs.
void ReduceSlice(const LocalRendezvous& group, int32_t replica, ReduceOp op, size_t first,
                 size_t last) {
  const int32_t n = group.size();
  const std::span<const Tensor> tensors = group.call(0).inputs;
  size_t total = 0;
  for (size_t t = first; t < last; ++t) total = RoundUp(total, kPackAlign) + tensors[t].byte_size();
  const size_t slice = RoundUp((total + n - 1) / n, kPackAlign);
  const size_t lo = static_cast<size_t>(replica) * slice;
  const size_t hi = std::min(total, lo + slice);
  if (lo >= hi) return;
  const void* inputs[kMaxLocalReplicas];
  void* outputs[kMaxLocalReplicas];
  size_t offset = 0;
  for (size_t t = first; t < last && offset < hi; ++t) {
    offset = RoundUp(offset, kPackAlign);
    const Tensor& mine = tensors[t];
    const size_t size = mine.byte_size();
    const size_t begin = std::max(offset, lo);
    const size_t end = std::min(offset + size, hi);
    if (begin < end) {
      for (int32_t q = 0; q < n; ++q) {
        inputs[q] = group.input_data(q, t);
        outputs[q] = group.output_data(q, t);
      }
      const size_t element = DTypeSize(mine.dtype());
      ReduceRange(mine.dtype(), op, inputs, n, outputs, n, (begin - offset) / element,
                  (end - offset) / element, n);
    }
    offset += size;
  }
}

}  // namespace

absl::Status SharedMemoryAllReduce::Run(LocalRendezvous& group, int32_t replica, ReduceOp op,
                                        const Deadline& deadline) {
  const std::span<const Tensor> inputs = group.call(replica).inputs;
  for (auto [first, last] :
       SplitIntoPacks(inputs, 0, inputs.size(), static_cast<size_t>(bytes_per_pack_))) {
    ReduceSlice(group, replica, op, first, last);
    RETURN_IF_ERROR(group.Arrive(replica, deadline));
  }
  // An empty batch still ends with a rendezvous: nobody leaves while another reads.
  if (inputs.empty()) RETURN_IF_ERROR(group.Arrive(replica, deadline));
  return absl::OkStatus();
}

}  // namespace distribute
