// C entry points for values in general: kind, components, PerReplica/Mirrored building.
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/util/status_macros.h"
#include "distribute/value.h"

using distribute::Tensor;
using distribute::Value;
using distribute::c_api::Accessor;
using distribute::c_api::CheckHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

// The tensors behind `components`, each checked to be a tensor.
absl::StatusOr<std::vector<Tensor>> TensorsOf(const dist_value_t* const* components,
                                              int32_t count) {
  if (components == nullptr) return NullArgument("components");
  if (count < 1) {
    return absl::InvalidArgumentError(absl::StrCat("count is ", count, ": expected at least 1"));
  }
  std::vector<Tensor> tensors;
  tensors.reserve(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    RETURN_IF_ERROR(CheckHandle(components[i], absl::StrCat("components[", i, "]")));
    auto tensor = components[i]->value.AsTensor();
    if (!tensor.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("components[", i, "]: ", tensor.status().message()));
    }
    tensors.push_back(**tensor);
  }
  return tensors;
}

}  // namespace

extern "C" {

dist_status_t dist_value_kind(const dist_value_t* value, dist_value_kind_t* out_kind) {
  return Accessor(__func__, value, "value", out_kind, "out_kind",
                  [](const dist_value& v, dist_value_kind_t& kind) {
                    kind = static_cast<dist_value_kind_t>(v.value.kind());
                    return absl::OkStatus();
                  });
}

dist_status_t dist_value_num_components(const dist_value_t* value, int32_t* out_count) {
  return Accessor(__func__, value, "value", out_count, "out_count",
                  [](const dist_value& v, int32_t& count) {
                    count = v.value.num_components();
                    return absl::OkStatus();
                  });
}

dist_status_t dist_value_component(const dist_value_t* value, int32_t index, dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(value, "value"));
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(Value component, value->value.Component(index));
    *out = new dist_value(std::move(component));
    return absl::OkStatus();
  });
}

dist_status_t dist_value_component_tensor(const dist_value_t* value, int32_t index,
                                          dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(value, "value"));
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(Tensor snapshot, value->value.ComponentSnapshot(index));
    *out = new dist_value(Value(std::move(snapshot)));
    return absl::OkStatus();
  });
}

dist_status_t dist_value_create_per_replica(const dist_value_t* const* components, int32_t count,
                                            dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(std::vector<Tensor> tensors, TensorsOf(components, count));
    ASSIGN_OR_RETURN(Value value, Value::PerReplica(std::move(tensors)));
    *out = new dist_value(std::move(value));
    return absl::OkStatus();
  });
}

dist_status_t dist_value_create_mirrored(const dist_value_t* const* components, int32_t count,
                                         dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(std::vector<Tensor> tensors, TensorsOf(components, count));
    ASSIGN_OR_RETURN(Value value, Value::Mirrored(std::move(tensors)));
    *out = new dist_value(std::move(value));
    return absl::OkStatus();
  });
}

void dist_value_destroy(dist_value_t* value) { DestroyHandle(value); }

}  // extern "C"
