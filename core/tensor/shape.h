// A validated tensor shape: rank 0 to kMaxRank, every dimension >= 0, and an element
// count whose byte size fits in size_t for any dtype up to 8 bytes.
#ifndef DISTRIBUTE_CORE_TENSOR_SHAPE_H_
#define DISTRIBUTE_CORE_TENSOR_SHAPE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace distribute {

inline constexpr int32_t kMaxRank = 32;

class Shape {
 public:
  Shape() = default;  // rank 0, one element

  static absl::StatusOr<Shape> Make(std::span<const int64_t> dims);

  int32_t rank() const { return static_cast<int32_t>(dims_.size()); }
  int64_t dim(int32_t i) const { return dims_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t num_elements() const { return num_elements_; }

  // "[2, 3]"
  std::string ToString() const;

  bool operator==(const Shape& other) const { return dims_ == other.dims_; }

 private:
  std::vector<int64_t> dims_;
  int64_t num_elements_ = 1;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_TENSOR_SHAPE_H_
