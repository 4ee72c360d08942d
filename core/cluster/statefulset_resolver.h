// The cluster of a Kubernetes StatefulSet of workers behind a headless service (TFJob
// sets TF_CONFIG itself; this is the pattern without an operator): pod "<set>-<i>" is
// worker i (worker 0 is the chief), and reaches worker j at "<set>-<j>.<service>:<port>",
// the stable DNS name the headless service gives each pod.
//
// Each setting left empty (0) is read from the environment, which the manifest sets:
//   pod_name  POD_NAME (the downward API's metadata.name), else HOSTNAME
//   service   DIST_K8S_SERVICE   the headless service ("train", or a longer DNS name such as
//                                "train.ml.svc.cluster.local")
//   replicas  DIST_K8S_REPLICAS  the StatefulSet's replica count (1 ... 65536)
//   port      DIST_K8S_PORT      the container port of every pod (default 2222)
// Errors: kNotFound naming a setting missing from both; kInvalidArgument for a pod name
// without an ordinal ("train-3"), an ordinal past the replicas, a malformed service name,
// count or port (each named).
#ifndef DISTRIBUTE_CORE_CLUSTER_STATEFULSET_RESOLVER_H_
#define DISTRIBUTE_CORE_CLUSTER_STATEFULSET_RESOLVER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "core/cluster/cluster_spec.h"
#include "core/cluster/environment_lookup.h"

namespace distribute {

struct StatefulSetSettings {
  std::string pod_name;
  std::string service;
  int32_t replicas = 0;
  int32_t port = 0;
};

inline constexpr int32_t kDefaultStatefulSetPort = 2222;
inline constexpr int32_t kMaxStatefulSetReplicas = 65536;

absl::StatusOr<ClusterSpec> ClusterSpecFromStatefulSet(const StatefulSetSettings& settings,
                                                       const EnvironmentLookup& environment = ProcessEnvironment);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_CLUSTER_STATEFULSET_RESOLVER_H_
