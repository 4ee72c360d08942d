// C entry points for values and tensors.
#include <span>
#include "absl/strings/string_view.h"

#include "core/c_api/api_guard.h"
#include "core/c_api/handles.h"
#include "core/tensor/scalar.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"
#include "core/util/status_macros.h"
#include "distribute/tensor.h"
#include "distribute/value.h"

using distribute::Tensor;
using distribute::c_api::Accessor;
using distribute::c_api::CheckHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

absl::Status CheckShapeArgs(const int64_t* shape, int32_t rank) {
  if (rank < 0) {
    return absl::InvalidArgumentError(absl::StrCat("rank is ", rank, ": expected >= 0"));
  }
  if (rank > 0 && shape == nullptr) return NullArgument("shape");
  return absl::OkStatus();
}

Tensor::Description Describe(dist_dtype_t dtype, const int64_t* shape, int32_t rank,
                              size_t byte_size, const char* device) {
  return Tensor::Description{
      dtype, std::span<const int64_t>(shape, rank > 0 ? static_cast<size_t>(rank) : 0), byte_size,
      device == nullptr ? absl::string_view("CPU:0") : absl::string_view(device)};
}

// The tensor accessors all read one property of a tensor value.
template <typename T, typename Property>
dist_status_t ReadTensor(const char* function, const dist_value_t* value, T* out,
                         const char* out_arg, Property property) {
  return Accessor(function, value, "tensor", out, out_arg,
                  [&](const dist_value& v, T& result) -> absl::Status {
                    ASSIGN_OR_RETURN(const Tensor* tensor, v.value.AsTensor());
                    result = property(*tensor);
                    return absl::OkStatus();
                  });
}

// The typed scalar getters: one element of exactly `dtype`, read by the core.
template <typename T>
dist_status_t ReadScalar(const char* function, const dist_value_t* value, distribute::DType dtype,
                         T* out) {
  return Accessor(function, value, "tensor", out, "out_value",
                  [&](const dist_value& v, T& result) -> absl::Status {
                    ASSIGN_OR_RETURN(const Tensor* tensor, v.value.AsTensor());
                    return distribute::ReadScalar(*tensor, dtype, &result);
                  });
}

}  // namespace

extern "C" {

const char* dist_dtype_name(dist_dtype_t dtype) {
  auto checked = distribute::DTypeFromInt(dtype);
  return checked.ok() ? distribute::DTypeName(*checked).data() : "invalid";
}

dist_status_t dist_dtype_size(dist_dtype_t dtype, size_t* out_size) {
  ClearOut(out_size);
  return Guard(__func__, [&]() -> absl::Status {
    if (out_size == nullptr) return NullArgument("out_size");
    ASSIGN_OR_RETURN(distribute::DType checked, distribute::DTypeFromInt(dtype));
    *out_size = distribute::DTypeSize(checked);
    return absl::OkStatus();
  });
}

dist_status_t dist_tensor_create(dist_dtype_t dtype, const int64_t* shape, int32_t rank,
                                 const void* data, size_t byte_size, const char* device,
                                 dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    RETURN_IF_ERROR(CheckShapeArgs(shape, rank));
    ASSIGN_OR_RETURN(Tensor tensor,
                     Tensor::Create(Describe(dtype, shape, rank, byte_size, device), data));
    *out = new dist_value(distribute::Value(std::move(tensor)));
    return absl::OkStatus();
  });
}

dist_status_t dist_tensor_wrap(dist_dtype_t dtype, const int64_t* shape, int32_t rank, void* data,
                               size_t byte_size, const char* device, dist_release_fn release,
                               void* user_data, dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    RETURN_IF_ERROR(CheckShapeArgs(shape, rank));
    absl::AnyInvocable<void() &&> on_release;
    if (release != nullptr) on_release = [release, data, user_data] { release(data, user_data); };
    ASSIGN_OR_RETURN(Tensor tensor, Tensor::Wrap(Describe(dtype, shape, rank, byte_size, device),
                                                 data, std::move(on_release)));
    *out = new dist_value(distribute::Value(std::move(tensor)));
    return absl::OkStatus();
  });
}

dist_status_t dist_tensor_dtype(const dist_value_t* tensor, dist_dtype_t* out_dtype) {
  return ReadTensor(__func__, tensor, out_dtype, "out_dtype",
                    [](const Tensor& t) { return static_cast<dist_dtype_t>(t.dtype()); });
}

dist_status_t dist_tensor_rank(const dist_value_t* tensor, int32_t* out_rank) {
  return ReadTensor(__func__, tensor, out_rank, "out_rank",
                    [](const Tensor& t) { return t.shape().rank(); });
}

dist_status_t dist_tensor_shape(const dist_value_t* tensor, int64_t* out_dims, int32_t capacity) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(tensor, "tensor"));
    ASSIGN_OR_RETURN(const Tensor* t, tensor->value.AsTensor());
    const int32_t rank = t->shape().rank();
    if (capacity < rank) {
      return absl::InvalidArgumentError(absl::StrCat("capacity is ", capacity,
                                                     " but the tensor has rank ", rank));
    }
    if (rank > 0 && out_dims == nullptr) return NullArgument("out_dims");
    for (int32_t i = 0; i < rank; ++i) out_dims[i] = t->shape().dim(i);
    return absl::OkStatus();
  });
}

dist_status_t dist_tensor_num_elements(const dist_value_t* tensor, int64_t* out_count) {
  return ReadTensor(__func__, tensor, out_count, "out_count",
                    [](const Tensor& t) { return t.shape().num_elements(); });
}

dist_status_t dist_tensor_byte_size(const dist_value_t* tensor, size_t* out_size) {
  return ReadTensor(__func__, tensor, out_size, "out_size",
                    [](const Tensor& t) { return t.byte_size(); });
}

dist_status_t dist_tensor_data(const dist_value_t* tensor, void** out_borrowed_data) {
  return ReadTensor(__func__, tensor, out_borrowed_data, "out_borrowed_data", [](const Tensor& t) { return t.data(); });
}

dist_status_t dist_tensor_device(const dist_value_t* tensor, const char** out_borrowed_device) {
  return ReadTensor(__func__, tensor, out_borrowed_device, "out_borrowed_device",
                    [](const Tensor& t) { return t.device_name().c_str(); });
}

dist_status_t dist_tensor_copy_to_device(const dist_value_t* tensor, const char* device,
                                         dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(tensor, "tensor"));
    if (device == nullptr) return NullArgument("device");
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(const Tensor* t, tensor->value.AsTensor());
    ASSIGN_OR_RETURN(Tensor copy, t->CopyTo(device));
    *out = new dist_value(distribute::Value(std::move(copy)));
    return absl::OkStatus();
  });
}

dist_status_t dist_tensor_scalar_float32(const dist_value_t* tensor, float* out_value) {
  return ReadScalar(__func__, tensor, distribute::DType::kFloat32, out_value);
}

dist_status_t dist_tensor_scalar_float64(const dist_value_t* tensor, double* out_value) {
  return ReadScalar(__func__, tensor, distribute::DType::kFloat64, out_value);
}

dist_status_t dist_tensor_scalar_int32(const dist_value_t* tensor, int32_t* out_value) {
  return ReadScalar(__func__, tensor, distribute::DType::kInt32, out_value);
}

dist_status_t dist_tensor_scalar_int64(const dist_value_t* tensor, int64_t* out_value) {
  return ReadScalar(__func__, tensor, distribute::DType::kInt64, out_value);
}

}  // extern "C"
