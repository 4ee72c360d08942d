#include "core/ps/partitioner.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace distribute::ps {
namespace {

absl::Status CheckAxis(int32_t axis, const Shape& shape) {
  // variable_scope refuses rank 0 ("A partitioned Variable must have rank at least 1").
  if (shape.rank() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("a partitioned variable must have rank at least 1; its shape is ",
                     shape.ToString()));
  }
  if (axis < 0 || axis >= shape.rank()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot partition along axis ", axis,
                                                   " a variable of shape ", shape.ToString()));
  }
  return absl::OkStatus();
}

uint64_t CeilDiv(uint64_t a, uint64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// fixed_size_partitioner: min(num_shards, shape[axis]).
int64_t FixedSizeCount(const Partitioner& p, const Shape& shape) {
  return std::min(p.num_shards, shape.dim(p.axis));
}

// min_max_variable_partitioner: max(1, min(shape[axis], max_partitions,
// ceil(num_elements * dtype.size / min_slice_size))).
int64_t MinMaxCount(const Partitioner& p, DType dtype, const Shape& shape) {
  const uint64_t total_bytes = static_cast<uint64_t>(shape.num_elements()) * DTypeSize(dtype);
  const uint64_t by_size = CeilDiv(total_bytes, static_cast<uint64_t>(p.min_slice_size));
  const uint64_t bound = static_cast<uint64_t>(std::min(shape.dim(p.axis), p.max_partitions));
  return std::max<int64_t>(1, static_cast<int64_t>(std::min(bound, by_size)));
}

// variable_axis_size_partitioner: bytes_per_slice = num_elements / shape[axis] * size;
// slices_per_shard = max(1, floor(max_shard_bytes / bytes_per_slice));
// shards = ceil(shape[axis] / slices_per_shard), then at most max_shards when it is set.
// TF divides by zero for a variable without elements; that is refused here.
absl::StatusOr<int64_t> VariableAxisSizeCount(const Partitioner& p, DType dtype,
                                              const Shape& shape) {
  if (shape.num_elements() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        PartitionerName(p), " cannot size the shards of a variable without elements (shape ",
        shape.ToString(), ")"));
  }
  const uint64_t dim = static_cast<uint64_t>(shape.dim(p.axis));
  const uint64_t bytes_per_slice =
      static_cast<uint64_t>(shape.num_elements()) / dim * DTypeSize(dtype);
  const uint64_t slices_per_shard =
      std::max<uint64_t>(1, static_cast<uint64_t>(p.max_shard_bytes) / bytes_per_slice);
  int64_t shards = static_cast<int64_t>(CeilDiv(dim, slices_per_shard));
  if (p.max_shards > 0) shards = std::min(shards, p.max_shards);
  return shards;
}

}  // namespace

Partitioner Partitioner::FixedSize(int64_t num_shards, int32_t axis) {
  return {.kind = PartitionerKind::kFixedSize, .axis = axis, .num_shards = num_shards};
}

Partitioner Partitioner::MinMax(int64_t max_partitions, int32_t axis, int64_t min_slice_size) {
  return {.kind = PartitionerKind::kMinMax, .axis = axis, .max_partitions = max_partitions,
          .min_slice_size = min_slice_size};
}

Partitioner Partitioner::VariableAxisSize(int64_t max_shard_bytes, int32_t axis,
                                          int64_t max_shards) {
  return {.kind = PartitionerKind::kVariableAxisSize, .axis = axis,
          .max_shard_bytes = max_shard_bytes, .max_shards = max_shards};
}

std::string PartitionerName(const Partitioner& p) {
  switch (p.kind) {
    case PartitionerKind::kFixedSize:
      return absl::StrCat("fixed_size_partitioner(num_shards=", p.num_shards, ", axis=", p.axis,
                          ")");
    case PartitionerKind::kMinMax:
      return absl::StrCat("min_max_variable_partitioner(max_partitions=", p.max_partitions,
                          ", axis=", p.axis, ", min_slice_size=", p.min_slice_size, ")");
    case PartitionerKind::kVariableAxisSize:
      return absl::StrCat("variable_axis_size_partitioner(max_shard_bytes=", p.max_shard_bytes,
                          ", axis=", p.axis, ", max_shards=", p.max_shards, ")");
  }
  return absl::StrCat("partitioner of unknown kind ", static_cast<int32_t>(p.kind));
}

absl::Status CheckPartitioner(const Partitioner& p) {
  const auto refuse = [&p](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(PartitionerName(p), ": ", why));
  };
  if (p.axis < 0) return refuse("the axis must not be negative");
  switch (p.kind) {
    case PartitionerKind::kFixedSize:
      if (p.num_shards < 1) return refuse("num_shards must be at least 1");
      return absl::OkStatus();
    case PartitionerKind::kMinMax:
      if (p.max_partitions < 1) return refuse("max_partitions must be at least 1");
      if (p.min_slice_size < 1) return refuse("min_slice_size must be at least 1 byte");
      return absl::OkStatus();
    case PartitionerKind::kVariableAxisSize:
      // TF: "Both max_shard_bytes and bytes_per_string_element must be positive." and
      // "max_shards must be positive." (0 stands for TF's None).
      if (p.max_shard_bytes < 1) return refuse("max_shard_bytes must be positive");
      if (p.max_shards < 0) return refuse("max_shards must be positive, or 0 for no limit");
      return absl::OkStatus();
  }
  return refuse("unknown partitioner kind");
}

absl::StatusOr<int64_t> ShardCount(const Partitioner& p, DType dtype, const Shape& shape) {
  RETURN_IF_ERROR(CheckPartitioner(p));
  // The refusal names the partitioner: the caller set it on the strategy, not on this
  // variable, and may not see at once why a plain creation fails.
  if (absl::Status fits = CheckAxis(p.axis, shape); !fits.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(PartitionerName(p), ": ", fits.message()));
  }
  int64_t count = 0;
  switch (p.kind) {
    case PartitionerKind::kFixedSize:
      count = FixedSizeCount(p, shape);
      break;
    case PartitionerKind::kMinMax:
      count = MinMaxCount(p, dtype, shape);
      break;
    case PartitionerKind::kVariableAxisSize: {
      ASSIGN_OR_RETURN(count, VariableAxisSizeCount(p, dtype, shape));
      break;
    }
  }
  if (count < 1) {
    // variable_scope: "Partitioner returned zero partitions for some axes".
    return absl::InvalidArgumentError(absl::StrCat(PartitionerName(p),
                                                   " returned zero partitions for shape ",
                                                   shape.ToString()));
  }
  if (count > kMaxShards) {
    return absl::InvalidArgumentError(absl::StrCat(PartitionerName(p), " would split shape ",
                                                   shape.ToString(), " into ", count,
                                                   " shards; at most ", kMaxShards,
                                                   " are allowed"));
  }
  return count;
}

Shape ShardLayout::ShardShape(int64_t index) const {
  Dims dims = full_shape.dims();
  dims[static_cast<size_t>(axis)] = sizes[static_cast<size_t>(index)];
  // Never fails: a shard is no larger than the valid full shape along any axis.
  return *Shape::Make(dims);
}

absl::StatusOr<ShardLayout> LayoutShards(const Shape& full_shape, int32_t axis,
                                         int64_t num_shards) {
  RETURN_IF_ERROR(CheckAxis(axis, full_shape));
  const int64_t dim = full_shape.dim(axis);
  if (num_shards < 1 || num_shards > std::max<int64_t>(1, dim) || num_shards > kMaxShards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot split axis ", axis, " of shape ", full_shape.ToString(), " into ", num_shards,
        " shards: the count must be 1 to ", std::min<int64_t>(std::max<int64_t>(1, dim), kMaxShards)));
  }
  ShardLayout layout;
  layout.full_shape = full_shape;
  layout.axis = axis;
  // variable_scope._iter_slices: every shard gets dim // n rows, the first dim % n one more.
  const int64_t base = dim / num_shards;
  const int64_t with_extra = dim % num_shards;
  int64_t offset = 0;
  for (int64_t i = 0; i < num_shards; ++i) {
    const int64_t size = base + (i < with_extra ? 1 : 0);
    layout.sizes.push_back(size);
    layout.offsets.push_back(offset);
    offset += size;
  }
  return layout;
}

absl::StatusOr<ShardLayout> Partition(const Partitioner& partitioner, DType dtype,
                                      const Shape& shape) {
  ASSIGN_OR_RETURN(const int64_t count, ShardCount(partitioner, dtype, shape));
  return LayoutShards(shape, partitioner.axis, count);
}

}  // namespace distribute::ps
