// A value as the C API sees it: a tensor, or a distributed value with one component per
// replica. The distributed kinds are filled in by the strategy layer.
#ifndef DISTRIBUTE_CORE_VALUES_VALUE_H_
#define DISTRIBUTE_CORE_VALUES_VALUE_H_

#include <cstdint>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/tensor/tensor.h"

namespace distribute {

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
  explicit Value(Tensor tensor) : kind_(ValueKind::kTensor), components_{std::move(tensor)} {}

  ValueKind kind() const { return kind_; }
  const std::vector<Tensor>& components() const { return components_; }

  // The tensor, or InvalidArgument naming the kind this value has instead.
  absl::StatusOr<const Tensor*> AsTensor() const;

 private:
  ValueKind kind_;
  std::vector<Tensor> components_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_VALUES_VALUE_H_
