#include "core/ps/host_tensors.h"

namespace distribute::ps {

absl::StatusOr<Tensor> OnHost(const Tensor& tensor) {
  if (tensor.device().type == DeviceType::kCpu) return tensor;
  return tensor.CopyTo(kHostDevice);
}

absl::StatusOr<Tensor> NewHostTensor(DType dtype, const Shape& shape) {
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(dtype);
  desc.dims = shape.dims();
  desc.device = kHostDevice;
  return Tensor::Create(desc, nullptr);
}

}  // namespace distribute::ps
