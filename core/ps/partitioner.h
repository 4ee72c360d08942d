// TF's variable partitioners (tensorflow/python/ops/partitioned_variables.py) and the
// layout of the shards they make (variable_scope._iter_slices). A partitioner decides how
// many shards a variable of a given dtype and shape is split into along one axis; the
// layout then gives every shard floor(dim / n) rows of that axis, the first dim % n shards
// one more, in order. The counts follow TF exactly, including its refusals ("zero
// partitions", a rank-0 variable); beyond TF, a partitioning into more than kMaxShards
// shards is refused, so that no declaration can make the library allocate without bound.
#ifndef DISTRIBUTE_CORE_PS_PARTITIONER_H_
#define DISTRIBUTE_CORE_PS_PARTITIONER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/tensor/dtype.h"
#include "core/tensor/shape.h"

namespace distribute::ps {

inline constexpr int64_t kMaxShards = 4096;

enum class PartitionerKind : int32_t {
  kFixedSize = 0,          // fixed_size_partitioner(num_shards, axis)
  kMinMax = 1,             // min_max_variable_partitioner(max_partitions, axis, min_slice_size)
  kVariableAxisSize = 2,   // variable_axis_size_partitioner(max_shard_bytes, axis, max_shards)
};

// One partitioner with its arguments (only those of its kind are read). Build it with the
// factories, which take TF's arguments in TF's order and defaults.
struct Partitioner {
  PartitionerKind kind = PartitionerKind::kFixedSize;
  int32_t axis = 0;
  int64_t num_shards = 1;                  // kFixedSize
  int64_t max_partitions = 1;              // kMinMax
  int64_t min_slice_size = 256 << 10;      // kMinMax, bytes
  int64_t max_shard_bytes = 0;             // kVariableAxisSize
  int64_t max_shards = 0;                  // kVariableAxisSize; 0 means no limit (TF's None)

  static Partitioner FixedSize(int64_t num_shards, int32_t axis = 0);
  static Partitioner MinMax(int64_t max_partitions = 1, int32_t axis = 0,
                            int64_t min_slice_size = 256 << 10);
  static Partitioner VariableAxisSize(int64_t max_shard_bytes, int32_t axis = 0,
                                      int64_t max_shards = 0);

  bool operator==(const Partitioner& other) const = default;
};

// "fixed_size_partitioner(num_shards=3, axis=0)", for messages.
std::string PartitionerName(const Partitioner& partitioner);

// InvalidArgument when the arguments alone are wrong (a negative count, a size below 1,
// a negative axis), whatever variable they meet.
absl::Status CheckPartitioner(const Partitioner& partitioner);

// How many shards `partitioner` splits a variable of `dtype` and `shape` into, exactly as
// TF computes it; InvalidArgument for the variables TF refuses (rank 0, an axis past the
// rank, zero partitions) and for more than kMaxShards shards.
absl::StatusOr<int64_t> ShardCount(const Partitioner& partitioner, DType dtype, const Shape& shape);

// Where each shard of a variable lies along the partitioned axis.
struct ShardLayout {
  Shape full_shape;
  int32_t axis = 0;
  std::vector<int64_t> sizes;    // rows of `axis` in each shard
  std::vector<int64_t> offsets;  // first row of each shard

  int64_t num_shards() const { return static_cast<int64_t>(sizes.size()); }
  // The shape of shard `index` (< num_shards()).
  Shape ShardShape(int64_t index) const;
};

// The layout of `num_shards` shards of `full_shape` along `axis`: InvalidArgument unless
// 0 <= axis < rank and 1 <= num_shards <= max(1, dim) (no shard is empty unless the axis is)
// and num_shards <= kMaxShards.
absl::StatusOr<ShardLayout> LayoutShards(const Shape& full_shape, int32_t axis, int64_t num_shards);

// ShardCount, then LayoutShards along the partitioner's axis.
absl::StatusOr<ShardLayout> Partition(const Partitioner& partitioner, DType dtype,
                                      const Shape& shape);

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_PARTITIONER_H_
