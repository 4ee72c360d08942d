// The TF_CONFIG environment variable of TensorFlow's multi-worker training:
//   {"cluster": {"chief": ["host:port"], "worker": ["host:port", ...], "ps": [...],
//                "evaluator": [...]},
//    "task": {"type": "worker", "index": 1},
//    "environment": "cloud", "rpc_layer": "grpc"}
// Each job is a list (task i at position i) or the sparse form, an object from task index
// to address ({"worker": {"1": "h:p", "3": "h:p"}}, indices need not be contiguous).
// "environment" and "rpc_layer" (strings) are kept on the spec; any other top-level key is
// ignored, as TF's TFConfigClusterResolver ignores it. task.index may be a number or, as
// TF accepts it, a string holding one ("1").
//
// Every error is kInvalidArgument with a message starting "TF_CONFIG: " and naming the
// entry at fault; an unset or empty environment variable is kNotFound. Never throws.
#ifndef DISTRIBUTE_CORE_CLUSTER_TF_CONFIG_H_
#define DISTRIBUTE_CORE_CLUSTER_TF_CONFIG_H_

#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/cluster/cluster_spec.h"

namespace distribute {

// Parses TF_CONFIG JSON: a non-empty cluster and the current task, which must be in it.
absl::StatusOr<ClusterSpec> ParseTfConfig(absl::string_view json);

// Parses the TF_CONFIG environment variable.
absl::StatusOr<ClusterSpec> ClusterSpecFromEnvironment();

// TF_CONFIG as TF's MultiWorkerMirroredStrategy reads it: nullopt when it describes no
// cluster (unset, empty, "{}", or a JSON object without a "cluster" or with an empty one),
// which TF runs as one local worker; otherwise ParseTfConfig of it.
absl::StatusOr<std::optional<ClusterSpec>> ClusterSpecFromEnvironmentIfAny();

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_CLUSTER_TF_CONFIG_H_
