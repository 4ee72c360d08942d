// A value as the C API sees it: a tensor, a distributed value with one tensor per replica
// (PerReplica, Mirrored), or a variable (plain, distributed, or one component of a
// distributed variable). Values are cheap to copy: tensors share buffers, variables share
// state.
#ifndef DISTRIBUTE_CORE_VALUES_VALUE_H_
#define DISTRIBUTE_CORE_VALUES_VALUE_H_

#include <cstdint>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor/tensor.h"

namespace distribute {

class Variable;

enum class ValueKind : int32_t {
  kTensor = 1,
  kPerReplica = 2,
  kMirrored = 3,
  kMirroredVariable = 4,
  kSyncOnReadVariable = 5,
  kVariable = 6,
};

absl::string_view ValueKindName(ValueKind kind);

class Value {
 public:
  // Moved in: a braced list would copy the tensor (its shape and a reference count).
  explicit Value(Tensor tensor) : kind_(ValueKind::kTensor) { components_.push_back(std::move(tensor)); }

  // PerReplica or Mirrored over `components` (at least one). Mirrored components must
  // agree in dtype and shape.
  static absl::StatusOr<Value> PerReplica(std::vector<Tensor> components);
  static absl::StatusOr<Value> Mirrored(std::vector<Tensor> components);
  // The whole variable, with the kind its synchronization gives.
  static Value OfVariable(std::shared_ptr<Variable> variable);
  // The copy `index` of a distributed variable, as a plain variable whose container is
  // the distributed one.
  static Value VariableComponent(std::shared_ptr<Variable> variable, int32_t index);

  ValueKind kind() const { return kind_; }
  bool is_variable() const { return variable_ != nullptr; }
  bool is_distributed() const;
  const std::shared_ptr<Variable>& variable() const { return variable_; }
  // The copy this value denotes for a component view, else -1.
  int32_t component_index() const { return component_; }
  // Tensor components (tensor, PerReplica, Mirrored); empty for variables.
  std::span<const Tensor> components() const { return components_; }

  // experimental_local_results: 1 for tensors and plain variables.
  int32_t num_components() const;
  absl::StatusOr<Value> Component(int32_t index) const;
  // Component `index` as a tensor with its own buffer: a copy of a PerReplica or Mirrored
  // component or of a tensor (index 0), a snapshot of a variable's copy. Later writes to
  // either side never reach the other.
  absl::StatusOr<Tensor> ComponentSnapshot(int32_t index) const;
  // The canonical device name of a variable's component `index` (one per copy; one for a
  // component view), alive as long as the variable; InvalidArgument for a non-variable.
  absl::StatusOr<const std::string*> VariableDeviceName(int32_t index) const;

  // The tensor, or InvalidArgument naming the kind this value has instead.
  absl::StatusOr<const Tensor*> AsTensor() const;

 private:
  Value(ValueKind kind, std::vector<Tensor> components, std::shared_ptr<Variable> variable,
        int32_t component)
      : kind_(kind),
        components_(std::make_move_iterator(components.begin()),
                    std::make_move_iterator(components.end())),
        variable_(std::move(variable)),
        component_(component) {}

  ValueKind kind_;
  // Inline for one tensor: a plain tensor value (every collective's new value) allocates
  // nothing beyond its tensor's buffer.
  absl::InlinedVector<Tensor, 1> components_;
  std::shared_ptr<Variable> variable_;
  int32_t component_ = -1;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_VALUES_VALUE_H_
