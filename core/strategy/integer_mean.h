// TF's MEAN of integers (tf.distribute.ReduceOp.MEAN over int tensors): TF sums the
// integers in their own dtype (wrapping) and divides with math_ops.truediv, so the mean
// comes back as a float (ReducedDType). Our reductions sum the integers with a SUM
// collective, identical on every replica and worker, and each caller divides here, so the
// result keeps the collectives' determinism.
#ifndef DISTRIBUTE_CORE_STRATEGY_INTEGER_MEAN_H_
#define DISTRIBUTE_CORE_STRATEGY_INTEGER_MEAN_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/kernels/reduce_op.h"
#include "core/device/device_spec.h"
#include "core/tensor/tensor.h"

namespace distribute {

// Whether a MEAN of `dtype` is computed as a SUM followed by IntegerMean.
inline bool IsIntegerMean(DType dtype, ReduceOp op) {
  return op == ReduceOp::kMean && IsInteger(dtype);
}

// `sum` (an integer tensor in host-readable memory) divided by `divisor`, as a new tensor
// of ReducedDType(sum.dtype(), MEAN) on `device`.
absl::StatusOr<Tensor> IntegerMean(const Tensor& sum, int64_t divisor, const DeviceSpec& device);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_INTEGER_MEAN_H_
