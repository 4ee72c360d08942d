// distribute C++ wrapper — TF 2's ClusterCoordinator over ParameterServerStrategy
// (distribute/coordinator.h): closure and dataset functions registered by name as lambdas,
// closure arguments, the coordinator with its remote values, and per-worker datasets and
// iterators. Owned handles are move-only and destroy their C handle with the object.
#ifndef DISTRIBUTE_CPP_COORDINATOR_HPP_
#define DISTRIBUTE_CPP_COORDINATOR_HPP_

#include <cstdint>
#include <type_traits>
#include <utility>

#include "distribute/cpp/input.hpp"
#include "distribute/cpp/options.hpp"
#include "distribute/cpp/status.hpp"
#include "distribute/cpp/strategy.hpp"
#include "distribute/cpp/value.hpp"
#include "distribute/distribute.h"

namespace dist {

// A per-worker iterator (a dist_per_worker_t made by make_iterator): a closure given it
// sees the iterator of the worker it runs on.
class PerWorkerIterator : public detail::Owned<dist_per_worker_t, dist_per_worker_destroy> {
 public:
  using Owned::Owned;
};

// A per-worker dataset (dist_per_worker_t): each worker's own, built there. Its own type,
// so that passing a dataset where a closure wants an iterator does not compile.
class PerWorkerDataset : public detail::Owned<dist_per_worker_t, dist_per_worker_destroy> {
 public:
  using Owned::Owned;
  // A new per-worker iterator (a fresh pass on every worker).
  Result<PerWorkerIterator> make_iterator() const {
    return detail::make_owned<PerWorkerIterator, dist_per_worker_t>(dist_per_worker_make_iterator,
                                                                   static_cast<const dist_per_worker_t*>(get()));
  }
};

namespace detail {

// The queries of a closure's arguments, owned or lent (Self::get() gives the handle).
template <class Self>
class ClosureArgsQueries {
 public:
  Result<int32_t> count() const { return call_out<int32_t>(dist_closure_args_count, handle()); }
  // DIST_CLOSURE_ARG_TENSOR, _VARIABLE or _ITERATOR.
  Result<dist_closure_arg_kind_t> kind(int32_t index) const {
    return call_out<dist_closure_arg_kind_t>(dist_closure_args_kind, handle(), index);
  }
  // A tensor or variable argument, lent (valid as long as the arguments).
  Result<ValueView> value(int32_t index) const {
    Result<dist_value_t*> raw = call_out<dist_value_t*>(dist_closure_args_value, handle(), index);
    if (!raw) return raw.status();
    return ValueView(*raw);
  }

 private:
  const dist_closure_args_t* handle() const { return static_cast<const Self&>(*this).get(); }
};

}  // namespace detail

// Arguments to schedule (dist_closure_args_t): tensors (copied when scheduled), variables
// of the coordinator's strategy (by reference) and per-worker iterators.
class ClosureArgs : public detail::Owned<dist_closure_args_t, dist_closure_args_destroy>,
                    public detail::ClosureArgsQueries<ClosureArgs> {
 public:
  using Owned::Owned;
  using Owned::get;
  static Result<ClosureArgs> create() {
    return detail::make_owned<ClosureArgs, dist_closure_args_t>(dist_closure_args_create);
  }
  Status add(ValueView value) { return Status::FromCall(dist_closure_args_add_value(get(), value.get())); }
  Status add(const PerWorkerIterator& iterator) {
    return Status::FromCall(
        dist_closure_args_add_per_worker(get(), static_cast<const dist_per_worker_t*>(iterator.get())));
  }
};

// The arguments a closure function receives, resolved on its worker and lent for the call.
class ClosureArgsView : public detail::ClosureArgsQueries<ClosureArgsView> {
 public:
  explicit ClosureArgsView(const dist_closure_args_t* args) : args_(args) {}
  const dist_closure_args_t* get() const { return args_; }
  // This worker's iterator of per-worker iterator argument `index`: get_next yields
  // PerReplica values for Strategy::run, and OUT_OF_RANGE at the end (return it: the epoch
  // ends at the coordinator's join).
  Result<IteratorView> iterator(int32_t index) const {
    Result<dist_iterator_t*> raw = detail::call_out<dist_iterator_t*>(dist_closure_args_iterator, args_, index);
    if (!raw) return raw.status();
    return IteratorView(*raw);
  }

 private:
  const dist_closure_args_t* args_;
};

// A scheduled closure's result (dist_remote_value_t).
class RemoteValue : public detail::Owned<dist_remote_value_t, dist_remote_value_destroy> {
 public:
  using Owned::Owned;
  // Waits for the closure: its result (an empty Value when it stored none), or its error.
  Result<Value> fetch() {
    dist_value_t* out = nullptr;
    const dist_status_t code = dist_remote_value_fetch(get(), &out);
    if (code != DIST_OK) return Status::FromCall(code);
    return Value::adopt(out);
  }
  Result<bool> is_ready() const {
    Result<int32_t> ready =
        detail::call_out<int32_t>(dist_remote_value_is_ready, static_cast<const dist_remote_value_t*>(get()));
    if (!ready) return ready.status();
    return *ready != 0;
  }
};

// The coordinator of a chief's ParameterServerStrategy (dist_coordinator_t). Its
// destructor cancels what is queued and waits for what runs (at most the strategy's
// timeout); call it with no other call on the coordinator in flight.
class Coordinator : public detail::Owned<dist_coordinator_t, dist_coordinator_destroy> {
 public:
  using Owned::Owned;
  static Result<Coordinator> create(Strategy& strategy) {
    return detail::make_owned<Coordinator, dist_coordinator_t>(dist_coordinator_create, strategy.get());
  }
  // Queues registered closure function `function` with `args` (copied; null: none) and
  // returns at once.
  Result<RemoteValue> schedule(const char* function, const ClosureArgs* args = nullptr) {
    return detail::make_owned<RemoteValue, dist_remote_value_t>(
        dist_coordinator_schedule, get(), function,
        static_cast<const dist_closure_args_t*>(args ? args->get() : nullptr));
  }
  // Waits until every closure scheduled so far has finished; a closure's error once.
  Status join() { return Status::FromCall(dist_coordinator_join(get())); }
  Result<bool> done() {
    Result<int32_t> finished = detail::call_out<int32_t>(dist_coordinator_done, get());
    if (!finished) return finished.status();
    return *finished != 0;
  }
  Result<int32_t> num_workers() const {
    return detail::call_out<int32_t>(dist_coordinator_num_workers, static_cast<const dist_coordinator_t*>(get()));
  }
  // Every worker builds registered dataset function `dataset_function`'s dataset,
  // auto-sharded across the workers by the options' policy and distributed over its replicas.
  Result<PerWorkerDataset> create_per_worker_dataset(const char* dataset_function,
                                                     const InputOptions* options = nullptr) {
    return detail::make_owned<PerWorkerDataset, dist_per_worker_t>(
        dist_coordinator_create_per_worker_dataset, get(), dataset_function,
        static_cast<const dist_input_options_t*>(options ? options->get() : nullptr));
  }
  // The same, the function sharding by its input context itself.
  Result<PerWorkerDataset> create_per_worker_dataset_from_function(const char* dataset_function,
                                                                   const InputOptions* options = nullptr) {
    return detail::make_owned<PerWorkerDataset, dist_per_worker_t>(
        dist_coordinator_create_per_worker_dataset_from_function, get(), dataset_function,
        static_cast<const dist_input_options_t*>(options ? options->get() : nullptr));
  }
};

namespace detail {

// fn(Strategy&, ClosureArgsView) -> Result<Value>, Value, Status or void.
template <class Fn>
dist_status_t closure_trampoline(dist_strategy_t* strategy, const dist_closure_args_t* args, dist_value_t** out_result,
                                 void* user_data) {
  const Fn& fn = *static_cast<const Fn*>(user_data);
  return guarded("the closure function", [&]() -> Status {
    Strategy borrowed = Strategy::borrow(strategy);
    using R = std::invoke_result_t<const Fn&, Strategy&, ClosureArgsView>;
    if constexpr (std::is_same_v<R, Result<Value>>) {
      Result<Value> result = fn(borrowed, ClosureArgsView(args));
      if (!result.ok()) return result.status();
      *out_result = result->release();
      return Status();
    } else if constexpr (std::is_same_v<R, Value>) {
      *out_result = fn(borrowed, ClosureArgsView(args)).release();
      return Status();
    } else {
      return invoke_status(fn, borrowed, ClosureArgsView(args));
    }
  });
}

// Registers a copy of `fn` with `register_fn(name, trampoline, copy, deleter)`; deletes the
// copy when the registration is refused (the library then never calls the deleter).
template <class Fn, class RegisterFn, class Trampoline>
Status register_callable(RegisterFn register_fn, const char* name, Trampoline trampoline, Fn fn) {
  auto* owned = new Fn(std::move(fn));
  const dist_status_t code = register_fn(name, trampoline, owned, &delete_callable<Fn>);
  if (code != DIST_OK) {
    Status status = Status::FromCall(code);  // before fn's destructor can touch the last error
    delete owned;
    return status;
  }
  return Status();
}

}  // namespace detail

// Registers closure function `name` in this process: fn(Strategy& worker_strategy,
// ClosureArgsView args) -> Result<Value>, Value (empty: no result), Status or void. It runs
// on the worker the coordinator picks, one closure at a time per worker, as const; every
// process of the job registers the same functions before its server starts.
template <class F>
Status register_closure(const char* name, F fn) {
  using Fn = std::decay_t<F>;
  return detail::register_callable<Fn>(dist_closure_register, name, &detail::closure_trampoline<Fn>, std::move(fn));
}
inline Status unregister_closure(const char* name) { return Status::FromCall(dist_closure_unregister(name)); }
inline Result<bool> is_closure_registered(const char* name) {
  Result<int32_t> registered = detail::call_out<int32_t>(dist_closure_is_registered, name);
  if (!registered) return registered.status();
  return *registered != 0;
}

// Registers dataset function `name` for Coordinator::create_per_worker_dataset:
// fn(InputContextView) -> Dataset or Result<Dataset>, called as const on each worker.
template <class F>
Status register_dataset_function(const char* name, F fn) {
  using Fn = std::decay_t<F>;
  return detail::register_callable<Fn>(dist_dataset_function_register, name, &detail::dataset_fn_trampoline<const Fn>,
                                       std::move(fn));
}
inline Status unregister_dataset_function(const char* name) {
  return Status::FromCall(dist_dataset_function_unregister(name));
}

}  // namespace dist

#endif  // DISTRIBUTE_CPP_COORDINATOR_HPP_
