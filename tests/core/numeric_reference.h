// Independent numeric references for the core tests: the values float16 / bfloat16 bit
// patterns denote (from the formats' definitions), round-to-nearest-even into them (with
// nearbyint in double), element access for every dtype, and tensor helpers. Nothing here
// calls the conversion or reduction code under test.
#ifndef DISTRIBUTE_TESTS_CORE_NUMERIC_REFERENCE_H_
#define DISTRIBUTE_TESTS_CORE_NUMERIC_REFERENCE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"
#include "gtest/gtest.h"

namespace distribute::testing {

inline uint32_t FloatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

inline float BitsToFloat(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// The value binary16 pattern `h` denotes.
inline double HalfValue(uint16_t h) {
  const bool negative = (h & 0x8000u) != 0;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double magnitude;
  if (exponent == 0x1f) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), -24);
  } else {
    magnitude = std::ldexp(static_cast<double>(1024 + mantissa), exponent - 25);
  }
  return negative ? -magnitude : magnitude;
}

// The value bfloat16 pattern `b` denotes (8 exponent bits, 7 mantissa bits).
inline double BFloat16Value(uint16_t b) {
  const bool negative = (b & 0x8000u) != 0;
  const int exponent = (b >> 7) & 0xff;
  const int mantissa = b & 0x7f;
  double magnitude;
  if (exponent == 0xff) {
    magnitude = mantissa == 0 ? std::numeric_limits<double>::infinity()
                              : std::numeric_limits<double>::quiet_NaN();
  } else if (exponent == 0) {
    magnitude = std::ldexp(static_cast<double>(mantissa), -133);
  } else {
    magnitude = std::ldexp(static_cast<double>(128 + mantissa), exponent - 134);
  }
  return negative ? -magnitude : magnitude;
}

// `x` rounded to the nearest value with `precision` significant bits whose leading bit has
// an exponent of at least `min_exponent` (subnormals), ties to even; results at or above
// `overflow` become infinity.
inline double RoundToFormat(double x, int precision, int min_exponent, double overflow) {
  if (std::isnan(x)) return x;
  const double magnitude = std::fabs(x);
  double rounded = 0;
  if (magnitude != 0) {
    int exponent;
    std::frexp(magnitude, &exponent);  // magnitude = f * 2^exponent, f in [0.5, 1)
    const int lead = std::max(exponent - 1, min_exponent);
    const double quantum = std::ldexp(1.0, lead - (precision - 1));
    rounded = std::nearbyint(magnitude / quantum) * quantum;
  }
  if (rounded >= overflow) rounded = std::numeric_limits<double>::infinity();
  return std::copysign(rounded, x);
}

// float -> nearest float16 value (65520 and above round to infinity).
inline double RoundToHalf(float x) { return RoundToFormat(x, 11, -14, 65520.0); }
// float -> nearest bfloat16 value (halfway to 2^128 and above round to infinity).
inline double RoundToBFloat16(float x) {
  return RoundToFormat(x, 8, -126, std::ldexp(2.0 - std::ldexp(1.0, -8), 127));
}

// The pattern of a value the format holds exactly (found by search over all patterns).
inline uint16_t EncodeExact(double value, bool bfloat16) {
  static const auto tables = [] {
    std::vector<std::unordered_map<double, uint16_t>> t(2);
    for (uint32_t bits = 0; bits <= 0xffff; ++bits) {
      const uint16_t b = static_cast<uint16_t>(bits);
      const double h = HalfValue(b);
      const double f = BFloat16Value(b);
      // Positive zero wins over negative zero.
      if (!std::isnan(h) && !(h == 0 && std::signbit(h))) t[0].emplace(h, b);
      if (!std::isnan(f) && !(f == 0 && std::signbit(f))) t[1].emplace(f, b);
    }
    return t;
  }();
  const auto& table = tables[bfloat16 ? 1 : 0];
  auto it = table.find(value);
  EXPECT_NE(it, table.end()) << value << " is not exact in " << (bfloat16 ? "bfloat16" : "float16");
  return it == table.end() ? 0 : it->second;
}

inline bool IsFloating(DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 || dtype == DType::kFloat16 ||
         dtype == DType::kBFloat16;
}
inline bool IsHalfLike(DType dtype) { return dtype == DType::kFloat16 || dtype == DType::kBFloat16; }

inline size_t SizeOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat64:
    case DType::kInt64:
      return 8;
    case DType::kFloat32:
    case DType::kInt32:
      return 4;
    case DType::kInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kBool:
      return 1;
  }
  return 0;
}

inline const std::vector<DType>& AllDTypes() {
  static const std::vector<DType> all = {DType::kFloat32, DType::kFloat64, DType::kInt32,
                                         DType::kUInt8,   DType::kInt16,   DType::kInt8,
                                         DType::kInt64,   DType::kBool,    DType::kBFloat16,
                                         DType::kFloat16};
  return all;
}

inline std::string Name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kInt32: return "int32";
    case DType::kUInt8: return "uint8";
    case DType::kInt16: return "int16";
    case DType::kInt8: return "int8";
    case DType::kInt64: return "int64";
    case DType::kBool: return "bool";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat16: return "float16";
  }
  return "?";
}

// `value` as the integer dtype holds it (two's complement truncation), widened again.
inline int64_t WrapTo(DType dtype, int64_t value) {
  switch (dtype) {
    case DType::kInt8: return static_cast<int8_t>(value);
    case DType::kUInt8: return static_cast<uint8_t>(value);
    case DType::kInt16: return static_cast<int16_t>(value);
    case DType::kInt32: return static_cast<int32_t>(value);
    case DType::kBool: return value != 0;
    default: return value;
  }
}

// Integer element access (integer dtypes and bool).
inline void StoreInt(DType dtype, void* data, size_t i, int64_t value) {
  switch (dtype) {
    case DType::kInt8: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(value); return;
    case DType::kUInt8: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(value); return;
    case DType::kBool: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(value); return;
    case DType::kInt16: static_cast<int16_t*>(data)[i] = static_cast<int16_t>(value); return;
    case DType::kInt32: static_cast<int32_t*>(data)[i] = static_cast<int32_t>(value); return;
    case DType::kInt64: static_cast<int64_t*>(data)[i] = value; return;
    default: ADD_FAILURE() << "StoreInt on " << Name(dtype);
  }
}

inline int64_t LoadInt(DType dtype, const void* data, size_t i) {
  switch (dtype) {
    case DType::kInt8: return static_cast<const int8_t*>(data)[i];
    case DType::kUInt8: return static_cast<const uint8_t*>(data)[i];
    case DType::kBool: return static_cast<const uint8_t*>(data)[i];
    case DType::kInt16: return static_cast<const int16_t*>(data)[i];
    case DType::kInt32: return static_cast<const int32_t*>(data)[i];
    case DType::kInt64: return static_cast<const int64_t*>(data)[i];
    default: ADD_FAILURE() << "LoadInt on " << Name(dtype); return 0;
  }
}

// Floating element access; 16-bit floats must be given values they hold exactly.
inline void StoreFloat(DType dtype, void* data, size_t i, double value) {
  switch (dtype) {
    case DType::kFloat32: static_cast<float*>(data)[i] = static_cast<float>(value); return;
    case DType::kFloat64: static_cast<double*>(data)[i] = value; return;
    case DType::kFloat16: static_cast<uint16_t*>(data)[i] = EncodeExact(value, false); return;
    case DType::kBFloat16: static_cast<uint16_t*>(data)[i] = EncodeExact(value, true); return;
    default: StoreInt(dtype, data, i, static_cast<int64_t>(value));
  }
}

inline double LoadFloat(DType dtype, const void* data, size_t i) {
  switch (dtype) {
    case DType::kFloat32: return static_cast<const float*>(data)[i];
    case DType::kFloat64: return static_cast<const double*>(data)[i];
    case DType::kFloat16: return HalfValue(static_cast<const uint16_t*>(data)[i]);
    case DType::kBFloat16: return BFloat16Value(static_cast<const uint16_t*>(data)[i]);
    default: return static_cast<double>(LoadInt(dtype, data, i));
  }
}

// A float32 result stored in `dtype`, as the value it then denotes.
inline double RoundFloatTo(DType dtype, float value) {
  if (dtype == DType::kFloat16) return RoundToHalf(value);
  if (dtype == DType::kBFloat16) return RoundToBFloat16(value);
  return value;
}

// A host tensor of `dtype` and `dims` on `device`, zero-filled.
inline Tensor ZeroTensor(DType dtype, std::vector<int64_t> dims,
                         absl::string_view device = "CPU:0") {
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(dtype);
  desc.dims = dims;
  size_t count = 1;
  for (int64_t d : dims) count *= static_cast<size_t>(d);
  desc.byte_size = count * SizeOf(dtype);
  desc.device = device;
  const std::vector<unsigned char> zeros(desc.byte_size, 0);
  absl::StatusOr<Tensor> tensor = Tensor::Create(desc, zeros.empty() ? nullptr : zeros.data());
  EXPECT_TRUE(tensor.ok()) << tensor.status().ToString();
  return *std::move(tensor);
}

inline size_t NumElements(const Tensor& t) { return static_cast<size_t>(t.shape().num_elements()); }

// A host tensor of `dtype` holding `values`, stored as StoreFloat / StoreInt store them;
// of shape `dims`, or [values.size()] when none are given.
inline Tensor FloatTensor(DType dtype, const std::vector<double>& values, std::vector<int64_t> dims = {}) {
  if (dims.empty()) dims = {static_cast<int64_t>(values.size())};
  Tensor t = ZeroTensor(dtype, dims);
  for (size_t i = 0; i < values.size(); ++i) StoreFloat(dtype, t.data(), i, values[i]);
  return t;
}

inline Tensor IntTensor(DType dtype, const std::vector<int64_t>& values) {
  Tensor t = ZeroTensor(dtype, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) StoreInt(dtype, t.data(), i, values[i]);
  return t;
}

// Every element of a host tensor, as LoadFloat / LoadInt read it.
inline std::vector<double> FloatsOf(const Tensor& t) {
  std::vector<double> out;
  for (size_t i = 0; i < NumElements(t); ++i) out.push_back(LoadFloat(t.dtype(), t.data(), i));
  return out;
}

inline std::vector<int64_t> IntsOf(const Tensor& t) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < NumElements(t); ++i) out.push_back(LoadInt(t.dtype(), t.data(), i));
  return out;
}

}  // namespace distribute::testing

#endif  // DISTRIBUTE_TESTS_CORE_NUMERIC_REFERENCE_H_
