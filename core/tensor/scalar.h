// Reading the one element of a tensor into a C scalar: the C API's typed scalar getters.
#ifndef DISTRIBUTE_CORE_TENSOR_SCALAR_H_
#define DISTRIBUTE_CORE_TENSOR_SCALAR_H_

#include "absl/status/status.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"

namespace distribute {

// Copies the single element of `tensor` (rank 0, or any shape with one element) into
// `out`, which has room for one element of `expected`. InvalidArgument naming the
// tensor's dtype or shape when it is not exactly `expected` or has another element count:
// no conversion happens, so a float64 loss is never silently read as float32. A tensor in
// device memory is copied to the host first.
absl::Status ReadScalar(const Tensor& tensor, DType expected, void* out);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_TENSOR_SCALAR_H_
