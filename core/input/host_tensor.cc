#include "core/input/host_tensor.h"

#include <cstring>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/tensor/buffer.h"
#include "core/tensor/shape.h"
#include "core/util/status_macros.h"

namespace distribute {

const DeviceSpec& HostDevice() {
  static const DeviceSpec* const device = new DeviceSpec(DeviceSpec{}.WithDefaults());
  return *device;
}

absl::StatusOr<Tensor> NewHostTensor(DType dtype, std::span<const int64_t> dims) {
  ASSIGN_OR_RETURN(Shape shape, Shape::Make(dims));
  const size_t bytes = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, Buffer::Allocate(HostDevice(), bytes, false));
  return Tensor::FromBuffer(dtype, std::move(shape), std::move(buffer));
}

absl::StatusOr<Tensor> HostBytesTensor(const void* data, size_t size) {
  const int64_t dims[1] = {static_cast<int64_t>(size)};
  ASSIGN_OR_RETURN(Tensor tensor, NewHostTensor(DType::kUInt8, dims));
  if (size > 0) std::memcpy(tensor.data(), data, size);
  return tensor;
}

absl::Status NoSourceFilesError(const char* source) {
  return absl::FailedPreconditionError(
      absl::StrCat("the pipeline's source (", source, ") reads no files"));
}

}  // namespace distribute
