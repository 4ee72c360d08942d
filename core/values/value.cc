#include "core/values/value.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"
#include "core/values/variable.h"

namespace distribute {

absl::string_view ValueKindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::kTensor:
      return "tensor";
    case ValueKind::kPerReplica:
      return "PerReplica value";
    case ValueKind::kMirrored:
      return "Mirrored value";
    case ValueKind::kMirroredVariable:
      return "MirroredVariable";
    case ValueKind::kSyncOnReadVariable:
      return "SyncOnReadVariable";
    case ValueKind::kVariable:
      return "variable";
  }
  return "value of unknown kind";
}

absl::StatusOr<Value> Value::PerReplica(std::vector<Tensor> components) {
  if (components.empty()) {
    return absl::InvalidArgumentError("a PerReplica value needs at least one component");
  }
  return Value(ValueKind::kPerReplica, std::move(components), nullptr, -1);
}

absl::StatusOr<Value> Value::Mirrored(std::vector<Tensor> components) {
  if (components.empty()) {
    return absl::InvalidArgumentError("a Mirrored value needs at least one component");
  }
  for (size_t i = 1; i < components.size(); ++i) {
    if (components[i].dtype() != components[0].dtype() ||
        !(components[i].shape() == components[0].shape())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Mirrored components must agree: component 0 is ", DTypeName(components[0].dtype()),
          components[0].shape().ToString(), " but component ", i, " is ",
          DTypeName(components[i].dtype()), components[i].shape().ToString()));
    }
  }
  return Value(ValueKind::kMirrored, std::move(components), nullptr, -1);
}

Value Value::OfVariable(std::shared_ptr<Variable> variable) {
  const ValueKind kind = variable->kind();
  return Value(kind, {}, std::move(variable), -1);
}

Value Value::VariableComponent(std::shared_ptr<Variable> variable, int32_t index) {
  return Value(ValueKind::kVariable, {}, std::move(variable), index);
}

bool Value::is_distributed() const {
  return kind_ == ValueKind::kPerReplica || kind_ == ValueKind::kMirrored ||
         kind_ == ValueKind::kMirroredVariable || kind_ == ValueKind::kSyncOnReadVariable;
}

int32_t Value::num_components() const {
  if (variable_ != nullptr) return component_ >= 0 ? 1 : variable_->num_copies();
  return static_cast<int32_t>(components_.size());
}

absl::StatusOr<Value> Value::Component(int32_t index) const {
  const int32_t count = num_components();
  if (index < 0 || index >= count) {
    return absl::OutOfRangeError(absl::StrCat("component index ", index,
                                              " is out of range: the ", ValueKindName(kind_),
                                              " has ", count, " component(s)"));
  }
  if (variable_ == nullptr) return Value(components_[static_cast<size_t>(index)]);
  // A distributed variable's component is its copy even when this process holds only one:
  // under MultiWorkerMirrored the other workers hold the others, so the copy and the
  // variable read (and assign) differently.
  if (component_ >= 0 || !is_distributed()) return *this;
  return VariableComponent(variable_, index);
}

absl::StatusOr<Tensor> Value::ComponentSnapshot(int32_t index) const {
  ASSIGN_OR_RETURN(Value component, Component(index));
  if (component.variable_ != nullptr) {
    return variable_->Snapshot(component.component_ >= 0 ? component.component_ : 0);
  }
  const Tensor& tensor = component.components_.front();
  return tensor.CopyTo(tensor.device_name());
}

absl::StatusOr<const std::string*> Value::VariableDeviceName(int32_t index) const {
  if (variable_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("the value is a ", ValueKindName(kind_), ", not a variable"));
  }
  ASSIGN_OR_RETURN(Value component, Component(index));
  return variable_->DeviceName(component.component_ >= 0 ? component.component_ : 0);
}

absl::StatusOr<const Tensor*> Value::AsTensor() const {
  if (kind_ != ValueKind::kTensor) {
    return absl::InvalidArgumentError(
        absl::StrCat("the value is a ", ValueKindName(kind_), ", not a tensor"));
  }
  return &components_.front();
}

}  // namespace distribute
