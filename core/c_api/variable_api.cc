// C entry points for variables.
#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handles.h"
#include "core/c_api/value_args.h"
#include "core/strategy/ps_variables.h"
#include "core/strategy/variable_ops.h"
#include "core/util/status_macros.h"
#include "distribute/variable.h"

using distribute::AssignKind;
using distribute::Value;
using distribute::Variable;
using distribute::c_api::CheckBatchCount;
using distribute::c_api::CheckHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::EntryError;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

absl::StatusOr<const Variable*> VariableOf(const dist_value_t* value) {
  RETURN_IF_ERROR(CheckHandle(value, "variable"));
  if (!value->value.is_variable()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable is a ", distribute::ValueKindName(value->value.kind()), ", not a variable"));
  }
  return value->value.variable().get();
}

template <typename T, typename Field>
dist_status_t ReadField(const char* function, const dist_value_t* variable, T* out,
                        const char* out_name, Field field) {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(const Variable* state, VariableOf(variable));
    if (out == nullptr) return NullArgument(out_name);
    *out = field(*state);
    return absl::OkStatus();
  });
}

dist_status_t Assign(const char* function, dist_value_t* variable, const dist_value_t* value,
                     AssignKind kind) {
  return Guard(function, [&]() -> absl::Status {
    RETURN_IF_ERROR(VariableOf(variable).status());
    RETURN_IF_ERROR(CheckHandle(value, "value"));
    return distribute::AssignVariable(variable->value, value->value, kind);
  });
}

}  // namespace

extern "C" {

dist_status_t dist_variable_create(const dist_value_t* initial_value,
                                   dist_variable_sync_t synchronization,
                                   dist_variable_aggregation_t aggregation, const char* name,
                                   dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(initial_value, "initial_value"));
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(const distribute::Tensor* initial, initial_value->value.AsTensor());
    ASSIGN_OR_RETURN(distribute::VariableSync sync, distribute::VariableSyncFromInt(synchronization));
    ASSIGN_OR_RETURN(distribute::VariableAggregation agg,
                     distribute::VariableAggregationFromInt(aggregation));
    ASSIGN_OR_RETURN(Value variable,
                     distribute::CreateVariable(*initial, sync, agg, name ? name : ""));
    *out = new dist_value(std::move(variable));
    return absl::OkStatus();
  });
}

dist_status_t dist_variable_read(const dist_value_t* variable, dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(VariableOf(variable).status());
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(distribute::Tensor value, distribute::ReadVariable(variable->value));
    *out = new dist_value(Value(std::move(value)));
    return absl::OkStatus();
  });
}

dist_status_t dist_variables_read(const dist_value_t* const* variables, int32_t count, dist_value_t** outs) {
  if (outs != nullptr && count > 0 && count <= DIST_MAX_BATCH_VARIABLES) {
    for (int32_t i = 0; i < count; ++i) outs[i] = nullptr;
  }
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckBatchCount(count));
    if (variables == nullptr) return NullArgument("variables");
    if (outs == nullptr) return NullArgument("outs");
    std::vector<const Value*> values;
    values.reserve(static_cast<size_t>(count));
    for (int32_t i = 0; i < count; ++i) {
      absl::StatusOr<const Variable*> variable = VariableOf(variables[i]);
      if (!variable.ok()) return EntryError(i, variable.status());
      values.push_back(&variables[i]->value);
    }
    ASSIGN_OR_RETURN(std::vector<distribute::Tensor> read, distribute::ReadVariables(values));
    for (int32_t i = 0; i < count; ++i) outs[i] = new dist_value(Value(std::move(read[static_cast<size_t>(i)])));
    return absl::OkStatus();
  });
}

dist_status_t dist_variable_assign(dist_value_t* variable, const dist_value_t* value) {
  return Assign(__func__, variable, value, AssignKind::kAssign);
}

dist_status_t dist_variable_assign_add(dist_value_t* variable, const dist_value_t* value) {
  return Assign(__func__, variable, value, AssignKind::kAdd);
}

dist_status_t dist_variable_assign_sub(dist_value_t* variable, const dist_value_t* value) {
  return Assign(__func__, variable, value, AssignKind::kSub);
}

dist_status_t dist_variable_name(const dist_value_t* variable, const char** out_borrowed_name) {
  return ReadField(__func__, variable, out_borrowed_name, "out_borrowed_name",
                   [](const Variable& v) { return v.name().c_str(); });
}

dist_status_t dist_variable_device_count(const dist_value_t* variable, int32_t* out_count) {
  ClearOut(out_count);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(VariableOf(variable).status());
    if (out_count == nullptr) return NullArgument("out_count");
    *out_count = variable->value.num_components();
    return absl::OkStatus();
  });
}

dist_status_t dist_variable_device(const dist_value_t* variable, int32_t index,
                                   const char** out_borrowed_device) {
  ClearOut(out_borrowed_device);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(VariableOf(variable).status());
    if (out_borrowed_device == nullptr) return NullArgument("out_borrowed_device");
    ASSIGN_OR_RETURN(const std::string* name, variable->value.VariableDeviceName(index));
    *out_borrowed_device = name->c_str();
    return absl::OkStatus();
  });
}

dist_status_t dist_variable_synchronization(const dist_value_t* variable,
                                            dist_variable_sync_t* out_sync) {
  return ReadField(__func__, variable, out_sync, "out_sync",
                   [](const Variable& v) { return static_cast<dist_variable_sync_t>(v.sync()); });
}

dist_status_t dist_variable_aggregation(const dist_value_t* variable,
                                        dist_variable_aggregation_t* out_aggregation) {
  return ReadField(__func__, variable, out_aggregation, "out_aggregation", [](const Variable& v) {
    return static_cast<dist_variable_aggregation_t>(v.aggregation());
  });
}

}  // extern "C"
