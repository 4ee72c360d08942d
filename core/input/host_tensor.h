// Host tensors for the input pipeline: every element tensor lives on CPU:0.
#ifndef DISTRIBUTE_CORE_INPUT_HOST_TENSOR_H_
#define DISTRIBUTE_CORE_INPUT_HOST_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "core/device/device_spec.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"

namespace distribute {

// CPU:0, resolved.
const DeviceSpec& HostDevice();

// An uninitialized host tensor.
absl::StatusOr<Tensor> NewHostTensor(DType dtype, std::span<const int64_t> dims);

// A uint8 [size] host tensor holding a copy of `data`.
absl::StatusOr<Tensor> HostBytesTensor(const void* data, size_t size);

// The rebuilt-source error of a pipeline whose source reads no files.
absl::Status NoSourceFilesError(const char* source);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_HOST_TENSOR_H_
