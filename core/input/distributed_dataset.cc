#include "core/input/distributed_dataset.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/input/distribution.h"
#include "core/input/transformations.h"
#include "core/strategy/strategy.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// Prefetching `depth` steps of a source from which one step takes `elements_per_step`.
absl::StatusOr<DatasetPtr> WithPrefetch(DatasetPtr dataset, int64_t depth,
                                        int64_t elements_per_step) {
  if (depth == 0) return dataset;
  return Prefetch(std::move(dataset), depth * elements_per_step);
}

// Whether `policy` shards this dataset by data between `pipelines` input pipelines: DATA,
// or AUTO when the dataset reads fewer files than there are pipelines.
bool ShardsByData(const Dataset& dataset, AutoShardPolicy policy, int32_t pipelines) {
  if (policy == AutoShardPolicy::kData) return true;
  return policy == AutoShardPolicy::kAuto &&
         dataset.SourceFiles().size() < static_cast<size_t>(pipelines);
}

absl::Status CheckStrategy(const Strategy& strategy) {
  if (strategy.num_replicas() < 1) {
    return absl::FailedPreconditionError("the strategy has no replicas");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const DistributedDataset>> DistributedDataset::FromDataset(
    const Strategy& strategy, DatasetPtr dataset, const InputOptions& options,
    int32_t num_input_pipelines, int32_t input_pipeline_id, bool explicit_pipelines) {
  if (dataset == nullptr) return absl::InvalidArgumentError("dataset is null");
  RETURN_IF_ERROR(ValidateInputOptions(options));
  RETURN_IF_ERROR(CheckStrategy(strategy));
  if (strategy.num_input_workers() > 1 && !explicit_pipelines) {
    num_input_pipelines = strategy.num_input_workers();
    input_pipeline_id = strategy.input_worker_index();
  }
  if (num_input_pipelines > 1 && !options.per_replica_batches &&
      ShardsByData(*dataset, options.auto_shard_policy, num_input_pipelines)) {
    // Every worker reads every global batch and keeps its replicas' rows of it.
    const int32_t in_sync = strategy.num_replicas() * num_input_pipelines;
    const int64_t per_replica = SplitBatchSize(dataset->batch_size(), in_sync);
    const int32_t num_components = dataset->num_components();
    ASSIGN_OR_RETURN(DatasetPtr source, WithPrefetch(std::move(dataset), options.prefetch_depth, 1));
    return std::shared_ptr<const DistributedDataset>(new DistributedDataset(
        DistributedIterator::Mode::kSplit, {std::move(source)}, strategy.worker_devices(),
        num_components, per_replica, options.fetch_to_device,
        strategy.num_replicas() * input_pipeline_id, in_sync, strategy.num_workers() > 1,
        options.partial_batch_split));
  }
  ASSIGN_OR_RETURN(DatasetPtr sharded, AutoShard(std::move(dataset), options.auto_shard_policy,
                                                 num_input_pipelines, input_pipeline_id));
  const int32_t replicas = strategy.num_replicas();
  const int32_t num_components = sharded->num_components();
  if (options.per_replica_batches) {
    ASSIGN_OR_RETURN(DatasetPtr source,
                     WithPrefetch(std::move(sharded), options.prefetch_depth, replicas));
    return std::shared_ptr<const DistributedDataset>(new DistributedDataset(
        DistributedIterator::Mode::kConsecutive, {std::move(source)}, strategy.worker_devices(),
        num_components, 0, options.fetch_to_device, 0, 0, strategy.num_workers() > 1));
  }
  const int64_t per_replica = SplitBatchSize(sharded->batch_size(), replicas);
  ASSIGN_OR_RETURN(DatasetPtr source, WithPrefetch(std::move(sharded), options.prefetch_depth, 1));
  return std::shared_ptr<const DistributedDataset>(new DistributedDataset(
      DistributedIterator::Mode::kSplit, {std::move(source)}, strategy.worker_devices(),
      num_components, per_replica, options.fetch_to_device, 0, 0, strategy.num_workers() > 1,
      options.partial_batch_split));
}

absl::StatusOr<std::shared_ptr<const DistributedDataset>> DistributedDataset::FromFunction(
    const Strategy& strategy, DatasetFn fn, const InputOptions& options, int32_t num_workers,
    int32_t worker_id, bool explicit_pipelines) {
  RETURN_IF_ERROR(ValidateInputOptions(options));
  RETURN_IF_ERROR(CheckStrategy(strategy));
  if (strategy.num_input_workers() > 1 && !explicit_pipelines) {
    num_workers = strategy.num_input_workers();
    worker_id = strategy.input_worker_index();
  }
  if (num_workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat("num_workers is ", num_workers, ": expected >= 1"));
  }
  if (worker_id < 0 || worker_id >= num_workers) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker_id is ", worker_id, ": expected 0 <= id < ", num_workers));
  }
  const int32_t replicas = strategy.num_replicas();
  const int32_t in_sync = replicas * num_workers;
  std::vector<InputContext> contexts;
  if (options.replication_mode == InputReplicationMode::kPerWorker) {
    contexts.emplace_back(num_workers, worker_id, in_sync);
  } else {
    for (int32_t r = 0; r < replicas; ++r) {
      contexts.emplace_back(in_sync, worker_id * replicas + r, in_sync);
    }
  }
  std::vector<DatasetPtr> sources;
  int32_t num_components = -1;
  for (const InputContext& context : contexts) {
    ASSIGN_OR_RETURN(DatasetPtr dataset, fn(context));
    if (dataset == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the dataset function returned no dataset for input pipeline ", context.input_pipeline_id()));
    }
    if (num_components >= 0 && dataset->num_components() != num_components) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the dataset function returned a dataset of ", dataset->num_components(),
          " components for input pipeline ", context.input_pipeline_id(), ", but one of ",
          num_components, " for input pipeline ", contexts.front().input_pipeline_id()));
    }
    num_components = dataset->num_components();
    const int64_t per_step = contexts.size() == 1 ? replicas : 1;
    ASSIGN_OR_RETURN(DatasetPtr source,
                     WithPrefetch(std::move(dataset), options.prefetch_depth, per_step));
    sources.push_back(std::move(source));
  }
  const auto mode = options.replication_mode == InputReplicationMode::kPerWorker
                        ? DistributedIterator::Mode::kConsecutive
                        : DistributedIterator::Mode::kPerReplica;
  // Under a synchronous multi-worker strategy every worker's pipeline is its own: their
  // iterators agree on the end at every step.
  std::shared_ptr<const Strategy> ends_with_workers;
  if (strategy.num_workers() > 1) ends_with_workers = strategy.shared_from_this();
  return std::shared_ptr<const DistributedDataset>(
      new DistributedDataset(mode, std::move(sources), strategy.worker_devices(), num_components,
                             0, options.fetch_to_device, 0, 0, strategy.num_workers() > 1,
                             PartialBatchSplit::kInOrder, std::move(ends_with_workers)));
}

absl::StatusOr<std::unique_ptr<DistributedIterator>> DistributedDataset::MakeIterator() const {
  std::vector<std::unique_ptr<DatasetIterator>> iterators;
  iterators.reserve(sources_.size());
  for (const DatasetPtr& source : sources_) {
    ASSIGN_OR_RETURN(std::unique_ptr<DatasetIterator> iterator, source->MakeIterator(0));
    iterators.push_back(std::move(iterator));
  }
  return std::make_unique<DistributedIterator>(mode_, sources_, std::move(iterators), workers_,
                                               num_components_, per_replica_batch_size_,
                                               fetch_to_device_, first_replica_, replicas_in_sync_,
                                               always_per_replica_, partial_batch_split_,
                                               ends_with_workers_);
}

}  // namespace distribute
