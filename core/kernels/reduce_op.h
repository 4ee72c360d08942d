// Reduction operators: TF's SUM and MEAN, plus MIN, MAX and PRODUCT.
#ifndef DISTRIBUTE_CORE_KERNELS_REDUCE_OP_H_
#define DISTRIBUTE_CORE_KERNELS_REDUCE_OP_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor/dtype.h"

namespace distribute {

enum class ReduceOp : int32_t {
  kSum = 1,
  kMean = 2,
  kMin = 3,
  kMax = 4,
  kProduct = 5,
};

absl::StatusOr<ReduceOp> ReduceOpFromInt(int32_t value);
absl::string_view ReduceOpName(ReduceOp op);

// InvalidArgument when `op` has no meaning for `dtype` (bool supports only MIN and MAX,
// which are logical AND and OR).
absl::Status CheckReducible(DType dtype, ReduceOp op);

// The dtype of a reduction's result. TF averages with true division of the sum
// (math_ops.truediv), which turns integers into floats: float32 for 8- and 16-bit
// integers, float64 for 32- and 64-bit ones. Every other op, and MEAN of floats, keeps
// the dtype.
DType ReducedDType(DType dtype, ReduceOp op);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_KERNELS_REDUCE_OP_H_
