// tf.distribute.InputContext: what a dataset function learns about the input pipeline it
// builds.
#ifndef DISTRIBUTE_CORE_INPUT_INPUT_CONTEXT_H_
#define DISTRIBUTE_CORE_INPUT_INPUT_CONTEXT_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace distribute {

class InputContext {
 public:
  InputContext(int32_t num_input_pipelines, int32_t input_pipeline_id,
               int32_t num_replicas_in_sync)
      : num_input_pipelines_(num_input_pipelines),
        input_pipeline_id_(input_pipeline_id),
        num_replicas_in_sync_(num_replicas_in_sync) {}

  // A context built by the caller (the C API's dist_input_context_create): at least one
  // input pipeline, an id among them, and at least one replica; InvalidArgument naming
  // the argument otherwise.
  static absl::StatusOr<InputContext> Create(int32_t num_input_pipelines,
                                             int32_t input_pipeline_id,
                                             int32_t num_replicas_in_sync);

  int32_t num_input_pipelines() const { return num_input_pipelines_; }
  int32_t input_pipeline_id() const { return input_pipeline_id_; }
  int32_t num_replicas_in_sync() const { return num_replicas_in_sync_; }

  // global_batch_size / num_replicas_in_sync; InvalidArgument when it does not divide or
  // is negative.
  absl::StatusOr<int64_t> PerReplicaBatchSize(int64_t global_batch_size) const;

 private:
  int32_t num_input_pipelines_;
  int32_t input_pipeline_id_;
  int32_t num_replicas_in_sync_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_INPUT_CONTEXT_H_
