// C entry points for the registry of update functions (parameter_server.h): a C callback
// becomes a ps::UpdateFunction in FunctionRegistry::Global(), whose apply lends the
// call's tensors to the callback as borrowed handles.
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handles.h"
#include "core/c_api/user_data.h"
#include "core/c_api/value_args.h"
#include "core/ps/function_registry.h"
#include "core/ps/names.h"
#include "core/util/status_macros.h"
#include "distribute/parameter_server.h"

using distribute::Tensor;
using distribute::Value;
using distribute::c_api::CallbackStatus;
using distribute::c_api::ClearLastError;
using distribute::c_api::ClearOut;
using distribute::c_api::Guard;
using distribute::c_api::HandleArray;
using distribute::c_api::NullArgument;
using distribute::c_api::UserData;
using distribute::ps::FunctionRegistry;
using distribute::ps::HyperparameterSpec;
using distribute::ps::SlotSpec;
using distribute::ps::UpdateCall;
using distribute::ps::UpdateFunction;

namespace {

// A count the caller gave with its array: within [0, max], and the array present when the
// count is not 0. Checked before anything is read from the array.
absl::Status CheckCountedArray(const void* array, absl::string_view array_name, int32_t count,
                               absl::string_view count_name, int32_t max) {
  if (count < 0 || count > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(count_name, " is ", count, ": expected 0 to ", max));
  }
  if (count > 0 && array == nullptr) return NullArgument(array_name);
  return absl::OkStatus();
}

// names[i] as a string: NULL or a name the registry cannot hold is refused naming
// "<array_name>[i]".
absl::StatusOr<std::string> NameAt(const char* const* names, int32_t i, absl::string_view array_name) {
  const std::string argument = absl::StrCat(array_name, "[", i, "]");
  if (names[i] == nullptr) return NullArgument(argument);
  RETURN_IF_ERROR(distribute::ps::CheckPsName(argument, names[i]));
  return std::string(names[i]);
}

absl::Status CheckFunctionName(const char* name) {
  if (name == nullptr) return NullArgument("name");
  return distribute::ps::CheckPsName("name", name);
}

absl::StatusOr<std::vector<SlotSpec>> SlotsOf(const char* const* names, const double* initial_values,
                                              int32_t count) {
  RETURN_IF_ERROR(CheckCountedArray(names, "slot_names", count, "num_slots", distribute::ps::kMaxSlots));
  if (count > 0 && initial_values == nullptr) return NullArgument("slot_initial_values");
  std::vector<SlotSpec> slots;
  for (int32_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(std::string name, NameAt(names, i, "slot_names"));
    slots.push_back(SlotSpec{std::move(name), initial_values[i], ""});
  }
  return slots;
}

// A NaN default declares a required hyperparameter.
absl::StatusOr<std::vector<HyperparameterSpec>> HyperparametersOf(const char* const* names,
                                                                  const double* defaults,
                                                                  int32_t count) {
  RETURN_IF_ERROR(CheckCountedArray(names, "hyperparameter_names", count, "num_hyperparameters",
                                    distribute::ps::kMaxHyperparameters));
  if (count > 0 && defaults == nullptr) return NullArgument("hyperparameter_defaults");
  std::vector<HyperparameterSpec> specs;
  for (int32_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(std::string name, NameAt(names, i, "hyperparameter_names"));
    std::optional<double> default_value;
    if (!std::isnan(defaults[i])) default_value = defaults[i];
    specs.push_back(HyperparameterSpec{std::move(name), default_value});
  }
  return specs;
}

std::vector<Value> ValuesOf(std::span<const Tensor> tensors) {
  std::vector<Value> values;
  values.reserve(tensors.size());
  for (const Tensor& tensor : tensors) values.emplace_back(tensor);
  return values;
}

// The UpdateFunction's apply: calls `fn` with the call's tensors (their handles share the
// stored buffers, so the callback's writes land in place) and its resolved hyperparameters
// in declaration order. The shared user_data is released when the last copy of this
// adapter (held by the registry and by calls under way) is gone.
class CallbackUpdate {
 public:
  CallbackUpdate(std::string name, dist_registered_update_fn fn, std::shared_ptr<UserData> user_data,
                 const std::vector<HyperparameterSpec>& hyperparameters)
      : who_(absl::StrCat("update function ", distribute::ps::QuotedName(name))),
        fn_(fn),
        user_data_(std::move(user_data)) {
    for (const HyperparameterSpec& spec : hyperparameters) hyperparameter_names_.push_back(spec.name);
  }

  absl::Status operator()(const UpdateCall& call) const {
    const std::vector<Value> variable_values = ValuesOf(call.variables);
    const std::vector<Value> argument_values = ValuesOf(call.arguments);
    const HandleArray variables(variable_values);
    const HandleArray arguments(argument_values);
    std::vector<const char*> names;
    std::vector<double> values;
    for (const std::string& name : hyperparameter_names_) {
      const auto resolved = call.hyperparameters.find(name);
      if (resolved == call.hyperparameters.end()) {
        return absl::InternalError(absl::StrCat(who_, " was called without hyperparameter ", name));
      }
      names.push_back(name.c_str());
      values.push_back(resolved->second);
    }
    ClearLastError();
    const dist_status_t code =
        fn_(variables.mutable_data(), variables.size(), arguments.data(), arguments.size(),
            names.data(), values.data(), static_cast<int32_t>(names.size()), user_data_->get());
    if (code != DIST_OK) return CallbackStatus(code, who_);
    return absl::OkStatus();
  }

 private:
  std::string who_;
  dist_registered_update_fn fn_;
  std::shared_ptr<UserData> user_data_;
  std::vector<std::string> hyperparameter_names_;
};

}  // namespace

extern "C" {

dist_status_t dist_function_register(const char* name, dist_registered_update_fn fn, void* user_data,
                                     dist_free_fn free_fn, int32_t num_args,
                                     const char* const* slot_names, const double* slot_initial_values,
                                     int32_t num_slots, const char* const* hyperparameter_names,
                                     const double* hyperparameter_defaults,
                                     int32_t num_hyperparameters) {
  auto owner = std::make_shared<UserData>(user_data, free_fn);
  const dist_status_t status = Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckFunctionName(name));
    if (fn == nullptr) return NullArgument("fn");
    if (num_args < 0 || num_args > distribute::ps::kMaxUpdateArguments) {
      return absl::InvalidArgumentError(absl::StrCat("num_args is ", num_args, ": expected 0 to ",
                                                     distribute::ps::kMaxUpdateArguments));
    }
    UpdateFunction function;
    ASSIGN_OR_RETURN(function.slots, SlotsOf(slot_names, slot_initial_values, num_slots));
    ASSIGN_OR_RETURN(function.hyperparameters,
                     HyperparametersOf(hyperparameter_names, hyperparameter_defaults,
                                       num_hyperparameters));
    function.num_arguments = num_args;
    function.apply = CallbackUpdate(name, fn, owner, function.hyperparameters);
    return FunctionRegistry::Global().Register(name, std::move(function));
  });
  // Refused: the caller keeps user_data (the adapter's copies die with `owner` disarmed).
  if (status != DIST_OK) owner->Disarm();
  return status;
}

dist_status_t dist_function_unregister(const char* name) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckFunctionName(name));
    return FunctionRegistry::Global().Unregister(name);
  });
}

dist_status_t dist_function_is_registered(const char* name, int32_t* out_registered) {
  ClearOut(out_registered);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckFunctionName(name));
    if (out_registered == nullptr) return NullArgument("out_registered");
    *out_registered = FunctionRegistry::Global().Lookup(name).ok() ? 1 : 0;
    return absl::OkStatus();
  });
}

}  // extern "C"
