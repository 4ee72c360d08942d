#include "core/tensor/shape.h"

#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace distribute {

absl::StatusOr<Shape> Shape::Make(std::span<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", dims.size(), " is too large: expected at most ", kMaxRank));
  }
  // Bound the element count so that count * 8 bytes cannot overflow size_t or int64_t.
  constexpr int64_t kMaxElements = std::numeric_limits<int64_t>::max() / 8;
  Shape shape;
  shape.dims_.assign(dims.begin(), dims.end());
  bool has_zero = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shape[", i, "] is ", dims[i], ": dimensions must be >= 0"));
    }
    has_zero = has_zero || dims[i] == 0;
  }
  int64_t count = 1;
  for (size_t i = 0; i < dims.size() && !has_zero; ++i) {
    if (count > kMaxElements / dims[i]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shape ", shape.ToString(), " has too many elements: the byte size overflows"));
    }
    count *= dims[i];
  }
  shape.num_elements_ = has_zero ? 0 : count;
  return shape;
}

std::string Shape::ToString() const { return absl::StrCat("[", absl::StrJoin(dims_, ", "), "]"); }

}  // namespace distribute
