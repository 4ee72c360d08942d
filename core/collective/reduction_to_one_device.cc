#include <cstring>

#include "core/collective/local_all_reduce.h"
#include "core/collective/reduce_kernels.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::Status ReductionToOneDevice::Run(LocalRendezvous& group, int32_t replica, ReduceOp op,
                                       const Deadline& deadline) {
  const int32_t n = group.size();
  const size_t count = group.call(replica).inputs.size();
  const void* inputs[kMaxLocalReplicas];
  if (replica == root_) {
    for (size_t t = 0; t < count; ++t) {
      for (int32_t q = 0; q < n; ++q) inputs[q] = group.call(q).inputs[t].data();
      const Tensor& out = group.call(root_).outputs[t];
      void* output = out.data();
      ReduceRange(out.dtype(), op, inputs, n, &output, 1, 0,
                  static_cast<size_t>(out.shape().num_elements()), n);
    }
  }
  RETURN_IF_ERROR(group.Arrive(replica, deadline));
  if (replica != root_) {
    for (size_t t = 0; t < count; ++t) {
      const Tensor& result = group.call(root_).outputs[t];
      const size_t bytes = result.byte_size();
      if (bytes > 0) std::memcpy(group.call(replica).outputs[t].data(), result.data(), bytes);
    }
  }
  return group.Arrive(replica, deadline);
}

}  // namespace distribute
