// A partitioned variable read and written as one tensor: the full value split into its
// shards along the layout's axis (each shard's bytes contiguous, as it is stored on its ps
// task), and the shards concatenated back into the full value. Any dtype: only bytes move.
#ifndef DISTRIBUTE_CORE_PS_SHARDED_TENSOR_H_
#define DISTRIBUTE_CORE_PS_SHARDED_TENSOR_H_

#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "core/ps/partitioner.h"
#include "core/tensor/tensor.h"

namespace distribute::ps {

// The shards of `full` (host tensors, in shard order). InvalidArgument unless `full` has
// the layout's full shape. A tensor in device memory is copied to the host first.
absl::StatusOr<std::vector<Tensor>> SplitIntoShards(const Tensor& full, const ShardLayout& layout);

// The full value (a new host tensor) from `shards` in shard order. InvalidArgument unless
// there is one shard per layout entry, each with the layout's shard shape, all of one dtype.
absl::StatusOr<Tensor> ConcatenateShards(std::span<const Tensor> shards, const ShardLayout& layout);

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_SHARDED_TENSOR_H_
