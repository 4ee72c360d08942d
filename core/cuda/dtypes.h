// The element types and reduce ops of the plugin ABI. dtypes are TensorFlow DataType
// numbers (the DIST_* constants of include_c/distribute/tensor.h) and ops the
// DIST_REDUCE_* numbers of strategy.h; they are repeated here because the plugin is built
// apart from the library and includes none of its headers.
#ifndef DISTRIBUTE_CORE_CUDA_DTYPES_H_
#define DISTRIBUTE_CORE_CUDA_DTYPES_H_

#include <cstdint>

namespace distribute::gpu_plugin {

inline constexpr int32_t kFloat32 = 1;
inline constexpr int32_t kFloat64 = 2;
inline constexpr int32_t kInt32 = 3;
inline constexpr int32_t kUInt8 = 4;
inline constexpr int32_t kInt16 = 5;
inline constexpr int32_t kInt8 = 6;
inline constexpr int32_t kInt64 = 9;
inline constexpr int32_t kBool = 10;
inline constexpr int32_t kBFloat16 = 14;
inline constexpr int32_t kFloat16 = 19;

inline constexpr int32_t kReduceSum = 1;
inline constexpr int32_t kReduceMean = 2;  // never passed: the core sends SUM and a divisor
inline constexpr int32_t kReduceMin = 3;
inline constexpr int32_t kReduceMax = 4;
inline constexpr int32_t kReduceProduct = 5;

// "float32", "bool", ...; nullptr for a number that is none of the dtypes above.
const char* DTypeName(int32_t dtype);
// "SUM", "MEAN", "MIN", "MAX", "PRODUCT"; nullptr for any other number.
const char* ReduceOpName(int32_t op);

}  // namespace distribute::gpu_plugin

#endif  // DISTRIBUTE_CORE_CUDA_DTYPES_H_
