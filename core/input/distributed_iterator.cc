// DistributedIterator: one step pulls what every replica needs from the sources, then
// splits or pads so that all replicas get a batch (possibly empty) or all end together.
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/input/distributed_dataset.h"
#include "core/input/distribution.h"
#include "core/strategy/strategy.h"
#include "core/util/status_macros.h"

namespace distribute {

DistributedIterator::DistributedIterator(Mode mode, std::vector<DatasetPtr> datasets,
                                         std::vector<std::unique_ptr<DatasetIterator>> sources,
                                         std::vector<DeviceSpec> workers, int32_t num_components,
                                         int64_t per_replica_batch_size, bool fetch_to_device,
                                         int32_t first_replica, int32_t replicas_in_sync,
                                         bool always_per_replica,
                                         PartialBatchSplit partial_batch_split,
                                         std::shared_ptr<const Strategy> ends_with_workers)
    : mode_(mode),
      datasets_(std::move(datasets)),
      sources_(std::move(sources)),
      exhausted_(sources_.size(), false),
      workers_(std::move(workers)),
      num_components_(num_components),
      per_replica_batch_size_(per_replica_batch_size),
      fetch_to_device_(fetch_to_device),
      first_replica_(first_replica),
      replicas_in_sync_(replicas_in_sync > 0 ? replicas_in_sync : static_cast<int32_t>(workers_.size())),
      always_per_replica_(always_per_replica),
      partial_batch_split_(partial_batch_split),
      ends_with_workers_(std::move(ends_with_workers)) {
  bool any_gpu = false;
  for (const DeviceSpec& worker : workers_) any_gpu = any_gpu || worker.type == DeviceType::kGpu;
  if (fetch_to_device_ && any_gpu) device_prefetch_ = std::make_unique<DevicePrefetcher>(workers_);
}

absl::StatusOr<bool> DistributedIterator::Pull(size_t source, Element* out) {
  if (exhausted_[source]) return false;
  ASSIGN_OR_RETURN(const bool has_value, sources_[source]->GetNext(out));
  if (!has_value) {
    exhausted_[source] = true;
    return false;
  }
  if (out->size() != static_cast<size_t>(num_components_)) {
    return absl::InternalError(absl::StrCat("the dataset produced an element of ", out->size(),
                                            " components, expected ", num_components_));
  }
  return true;
}

absl::StatusOr<std::optional<std::vector<Element>>> DistributedIterator::NextSplit() {
  Element batch;
  ASSIGN_OR_RETURN(const bool has_value, Pull(0, &batch));
  if (!has_value) return std::optional<std::vector<Element>>();
  if (per_replica_batch_size_ == 0) {
    // The dataset did not say its batch size: the first batch is a full one.
    ASSIGN_OR_RETURN(const int64_t rows, BatchDimension(batch));
    per_replica_batch_size_ = SplitBatchSize(rows, replicas_in_sync_);
  }
  // With a device prefetcher the rows stay on the host here; it moves them.
  const bool to_device = fetch_to_device_ && device_prefetch_ == nullptr;
  ASSIGN_OR_RETURN(std::vector<Element> by_replica,
                   SplitBatch(batch, per_replica_batch_size_, workers_, to_device,
                              first_replica_, replicas_in_sync_, partial_batch_split_));
  return std::optional<std::vector<Element>>(std::move(by_replica));
}

namespace {

// Empty batches (no rows) of every component of `element`, where its tensors are.
absl::StatusOr<Element> EmptyBatchesLike(const Element& element) {
  Element empty;
  for (size_t c = 0; c < element.size(); ++c) {
    if (element[c].shape().rank() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "this worker's input ended while other workers' have not, and component ", c,
          " is a scalar: only batches (rank >= 1) can be padded with an empty batch"));
    }
    ASSIGN_OR_RETURN(Tensor batch, EmptyBatchLike(element[c], element[c].device()));
    empty.push_back(std::move(batch));
  }
  return empty;
}

}  // namespace

absl::StatusOr<bool> DistributedIterator::AnyWorkerHasElement(bool here) {
  const int32_t mine = here ? 1 : 0;
  int32_t any = 0;
  const void* inputs[1] = {&mine};
  RETURN_IF_ERROR(ends_with_workers_->workers().AllReduceLocal(
      ReduceOp::kMax, DType::kInt32, inputs, 1, 1, &any, 1,
      absl::StrCat("end-of-input agreement of a distributed iterator (step ", steps_, ")"),
      ends_with_workers_->NewDeadline()));
  return any != 0;
}

absl::StatusOr<std::optional<std::vector<Element>>> DistributedIterator::NextGathered() {
  std::vector<std::optional<Element>> by_replica(workers_.size());
  bool any = false;
  for (size_t r = 0; r < workers_.size(); ++r) {
    const size_t source = mode_ == Mode::kPerReplica ? r : 0;
    Element element;
    ASSIGN_OR_RETURN(const bool has_value, Pull(source, &element));
    if (!has_value) continue;
    if (ends_with_workers_ != nullptr && !empty_like_.has_value()) empty_like_ = EmptyBatchesLike(element);
    by_replica[r] = std::move(element);
    any = true;
  }
  if (ends_with_workers_ != nullptr) {
    ASSIGN_OR_RETURN(const bool anywhere, AnyWorkerHasElement(any));
    ++steps_;
    if (!anywhere) return std::optional<std::vector<Element>>();
    if (!any) {
      // Another worker still has input: this one's replicas get empty batches.
      if (!empty_like_.has_value()) {
        return absl::FailedPreconditionError(
            "this worker's input pipeline produced no element while other workers' still have "
            "some: its replicas need empty batches, but their shapes are unknown (give every "
            "worker's pipeline at least one element)");
      }
      if (!empty_like_->ok()) return empty_like_->status();
      by_replica.front() = **empty_like_;
      any = true;
    }
  }
  if (!any) return std::optional<std::vector<Element>>();
  const bool to_device = fetch_to_device_ && device_prefetch_ == nullptr;
  ASSIGN_OR_RETURN(std::vector<Element> padded,
                   PadMissingReplicas(std::move(by_replica), workers_, to_device));
  for (size_t r = 0; r < padded.size(); ++r) {
    for (Tensor& component : padded[r]) {
      ASSIGN_OR_RETURN(component,
                       PlaceTensor(component, BatchPlacement(workers_[r], component.device(),
                                                             to_device)));
    }
  }
  return std::optional<std::vector<Element>>(std::move(padded));
}

absl::StatusOr<std::optional<std::vector<Element>>> DistributedIterator::NextStep() {
  if (mode_ == Mode::kSplit) return NextSplit();
  return NextGathered();
}

void DistributedIterator::StageNext() {
  primed_ = true;
  absl::StatusOr<std::optional<std::vector<Element>>> next = NextStep();
  if (!next.ok()) {
    staged_failure_ = next.status();
  } else if (!next->has_value()) {
    staged_end_ = true;
  } else {
    staged_failure_ = device_prefetch_->Stage(std::move(**next));
  }
}

absl::StatusOr<std::optional<std::vector<Element>>> DistributedIterator::NextThroughDevicePrefetch() {
  if (!primed_) StageNext();
  if (!staged_failure_.ok()) {
    // This step's batch failed to come: report it now, and try afresh at the next call
    // (as an iterator without prefetching would).
    primed_ = false;
    return std::exchange(staged_failure_, absl::OkStatus());
  }
  if (staged_end_) return std::optional<std::vector<Element>>();
  absl::StatusOr<std::vector<Element>> batch = device_prefetch_->Take();
  if (!batch.ok()) {
    primed_ = false;  // a failed transfer: the next call makes a new batch
    return batch.status();
  }
  StageNext();  // the next batch travels while the caller's step runs
  return std::optional<std::vector<Element>>(*std::move(batch));
}

absl::StatusOr<bool> DistributedIterator::GetNext(std::vector<Value>* out) {
  out->clear();
  if (done_) return false;
  std::optional<std::vector<Element>> by_replica;
  if (device_prefetch_ != nullptr) {
    ASSIGN_OR_RETURN(by_replica, NextThroughDevicePrefetch());
  } else {
    ASSIGN_OR_RETURN(by_replica, NextStep());
  }
  if (!by_replica.has_value()) {
    done_ = true;
    return false;
  }
  // Across workers a batch is always per replica, even with one replica here.
  ASSIGN_OR_RETURN(*out, PerReplicaValues(std::move(*by_replica), num_components_,
                                          always_per_replica_));
  return true;
}

}  // namespace distribute
