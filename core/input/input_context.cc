#include "core/input/input_context.h"

#include "absl/strings/str_cat.h"

namespace distribute {

absl::StatusOr<InputContext> InputContext::Create(int32_t num_input_pipelines,
                                                  int32_t input_pipeline_id,
                                                  int32_t num_replicas_in_sync) {
  if (num_input_pipelines < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_input_pipelines is ", num_input_pipelines, ": expected >= 1"));
  }
  if (input_pipeline_id < 0 || input_pipeline_id >= num_input_pipelines) {
    return absl::InvalidArgumentError(absl::StrCat("input_pipeline_id is ", input_pipeline_id,
                                                   ": expected 0 to ", num_input_pipelines - 1));
  }
  if (num_replicas_in_sync < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_replicas_in_sync is ", num_replicas_in_sync, ": expected >= 1"));
  }
  return InputContext(num_input_pipelines, input_pipeline_id, num_replicas_in_sync);
}

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
