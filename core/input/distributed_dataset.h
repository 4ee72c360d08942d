// Strategy.experimental_distribute_dataset and distribute_datasets_from_function: a
// dataset (or one per replica) whose iterator yields, per step, one value per component,
// a PerReplica value holding each replica's batch on its device.
#ifndef DISTRIBUTE_CORE_INPUT_DISTRIBUTED_DATASET_H_
#define DISTRIBUTE_CORE_INPUT_DISTRIBUTED_DATASET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "core/device/device_spec.h"
#include "core/input/dataset.h"
#include "core/input/device_prefetch.h"
#include "core/input/input_context.h"
#include "core/input/input_options.h"
#include "core/values/value.h"

namespace distribute {

class Strategy;

// One pass over a distributed dataset. Every replica ends in the same step. Used by one
// thread at a time; destroying it stops the background prefetching of its sources.
class DistributedIterator {
 public:
  // How replicas get their batches.
  enum class Mode {
    kSplit,        // one source; each element is split along axis 0 across the replicas
    kConsecutive,  // one source; replica r takes element k * replicas + r of step k
    kPerReplica,   // one source per replica
  };

  // `datasets` are kept alive for the iterators over them.
  DistributedIterator(Mode mode, std::vector<DatasetPtr> datasets,
                      std::vector<std::unique_ptr<DatasetIterator>> sources,
                      std::vector<DeviceSpec> workers, int32_t num_components,
                      int64_t per_replica_batch_size, bool fetch_to_device,
                      int32_t first_replica = 0, int32_t replicas_in_sync = 0,
                      bool always_per_replica = false,
                      PartialBatchSplit partial_batch_split = PartialBatchSplit::kInOrder,
                      std::shared_ptr<const Strategy> ends_with_workers = nullptr);

  // The next step in *out (one value per component): true, or false at the end and at
  // every later call. Errors from the sources come back unchanged.
  absl::StatusOr<bool> GetNext(std::vector<Value>* out);

  int32_t num_components() const { return num_components_; }
  int32_t num_replicas() const { return static_cast<int32_t>(workers_.size()); }

 private:
  absl::StatusOr<std::optional<std::vector<Element>>> NextSplit();
  absl::StatusOr<std::optional<std::vector<Element>>> NextGathered();
  absl::StatusOr<std::optional<std::vector<Element>>> NextStep();
  // fetch_to_device with GPU replicas: returns the batch staged by the previous call and
  // stages the next one, so its transfer overlaps the caller's step. A failure to make the
  // next batch is returned by the call after, in order.
  absl::StatusOr<std::optional<std::vector<Element>>> NextThroughDevicePrefetch();
  void StageNext();
  absl::StatusOr<bool> Pull(size_t source, Element* out);
  // Gathered modes across workers: whether any worker still has an element this step (a
  // collective every worker's iterator makes at every step).
  absl::StatusOr<bool> AnyWorkerHasElement(bool here);

  const Mode mode_;
  const std::vector<DatasetPtr> datasets_;
  std::vector<std::unique_ptr<DatasetIterator>> sources_;
  std::vector<bool> exhausted_;
  const std::vector<DeviceSpec> workers_;
  const int32_t num_components_;
  int64_t per_replica_batch_size_;  // kSplit; 0 until the first element tells it
  const bool fetch_to_device_;
  // kSplit across workers: these replicas are [first, first + size) of replicas_in_sync_.
  const int32_t first_replica_;
  const int32_t replicas_in_sync_;
  // Multi-worker: a batch is a PerReplica value even with one replica here (the others
  // are on other workers).
  const bool always_per_replica_;
  const PartialBatchSplit partial_batch_split_;  // kSplit
  // Gathered modes of a multi-worker strategy (else null): each worker reads its own
  // pipeline, so the workers agree at every step on whether the job's input has ended;
  // a worker whose pipeline ended first gives its replicas empty batches shaped like its
  // first element (kept in empty_like_) until every worker's has ended, as TF does.
  const std::shared_ptr<const Strategy> ends_with_workers_;
  std::optional<absl::StatusOr<Element>> empty_like_;
  int64_t steps_ = 0;
  bool done_ = false;
  // fetch_to_device with GPU replicas (else null): batches are placed on the host by
  // NextSplit/NextGathered and moved to the devices ahead of time.
  std::unique_ptr<DevicePrefetcher> device_prefetch_;
  bool primed_ = false;     // a next batch (or its failure, or the end) is known
  bool staged_end_ = false;
  absl::Status staged_failure_;
};

class DistributedDataset {
 public:
  using DatasetFn = absl::FunctionRef<absl::StatusOr<DatasetPtr>(const InputContext&)>;

  // experimental_distribute_dataset: `dataset` yields global batches. Auto-shards it for
  // input pipeline `input_pipeline_id` of `num_input_pipelines` (a no-op for one), then
  // splits every batch across the strategy's replicas, or with
  // options.per_replica_batches hands consecutive batches to the replicas. A multi-worker
  // strategy supplies the pipelines itself (one per worker); there, DATA sharding (and
  // AUTO without a file per worker) reads every global batch on every worker and gives
  // this worker's replicas their rows of it, exactly the rows they would get in one
  // process with all the replicas.
  static absl::StatusOr<std::shared_ptr<const DistributedDataset>> FromDataset(
      const Strategy& strategy, DatasetPtr dataset, const InputOptions& options,
      int32_t num_input_pipelines = 1, int32_t input_pipeline_id = 0,
      bool explicit_pipelines = false);

  // distribute_datasets_from_function: PER_WORKER calls `fn` once for this worker (input
  // pipeline `worker_id` of `num_workers`) and its replicas take consecutive
  // (per-replica) batches; PER_REPLICA calls it once per replica (pipeline
  // worker_id * replicas + r of num_workers * replicas), and replica r iterates its own
  // dataset. `fn` runs on this thread during the call; no auto-sharding applies.
  // For both: `explicit_pipelines` keeps the given pipelines even on a strategy with
  // several input workers (a coordinator's per-worker datasets: the pipelines are the
  // worker tasks, not the strategy's).
  static absl::StatusOr<std::shared_ptr<const DistributedDataset>> FromFunction(
      const Strategy& strategy, DatasetFn fn, const InputOptions& options, int32_t num_workers = 1,
      int32_t worker_id = 0, bool explicit_pipelines = false);

  // A new, independent pass.
  absl::StatusOr<std::unique_ptr<DistributedIterator>> MakeIterator() const;

  int32_t num_components() const { return num_components_; }
  int32_t num_replicas() const { return static_cast<int32_t>(workers_.size()); }
  DistributedIterator::Mode mode() const { return mode_; }
  // The per-replica batch size of a split dataset, 0 when the first element decides it.
  int64_t per_replica_batch_size() const { return per_replica_batch_size_; }
  // The datasets iterated: one, or one per replica (with prefetching applied).
  const std::vector<DatasetPtr>& sources() const { return sources_; }

 private:
  DistributedDataset(DistributedIterator::Mode mode, std::vector<DatasetPtr> sources,
                     std::vector<DeviceSpec> workers, int32_t num_components,
                     int64_t per_replica_batch_size, bool fetch_to_device,
                     int32_t first_replica = 0, int32_t replicas_in_sync = 0,
                     bool always_per_replica = false,
                     PartialBatchSplit partial_batch_split = PartialBatchSplit::kInOrder,
                     std::shared_ptr<const Strategy> ends_with_workers = nullptr)
      : mode_(mode),
        sources_(std::move(sources)),
        workers_(std::move(workers)),
        num_components_(num_components),
        per_replica_batch_size_(per_replica_batch_size),
        fetch_to_device_(fetch_to_device),
        first_replica_(first_replica),
        replicas_in_sync_(replicas_in_sync),
        always_per_replica_(always_per_replica),
        partial_batch_split_(partial_batch_split),
        ends_with_workers_(std::move(ends_with_workers)) {}

  const DistributedIterator::Mode mode_;
  const std::vector<DatasetPtr> sources_;
  const std::vector<DeviceSpec> workers_;
  const int32_t num_components_;
  const int64_t per_replica_batch_size_;
  const bool fetch_to_device_;
  const int32_t first_replica_;
  const int32_t replicas_in_sync_;
  const bool always_per_replica_;
  const PartialBatchSplit partial_batch_split_;
  const std::shared_ptr<const Strategy> ends_with_workers_;  // see DistributedIterator
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_DISTRIBUTED_DATASET_H_
