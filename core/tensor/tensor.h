// A dense tensor: dtype, shape, device and a shared row-major buffer. Copying a Tensor
// shares the buffer; CopyTo makes a new one.
#ifndef DISTRIBUTE_CORE_TENSOR_TENSOR_H_
#define DISTRIBUTE_CORE_TENSOR_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "core/device/device_spec.h"
#include "core/tensor/buffer.h"
#include "core/tensor/dtype.h"
#include "core/tensor/shape.h"

namespace distribute {

class Tensor {
 public:
  // The fields of a tensor still to be checked: raw numbers as they cross the C ABI.
  struct Description {
    int32_t dtype = 0;
    std::span<const int64_t> dims;
    size_t byte_size = 0;
    absl::string_view device = "CPU:0";  // a device name
  };

  // Copies `data` (host memory, desc.byte_size bytes) to a new buffer on desc.device;
  // a null `data` with byte_size 0 gives zeros.
  static absl::StatusOr<Tensor> Create(const Description& desc, const void* data);

  // Borrows host memory; `release` runs once when the last tensor sharing it dies. On
  // error `release` is destroyed without being called.
  static absl::StatusOr<Tensor> Wrap(const Description& desc, void* data,
                                     absl::AnyInvocable<void() &&> release);

  // A tensor over an existing buffer, whose size must match dtype and shape.
  static absl::StatusOr<Tensor> FromBuffer(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer);

  // A copy with its own buffer on `device` (a device name).
  absl::StatusOr<Tensor> CopyTo(absl::string_view device) const;
  // This tensor when its memory is host memory (any CPU device), else a copy on CPU:0: what
  // host code (cross-replica reductions, variable updates, the input pipeline) reads.
  absl::StatusOr<Tensor> OnHost() const;
  // This tensor when it is on `device`, else a copy there (what results and operands bound
  // for one device take).
  absl::StatusOr<Tensor> PlacedOn(const DeviceSpec& device) const;
  bool in_host_memory() const { return device().type != DeviceType::kGpu; }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  size_t byte_size() const { return buffer_->size(); }
  void* data() const { return buffer_->data(); }
  const DeviceSpec& device() const { return buffer_->device(); }
  // Canonical device name; lives as long as the tensor.
  const std::string& device_name() const {
    return interned_device_name_ != nullptr ? *interned_device_name_ : device_name_;
  }
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }

 private:
  Tensor(DType dtype, Shape shape, std::shared_ptr<Buffer> buffer);

  DType dtype_;
  Shape shape_;
  std::shared_ptr<Buffer> buffer_;
  const std::string* interned_device_name_;  // interned_device_name.h; null when the table is full
  std::string device_name_;                  // only when not interned
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_TENSOR_TENSOR_H_
