#include "core/values/value.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

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

absl::StatusOr<const Tensor*> Value::AsTensor() const {
  if (kind_ != ValueKind::kTensor) {
    return absl::InvalidArgumentError(
        absl::StrCat("the value is a ", ValueKindName(kind_), ", not a tensor"));
  }
  return &components_.front();
}

}  // namespace distribute
