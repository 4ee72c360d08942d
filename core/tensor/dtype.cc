#include "core/tensor/dtype.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distribute {

absl::StatusOr<DType> DTypeFromInt(int32_t value) {
  switch (static_cast<DType>(value)) {
    case DType::kFloat32:
    case DType::kFloat64:
    case DType::kInt32:
    case DType::kUInt8:
    case DType::kInt16:
    case DType::kInt8:
    case DType::kInt64:
    case DType::kBool:
    case DType::kBFloat16:
    case DType::kFloat16:
      return static_cast<DType>(value);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "dtype ", value,
      " is not a dtype: expected one of DIST_BOOL, DIST_INT8, DIST_INT16, DIST_INT32, "
      "DIST_INT64, DIST_UINT8, DIST_FLOAT16, DIST_BFLOAT16, DIST_FLOAT32, DIST_FLOAT64"));
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kBool:
    case DType::kInt8:
    case DType::kUInt8:
      return 1;
    case DType::kInt16:
    case DType::kFloat16:
    case DType::kBFloat16:
      return 2;
    case DType::kInt32:
    case DType::kFloat32:
      return 4;
    case DType::kInt64:
    case DType::kFloat64:
      return 8;
  }
  return 0;
}

absl::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kInt32:
      return "int32";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt16:
      return "int16";
    case DType::kInt8:
      return "int8";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kFloat16:
      return "float16";
  }
  return "invalid";
}

bool IsInteger(DType dtype) {
  switch (dtype) {
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt8:
      return true;
    default:
      return false;
  }
}

}  // namespace distribute
