// C entry points for strategies: creation, properties, scopes, run, cross-replica calls.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handles.h"
#include "core/cluster/tf_config.h"
#include "core/c_api/value_args.h"
#include "core/strategy/checkpoint.h"
#include "core/strategy/cross_replica.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/strategy.h"
#include "core/strategy/thread_context.h"
#include "core/util/status_macros.h"
#include "core/values/variable.h"
#include "distribute/strategy.h"

using distribute::Strategy;
using distribute::ThreadContext;
using distribute::Value;
using distribute::c_api::Accessor;
using distribute::c_api::ClearOut;
using distribute::c_api::Guard;
using distribute::c_api::HandleArray;
using distribute::c_api::NullArgument;
using distribute::c_api::ValuesOf;

namespace {

absl::StatusOr<std::vector<std::string>> DeviceNames(const char* const* devices, int32_t count,
                                                     const char* name) {
  if (count < 0) return absl::InvalidArgumentError(absl::StrCat("num_devices is ", count, ": expected >= 0"));
  if (count > 0 && devices == nullptr) return NullArgument(name);
  std::vector<std::string> names;
  for (int32_t i = 0; i < count; ++i) {
    if (devices[i] == nullptr) return NullArgument(absl::StrCat(name, "[", i, "]"));
    names.emplace_back(devices[i]);
  }
  return names;
}

dist_status_t NewStrategy(const char* function, dist_strategy_t** out,
                          absl::FunctionRef<absl::StatusOr<std::shared_ptr<Strategy>>()> make) {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(std::shared_ptr<Strategy> strategy, make());
    *out = new dist_strategy(std::move(strategy));
    return absl::OkStatus();
  });
}

absl::StatusOr<distribute::ReduceOp> OpOf(dist_reduce_op_t op) {
  return distribute::ReduceOpFromInt(op);
}

// Shared body of the calls that take (strategy, op, value) and give one value.
dist_status_t ReduceLike(const char* function, dist_strategy_t* strategy, dist_reduce_op_t op,
                         const dist_value_t* value, dist_value_t** out,
                         absl::FunctionRef<absl::StatusOr<Value>(Strategy&, distribute::ReduceOp,
                                                                 const Value&)> body) {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (value == nullptr) return NullArgument("value");
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(distribute::ReduceOp reduce_op, OpOf(op));
    ASSIGN_OR_RETURN(Value result, body(*strategy->strategy, reduce_op, value->value));
    *out = new dist_value(std::move(result));
    return absl::OkStatus();
  });
}

const char* DeviceAt(const std::vector<std::string>& names, int32_t index, absl::Status& status,
                     absl::string_view what) {
  if (index < 0 || index >= static_cast<int32_t>(names.size())) {
    status = absl::OutOfRangeError(absl::StrCat("index ", index, " is out of range: the strategy has ",
                                                names.size(), " ", what));
    return nullptr;
  }
  return names[static_cast<size_t>(index)].c_str();
}

// reduce_to with its destinations already resolved to devices.
dist_status_t ReduceTo(const char* function, dist_strategy_t* strategy, dist_reduce_op_t op,
                       const dist_value_t* value, dist_value_t** out,
                       absl::FunctionRef<absl::StatusOr<distribute::Destinations>()> destinations) {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (value == nullptr) return NullArgument("value");
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(distribute::ReduceOp reduce_op, OpOf(op));
    ASSIGN_OR_RETURN(distribute::Destinations to, destinations());
    ASSIGN_OR_RETURN(std::vector<Value> results,
                     distribute::BatchReduceTo(*strategy->strategy, reduce_op,
                                               std::span<const Value>(&value->value, 1),
                                               std::span<const distribute::Destinations>(&to, 1)));
    *out = new dist_value(std::move(results.front()));
    return absl::OkStatus();
  });
}

}  // namespace

extern "C" {

dist_status_t dist_strategy_create_one_device(const char* device, dist_strategy_t** out) {
  return NewStrategy(__func__, out, [&]() -> absl::StatusOr<std::shared_ptr<Strategy>> {
    if (device == nullptr) return NullArgument("device");
    return Strategy::CreateOneDevice(device);
  });
}

dist_status_t dist_strategy_create_mirrored(const char* const* devices, int32_t num_devices,
                                            const dist_cross_device_ops_t* cross_device_ops,
                                            dist_strategy_t** out) {
  return NewStrategy(__func__, out, [&]() -> absl::StatusOr<std::shared_ptr<Strategy>> {
    ASSIGN_OR_RETURN(std::vector<std::string> names, DeviceNames(devices, num_devices, "devices"));
    std::optional<distribute::CrossDeviceOps> ops;
    if (cross_device_ops != nullptr) ops = cross_device_ops->ops;
    return Strategy::CreateMirrored(names, ops);
  });
}

dist_status_t dist_strategy_create_central_storage(const char* const* compute_devices,
                                                   int32_t num_devices, const char* parameter_device,
                                                   dist_strategy_t** out) {
  return NewStrategy(__func__, out, [&]() -> absl::StatusOr<std::shared_ptr<Strategy>> {
    ASSIGN_OR_RETURN(std::vector<std::string> names,
                     DeviceNames(compute_devices, num_devices, "compute_devices"));
    return Strategy::CreateCentralStorage(names, parameter_device ? parameter_device : "");
  });
}

dist_status_t dist_strategy_create_multi_worker_mirrored(const dist_cluster_t* cluster,
                                                        const dist_communication_options_t* options,
                                                        dist_strategy_t** out) {
  return NewStrategy(__func__, out, [&]() -> absl::StatusOr<std::shared_ptr<Strategy>> {
    const distribute::CommunicationOptions defaults;
    const distribute::CommunicationOptions& chosen = options != nullptr ? options->options : defaults;
    if (cluster != nullptr) return Strategy::CreateMultiWorkerMirrored(&cluster->spec, chosen);
    ASSIGN_OR_RETURN(std::optional<distribute::ClusterSpec> from_environment,
                     distribute::ClusterSpecFromEnvironmentIfAny());
    return Strategy::CreateMultiWorkerMirrored(
        from_environment.has_value() ? &*from_environment : nullptr, chosen);
  });
}

dist_status_t dist_strategy_get_default(dist_strategy_t** out) {
  return NewStrategy(__func__, out, [] { return absl::StatusOr<std::shared_ptr<Strategy>>(Strategy::Default()); });
}

void dist_strategy_destroy(dist_strategy_t* strategy) { delete strategy; }

dist_status_t dist_strategy_kind(const dist_strategy_t* strategy, dist_strategy_kind_t* out_kind) {
  return Accessor(__func__, strategy, "strategy", out_kind, "out_kind",
                  [](const dist_strategy& s, dist_strategy_kind_t& kind) {
                    kind = static_cast<dist_strategy_kind_t>(s.strategy->kind());
                    return absl::OkStatus();
                  });
}

dist_status_t dist_strategy_num_replicas_in_sync(const dist_strategy_t* strategy, int32_t* out_count) {
  return Accessor(__func__, strategy, "strategy", out_count, "out_count",
                  [](const dist_strategy& s, int32_t& count) {
                    count = s.strategy->num_replicas_in_sync();
                    return absl::OkStatus();
                  });
}

dist_status_t dist_strategy_worker_device(const dist_strategy_t* strategy, int32_t index,
                                          const char** out_device) {
  return Accessor(__func__, strategy, "strategy", out_device, "out_device",
                  [&](const dist_strategy& s, const char*& device) {
                    absl::Status status;
                    device = DeviceAt(s.strategy->worker_names(), index, status, "replicas");
                    return status;
                  });
}

dist_status_t dist_strategy_parameter_device_count(const dist_strategy_t* strategy,
                                                   int32_t* out_count) {
  return Accessor(__func__, strategy, "strategy", out_count, "out_count",
                  [](const dist_strategy& s, int32_t& count) {
                    count = static_cast<int32_t>(s.strategy->parameter_names().size());
                    return absl::OkStatus();
                  });
}

dist_status_t dist_strategy_parameter_device(const dist_strategy_t* strategy, int32_t index,
                                             const char** out_device) {
  return Accessor(__func__, strategy, "strategy", out_device, "out_device",
                  [&](const dist_strategy& s, const char*& device) {
                    absl::Status status;
                    device = DeviceAt(s.strategy->parameter_names(), index, status,
                                      "parameter devices");
                    return status;
                  });
}

dist_status_t dist_strategy_set_timeout(dist_strategy_t* strategy, int64_t timeout_ms) {
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    return strategy->strategy->SetTimeoutMs(timeout_ms);
  });
}

dist_status_t dist_strategy_scope_enter(dist_strategy_t* strategy) {
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    return ThreadContext::Current().EnterScope(strategy->strategy);
  });
}

dist_status_t dist_strategy_scope_exit(dist_strategy_t* strategy) {
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    return ThreadContext::Current().ExitScope(strategy->strategy.get());
  });
}

dist_status_t dist_get_strategy(dist_strategy_t** out) {
  return NewStrategy(__func__, out, [] {
    return absl::StatusOr<std::shared_ptr<Strategy>>(ThreadContext::Current().strategy());
  });
}

dist_status_t dist_has_strategy(int32_t* out_has) {
  ClearOut(out_has);
  return Guard(__func__, [&]() -> absl::Status {
    if (out_has == nullptr) return NullArgument("out_has");
    *out_has = ThreadContext::Current().has_strategy() ? 1 : 0;
    return absl::OkStatus();
  });
}

dist_status_t dist_in_cross_replica_context(int32_t* out_in_cross) {
  ClearOut(out_in_cross);
  return Guard(__func__, [&]() -> absl::Status {
    if (out_in_cross == nullptr) return NullArgument("out_in_cross");
    *out_in_cross = ThreadContext::Current().in_cross_replica() ? 1 : 0;
    return absl::OkStatus();
  });
}

dist_status_t dist_get_replica_context(dist_context_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    *out = distribute::c_api::Wrap(ThreadContext::Current().replica_context());
    return absl::OkStatus();
  });
}

dist_status_t dist_experimental_set_strategy(dist_strategy_t* strategy) {
  return Guard(__func__, [&]() -> absl::Status {
    return ThreadContext::Current().SetStrategy(strategy ? strategy->strategy : nullptr);
  });
}

dist_status_t dist_get_loss_reduction(dist_reduce_op_t* out_op) {
  ClearOut(out_op);
  return Guard(__func__, [&]() -> absl::Status {
    if (out_op == nullptr) return NullArgument("out_op");
    *out_op = DIST_REDUCE_SUM;
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_run(dist_strategy_t* strategy, dist_replica_fn fn,
                                const dist_value_t* const* args, int32_t num_args,
                                dist_value_t** results, int32_t num_results, void* user_data) {
  if (results != nullptr) {
    for (int32_t i = 0; i < num_results; ++i) results[i] = nullptr;
  }
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (fn == nullptr) return NullArgument("fn");
    if (num_results < 0) {
      return absl::InvalidArgumentError(absl::StrCat("num_results is ", num_results, ": expected >= 0"));
    }
    if (num_results > 0 && results == nullptr) return NullArgument("results");
    ASSIGN_OR_RETURN(std::vector<Value> values, ValuesOf(args, num_args, "args"));
    Strategy& core = *strategy->strategy;
    const int32_t n = core.num_replicas();
    ASSIGN_OR_RETURN(auto per_replica, distribute::UnwrapForReplicas(values, n));
    std::vector<HandleArray> handles;
    for (const auto& replica_args : per_replica) handles.emplace_back(replica_args);
    std::vector<std::vector<dist_value_t*>> outs(
        static_cast<size_t>(n), std::vector<dist_value_t*>(static_cast<size_t>(num_results), nullptr));
    absl::Status status = core.Run([&](distribute::ReplicaContext& context) -> absl::Status {
      const auto r = static_cast<size_t>(context.replica_id());
      distribute::c_api::ClearLastError();
      const dist_status_t code = fn(distribute::c_api::Wrap(&context), handles[r].data(), num_args,
                                    outs[r].data(), num_results, user_data);
      if (code == DIST_OK) return absl::OkStatus();
      return distribute::c_api::CallbackStatus(code, absl::StrCat("replica ", r));
    });
    // Take every value the replicas stored, even on failure, so none leaks.
    std::vector<std::vector<std::optional<Value>>> slots(
        static_cast<size_t>(num_results), std::vector<std::optional<Value>>(static_cast<size_t>(n)));
    for (int32_t r = 0; r < n; ++r) {
      for (int32_t s = 0; s < num_results; ++s) {
        slots[s][r] = distribute::c_api::TakeValue(outs[r][s]);
      }
    }
    RETURN_IF_ERROR(status);
    std::vector<std::optional<Value>> merged;
    for (int32_t s = 0; s < num_results; ++s) {
      ASSIGN_OR_RETURN(std::optional<Value> value, distribute::MergeResults(slots[s], s, core.num_workers() > 1));
      merged.push_back(std::move(value));
    }
    for (int32_t s = 0; s < num_results; ++s) {
      if (merged[s].has_value()) results[s] = new dist_value(std::move(*merged[s]));
    }
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_distribute_values_from_function(dist_strategy_t* strategy,
                                                            dist_value_fn fn, void* user_data,
                                                            dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (fn == nullptr) return NullArgument("fn");
    if (out == nullptr) return NullArgument("out");
    Strategy& core = *strategy->strategy;
    ASSIGN_OR_RETURN(Value value, distribute::DistributeValuesFromFunction(
                                      core, [&](int32_t r) -> absl::StatusOr<distribute::Tensor> {
                                        dist_value_t* component = nullptr;
                                        distribute::c_api::ClearLastError();
                                        const dist_status_t code =
                                            fn(core.first_replica_in_sync() + r,
                                               core.num_replicas_in_sync(), &component, user_data);
                                        std::optional<Value> taken =
                                            distribute::c_api::TakeValue(component);
                                        if (code != DIST_OK) {
                                          return distribute::c_api::CallbackStatus(
                                              code, absl::StrCat("fn for replica ", r));
                                        }
                                        if (!taken.has_value()) {
                                          return absl::InvalidArgumentError(absl::StrCat(
                                              "fn for replica ", r, " stored no value"));
                                        }
                                        ASSIGN_OR_RETURN(const distribute::Tensor* t, taken->AsTensor());
                                        return *t;
                                      }));
    *out = new dist_value(std::move(value));
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_value_container(dist_strategy_t* strategy, const dist_value_t* value,
                                            dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (value == nullptr) return NullArgument("value");
    if (out == nullptr) return NullArgument("out");
    const Value& v = value->value;
    *out = new dist_value(v.is_variable() && v.component_index() >= 0
                              ? Value::OfVariable(v.variable())
                              : v);
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_join_replica(dist_strategy_t* strategy, int32_t replica_id,
                                         dist_context_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(std::unique_ptr<distribute::ReplicaContext> context,
                     strategy->strategy->JoinReplica(replica_id));
    *out = distribute::c_api::Wrap(context.release());
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_reduce(dist_strategy_t* strategy, dist_reduce_op_t op,
                                   const dist_value_t* value, dist_value_t** out) {
  return ReduceLike(__func__, strategy, op, value, out,
                    [](Strategy& s, distribute::ReduceOp reduce_op, const Value& v) {
                      return distribute::Reduce(s, reduce_op, v, std::nullopt);
                    });
}

dist_status_t dist_strategy_reduce_axis(dist_strategy_t* strategy, dist_reduce_op_t op,
                                        const dist_value_t* value, int32_t axis,
                                        dist_value_t** out) {
  return ReduceLike(__func__, strategy, op, value, out,
                    [axis](Strategy& s, distribute::ReduceOp reduce_op, const Value& v) {
                      return distribute::Reduce(s, reduce_op, v, axis);
                    });
}

dist_status_t dist_strategy_gather(dist_strategy_t* strategy, const dist_value_t* value,
                                   int32_t axis, dist_value_t** out) {
  return ReduceLike(__func__, strategy, DIST_REDUCE_SUM, value, out,
                    [axis](Strategy& s, distribute::ReduceOp, const Value& v) {
                      return distribute::Gather(s, v, axis);
                    });
}

dist_status_t dist_strategy_reduce_to(dist_strategy_t* strategy, dist_reduce_op_t op,
                                      const dist_value_t* value, const dist_value_t* destinations,
                                      dist_value_t** out) {
  return ReduceTo(__func__, strategy, op, value, out,
                  [&]() -> absl::StatusOr<distribute::Destinations> {
                    if (destinations == nullptr) return NullArgument("destinations");
                    return distribute::DestinationsOf(destinations->value);
                  });
}

dist_status_t dist_strategy_reduce_to_device(dist_strategy_t* strategy, dist_reduce_op_t op,
                                             const dist_value_t* value, const char* device,
                                             dist_value_t** out) {
  return ReduceTo(__func__, strategy, op, value, out,
                  [&]() -> absl::StatusOr<distribute::Destinations> {
                    if (device == nullptr) return NullArgument("device");
                    return distribute::DestinationsOf(device);
                  });
}

dist_status_t dist_strategy_batch_reduce_to(dist_strategy_t* strategy, dist_reduce_op_t op,
                                            const dist_value_t* const* values,
                                            const dist_value_t* const* destinations,
                                            int32_t count, dist_value_t** outs) {
  if (outs != nullptr) {
    for (int32_t i = 0; i < count; ++i) outs[i] = nullptr;
  }
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (count < 1) return absl::InvalidArgumentError(absl::StrCat("count is ", count, ": expected >= 1"));
    if (outs == nullptr) return NullArgument("outs");
    ASSIGN_OR_RETURN(distribute::ReduceOp reduce_op, OpOf(op));
    ASSIGN_OR_RETURN(std::vector<Value> inputs, ValuesOf(values, count, "values"));
    ASSIGN_OR_RETURN(std::vector<Value> targets, ValuesOf(destinations, count, "destinations"));
    std::vector<distribute::Destinations> to;
    for (const Value& target : targets) {
      ASSIGN_OR_RETURN(distribute::Destinations devices, distribute::DestinationsOf(target));
      to.push_back(std::move(devices));
    }
    ASSIGN_OR_RETURN(std::vector<Value> results,
                     distribute::BatchReduceTo(*strategy->strategy, reduce_op, inputs, to));
    for (int32_t i = 0; i < count; ++i) outs[i] = new dist_value(std::move(results[i]));
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_update(dist_strategy_t* strategy, dist_value_t* variable,
                                   dist_update_fn fn, const dist_value_t* const* args,
                                   int32_t num_args, int32_t group, dist_value_t** out,
                                   void* user_data) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (variable == nullptr) return NullArgument("variable");
    if (fn == nullptr) return NullArgument("fn");
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(std::vector<Value> values, ValuesOf(args, num_args, "args"));
    ASSIGN_OR_RETURN(
        std::optional<Value> result,
        distribute::Update(
            *strategy->strategy, variable->value,
            [&](const Value& target, std::span<const Value> unwrapped)
                -> absl::StatusOr<std::optional<Value>> {
              dist_value target_handle(target);
              HandleArray arg_handles(unwrapped);
              dist_value_t* produced = nullptr;
              distribute::c_api::ClearLastError();
              const dist_status_t code = fn(&target_handle, arg_handles.data(), arg_handles.size(),
                                            &produced, user_data);
              std::optional<Value> taken = distribute::c_api::TakeValue(produced);
              if (code != DIST_OK) return distribute::c_api::CallbackStatus(code, "fn");
              return taken;
            },
            values, group != 0));
    if (result.has_value()) *out = new dist_value(std::move(*result));
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_colocate_vars_with_enter(dist_strategy_t* strategy,
                                                     const dist_value_t* variable) {
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (variable == nullptr) return NullArgument("variable");
    if (!variable->value.is_variable()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable is a ", distribute::ValueKindName(variable->value.kind()), ", not a variable"));
    }
    ASSIGN_OR_RETURN(distribute::Destinations devices, distribute::DestinationsOf(variable->value));
    return ThreadContext::Current().ColocateEnter(strategy->strategy.get(), std::move(devices));
  });
}

dist_status_t dist_strategy_colocate_vars_with_exit(dist_strategy_t* strategy) {
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    return ThreadContext::Current().ColocateExit(strategy->strategy.get());
  });
}

dist_status_t dist_strategy_variable_created_in_scope(const dist_strategy_t* strategy,
                                                      const dist_value_t* variable,
                                                      int32_t* out_created) {
  ClearOut(out_created);
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (variable == nullptr) return NullArgument("variable");
    if (out_created == nullptr) return NullArgument("out_created");
    if (!variable->value.is_variable()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable is a ", distribute::ValueKindName(variable->value.kind()), ", not a variable"));
    }
    *out_created = variable->value.variable()->strategy_id() == strategy->strategy->id() ? 1 : 0;
    return absl::OkStatus();
  });
}

}  // extern "C"

extern "C" {

dist_status_t dist_strategy_save_variables(dist_strategy_t* strategy, const char* path) {
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (path == nullptr) return NullArgument("path");
    return distribute::SaveVariables(*strategy->strategy, path);
  });
}

dist_status_t dist_strategy_restore_variables(dist_strategy_t* strategy, const char* path) {
  return Guard(__func__, [&]() -> absl::Status {
    if (strategy == nullptr) return NullArgument("strategy");
    if (path == nullptr) return NullArgument("path");
    return distribute::RestoreVariables(*strategy->strategy, path);
  });
}

}  // extern "C"
