// Host memory for what a ps task stores and computes on: a variable's value, its slots,
// shards, and arguments read by the CPU kernels.
#ifndef DISTRIBUTE_CORE_PS_HOST_TENSORS_H_
#define DISTRIBUTE_CORE_PS_HOST_TENSORS_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor/tensor.h"

namespace distribute::ps {

inline constexpr absl::string_view kHostDevice = "CPU:0";

// `tensor` itself when its bytes are in host memory, else a host copy of it.
absl::StatusOr<Tensor> OnHost(const Tensor& tensor);

// A new zero-filled host tensor.
absl::StatusOr<Tensor> NewHostTensor(DType dtype, const Shape& shape);

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_HOST_TENSORS_H_
