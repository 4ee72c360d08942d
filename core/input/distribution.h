// The rules of distributed input, as functions over datasets and elements: auto-sharding
// a dataset for one input pipeline, and splitting a global batch into per-replica batches
// placed on the replicas' devices. DistributedDataset (distributed_dataset.h) composes them.
#ifndef DISTRIBUTE_CORE_INPUT_DISTRIBUTION_H_
#define DISTRIBUTE_CORE_INPUT_DISTRIBUTION_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "core/device/device_spec.h"
#include "core/input/dataset.h"
#include "core/input/input_options.h"
#include "core/tensor/tensor.h"
#include "core/values/value.h"

namespace distribute {

// The dataset input pipeline `input_pipeline_id` of `num_input_pipelines` reads under
// `policy`. One pipeline: the dataset itself (sharding is a no-op on a single worker).
// FILE: files id, id + n, ... of SourceFiles(); InvalidArgument when the dataset reads no
// files or fewer than n. DATA: Shard(n, id). AUTO: FILE when the dataset reads at least n
// files, else DATA (TF's fallback).
absl::StatusOr<DatasetPtr> AutoShard(DatasetPtr dataset, AutoShardPolicy policy,
                                     int32_t num_input_pipelines, int32_t input_pipeline_id);

// ceil(global / replicas): the per-replica batch size distribute_dataset uses, so that a
// partial batch fills the replicas in order.
int64_t SplitBatchSize(int64_t global_batch_size, int32_t num_replicas);

// The first dimension shared by every component of a batch element; InvalidArgument for a
// scalar component or components with different first dimensions.
absl::StatusOr<int64_t> BatchDimension(const Element& element);

// Where a replica's batch lives: its worker device when that is a CPU device (host memory
// is shared) or when fetching to the device, else where the batch already is.
DeviceSpec BatchPlacement(const DeviceSpec& worker, const DeviceSpec& source, bool fetch_to_device);

// Rows [begin, end) of `tensor` (rank >= 1) as a tensor on `place`. Host rows placed on a
// CPU device share the source's buffer (which the slice keeps alive); anything else is
// copied.
absl::StatusOr<Tensor> SliceRows(const Tensor& tensor, int64_t begin, int64_t end,
                                 const DeviceSpec& place);

// `tensor` on `place`: itself when it is there, a view sharing its buffer when both are
// CPU devices (host memory), else a copy.
absl::StatusOr<Tensor> PlaceTensor(const Tensor& tensor, const DeviceSpec& place);

// A batch of zero rows with the dtype and the inner dimensions of `like` (rank >= 1).
absl::StatusOr<Tensor> EmptyBatchLike(const Tensor& like, const DeviceSpec& place);

// Splits a batch element along its first axis: replica r gets rows
// [r * per_replica, (r + 1) * per_replica) clipped to the batch, so replicas fill in order
// and those left without rows get empty batches. When the batch has more rows than
// per_replica * replicas, the rows are split with ceil(rows / replicas) instead, so that
// none is lost; so is a batch with fewer rows under PartialBatchSplit::kEven (TF 2.x).
// Result: [replica][component].
// Multi-worker: the batch is split across `replicas_in_sync` replicas of which `workers`
// are those from `first_replica` on (0: workers.size() replicas, from 0).
absl::StatusOr<std::vector<Element>> SplitBatch(const Element& batch, int64_t per_replica,
                                                std::span<const DeviceSpec> workers,
                                                bool fetch_to_device, int32_t first_replica = 0,
                                                int32_t replicas_in_sync = 0,
                                                PartialBatchSplit partial = PartialBatchSplit::kInOrder);

// Fills the replicas without an element (nullopt entries of `by_replica`) with empty
// batches shaped like the first replica that has one. FailedPrecondition when none has
// one; InvalidArgument when a component to pad is a scalar. Result: [replica][component].
absl::StatusOr<std::vector<Element>> PadMissingReplicas(
    std::vector<std::optional<Element>> by_replica, std::span<const DeviceSpec> workers,
    bool fetch_to_device);

// One value per component: a PerReplica value over the replicas' tensors, or the tensor
// itself for a single replica. `by_replica` is [replica][component].
absl::StatusOr<std::vector<Value>> PerReplicaValues(std::vector<Element> by_replica,
                                                    int32_t num_components, bool always_wrap = false);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_DISTRIBUTION_H_
