// distribute C++ wrapper — datasets and distributed input: Dataset (tf.data's sources and
// transformations, lambdas as generator and map functions), Iterator, InputOptions,
// InputContext and DistributedDataset (Strategy.experimental_distribute_dataset and
// distribute_datasets_from_function, and the contrib iterators). Each owns its C handle,
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

namespace detail {

// The calls of an iterator, owned or lent (Self::get() gives the handle).
template <class Self>
class IteratorCalls {
 public:
  // The next element into `outs`, one Value per component (tensors, or PerReplica values
  // for a distributed dataset), with no allocation; OUT_OF_RANGE at the end, and at every
  // call after it.
  Status get_next(Span<Value> outs) {
    detail::RawOuts raw(outs.size());
    const Status status = Status::FromCall(dist_iterator_get_next(handle(), raw.data(), raw.size()));
    if (status.ok()) raw.move_to(outs);
    return status;
  }
  // As get_next(outs), but the end is false, not an error.
  Result<bool> get_next_as_optional(Span<Value> outs) {
    detail::RawOuts raw(outs.size());
    int32_t has_value = 0;
    const Status status =
        Status::FromCall(dist_iterator_get_next_as_optional(handle(), raw.data(), raw.size(), &has_value));
    if (!status.ok()) return status;
    raw.move_to(outs);
    return has_value != 0;
  }
  // The same, returning a new vector of `num_components` values.
  Result<std::vector<Value>> get_next(int32_t num_components) {
    if (num_components <= 0) return Status::FromCall(dist_iterator_get_next(handle(), nullptr, num_components));
    std::vector<Value> values(static_cast<size_t>(num_components));
    const Status status = get_next(Span<Value>(values));
    if (!status.ok()) return status;
    return values;
  }
  Result<std::optional<std::vector<Value>>> get_next_as_optional(int32_t num_components) {
    if (num_components <= 0) {
      int32_t has_value = 0;
      return Status::FromCall(dist_iterator_get_next_as_optional(handle(), nullptr, num_components, &has_value));
    }
    std::vector<Value> values(static_cast<size_t>(num_components));
    const Result<bool> has_value = get_next_as_optional(Span<Value>(values));
    if (!has_value) return has_value.status();
    if (!*has_value) return std::optional<std::vector<Value>>();
    return std::optional<std::vector<Value>>(std::move(values));
  }

 private:
  dist_iterator_t* handle() const { return static_cast<const Self&>(*this).get(); }
};

}  // namespace detail

// An iterator over a dataset or a distributed dataset (dist_iterator_t). One thread at a
// time.
class Iterator : public detail::Owned<dist_iterator_t, dist_iterator_destroy>,
                 public detail::IteratorCalls<Iterator> {
 public:
  using Owned::Owned;
  using Owned::get;
};

// An iterator lent for a call (a per-worker iterator inside a closure function): the same
// calls, nothing to destroy.
class IteratorView : public detail::IteratorCalls<IteratorView> {
 public:
  explicit IteratorView(dist_iterator_t* iterator) : iterator_(iterator) {}
  dist_iterator_t* get() const { return iterator_; }

 private:
  dist_iterator_t* iterator_;
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
  // Elements from fn(int64_t index, Results components) -> bool (or Result<bool>): it sets
  // each of `num_components` components of element `index` and returns true, or returns
  // false at the end. Every iterator calls it with 0, 1, 2, ... on its own threads, and
  // several iterators of one dataset call it at once, so it is called as const: make each
  // element a function of its index (capture by value). Its copy lives and dies as a map
  // function's (below); an error or an exception fails that element's get_next.
  template <class F>
  static Result<Dataset> from_generator(F fn, int32_t num_components) {
    using Fn = std::decay_t<F>;
    auto* owned = new Fn(std::move(fn));
    dist_dataset_t* out = nullptr;
    const dist_status_t code =
        dist_dataset_from_generator(&generator_trampoline<Fn>, owned, &detail::delete_callable<Fn>, num_components,
                                    &out);
    if (code != DIST_OK) {
      Status status = Status::FromCall(code);  // before fn's destructor can touch the last error
      delete owned;                            // a failed dist_dataset_from_generator does not call free_fn
      return status;
    }
    return Dataset(out);
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
    const dist_status_t code = dist_dataset_map(get(), &map_trampoline<Fn>, owned, &detail::delete_callable<Fn>,
                                                num_outputs, num_parallel_calls, &out);
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
  static dist_status_t generator_trampoline(int64_t index, dist_value_t** components, int32_t num_components,
                                            int32_t* out_end, void* user_data) {
    const Fn& fn = *static_cast<const Fn*>(user_data);
    return detail::guarded("the generator", [&]() -> Status {
      using R = std::invoke_result_t<const Fn&, int64_t, Results>;
      static_assert(std::is_same_v<R, bool> || std::is_same_v<R, Result<bool>>,
                    "a generator returns bool or dist::Result<bool>: true for an element, false at the end");
      const Result<bool> produced = fn(index, Results(components, num_components));
      if (!produced.ok()) return produced.status();
      *out_end = *produced ? 0 : 1;
      return Status();
    });
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

namespace detail {

// The queries of an input context, owned or borrowed (Self::get() gives the handle).
template <class Self>
class InputContextQueries {
 public:
  // Workers (PER_WORKER) or replicas (PER_REPLICA) that build a dataset each.
  Result<int32_t> num_input_pipelines() const {
    return call_out<int32_t>(dist_input_context_num_input_pipelines, handle());
  }
  Result<int32_t> input_pipeline_id() const { return call_out<int32_t>(dist_input_context_input_pipeline_id, handle()); }
  Result<int32_t> num_replicas_in_sync() const {
    return call_out<int32_t>(dist_input_context_num_replicas_in_sync, handle());
  }
  // global_batch_size / num_replicas_in_sync; DIST_INVALID_ARGUMENT when it does not divide.
  Result<int64_t> per_replica_batch_size(int64_t global_batch_size) const {
    return call_out<int64_t>(dist_input_context_per_replica_batch_size, handle(), global_batch_size);
  }

 private:
  const dist_input_context_t* handle() const { return static_cast<const Self&>(*this).get(); }
};

}  // namespace detail

// The input context a dataset function receives (tf.distribute.InputContext), borrowed
// for the call.
class InputContextView : public detail::InputContextQueries<InputContextView> {
 public:
  explicit InputContextView(const dist_input_context_t* context) : context_(context) {}
  const dist_input_context_t* get() const { return context_; }

 private:
  const dist_input_context_t* context_;
};

// An input context of one's own (dist_input_context_create): to build one input pipeline's
// dataset outside distribute_datasets_from_function, or to test a dataset function.
class InputContext : public detail::Owned<dist_input_context_t, dist_input_context_destroy>,
                     public detail::InputContextQueries<InputContext> {
 public:
  using Owned::Owned;
  using Owned::get;
  static Result<InputContext> create(int32_t num_input_pipelines, int32_t input_pipeline_id,
                                     int32_t num_replicas_in_sync) {
    return detail::make_owned<InputContext, dist_input_context_t>(dist_input_context_create, num_input_pipelines,
                                                                 input_pipeline_id, num_replicas_in_sync);
  }
  InputContextView view() const { return InputContextView(get()); }
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

namespace detail {

// The C dataset function over a C++ one: fn(InputContextView) -> Dataset or Result<Dataset>.
template <class Fn>
dist_status_t dataset_fn_trampoline(const dist_input_context_t* context, dist_dataset_t** out, void* user_data) {
  Fn& fn = *static_cast<Fn*>(user_data);
  return guarded("the dataset function", [&]() -> Status {
    using R = std::invoke_result_t<Fn&, InputContextView>;
    static_assert(std::is_same_v<R, Dataset> || std::is_same_v<R, Result<Dataset>>,
                  "a dataset function returns dist::Dataset or dist::Result<dist::Dataset>");
    Result<Dataset> made = fn(InputContextView(context));
    if (!made.ok()) return made.status();
    if (!*made) return Status(DIST_INVALID_ARGUMENT, "the dataset function returned an empty dist::Dataset");
    *out = made->release();
    return Status();
  });
}

}  // namespace detail

// Strategy.distribute_datasets_from_function: fn(InputContextView) -> Dataset (or
// Result<Dataset>) builds the dataset of one input pipeline, batched by the per-replica
// batch size; it is called on this thread during this call, once per worker (PER_WORKER,
// the default: the worker's replicas take consecutive batches) or once per replica
// (options' PER_REPLICA). An error or exception it raises is this call's.
template <class F>
Result<DistributedDataset> distribute_datasets_from_function(Strategy& strategy, F&& fn,
                                                             const InputOptions* options = nullptr) {
  using Fn = std::remove_reference_t<F>;
  if constexpr (std::is_function_v<Fn>) {  // a plain function: passed on as a pointer to it
    Fn* pointer = &fn;
    return distribute_datasets_from_function(strategy, pointer, options);
  } else {
    dist_distributed_dataset_t* out = nullptr;
    const dist_status_t code = dist_strategy_distribute_datasets_from_function(
        strategy.get(), &detail::dataset_fn_trampoline<Fn>, const_cast<void*>(static_cast<const void*>(&fn)), nullptr,
        static_cast<const dist_input_options_t*>(options ? options->get() : nullptr), &out);
    if (code != DIST_OK) return Status::FromCall(code);
    return DistributedDataset(out);
  }
}

// The contrib entry points of the reference pages: distribute_dataset then make_iterator,
// and distribute_datasets_from_function (PER_WORKER) then make_iterator.
inline Result<Iterator> make_dataset_iterator(Strategy& strategy, const Dataset& dataset) {
  return detail::make_owned<Iterator, dist_iterator_t>(dist_strategy_make_dataset_iterator, strategy.get(),
                                                       static_cast<const dist_dataset_t*>(dataset.get()));
}
template <class F>
Result<Iterator> make_input_fn_iterator(Strategy& strategy, F&& fn) {
  using Fn = std::remove_reference_t<F>;
  if constexpr (std::is_function_v<Fn>) {  // a plain function: passed on as a pointer to it
    Fn* pointer = &fn;
    return make_input_fn_iterator(strategy, pointer);
  } else {
    dist_iterator_t* out = nullptr;
    const dist_status_t code = dist_strategy_make_input_fn_iterator(
        strategy.get(), &detail::dataset_fn_trampoline<Fn>, const_cast<void*>(static_cast<const void*>(&fn)), &out);
    if (code != DIST_OK) return Status::FromCall(code);
    return Iterator(out);
  }
}

}  // namespace dist

#endif  // DISTRIBUTE_CPP_INPUT_HPP_
