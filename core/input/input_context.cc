#include "core/input/input_context.h"

#include "absl/strings/str_cat.h"

namespace distribute {

absl::StatusOr<int64_t> InputContext::PerReplicaBatchSize(int64_t global_batch_size) const {
  if (global_batch_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("global batch size is ", global_batch_size, ": expected >= 0"));
  }
  if (num_replicas_in_sync_ < 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("the input context has ", num_replicas_in_sync_, " replicas in sync"));
  }
  if (global_batch_size % num_replicas_in_sync_ != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "global batch size ", global_batch_size, " is not divisible by the ",
        num_replicas_in_sync_, " replicas in sync"));
  }
  return global_batch_size / num_replicas_in_sync_;
}

}  // namespace distribute
