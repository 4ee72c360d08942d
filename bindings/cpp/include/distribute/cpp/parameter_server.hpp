// distribute C++ wrapper — ParameterServerStrategy (distribute/parameter_server.h):
// ParameterServerOptions (placement and TF's partitioners), the strategy's constructor,
// registered update functions as lambdas, and the calls on its variables (apply_update,
// the batches read_variables and apply_updates, where each shard lives). The options own their C handle, are move-only, and destroy it
// with the object.
#ifndef DISTRIBUTE_CPP_PARAMETER_SERVER_HPP_
#define DISTRIBUTE_CPP_PARAMETER_SERVER_HPP_

#include <cstdint>
#include <cstring>
#include <string>
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

// Where variables go on the ps tasks (dist_parameter_server_options_t).
class ParameterServerOptions
    : public detail::Owned<dist_parameter_server_options_t, dist_parameter_server_options_destroy> {
 public:
  using Owned::Owned;
  static Result<ParameterServerOptions> create() {
    return detail::make_owned<ParameterServerOptions, dist_parameter_server_options_t>(
        dist_parameter_server_options_create);
  }
  // DIST_PLACEMENT_ROUND_ROBIN (the default) or DIST_PLACEMENT_GREEDY_BYTES.
  Status set_placement(dist_placement_policy_t policy) {
    return Status::FromCall(dist_parameter_server_options_set_placement(get(), policy));
  }
  // TF's fixed_size_partitioner, min_max_variable_partitioner and
  // variable_axis_size_partitioner; clear_partitioner goes back to none.
  Status set_fixed_shards(int64_t num_shards, int32_t axis = 0) {
    return Status::FromCall(dist_parameter_server_options_set_fixed_shards(get(), num_shards, axis));
  }
  Status set_min_max_shards(int64_t max_partitions, int32_t axis = 0, int64_t min_slice_size = 262144) {
    return Status::FromCall(
        dist_parameter_server_options_set_min_max_shards(get(), max_partitions, axis, min_slice_size));
  }
  Status set_max_shard_bytes(int64_t max_shard_bytes, int32_t axis = 0, int64_t max_shards = 0) {
    return Status::FromCall(
        dist_parameter_server_options_set_max_shard_bytes(get(), max_shard_bytes, axis, max_shards));
  }
  Status clear_partitioner() { return Status::FromCall(dist_parameter_server_options_clear_partitioner(get())); }
};

// A ParameterServerStrategy for this worker of `cluster` (null: TF_CONFIG; none at all:
// local mode, every variable in this process).
inline Result<Strategy> parameter_server_strategy(const Cluster* cluster = nullptr,
                                                 const CommunicationOptions* communication = nullptr,
                                                 const ParameterServerOptions* options = nullptr) {
  dist_strategy_t* out = nullptr;
  const dist_status_t code = dist_strategy_create_parameter_server(
      static_cast<const dist_cluster_t*>(cluster ? cluster->get() : nullptr),
      static_cast<const dist_communication_options_t*>(communication ? communication->get() : nullptr),
      static_cast<const dist_parameter_server_options_t*>(options ? options->get() : nullptr), &out);
  if (code != DIST_OK) return Status::FromCall(code);
  return Strategy::adopt(out);
}

// The named numbers an update function receives, resolved (defaults filled in).
class Hyperparameters {
 public:
  Hyperparameters(const char* const* names, const double* values, int32_t count)
      : names_(names), values_(values), count_(count) {}
  int32_t size() const { return count_; }
  const char* name(int32_t index) const { return names_[index]; }
  double value(int32_t index) const { return values_[index]; }
  // The value named `name`; NOT_FOUND when the function declared no such number.
  Result<double> find(const char* name) const {
    if (name == nullptr) return Status(DIST_INVALID_ARGUMENT, "dist::Hyperparameters::find: a null name");
    for (int32_t i = 0; i < count_; ++i) {
      if (std::strcmp(names_[i], name) == 0) return values_[i];
    }
    return Status(DIST_NOT_FOUND, std::string("no hyperparameter '") + name + "'");
  }

 private:
  const char* const* names_;
  const double* values_;
  int32_t count_;
};

// What a registered update function declares besides itself (dist_function_register):
// its argument count, its slots with their initial values, its hyperparameters with
// defaults (NaN: required). It owns its lists, so braced lists are safe to assign.
struct UpdateFunctionSignature {
  int32_t num_args = 1;
  std::vector<std::string> slot_names;
  std::vector<double> slot_initial_values;
  std::vector<std::string> hyperparameter_names;
  std::vector<double> hyperparameter_defaults;
};

namespace detail {

template <class Fn>
dist_status_t update_function_trampoline(dist_value_t* const* variables, int32_t num_variables,
                                         const dist_value_t* const* args, int32_t num_args,
                                         const char* const* hyperparameter_names,
                                         const double* hyperparameter_values, int32_t num_hyperparameters,
                                         void* user_data) {
  const Fn& fn = *static_cast<const Fn*>(user_data);
  return guarded("the update function", [&] {
    return invoke_status(fn, Args(variables, num_variables), Args(args, num_args),
                         Hyperparameters(hyperparameter_names, hyperparameter_values, num_hyperparameters));
  });
}

}  // namespace detail

// Registers update function `name` in this process: fn(Args variables, Args args,
// Hyperparameters) -> Status or void writes the variable (variables[0]) and its slots
// (variables[1...]) in place through their data. It runs where the variable lives, as
// const and possibly on several variables at once; every process of the job registers the
// same functions before its servers and strategies start. An error (or exception) must
// come before the first write: the C contract is "an error after writing nothing", so
// check everything first. The registry keeps one copy of fn until it is unregistered, and
// destroys it inside unregister_update_function (under the registry's lock: its
// destructor must not call the registry).
template <class F>
Status register_update_function(const char* name, F fn, const UpdateFunctionSignature& signature = {}) {
  using Fn = std::decay_t<F>;
  if (signature.slot_names.size() != signature.slot_initial_values.size() ||
      signature.hyperparameter_names.size() != signature.hyperparameter_defaults.size()) {
    return Status(DIST_INVALID_ARGUMENT,
                  "dist::register_update_function: each slot and each hyperparameter needs one value");
  }
  std::vector<const char*> slots;
  for (const std::string& slot : signature.slot_names) slots.push_back(slot.c_str());
  std::vector<const char*> hyperparameters;
  for (const std::string& hyperparameter : signature.hyperparameter_names) {
    hyperparameters.push_back(hyperparameter.c_str());
  }
  auto* owned = new Fn(std::move(fn));
  const dist_status_t code = dist_function_register(
      name, &detail::update_function_trampoline<Fn>, owned, &detail::delete_callable<Fn>, signature.num_args,
      slots.data(), signature.slot_initial_values.data(), static_cast<int32_t>(slots.size()), hyperparameters.data(),
      signature.hyperparameter_defaults.data(), static_cast<int32_t>(hyperparameters.size()));
  if (code != DIST_OK) {
    Status status = Status::FromCall(code);
    delete owned;  // a refused registration does not call free_fn
    return status;
  }
  return Status();
}
inline Status unregister_update_function(const char* name) { return Status::FromCall(dist_function_unregister(name)); }
inline Result<bool> is_update_function_registered(const char* name) {
  Result<int32_t> registered = detail::call_out<int32_t>(dist_function_is_registered, name);
  if (!registered) return registered.status();
  return *registered != 0;
}

// Applies registered update `function` to `variable` (of a ParameterServerStrategy) where
// it lives: in replica context every replica calls it and the worker sends one update.
inline Status apply_update(ValueView variable, const char* function, Span<const ValueView> args,
                           Span<const char* const> hyperparameter_names = {},
                           Span<const double> hyperparameter_values = {}) {
  if (hyperparameter_names.size() != hyperparameter_values.size()) {
    return Status(DIST_INVALID_ARGUMENT, "dist::apply_update: one value for each hyperparameter name");
  }
  std::vector<const dist_value_t*> raw;
  raw.reserve(args.size());
  for (const ValueView& arg : args) raw.push_back(arg.get());
  return Status::FromCall(dist_variable_apply_update(variable.get(), function, raw.data(),
                                                     static_cast<int32_t>(raw.size()), hyperparameter_names.data(),
                                                     hyperparameter_values.data(),
                                                     static_cast<int32_t>(hyperparameter_names.size())));
}

// Reads every variable as ValueView::read does, in one batch: each ps task holding shards
// of them is asked once (dist_variables_read). On error nothing is returned.
inline Result<std::vector<Value>> read_variables(Span<const ValueView> variables) {
  detail::RawValues raw(variables);
  detail::RawOuts outs(variables.size());
  const Status status = Status::FromCall(dist_variables_read(raw.data(), raw.size(), outs.data()));
  if (!status.ok()) return status;
  std::vector<Value> values(variables.size());
  outs.move_to(Span<Value>(values));
  return values;
}

// apply_update on every variable at once (dist_variables_apply_update): variable i with
// its own arguments args[i] (every row the same length), all with the same function and
// hyperparameters; one call per ps task.
inline Status apply_updates(Span<const ValueView> variables, const char* function,
                            const std::vector<std::vector<ValueView>>& args,
                            Span<const char* const> hyperparameter_names = {},
                            Span<const double> hyperparameter_values = {}) {
  if (hyperparameter_names.size() != hyperparameter_values.size()) {
    return Status(DIST_INVALID_ARGUMENT, "dist::apply_updates: one value for each hyperparameter name");
  }
  if (args.size() != variables.size()) {
    return Status(DIST_INVALID_ARGUMENT, "dist::apply_updates: " + std::to_string(args.size()) +
                                             " rows of arguments for " + std::to_string(variables.size()) +
                                             " variables: one row for each variable");
  }
  const size_t num_args = args.empty() ? 0 : args.front().size();
  std::vector<const dist_value_t*> flat;
  flat.reserve(args.size() * num_args);
  for (const std::vector<ValueView>& row : args) {
    if (row.size() != num_args) {
      return Status(DIST_INVALID_ARGUMENT, "dist::apply_updates: rows of " + std::to_string(num_args) + " and " +
                                               std::to_string(row.size()) + " arguments: every row the same length");
    }
    for (const ValueView& arg : row) flat.push_back(arg.get());
  }
  std::vector<dist_value_t*> raw;
  raw.reserve(variables.size());
  for (const ValueView& variable : variables) raw.push_back(variable.get());
  return Status::FromCall(dist_variables_apply_update(
      raw.data(), static_cast<int32_t>(raw.size()), function, flat.data(), static_cast<int32_t>(num_args),
      hyperparameter_names.data(), hyperparameter_values.data(), static_cast<int32_t>(hyperparameter_names.size())));
}

// The number of shards of a ParameterServerStrategy variable, and the ps task of shard `index`.
inline Result<int32_t> num_shards(ValueView variable) {
  return detail::call_out<int32_t>(dist_variable_num_shards, static_cast<const dist_value_t*>(variable.get()));
}
inline Result<int32_t> shard_task(ValueView variable, int32_t index) {
  return detail::call_out<int32_t>(dist_variable_shard_task, static_cast<const dist_value_t*>(variable.get()), index);
}

}  // namespace dist

#endif  // DISTRIBUTE_CPP_PARAMETER_SERVER_HPP_
