// distribute C++ wrapper — datasets and distributed input: Dataset (tf.data's sources and
// transformations, a lambda as the map function), Iterator, InputOptions and
// DistributedDataset (Strategy.experimental_distribute_dataset). Each owns its C handle,
// is move-only, and destroys it with the object.
#ifndef DISTRIBUTE_CPP_INPUT_HPP_
#define DISTRIBUTE_CPP_INPUT_HPP_

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "distribute/cpp/options.hpp"
#include "distribute/cpp/span.hpp"
#include "distribute/cpp/status.hpp"
#include "distribute/cpp/strategy.hpp"
#include "distribute/cpp/value.hpp"
#include "distribute/distribute.h"

namespace dist {

// An iterator over a dataset or a distributed dataset (dist_iterator_t). One thread at a
// time.
class Iterator : public detail::Owned<dist_iterator_t, dist_iterator_destroy> {
 public:
  using Owned::Owned;
  // The next element into `outs`, one Value per component (tensors, or PerReplica values
  // for a distributed dataset), with no allocation; OUT_OF_RANGE at the end, and at every
  // call after it.
  Status get_next(Span<Value> outs) {
    detail::RawOuts raw(outs.size());
    const Status status = Status::FromCall(dist_iterator_get_next(get(), raw.data(), raw.size()));
    if (status.ok()) raw.move_to(outs);
    return status;
  }
  // As get_next(outs), but the end is false, not an error.
  Result<bool> get_next_as_optional(Span<Value> outs) {
    detail::RawOuts raw(outs.size());
    int32_t has_value = 0;
    const Status status =
        Status::FromCall(dist_iterator_get_next_as_optional(get(), raw.data(), raw.size(), &has_value));
    if (!status.ok()) return status;
    raw.move_to(outs);
    return has_value != 0;
  }
  // The same, returning a new vector of `num_components` values.
  Result<std::vector<Value>> get_next(int32_t num_components) {
    if (num_components <= 0) return Status::FromCall(dist_iterator_get_next(get(), nullptr, num_components));
    std::vector<Value> values(static_cast<size_t>(num_components));
    const Status status = get_next(Span<Value>(values));
    if (!status.ok()) return status;
    return values;
  }
  Result<std::optional<std::vector<Value>>> get_next_as_optional(int32_t num_components) {
    if (num_components <= 0) {
      int32_t has_value = 0;
      return Status::FromCall(dist_iterator_get_next_as_optional(get(), nullptr, num_components, &has_value));
    }
    std::vector<Value> values(static_cast<size_t>(num_components));
    const Result<bool> has_value = get_next_as_optional(Span<Value>(values));
    if (!has_value) return has_value.status();
    if (!*has_value) return std::optional<std::vector<Value>>();
    return std::optional<std::vector<Value>>(std::move(values));
  }
};

// A dataset (tf.data.Dataset, dist_dataset_t). Transformations return new datasets and
// leave this one as it was.
class Dataset : public detail::Owned<dist_dataset_t, dist_dataset_destroy> {
 public:
  using Owned::Owned;

  // ---- Sources ----
  // Element i is (components[0][i], components[1][i], ...); the tensors are shared.
  static Result<Dataset> from_tensor_slices(Span<const ValueView> components) {
    std::vector<const dist_value_t*> handles;
    for (const ValueView& component : components) handles.push_back(component.get());
    return detail::make_owned<Dataset, dist_dataset_t>(dist_dataset_from_tensor_slices, handles.data(),
                                                       static_cast<int32_t>(handles.size()));
  }
  static Result<Dataset> range(int64_t start, int64_t stop, int64_t step = 1) {
    return detail::make_owned<Dataset, dist_dataset_t>(dist_dataset_range, start, stop, step);
  }
  static Result<Dataset> from_text_files(Span<const char* const> paths) {
    return detail::make_owned<Dataset, dist_dataset_t>(dist_dataset_from_text_files, paths.data(),
                                                       static_cast<int32_t>(paths.size()));
  }
  static Result<Dataset> from_fixed_length_records(Span<const char* const> paths, int64_t record_bytes,
                                                   int64_t header_bytes = 0, int64_t footer_bytes = 0) {
    return detail::make_owned<Dataset, dist_dataset_t>(dist_dataset_from_fixed_length_records, paths.data(),
                                                       static_cast<int32_t>(paths.size()), record_bytes,
                                                       header_bytes, footer_bytes);
  }
  static Result<Dataset> from_tfrecord_files(Span<const char* const> paths,
                                             dist_compression_t compression = DIST_COMPRESSION_NONE) {
    return detail::make_owned<Dataset, dist_dataset_t>(dist_dataset_from_compressed_tfrecord_files, paths.data(),
                                                       static_cast<int32_t>(paths.size()), compression);
  }

  // ---- Transformations ----
  Result<Dataset> batch(int64_t batch_size, bool drop_remainder = false) const {
    return derive(dist_dataset_batch, batch_size, static_cast<int32_t>(drop_remainder ? 1 : 0));
  }
  Result<Dataset> shard(int64_t num_shards, int64_t index) const { return derive(dist_dataset_shard, num_shards, index); }
  Result<Dataset> repeat(int64_t count = -1) const { return derive(dist_dataset_repeat, count); }
  Result<Dataset> shuffle(int64_t buffer_size, uint64_t seed) const {
    return derive(dist_dataset_shuffle, buffer_size, seed);
  }
  Result<Dataset> prefetch(int64_t buffer_size = DIST_AUTOTUNE) const { return derive(dist_dataset_prefetch, buffer_size); }
  Result<Dataset> take(int64_t count) const { return derive(dist_dataset_take, count); }
  Result<Dataset> skip(int64_t count) const { return derive(dist_dataset_skip, count); }
  // fn(Args inputs, Results outputs) -> Status or void sets each of `num_outputs` outputs
  // from one element. It runs on library threads, several at once (parallel calls,
  // prefetching, two iterators of one dataset), so it is called as const and must be safe
  // to call concurrently: capture by value. The library keeps one copy of it until every
  // dataset made from this one and every iterator over them is gone, and destroys it on
  // whichever thread lets go last. An exception escaping fn fails that element's get_next.
  template <class F>
  Result<Dataset> map(F fn, int32_t num_outputs, int32_t num_parallel_calls = 1) const {
    using Fn = std::decay_t<F>;
    auto* owned = new Fn(std::move(fn));
    dist_dataset_t* out = nullptr;
    const dist_status_t code = dist_dataset_map(get(), &map_trampoline<Fn>, owned, &free_callable<Fn>, num_outputs,
                                                num_parallel_calls, &out);
    if (code != DIST_OK) {
      Status status = Status::FromCall(code);  // before fn's destructor can touch the last error
      delete owned;                            // a failed dist_dataset_map does not call free_fn
      return status;
    }
    return Dataset(out);
  }

  Result<int32_t> num_components() const {
    return detail::call_out<int32_t>(dist_dataset_num_components, static_cast<const dist_dataset_t*>(get()));
  }
  Result<Iterator> make_iterator() const {
    return detail::make_owned<Iterator, dist_iterator_t>(dist_dataset_make_iterator,
                                                         static_cast<const dist_dataset_t*>(get()));
  }

 private:
  template <class Fn, class... Args>
  Result<Dataset> derive(Fn transform, Args... args) const {
    return detail::make_owned<Dataset, dist_dataset_t>(transform, static_cast<const dist_dataset_t*>(get()), args...);
  }

  template <class Fn>
  static dist_status_t map_trampoline(const dist_value_t* const* inputs, int32_t num_inputs, dist_value_t** outputs,
                                      int32_t num_outputs, void* user_data) {
    const Fn& fn = *static_cast<const Fn*>(user_data);
    return detail::guarded("the map function", [&] {
      return detail::invoke_status(fn, Args(inputs, num_inputs), Results(outputs, num_outputs));
    });
  }

  template <class Fn>
  static void free_callable(void* user_data) {
    delete static_cast<Fn*>(user_data);
  }
};

// How a dataset is distributed (tf.distribute.InputOptions, dist_input_options_t).
class InputOptions : public detail::Owned<dist_input_options_t, dist_input_options_destroy> {
 public:
  using Owned::Owned;
  static Result<InputOptions> create() {
    return detail::make_owned<InputOptions, dist_input_options_t>(dist_input_options_create);
  }
  Status set_prefetch_depth(int64_t depth) {
    return Status::FromCall(dist_input_options_set_prefetch_depth(get(), depth));
  }
  Status set_replication_mode(dist_input_replication_mode_t mode) {
    return Status::FromCall(dist_input_options_set_replication_mode(get(), mode));
  }
  Status set_auto_shard_policy(dist_auto_shard_policy_t policy) {
    return Status::FromCall(dist_input_options_set_auto_shard_policy(get(), policy));
  }
  Status set_fetch_to_device(bool enable) {
    return Status::FromCall(dist_input_options_set_fetch_to_device(get(), enable ? 1 : 0));
  }
  Status set_per_replica_batches(bool enable) {
    return Status::FromCall(dist_input_options_set_per_replica_batches(get(), enable ? 1 : 0));
  }
  Status set_partial_batch_split(dist_partial_batch_split_t split) {
    return Status::FromCall(dist_input_options_set_partial_batch_split(get(), split));
  }
};

// A dataset split across a strategy's replicas (dist_distributed_dataset_t): each element
// of its iterators is one PerReplica value per component.
class DistributedDataset : public detail::Owned<dist_distributed_dataset_t, dist_distributed_dataset_destroy> {
 public:
  using Owned::Owned;
  Result<int32_t> num_components() const {
    return detail::call_out<int32_t>(dist_distributed_dataset_num_components,
                                     static_cast<const dist_distributed_dataset_t*>(get()));
  }
  Result<Iterator> make_iterator() const {
    return detail::make_owned<Iterator, dist_iterator_t>(dist_distributed_dataset_make_iterator,
                                                         static_cast<const dist_distributed_dataset_t*>(get()));
  }
};

// Strategy.experimental_distribute_dataset: `dataset` batched by the global batch size,
// each batch split across `strategy`'s replicas (dist_strategy_distribute_dataset).
inline Result<DistributedDataset> distribute_dataset(Strategy& strategy, const Dataset& dataset,
                                                     const InputOptions* options = nullptr) {
  return detail::make_owned<DistributedDataset, dist_distributed_dataset_t>(
      dist_strategy_distribute_dataset, strategy.get(), static_cast<const dist_dataset_t*>(dataset.get()),
      static_cast<const dist_input_options_t*>(options ? options->get() : nullptr));
}

}  // namespace dist

#endif  // DISTRIBUTE_CPP_INPUT_HPP_
