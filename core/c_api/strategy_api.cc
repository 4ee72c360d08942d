// C entry points for strategies: creation, properties, scopes, run, cross-replica calls.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/current_context_handle.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/cluster/tf_config.h"
#include "core/c_api/replica_fn.h"
#include "core/c_api/value_args.h"
#include "core/strategy/checkpoint.h"
#include "core/strategy/cross_replica.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/run.h"
#include "core/strategy/strategy.h"
#include "core/strategy/thread_context.h"
#include "core/util/status_macros.h"
#include "core/values/variable.h"
#include "distribute/parameter_server.h"
#include "distribute/strategy.h"

using distribute::Strategy;
using distribute::ThreadContext;
using distribute::Value;
using distribute::c_api::Accessor;
using distribute::c_api::CheckHandle;
using distribute::c_api::CheckOptionalHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
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
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    RETURN_IF_ERROR(CheckHandle(value, "value"));
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
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    RETURN_IF_ERROR(CheckHandle(value, "value"));
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
    RETURN_IF_ERROR(CheckOptionalHandle(cross_device_ops, "cross_device_ops"));
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
    RETURN_IF_ERROR(CheckOptionalHandle(cluster, "cluster"));
    RETURN_IF_ERROR(CheckOptionalHandle(options, "options"));
    const distribute::CommunicationOptions defaults;
    const distribute::CommunicationOptions& chosen = options != nullptr ? options->options : defaults;
    if (cluster != nullptr) return Strategy::CreateMultiWorkerMirrored(&cluster->spec, chosen);
    ASSIGN_OR_RETURN(std::optional<distribute::ClusterSpec> from_environment,
                     distribute::ClusterSpecFromEnvironmentIfAny());
    return Strategy::CreateMultiWorkerMirrored(
        from_environment.has_value() ? &*from_environment : nullptr, chosen);
  });
}

dist_status_t dist_strategy_create_parameter_server(const dist_cluster_t* cluster,
                                                    const dist_communication_options_t* communication,
                                                    const dist_parameter_server_options_t* options,
                                                    dist_strategy_t** out) {
  return NewStrategy(__func__, out, [&]() -> absl::StatusOr<std::shared_ptr<Strategy>> {
    RETURN_IF_ERROR(CheckOptionalHandle(cluster, "cluster"));
    RETURN_IF_ERROR(CheckOptionalHandle(communication, "communication"));
    RETURN_IF_ERROR(CheckOptionalHandle(options, "options"));
    const distribute::CommunicationOptions default_communication;
    const dist_parameter_server_options default_options;
    const distribute::CommunicationOptions& chosen =
        communication != nullptr ? communication->options : default_communication;
    const dist_parameter_server_options& placement = options != nullptr ? *options : default_options;
    if (cluster != nullptr) {
      return Strategy::CreateParameterServer(&cluster->spec, chosen, placement.placement,
                                             placement.partitioner);
    }
    ASSIGN_OR_RETURN(std::optional<distribute::ClusterSpec> from_environment,
                     distribute::ClusterSpecFromEnvironmentIfAny());
    return Strategy::CreateParameterServer(from_environment.has_value() ? &*from_environment : nullptr,
                                           chosen, placement.placement, placement.partitioner);
  });
}

dist_status_t dist_strategy_get_default(dist_strategy_t** out) {
  return NewStrategy(__func__, out, [] { return absl::StatusOr<std::shared_ptr<Strategy>>(Strategy::Default()); });
}

void dist_strategy_destroy(dist_strategy_t* strategy) { DestroyHandle(strategy); }

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
                                          const char** out_borrowed_device) {
  return Accessor(__func__, strategy, "strategy", out_borrowed_device, "out_borrowed_device",
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
                                             const char** out_borrowed_device) {
  return Accessor(__func__, strategy, "strategy", out_borrowed_device, "out_borrowed_device",
                  [&](const dist_strategy& s, const char*& device) {
                    absl::Status status;
                    device = DeviceAt(s.strategy->parameter_names(), index, status,
                                      "parameter devices");
                    return status;
                  });
}

dist_status_t dist_strategy_set_timeout_ms(dist_strategy_t* strategy, int64_t timeout_ms) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    return strategy->strategy->SetTimeoutMs(timeout_ms);
  });
}

dist_status_t dist_strategy_scope_enter(dist_strategy_t* strategy) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    return ThreadContext::Current().EnterScope(strategy->strategy);
  });
}

dist_status_t dist_strategy_scope_exit(dist_strategy_t* strategy) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
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

dist_context_t* dist_current_replica_context(void) {
  distribute::c_api::ClearLastError();
  return distribute::c_api::CurrentContextHandle(ThreadContext::Current().replica_context());
}

dist_status_t dist_experimental_set_strategy(dist_strategy_t* strategy) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckOptionalHandle(strategy, "strategy"));
    return ThreadContext::Current().SetStrategy(strategy ? strategy->strategy : nullptr);
  });
}

dist_status_t dist_get_loss_reduction(dist_reduce_op_t* out_op) {
  ClearOut(out_op);
  return Guard(__func__, [&]() -> absl::Status {
    if (out_op == nullptr) return NullArgument("out_op");
    *out_op = static_cast<dist_reduce_op_t>(distribute::LossReduction());
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_run(dist_strategy_t* strategy, dist_replica_fn fn, void* user_data,
                                const dist_value_t* const* args, int32_t num_args,
                                dist_value_t** results, int32_t num_results) {
  if (results != nullptr) {
    for (int32_t i = 0; i < num_results; ++i) results[i] = nullptr;
  }
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    if (fn == nullptr) return NullArgument("fn");
    if (num_results > 0 && results == nullptr) return NullArgument("results");
    ASSIGN_OR_RETURN(std::vector<Value> values, ValuesOf(args, num_args, "args"));
    ASSIGN_OR_RETURN(
        std::vector<std::optional<Value>> merged,
        distribute::RunReplicas(*strategy->strategy, values, num_results,
                                [&](distribute::ReplicaContext& context, std::span<const Value> replica_args,
                                    std::span<std::optional<Value>> slots) {
                                  return distribute::c_api::CallReplicaFn(fn, user_data, context,
                                                                          replica_args, slots);
                                }));
    for (size_t s = 0; s < merged.size(); ++s) {
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
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    if (fn == nullptr) return NullArgument("fn");
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(
        Value value,
        distribute::DistributeValuesFromFunction(
            *strategy->strategy,
            [&](int32_t replica_id, int32_t num_replicas) -> absl::StatusOr<std::optional<Value>> {
              dist_value_t* component = nullptr;
              distribute::c_api::ClearLastError();
              const dist_status_t code = fn(replica_id, num_replicas, &component, user_data);
              return distribute::c_api::TakeCallbackResult(
                  code, component, absl::StrCat("fn for replica ", replica_id), "out");
            }));
    *out = new dist_value(std::move(value));
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_value_container(dist_strategy_t* strategy, const dist_value_t* value,
                                            dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    RETURN_IF_ERROR(CheckHandle(value, "value"));
    if (out == nullptr) return NullArgument("out");
    *out = new dist_value(distribute::ValueContainer(value->value));
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_join_replica(dist_strategy_t* strategy, int32_t replica_id,
                                         dist_context_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(std::unique_ptr<distribute::ReplicaContext> context,
                     strategy->strategy->JoinReplica(replica_id));
    auto* handle = new dist_context(std::move(context));
    distribute::c_api::SetJoinedContextHandle(handle);
    *out = handle;
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
                    RETURN_IF_ERROR(CheckHandle(destinations, "destinations"));
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
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
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
                                   dist_update_fn fn, void* user_data,
                                   const dist_value_t* const* args, int32_t num_args, int32_t group,
                                   dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    RETURN_IF_ERROR(CheckHandle(variable, "variable"));
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
              target_handle.MarkBorrowed();
              HandleArray arg_handles(unwrapped);
              dist_value_t* produced = nullptr;
              distribute::c_api::ClearLastError();
              const dist_status_t code = fn(&target_handle, arg_handles.data(), arg_handles.size(),
                                            &produced, user_data);
              return distribute::c_api::TakeCallbackResult(code, produced, "fn", "out");
            },
            values, group != 0));
    if (result.has_value()) *out = new dist_value(std::move(*result));
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_colocate_vars_with_enter(dist_strategy_t* strategy,
                                                     const dist_value_t* variable) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    RETURN_IF_ERROR(CheckHandle(variable, "variable"));
    return distribute::ColocateVarsWithEnter(*strategy->strategy, variable->value);
  });
}

dist_status_t dist_strategy_colocate_vars_with_exit(dist_strategy_t* strategy) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    return ThreadContext::Current().ColocateExit(strategy->strategy.get());
  });
}

dist_status_t dist_strategy_variable_created_in_scope(const dist_strategy_t* strategy,
                                                      const dist_value_t* variable,
                                                      int32_t* out_created) {
  ClearOut(out_created);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    RETURN_IF_ERROR(CheckHandle(variable, "variable"));
    if (out_created == nullptr) return NullArgument("out_created");
    ASSIGN_OR_RETURN(const bool created,
                     distribute::VariableCreatedInScope(*strategy->strategy, variable->value));
    *out_created = created ? 1 : 0;
    return absl::OkStatus();
  });
}

}  // extern "C"

extern "C" {

dist_status_t dist_strategy_save_variables(dist_strategy_t* strategy, const char* path) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    if (path == nullptr) return NullArgument("path");
    return distribute::SaveVariables(*strategy->strategy, path);
  });
}

dist_status_t dist_strategy_restore_variables(dist_strategy_t* strategy, const char* path) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    if (path == nullptr) return NullArgument("path");
    return distribute::RestoreVariables(*strategy->strategy, path);
  });
}

}  // extern "C"
