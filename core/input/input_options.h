// tf.distribute.InputOptions and the enums it is made of: how distributed input is
// replicated, sharded across input pipelines and prefetched.
#ifndef DISTRIBUTE_CORE_INPUT_INPUT_OPTIONS_H_
#define DISTRIBUTE_CORE_INPUT_INPUT_OPTIONS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distribute {

// tf.distribute.InputReplicationMode. The numbers are the C API's.
enum class InputReplicationMode : int32_t {
  kPerWorker = 1,   // one dataset per worker, shared by its replicas
  kPerReplica = 2,  // one dataset per replica
};

// tf.data.experimental.AutoShardPolicy. The numbers are the C API's.
enum class AutoShardPolicy : int32_t {
  kOff = 0,
  kAuto = 1,  // FILE when the source reads (enough) files, else DATA
  kFile = 2,  // each input pipeline reads its share of the files
  kData = 3,  // each input pipeline keeps its share of the elements
};

// How distribute_dataset splits a partial global batch of p rows (the last batch of a
// dataset batched with the remainder kept) across R replicas. The numbers are the C API's.
enum class PartialBatchSplit : int32_t {
  // ceil(global batch / R) rows per replica, in order, as for a full batch: replicas at
  // the end may get none (the reference page's example of reduce with axis).
  kInOrder = 0,
  // TF 2.x's rebatching: ceil(p / R) rows per replica, in order.
  kEven = 1,
};

absl::StatusOr<InputReplicationMode> InputReplicationModeFromInt(int32_t value);
absl::StatusOr<PartialBatchSplit> PartialBatchSplitFromInt(int32_t value);
absl::StatusOr<AutoShardPolicy> AutoShardPolicyFromInt(int32_t value);
absl::string_view AutoShardPolicyName(AutoShardPolicy policy);

struct InputOptions {
  // Steps each replica's iterator prepares ahead on a background thread; 0 disables.
  int64_t prefetch_depth = 1;
  InputReplicationMode replication_mode = InputReplicationMode::kPerWorker;
  AutoShardPolicy auto_shard_policy = AutoShardPolicy::kAuto;
  // Copy each replica's batch to its device (TF's experimental_fetch_to_device, on by
  // default as there). CPU replicas get host batches either way; without it, the batches
  // of GPU replicas stay in host memory.
  bool fetch_to_device = true;
  // The contrib semantics: every incoming element is already one replica's batch, and
  // replicas take consecutive elements instead of splitting one.
  bool per_replica_batches = false;
  PartialBatchSplit partial_batch_split = PartialBatchSplit::kInOrder;
};

// InvalidArgument naming the bad field, or OK.
absl::Status ValidateInputOptions(const InputOptions& options);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_INPUT_OPTIONS_H_
