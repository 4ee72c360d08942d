// Element types. The numbers are TensorFlow's DataType values (and the public DIST_*
// dtype constants), so no table is needed at the C boundary.
#ifndef DISTRIBUTE_CORE_TENSOR_DTYPE_H_
#define DISTRIBUTE_CORE_TENSOR_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace distribute {

enum class DType : int32_t {
  kFloat32 = 1,
  kFloat64 = 2,
  kInt32 = 3,
  kUInt8 = 4,
  kInt16 = 5,
  kInt8 = 6,
  kInt64 = 9,
  kBool = 10,
  kBFloat16 = 14,
  kFloat16 = 19,
};

// InvalidArgument for a number that is not one of the dtypes above.
absl::StatusOr<DType> DTypeFromInt(int32_t value);

// Bytes per element.
size_t DTypeSize(DType dtype);

// "float32", "bfloat16", ...
absl::string_view DTypeName(DType dtype);

// The signed and unsigned integer dtypes (not bool).
bool IsInteger(DType dtype);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_TENSOR_DTYPE_H_
