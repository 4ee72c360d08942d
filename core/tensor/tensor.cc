#include "core/tensor/tensor.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/device/interned_device_name.h"
#include "core/device/local_devices.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

struct Checked {
  DType dtype;
  Shape shape;
  DeviceSpec device;
};

absl::StatusOr<DeviceSpec> ParseAndResolve(absl::string_view device) {
  ASSIGN_OR_RETURN(DeviceSpec spec, DeviceSpec::Parse(device));
  return ResolveLocalDevice(spec);
}

absl::Status CheckByteSize(DType dtype, const Shape& shape, size_t byte_size) {
  const size_t expected = static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype);
  if (byte_size != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        "byte_size is ", byte_size, " but a ", DTypeName(dtype), " tensor of shape ",
        shape.ToString(), " needs ", expected, " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Checked> Check(const Tensor::Description& desc) {
  ASSIGN_OR_RETURN(DType dtype, DTypeFromInt(desc.dtype));
  ASSIGN_OR_RETURN(Shape shape, Shape::Make(desc.dims));
  ASSIGN_OR_RETURN(DeviceSpec device, ParseAndResolve(desc.device));
  return Checked{dtype, std::move(shape), std::move(device)};
}

}  // namespace

Tensor::Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer)
    : dtype_(dtype),
      shape_(std::move(shape)),
      buffer_(std::move(buffer)),
      interned_device_name_(InternedDeviceName(buffer_->device())),
      device_name_(interned_device_name_ != nullptr ? std::string() : buffer_->device().ToString()) {}

absl::StatusOr<Tensor> Tensor::Create(const Description& desc, const void* data) {
  ASSIGN_OR_RETURN(Checked checked, Check(desc));
  const size_t needed = static_cast<size_t>(checked.shape.num_elements()) * DTypeSize(checked.dtype);
  if (data == nullptr && desc.byte_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("data is NULL but byte_size is ", desc.byte_size,
                     ": pass data, or NULL with byte_size 0 for a zero-filled tensor"));
  }
  if (data != nullptr) RETURN_IF_ERROR(CheckByteSize(checked.dtype, checked.shape, desc.byte_size));
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                   Buffer::Allocate(checked.device, needed, /*zero=*/data == nullptr));
  if (data != nullptr) {
    const auto source = Buffer::Borrow(DeviceSpec{}.WithDefaults(), const_cast<void*>(data),
                                       needed, nullptr);
    RETURN_IF_ERROR(CopyBytes(*buffer, *source, needed));
  }
  return Tensor(checked.dtype, std::move(checked.shape), std::move(buffer));
}

absl::StatusOr<Tensor> Tensor::Wrap(const Description& desc, void* data,
                                    absl::AnyInvocable<void() &&> release) {
  ASSIGN_OR_RETURN(Checked checked, Check(desc));
  if (checked.device.type != DeviceType::kCpu) {
    return absl::InvalidArgumentError(absl::StrCat("device ", checked.device.ToString(),
                                                   " is not a CPU device: only host memory can "
                                                   "be wrapped"));
  }
  if (data == nullptr && desc.byte_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("data is NULL but byte_size is ", desc.byte_size));
  }
  RETURN_IF_ERROR(CheckByteSize(checked.dtype, checked.shape, desc.byte_size));
  auto buffer = Buffer::Borrow(checked.device, data, desc.byte_size, std::move(release));
  return Tensor(checked.dtype, std::move(checked.shape), std::move(buffer));
}

absl::StatusOr<Tensor> Tensor::FromBuffer(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer) {
  RETURN_IF_ERROR(CheckByteSize(dtype, shape, buffer->size()));
  return Tensor(dtype, std::move(shape), std::move(buffer));
}

absl::StatusOr<Tensor> Tensor::OnHost() const {
  if (in_host_memory()) return *this;
  return CopyTo("CPU:0");
}

absl::StatusOr<Tensor> Tensor::PlacedOn(const DeviceSpec& device) const {
  if (this->device() == device) return *this;
  return CopyTo(device.ToString());
}

absl::StatusOr<Tensor> Tensor::CopyTo(absl::string_view device) const {
  ASSIGN_OR_RETURN(DeviceSpec target, ParseAndResolve(device));
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> copy, Buffer::Allocate(target, byte_size(), false));
  RETURN_IF_ERROR(CopyBytes(*copy, *buffer_, byte_size()));
  return Tensor(dtype_, shape_, std::move(copy));
}

}  // namespace distribute
