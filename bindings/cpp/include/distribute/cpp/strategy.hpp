// distribute C++ wrapper — strategies, replica contexts, scopes and joined replicas.
//
// Replica, merge and value functions are lambdas (any callable). The wrapper passes a
// pointer to the callable itself as the C user_data and calls it through a template
// trampoline: no std::function, no allocation per step. What a callable reports reaches
// the caller unchanged: a returned Status with its code and message, or, with exceptions
// enabled, a thrown dist::Error (its status) or any other exception (DIST_UNKNOWN with its
// what()), handed over with dist_set_last_error_message so that every replica the failure
// reaches reports it. Exceptions never cross the C library.
#ifndef DISTRIBUTE_CPP_STRATEGY_HPP_
#define DISTRIBUTE_CPP_STRATEGY_HPP_

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "distribute/cpp/options.hpp"
#include "distribute/cpp/span.hpp"
#include "distribute/cpp/status.hpp"
#include "distribute/cpp/value.hpp"
#include "distribute/distribute.h"

namespace dist {

class Strategy;

// The arguments a replica (or merge, or update) function receives, borrowed for the call.
class Args {
 public:
  Args(const dist_value_t* const* values, int32_t count) : values_(values), count_(count) {}
  int32_t size() const { return count_; }
  ValueView operator[](int32_t index) const { return ValueView(values_[index]); }

 private:
  const dist_value_t* const* values_;
  int32_t count_;
};

// The result slots of a replica function: set(i, value) hands a value to `run`.
class Results {
 public:
  Results(dist_value_t** slots, int32_t count) : slots_(slots), count_(count) {}
  int32_t size() const { return count_; }
  Status set(int32_t index, Value value) {
    if (index < 0 || index >= count_) {
      return Status(DIST_OUT_OF_RANGE, "dist::Results::set: slot " + std::to_string(index) + " of " +
                                           std::to_string(count_) + ": run has room for " +
                                           std::to_string(count_) + " results (slots from 0)");
    }
    dist_value_destroy(slots_[index]);
    slots_[index] = value.release();
    return Status();
  }

 private:
  dist_value_t** slots_;
  int32_t count_;
};

namespace detail {

// Hands a callable's failure to the library: its message becomes this thread's last
// error (dist_set_last_error_message), which the library passes on with the code to
// every caller the failure reaches, prefixed with where it came from.
inline dist_status_t report(const Status& status) {
  if (status.ok()) return DIST_OK;
  dist_set_last_error_message(status.message().c_str());
  return status.code();
}

// Turns whatever a callable returned (Status, void) into a Status.
template <class F, class... A>
Status invoke_status(F& fn, A&&... args) {
  using R = std::invoke_result_t<F&, A...>;
  if constexpr (std::is_void_v<R>) {
    fn(std::forward<A>(args)...);
    return Status();
  } else {
    static_assert(std::is_same_v<R, Status>, "the function must return dist::Status or void");
    return fn(std::forward<A>(args)...);
  }
}

// Runs `body` and converts an escaping exception into a Status.
template <class Body>
Status guard(const char* what, Body&& body) {
#if DIST_CPP_EXCEPTIONS
  try {
    return body();
  } catch (const Error& e) {
    return e.status();
  } catch (const std::exception& e) {
    return Status(DIST_UNKNOWN, std::string(what) + " threw: " + e.what());
  } catch (...) {
    return Status(DIST_UNKNOWN, std::string(what) + " threw an exception that is not a std::exception");
  }
#else
  (void)what;
  return body();
#endif
}

// The free_fn of a callable the library keeps (a map, generator or registered function).
template <class Fn>
void delete_callable(void* user_data) {
  delete static_cast<Fn*>(user_data);
}

// What every trampoline returns to the library: `body`'s status, exceptions included,
// handed over with report().
template <class Body>
dist_status_t guarded(const char* what, Body&& body) {
  return report(guard(what, std::forward<Body>(body)));
}

}  // namespace detail

// A replica's context (tf.distribute.ReplicaContext), borrowed: handed to a replica
// function, or owned by a JoinedReplica. Its collective calls are made on the replica's
// own thread, by every replica, in the same order.
class ReplicaContext {
 public:
  explicit ReplicaContext(dist_context_t* context) : context_(context) {}
  dist_context_t* get() const { return context_; }

  Result<int32_t> replica_id() const { return detail::call_out<int32_t>(dist_context_replica_id, context_); }
  Result<int32_t> num_replicas_in_sync() const {
    return detail::call_out<int32_t>(dist_context_num_replicas_in_sync, context_);
  }
  Result<const char*> device() const { return detail::call_out<const char*>(dist_context_device, context_); }
  Status set_timeout_ms(int64_t timeout_ms) {
    return Status::FromCall(dist_context_set_timeout_ms(context_, timeout_ms));
  }
  inline Result<Strategy> strategy() const;

  Result<Value> all_reduce(dist_reduce_op_t op, ValueView value) {
    return detail::call_value(dist_context_all_reduce, context_, op, static_cast<const dist_value_t*>(value.get()));
  }
  // The all-reduce of `value` written into `out`, an existing tensor of value's shape and of
  // the result's dtype (it may be `value` itself): no new value. A wrong `out` is
  // DIST_INVALID_ARGUMENT on every replica, and nothing is written.
  Status all_reduce_into(dist_reduce_op_t op, ValueView value, ValueView out) {
    return Status::FromCall(
        dist_context_all_reduce_into(context_, op, static_cast<const dist_value_t*>(value.get()), out.get()));
  }
  // One fused all-reduce of values[i] into outs[i] (outs.size() == values.size()).
  Status batch_all_reduce(dist_reduce_op_t op, Span<const Value> values, Span<Value> outs) {
    if (outs.size() != values.size()) {
      return Status(DIST_INVALID_ARGUMENT, "dist::ReplicaContext::batch_all_reduce: " +
                                               std::to_string(values.size()) + " values but " +
                                               std::to_string(outs.size()) + " outputs");
    }
    detail::RawValues raw(values);
    detail::RawOuts raw_outs(values.size());
    Status status = Status::FromCall(
        dist_context_batch_all_reduce(context_, op, raw.data(), raw.size(), raw_outs.data()));
    if (status.ok()) raw_outs.move_to(outs);
    return status;
  }
  Result<Value> all_gather(ValueView value, int32_t axis) {
    return detail::call_value(dist_context_all_gather, context_, static_cast<const dist_value_t*>(value.get()), axis);
  }
  Result<Value> broadcast(ValueView value, int32_t source_replica) {
    return detail::call_value(dist_context_broadcast, context_, static_cast<const dist_value_t*>(value.get()),
                              source_replica);
  }
  // merge_call: `fn(Strategy& strategy, dist::Args gathered)` returns Result<Value>, Value
  // (an empty one stores nothing) or Status, and runs once, in cross-replica context; each
  // replica gets its part of the result (an empty Value when there is none).
  template <class F>
  Result<Value> merge_call(F&& fn, Span<const Value> args = {});

 private:
  dist_context_t* context_;
};

namespace detail {

// Something a strategy entered on this thread and `Exit` leaves when the guard is
// destroyed, on the thread that made it, innermost first. Move-only; made by Strategy.
template <dist_status_t (*Exit)(dist_strategy_t*)>
class StrategyGuard {
 public:
  StrategyGuard(StrategyGuard&& other) noexcept : strategy_(std::exchange(other.strategy_, nullptr)) {}
  StrategyGuard& operator=(StrategyGuard&&) = delete;
  StrategyGuard(const StrategyGuard&) = delete;
  StrategyGuard& operator=(const StrategyGuard&) = delete;
  ~StrategyGuard() {
    if (strategy_ != nullptr) (void)Exit(strategy_);
  }

 private:
  friend class ::dist::Strategy;
  explicit StrategyGuard(dist_strategy_t* strategy) : strategy_(strategy) {}
  dist_strategy_t* strategy_;
};

}  // namespace detail

// A scope of a strategy on this thread (dist_strategy_scope_enter).
using Scope = detail::StrategyGuard<dist_strategy_scope_exit>;
// A colocation of new variables on this thread (dist_strategy_colocate_vars_with_enter).
using Colocation = detail::StrategyGuard<dist_strategy_colocate_vars_with_exit>;

// This thread acting as one replica (bring your own threads): the engine pattern. Leaves
// the replica when destroyed, which must happen on the joining thread. Move-only.
class JoinedReplica {
 public:
  JoinedReplica(JoinedReplica&& other) noexcept : context_(std::exchange(other.context_, nullptr)) {}
  JoinedReplica& operator=(JoinedReplica&&) = delete;
  JoinedReplica(const JoinedReplica&) = delete;
  JoinedReplica& operator=(const JoinedReplica&) = delete;
  ~JoinedReplica() { (void)leave(); }

  ReplicaContext context() const { return ReplicaContext(context_); }
  // Leaves now (what the destructor does), reporting misuse: a scope still entered.
  Status leave() {
    if (context_ == nullptr) return Status();
    const dist_status_t code = dist_context_leave(context_);
    if (code == DIST_OK) context_ = nullptr;
    return Status::FromCall(code);
  }

 private:
  friend class Strategy;
  explicit JoinedReplica(dist_context_t* context) : context_(context) {}
  dist_context_t* context_;
};

// A distribution strategy (tf.distribute.Strategy). Owns one reference, move-only; the
// merge function's Strategy& is a borrowed one.
class Strategy {
 public:
  Strategy(Strategy&& other) noexcept
      : strategy_(std::exchange(other.strategy_, nullptr)), owned_(other.owned_) {}
  Strategy& operator=(Strategy&& other) noexcept {
    if (this != &other) {
      if (owned_) dist_strategy_destroy(strategy_);
      strategy_ = std::exchange(other.strategy_, nullptr);
      owned_ = other.owned_;
    }
    return *this;
  }
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;
  ~Strategy() {
    if (owned_) dist_strategy_destroy(strategy_);
  }
  dist_strategy_t* get() const { return strategy_; }
  static Strategy adopt(dist_strategy_t* strategy) { return Strategy(strategy, true); }
  static Strategy borrow(dist_strategy_t* strategy) { return Strategy(strategy, false); }

  // ---- Creation ----
  static Result<Strategy> one_device(const char* device) {
    return make(dist_strategy_create_one_device, device);
  }
  // Mirrored over `devices` (empty: every local GPU, else every logical CPU device).
  static Result<Strategy> mirrored(Span<const char* const> devices = {}, const CrossDeviceOps* ops = nullptr) {
    return make(dist_strategy_create_mirrored, devices.empty() ? nullptr : devices.data(),
                static_cast<int32_t>(devices.size()),
                static_cast<const dist_cross_device_ops_t*>(ops ? ops->get() : nullptr));
  }
  static Result<Strategy> central_storage(Span<const char* const> devices = {},
                                          const char* parameter_device = nullptr) {
    return make(dist_strategy_create_central_storage, devices.empty() ? nullptr : devices.data(),
                static_cast<int32_t>(devices.size()), parameter_device);
  }
  // MultiWorkerMirrored; a NULL cluster reads TF_CONFIG. Blocks until every worker arrives.
  static Result<Strategy> multi_worker_mirrored(const Cluster* cluster = nullptr,
                                                const CommunicationOptions* options = nullptr) {
    return make(dist_strategy_create_multi_worker_mirrored,
                static_cast<const dist_cluster_t*>(cluster ? cluster->get() : nullptr),
                static_cast<const dist_communication_options_t*>(options ? options->get() : nullptr));
  }
  static Result<Strategy> default_strategy() { return make(dist_strategy_get_default); }

  // ---- Properties ----
  Result<dist_strategy_kind_t> kind() const { return detail::call_out<dist_strategy_kind_t>(dist_strategy_kind, strategy_); }
  Result<int32_t> num_replicas_in_sync() const {
    return detail::call_out<int32_t>(dist_strategy_num_replicas_in_sync, strategy_);
  }
  Result<const char*> worker_device(int32_t index) const {
    return detail::call_out<const char*>(dist_strategy_worker_device, static_cast<const dist_strategy_t*>(strategy_),
                                         index);
  }
  Status set_timeout_ms(int64_t timeout_ms) {
    return Status::FromCall(dist_strategy_set_timeout_ms(strategy_, timeout_ms));
  }

  // Enters the strategy's scope on this thread until the Scope is destroyed.
  Result<Scope> scope() {
    const dist_status_t code = dist_strategy_scope_enter(strategy_);
    if (code != DIST_OK) return Status::FromCall(code);
    return Scope(strategy_);
  }

  // ---- Running replicas ----
  // Calls fn(ReplicaContext&) once per replica, concurrently; fn returns Status or void.
  template <class F>
  Status run(F&& fn) {
    return run([&fn](ReplicaContext& context, Args, Results) { return detail::invoke_status(fn, context); },
               Span<const Value>(), Span<Value>());
  }
  // Calls fn(ReplicaContext&, Args, Results) once per replica with `args` unwrapped for it;
  // results[i] receives slot i merged over the replicas (empty when no replica set it).
  template <class F>
  Status run(F&& fn, Span<const Value> args, Span<Value> results);

  // This thread becomes replica `replica_id` of this process until the JoinedReplica is
  // destroyed (dist_strategy_join_replica).
  Result<JoinedReplica> join_replica(int32_t replica_id) {
    dist_context_t* context = nullptr;
    const dist_status_t code = dist_strategy_join_replica(strategy_, replica_id, &context);
    if (code != DIST_OK) return Status::FromCall(code);
    return JoinedReplica(context);
  }

  // ---- Cross-replica ----
  Result<Value> reduce(dist_reduce_op_t op, ValueView value) {
    return detail::call_value(dist_strategy_reduce, strategy_, op, static_cast<const dist_value_t*>(value.get()));
  }
  Result<Value> reduce_axis(dist_reduce_op_t op, ValueView value, int32_t axis) {
    return detail::call_value(dist_strategy_reduce_axis, strategy_, op, static_cast<const dist_value_t*>(value.get()),
                              axis);
  }
  Result<Value> gather(ValueView value, int32_t axis) {
    return detail::call_value(dist_strategy_gather, strategy_, static_cast<const dist_value_t*>(value.get()), axis);
  }
  Result<Value> reduce_to(dist_reduce_op_t op, ValueView value, ValueView destinations) {
    return detail::call_value(dist_strategy_reduce_to, strategy_, op, static_cast<const dist_value_t*>(value.get()),
                              static_cast<const dist_value_t*>(destinations.get()));
  }
  Result<Value> reduce_to_device(dist_reduce_op_t op, ValueView value, const char* device) {
    return detail::call_value(dist_strategy_reduce_to_device, strategy_, op,
                              static_cast<const dist_value_t*>(value.get()), device);
  }
  Status batch_reduce_to(dist_reduce_op_t op, Span<const Value> values, Span<const Value> destinations,
                         Span<Value> outs) {
    if (destinations.size() != values.size() || outs.size() != values.size()) {
      return Status(DIST_INVALID_ARGUMENT, "dist::Strategy::batch_reduce_to: " + std::to_string(values.size()) +
                                               " values, " + std::to_string(destinations.size()) +
                                               " destinations and " + std::to_string(outs.size()) +
                                               " outputs: they must be as many");
    }
    detail::RawValues raw(values);
    detail::RawValues raw_destinations(destinations);
    detail::RawOuts raw_outs(values.size());
    Status status = Status::FromCall(dist_strategy_batch_reduce_to(strategy_, op, raw.data(), raw_destinations.data(),
                                                                   raw.size(), raw_outs.data()));
    if (status.ok()) raw_outs.move_to(outs);
    return status;
  }
  // A PerReplica value whose component i is fn(i, num_replicas) (a Result<Value> or Value).
  template <class F>
  Result<Value> distribute_values_from_function(F&& fn);
  // StrategyExtended.update: fn(ValueView component, Args args), once per component of
  // `variable`, returns Result<Value>, Value (an empty one stores nothing) or Status.
  template <class F>
  Result<Value> update(ValueView variable, F&& fn, Span<const Value> args = {}, bool group = true);

  Status save_variables(const char* path) { return Status::FromCall(dist_strategy_save_variables(strategy_, path)); }
  Status restore_variables(const char* path) {
    return Status::FromCall(dist_strategy_restore_variables(strategy_, path));
  }

  // ---- Placement (StrategyExtended) ----
  // Variables created on this thread until the Colocation is destroyed go where `variable`
  // lives (colocate_vars_with); inside this strategy's scope.
  inline Result<Colocation> colocate_vars_with(ValueView variable);
  Result<int32_t> parameter_device_count() const {
    return detail::call_out<int32_t>(dist_strategy_parameter_device_count,
                                     static_cast<const dist_strategy_t*>(strategy_));
  }
  Result<const char*> parameter_device(int32_t index) const {
    return detail::call_out<const char*>(dist_strategy_parameter_device, static_cast<const dist_strategy_t*>(strategy_),
                                         index);
  }
  // The distributed variable a component belongs to (value_container), else the value.
  Result<Value> value_container(ValueView value) {
    return detail::call_value(dist_strategy_value_container, strategy_, static_cast<const dist_value_t*>(value.get()));
  }
  Result<bool> variable_created_in_scope(ValueView variable) const {
    Result<int32_t> created =
        detail::call_out<int32_t>(dist_strategy_variable_created_in_scope, static_cast<const dist_strategy_t*>(strategy_),
                                  static_cast<const dist_value_t*>(variable.get()));
    if (!created) return created.status();
    return *created != 0;
  }

 private:
  Strategy(dist_strategy_t* strategy, bool owned) : strategy_(strategy), owned_(owned) {}
  template <class Fn, class... A>
  static Result<Strategy> make(Fn create, A... args) {
    dist_strategy_t* out = nullptr;
    const dist_status_t code = create(args..., &out);
    if (code != DIST_OK) return Status::FromCall(code);
    return adopt(out);
  }

  dist_strategy_t* strategy_;
  bool owned_;
};

inline Result<Colocation> Strategy::colocate_vars_with(ValueView variable) {
  const dist_status_t code =
      dist_strategy_colocate_vars_with_enter(strategy_, static_cast<const dist_value_t*>(variable.get()));
  if (code != DIST_OK) return Status::FromCall(code);
  return Colocation(strategy_);
}

// ---- This thread's distribution context (tf.distribute's module functions) ----
// The current strategy (the innermost scope's, the one set with experimental_set_strategy,
// or the default), a new reference.
inline Result<Strategy> get_strategy() {
  dist_strategy_t* out = nullptr;
  const dist_status_t code = dist_get_strategy(&out);
  if (code != DIST_OK) return Status::FromCall(code);
  return Strategy::adopt(out);
}
inline Result<bool> has_strategy() {
  Result<int32_t> has = detail::call_out<int32_t>(dist_has_strategy);
  if (!has) return has.status();
  return *has != 0;
}
inline Result<bool> in_cross_replica_context() {
  Result<int32_t> in_cross = detail::call_out<int32_t>(dist_in_cross_replica_context);
  if (!in_cross) return in_cross.status();
  return *in_cross != 0;
}
// The current replica context, none in cross-replica context; borrowed (valid until the
// replica function returns).
inline std::optional<ReplicaContext> current_replica_context() {
  dist_context_t* context = dist_current_replica_context();
  if (context == nullptr) return std::nullopt;
  return ReplicaContext(context);
}
// Makes `strategy` current on this thread without a scope (null: the default again).
inline Status experimental_set_strategy(Strategy* strategy) {
  return Status::FromCall(dist_experimental_set_strategy(strategy != nullptr ? strategy->get() : nullptr));
}
inline Result<dist_reduce_op_t> get_loss_reduction() {
  return detail::call_out<dist_reduce_op_t>(dist_get_loss_reduction);
}

inline Result<Strategy> ReplicaContext::strategy() const {
  dist_strategy_t* out = nullptr;
  const dist_status_t code = dist_context_strategy(context_, &out);
  if (code != DIST_OK) return Status::FromCall(code);
  return Strategy::adopt(out);
}

namespace detail {

// What a merge, value or update callable returned, handed to the C out-slot: a
// Result<Value> or a Value (an empty Value stores nothing), or a Status (nothing stored).
inline Status store_result(Result<Value>&& result, dist_value_t** out) {
  if (!result.ok()) return result.status();
  *out = std::move(*result).release();
  return Status();
}
inline Status store_result(Value&& value, dist_value_t** out) {
  *out = value.release();
  return Status();
}
inline Status store_result(Status status, dist_value_t**) { return status; }

template <class F>
struct ReplicaCall {
  F* fn;

  static dist_status_t trampoline(dist_context_t* context, const dist_value_t* const* args, int32_t num_args,
                                  dist_value_t** results, int32_t num_results, void* user_data) {
    auto* self = static_cast<ReplicaCall*>(user_data);
    ReplicaContext ctx(context);
    return guarded("the replica function", [&] {
      return invoke_status(*self->fn, ctx, Args(args, num_args), Results(results, num_results));
    });
  }
};

template <class F>
struct MergeCall {
  F* fn;

  static dist_status_t trampoline(dist_strategy_t* strategy, const dist_value_t* const* args, int32_t num_args,
                                  dist_value_t** out, void* user_data) {
    auto* self = static_cast<MergeCall*>(user_data);
    Strategy borrowed = Strategy::borrow(strategy);
    return guarded("the merge function", [&] {
      return store_result((*self->fn)(borrowed, Args(args, num_args)), out);
    });
  }
};

template <class F>
struct ValueCall {
  F* fn;

  static dist_status_t trampoline(int32_t replica_id, int32_t num_replicas, dist_value_t** out, void* user_data) {
    auto* self = static_cast<ValueCall*>(user_data);
    return guarded("the value function", [&] {
      return store_result((*self->fn)(replica_id, num_replicas), out);
    });
  }
};

template <class F>
struct UpdateCall {
  F* fn;

  static dist_status_t trampoline(dist_value_t* variable, const dist_value_t* const* args, int32_t num_args,
                                  dist_value_t** out, void* user_data) {
    auto* self = static_cast<UpdateCall*>(user_data);
    return guarded("the update function", [&] {
      return store_result((*self->fn)(ValueView(variable), Args(args, num_args)), out);
    });
  }
};

}  // namespace detail

template <class F>
Status Strategy::run(F&& fn, Span<const Value> args, Span<Value> results) {
  using Fn = std::remove_reference_t<F>;
  detail::ReplicaCall<Fn> call{&fn};
  detail::RawValues raw_args(args);
  detail::RawOuts raw_results(results.size());
  const dist_status_t code =
      dist_strategy_run(strategy_, &detail::ReplicaCall<Fn>::trampoline, &call, raw_args.data(), raw_args.size(),
                        raw_results.data(), raw_results.size());
  Status status = Status::FromCall(code);
  if (status.ok()) raw_results.move_to(results);
  return status;
}

template <class F>
Result<Value> Strategy::distribute_values_from_function(F&& fn) {
  using Fn = std::remove_reference_t<F>;
  detail::ValueCall<Fn> call{&fn};
  dist_value_t* out = nullptr;
  const dist_status_t code =
      dist_strategy_distribute_values_from_function(strategy_, &detail::ValueCall<Fn>::trampoline, &call, &out);
  Status status = Status::FromCall(code);
  if (!status.ok()) return status;
  return Value::adopt(out);
}

template <class F>
Result<Value> Strategy::update(ValueView variable, F&& fn, Span<const Value> args, bool group) {
  using Fn = std::remove_reference_t<F>;
  detail::UpdateCall<Fn> call{&fn};
  detail::RawValues raw_args(args);
  dist_value_t* out = nullptr;
  const dist_status_t code =
      dist_strategy_update(strategy_, variable.get(), &detail::UpdateCall<Fn>::trampoline, &call, raw_args.data(),
                           raw_args.size(), group ? 1 : 0, &out);
  Status status = Status::FromCall(code);
  if (!status.ok()) return status;
  return Value::adopt(out);
}

template <class F>
Result<Value> ReplicaContext::merge_call(F&& fn, Span<const Value> args) {
  using Fn = std::remove_reference_t<F>;
  detail::MergeCall<Fn> call{&fn};
  detail::RawValues raw_args(args);
  dist_value_t* out = nullptr;
  const dist_status_t code = dist_context_merge_call(context_, &detail::MergeCall<Fn>::trampoline, &call,
                                                     raw_args.data(), raw_args.size(), &out);
  Status status = Status::FromCall(code);
  if (!status.ok()) return status;
  return Value::adopt(out);
}

}  // namespace dist

#endif  // DISTRIBUTE_CPP_STRATEGY_HPP_
