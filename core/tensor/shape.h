// A validated tensor shape: rank 0 to kMaxRank, every dimension >= 0, and an element
// count whose byte size fits in size_t for any dtype up to 8 bytes.
#ifndef DISTRIBUTE_CORE_TENSOR_SHAPE_H_
#define DISTRIBUTE_CORE_TENSOR_SHAPE_H_

#include <cstdint>
#include <span>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"

namespace distribute {

inline constexpr int32_t kMaxRank = 32;

// A shape's dimensions: inline up to rank 4, so that making a tensor of an everyday shape
// allocates nothing for its shape (a small all-reduce's new value is made every call).
using Dims = absl::InlinedVector<int64_t, 4>;

class Shape {
 public:
  Shape() = default;  // rank 0, one element

  static absl::StatusOr<Shape> Make(std::span<const int64_t> dims);

  int32_t rank() const { return static_cast<int32_t>(dims_.size()); }
  int64_t dim(int32_t i) const { return dims_[static_cast<size_t>(i)]; }
  const Dims& dims() const { return dims_; }
  int64_t num_elements() const { return num_elements_; }

  // "[2, 3]"
  std::string ToString() const;

  bool operator==(const Shape& other) const { return dims_ == other.dims_; }

 private:
  Dims dims_;
  int64_t num_elements_ = 1;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_TENSOR_SHAPE_H_
