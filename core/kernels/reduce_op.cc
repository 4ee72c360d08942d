#include "core/kernels/reduce_op.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace distribute {

absl::StatusOr<ReduceOp> ReduceOpFromInt(int32_t value) {
  switch (static_cast<ReduceOp>(value)) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kProduct:
      return static_cast<ReduceOp>(value);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "reduce op ", value,
      " is not a reduce op: expected DIST_REDUCE_SUM, MEAN, MIN, MAX or PRODUCT"));
}

absl::string_view ReduceOpName(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "SUM";
    case ReduceOp::kMean:
      return "MEAN";
    case ReduceOp::kMin:
      return "MIN";
    case ReduceOp::kMax:
      return "MAX";
    case ReduceOp::kProduct:
      return "PRODUCT";
  }
  return "INVALID";
}

absl::Status CheckReducible(DType dtype, ReduceOp op) {
  if (dtype == DType::kBool && op != ReduceOp::kMin && op != ReduceOp::kMax) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bool values cannot be reduced with ", ReduceOpName(op), ": use MIN (and) or MAX (or)"));
  }
  return absl::OkStatus();
}

DType ReducedDType(DType dtype, ReduceOp op) {
  if (op != ReduceOp::kMean || !IsInteger(dtype)) return dtype;
  return DTypeSize(dtype) <= 2 ? DType::kFloat32 : DType::kFloat64;
}

}  // namespace distribute
