#include "core/tensor/scalar.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::Status ReadScalar(const Tensor& tensor, DType expected, void* out) {
  if (tensor.dtype() != expected) {
    return absl::InvalidArgumentError(absl::StrCat("the tensor's dtype is ", DTypeName(tensor.dtype()),
                                                   ": expected ", DTypeName(expected)));
  }
  if (tensor.shape().num_elements() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("the tensor's shape is ", tensor.shape().ToString(),
                                                   " (", tensor.shape().num_elements(),
                                                   " elements): expected a scalar or one element"));
  }
  if (tensor.device().type == DeviceType::kCpu) {
    std::memcpy(out, tensor.data(), DTypeSize(expected));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(Tensor host, tensor.CopyTo("CPU:0"));
  std::memcpy(out, host.data(), DTypeSize(expected));
  return absl::OkStatus();
}

}  // namespace distribute
