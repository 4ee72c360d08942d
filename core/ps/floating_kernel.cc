#include "core/ps/floating_kernel.h"

#include <cstdint>
#include <limits>

#include "core/tensor/half.h"

namespace distribute::ps {
namespace {

template <typename T>
void Fill(void* data, size_t count, T value) {
  T* out = static_cast<T*>(data);
  for (size_t i = 0; i < count; ++i) out[i] = value;
}

// `value` as an integer of type T, clamped to T's range (a plain cast of an out-of-range
// double is undefined behaviour).
template <typename T>
T ClampToInteger(double value) {
  if (value <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  if (value >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

}  // namespace

std::set<DType> FloatingDTypes() {
  return {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16};
}

void WidenToFloat(DType dtype, const void* source, float* out, size_t count) {
  const uint16_t* in = static_cast<const uint16_t*>(source);
  const bool brain = dtype == DType::kBFloat16;
  for (size_t i = 0; i < count; ++i) out[i] = brain ? BFloat16ToFloat(in[i]) : HalfToFloat(in[i]);
}

void NarrowFromFloat(DType dtype, const float* source, void* out, size_t count) {
  uint16_t* bits = static_cast<uint16_t*>(out);
  const bool brain = dtype == DType::kBFloat16;
  for (size_t i = 0; i < count; ++i) {
    bits[i] = brain ? FloatToBFloat16(source[i]) : FloatToHalf(source[i]);
  }
}

void FillTensor(const Tensor& tensor, double value) {
  const size_t count = static_cast<size_t>(tensor.shape().num_elements());
  if (count == 0) return;
  void* data = tensor.data();
  switch (tensor.dtype()) {
    case DType::kFloat32: return Fill(data, count, static_cast<float>(value));
    case DType::kFloat64: return Fill(data, count, value);
    case DType::kFloat16: return Fill(data, count, FloatToHalf(static_cast<float>(value)));
    case DType::kBFloat16: return Fill(data, count, FloatToBFloat16(static_cast<float>(value)));
    case DType::kInt8: return Fill(data, count, ClampToInteger<int8_t>(value));
    case DType::kUInt8: return Fill(data, count, ClampToInteger<uint8_t>(value));
    case DType::kBool: return Fill(data, count, static_cast<uint8_t>(value != 0.0));
    case DType::kInt16: return Fill(data, count, ClampToInteger<int16_t>(value));
    case DType::kInt32: return Fill(data, count, ClampToInteger<int32_t>(value));
    case DType::kInt64: return Fill(data, count, ClampToInteger<int64_t>(value));
  }
}

}  // namespace distribute::ps
