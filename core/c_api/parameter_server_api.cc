// C entry points for the variables of a ParameterServerStrategy: registered updates and
// shards (the strategy's constructor is with the others, in strategy_api.cc).
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handles.h"
#include "core/c_api/value_args.h"
#include "core/ps/function_registry.h"
#include "core/ps/names.h"
#include "core/strategy/ps_variables.h"
#include "core/util/status_macros.h"
#include "distribute/parameter_server.h"

using distribute::PsStorageOf;
using distribute::PsVariableStorage;
using distribute::Tensor;
using distribute::c_api::CheckBatchCount;
using distribute::c_api::CheckHandle;
using distribute::c_api::EntryError;
using distribute::c_api::ClearOut;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;
using distribute::c_api::ValuesOf;

namespace {

// The most hyperparameters one call may name (the registry allows as many per function).
constexpr int32_t kMaxHyperparameters = 64;

absl::StatusOr<std::vector<Tensor>> ArgumentTensors(const dist_value_t* const* args, int32_t count) {
  if (count > distribute::ps::kMaxUpdateArguments) {
    return absl::InvalidArgumentError(absl::StrCat("num_args is ", count, ": expected 0 to ",
                                                   distribute::ps::kMaxUpdateArguments));
  }
  ASSIGN_OR_RETURN(const std::vector<distribute::Value> values, ValuesOf(args, count, "args"));
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < values.size(); ++i) {
    absl::StatusOr<const Tensor*> tensor = values[i].AsTensor();
    if (!tensor.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("args[", i, "]: ", tensor.status().message()));
    }
    tensors.push_back(**tensor);
  }
  return tensors;
}

absl::StatusOr<distribute::ps::Hyperparameters> HyperparametersOf(const char* const* names,
                                                                  const double* values,
                                                                  int32_t count) {
  if (count < 0 || count > kMaxHyperparameters) {
    return absl::InvalidArgumentError(absl::StrCat("num_hyperparameters is ", count,
                                                   ": expected 0 to ", kMaxHyperparameters));
  }
  if (count > 0 && names == nullptr) return NullArgument("hyperparameter_names");
  if (count > 0 && values == nullptr) return NullArgument("hyperparameter_values");
  distribute::ps::Hyperparameters hyperparameters;
  for (int32_t i = 0; i < count; ++i) {
    const std::string label = absl::StrCat("hyperparameter_names[", i, "]");
    if (names[i] == nullptr) return NullArgument(label);
    RETURN_IF_ERROR(distribute::ps::CheckPsName(label, names[i]));
    if (!hyperparameters.emplace(names[i], values[i]).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(label, " repeats ", distribute::ps::QuotedName(names[i])));
    }
  }
  return hyperparameters;
}

template <typename Out, typename Read>
dist_status_t ShardQuery(const char* function, const dist_value_t* variable, Out* out,
                         const char* out_name, Read read) {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(variable, "variable"));
    ASSIGN_OR_RETURN(const PsVariableStorage* storage, PsStorageOf(variable->value));
    if (out == nullptr) return NullArgument(out_name);
    return read(*storage, *out);
  });
}

}  // namespace

extern "C" {

dist_status_t dist_variable_apply_update(dist_value_t* variable, const char* function,
                                         const dist_value_t* const* args, int32_t num_args,
                                         const char* const* hyperparameter_names,
                                         const double* hyperparameter_values,
                                         int32_t num_hyperparameters) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(variable, "variable"));
    if (function == nullptr) return NullArgument("function");
    RETURN_IF_ERROR(distribute::ps::CheckPsName("function", function));
    ASSIGN_OR_RETURN(std::vector<Tensor> arguments, ArgumentTensors(args, num_args));
    ASSIGN_OR_RETURN(distribute::ps::Hyperparameters hyperparameters,
                     HyperparametersOf(hyperparameter_names, hyperparameter_values, num_hyperparameters));
    return distribute::ApplyRegisteredUpdate(variable->value, function, arguments, hyperparameters);
  });
}

dist_status_t dist_variables_apply_update(dist_value_t* const* variables, int32_t count, const char* function,
                                          const dist_value_t* const* args, int32_t num_args,
                                          const char* const* hyperparameter_names,
                                          const double* hyperparameter_values, int32_t num_hyperparameters) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckBatchCount(count));
    if (variables == nullptr) return NullArgument("variables");
    if (function == nullptr) return NullArgument("function");
    RETURN_IF_ERROR(distribute::ps::CheckPsName("function", function));
    if (num_args < 0 || num_args > distribute::ps::kMaxUpdateArguments) {
      return absl::InvalidArgumentError(absl::StrCat("num_args is ", num_args, ": expected 0 to ",
                                                     distribute::ps::kMaxUpdateArguments));
    }
    if (num_args > 0 && args == nullptr) return NullArgument("args");
    std::vector<const distribute::Value*> values;
    std::vector<std::vector<Tensor>> arguments;
    values.reserve(static_cast<size_t>(count));
    arguments.reserve(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i) {
      if (absl::Status handle = CheckHandle(variables[i], "variable"); !handle.ok()) return EntryError(i, handle);
      values.push_back(&variables[i]->value);
      absl::StatusOr<std::vector<Tensor>> own =
          ArgumentTensors(num_args > 0 ? args + static_cast<ptrdiff_t>(i) * num_args : nullptr, num_args);
      if (!own.ok()) return EntryError(i, own.status());
      arguments.push_back(*std::move(own));
    }
    ASSIGN_OR_RETURN(distribute::ps::Hyperparameters hyperparameters,
                     HyperparametersOf(hyperparameter_names, hyperparameter_values, num_hyperparameters));
    return distribute::ApplyRegisteredUpdates(values, arguments, function, hyperparameters);
  });
}

dist_status_t dist_variable_num_shards(const dist_value_t* variable, int32_t* out_count) {
  return ShardQuery(__func__, variable, out_count, "out_count",
                    [](const PsVariableStorage& storage, int32_t& count) {
                      count = storage.num_shards();
                      return absl::OkStatus();
                    });
}

dist_status_t dist_variable_shard_task(const dist_value_t* variable, int32_t index, int32_t* out_task) {
  return ShardQuery(__func__, variable, out_task, "out_task",
                    [index](const PsVariableStorage& storage, int32_t& task) -> absl::Status {
                      if (index < 0 || index >= storage.num_shards()) {
                        return absl::OutOfRangeError(absl::StrCat(
                            "shard index ", index, " is out of range: the variable has ",
                            storage.num_shards(), " shard(s)"));
                      }
                      task = storage.placement().shards[static_cast<size_t>(index)].task;
                      return absl::OkStatus();
                    });
}

}  // extern "C"
