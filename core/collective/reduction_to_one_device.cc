#include <cstring>

#include "core/collective/local_all_reduce.h"
#include "core/kernels/reduce_kernels.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::Status ReductionToOneDevice::Run(LocalRendezvous& group, int32_t replica, ReduceOp op,
                                       const Deadline& deadline) {
  const int32_t n = group.size();
  const size_t count = group.call(replica).inputs.size();
  const void* inputs[kMaxLocalReplicas];
  if (replica == root_) {
    for (size_t t = 0; t < count; ++t) {
      for (int32_t q = 0; q < n; ++q) inputs[q] = group.input_data(q, t);
      const Tensor& out = group.call(root_).outputs[t];
      void* output = out.data();
      ReduceRange(out.dtype(), op, inputs, n, &output, 1, 0,
                  static_cast<size_t>(out.shape().num_elements()), n);
    }
  }
  RETURN_IF_ERROR(group.Arrive(replica, deadline));
  if (replica != root_) {
    for (size_t t = 0; t < count; ++t) {
      // The root's output has this one's shape (the calls agreed).
      const Tensor& mine = group.call(replica).outputs[t];
      const size_t bytes = mine.byte_size();
      if (bytes > 0) std::memcpy(mine.data(), group.output_data(root_, t), bytes);
    }
  }
  return group.Arrive(replica, deadline);
}

}  // namespace distribute
