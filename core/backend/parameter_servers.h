// What a ParameterServerStrategy's variables live on: one VariableHost per ps task (over
// gRPC, or one in-process store in local mode), the placement that picks a task for each
// variable or shard the same way on every worker, the partitioner that splits variables,
// and the deadline of every access. On the chief it also keeps the task's server, which
// hosts the coordination service the ps tasks' servers register with.
#ifndef DISTRIBUTE_CORE_BACKEND_PARAMETER_SERVERS_H_
#define DISTRIBUTE_CORE_BACKEND_PARAMETER_SERVERS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cluster/cluster_spec.h"
#include "core/collective/communication_options.h"
#include "core/device/device_spec.h"
#include "core/ps/partitioner.h"
#include "core/ps/placement.h"
#include "core/ps/variable_host.h"
#include "core/util/deadline.h"
#include "core/util/fan_out_pool.h"
#include "core/util/tls_files.h"

namespace distribute {

class Server;

// Thread-safety: safe once built (hosts and placement are).
struct ParameterServers {
  ParameterServers();
  ~ParameterServers();  // the hosts' channels close before the server stops

  std::unique_ptr<Server> server;                        // the chief's; null elsewhere
  std::vector<std::unique_ptr<ps::VariableHost>> hosts;  // by ps task index
  std::vector<DeviceSpec> devices;                       // where each host's variables live
  // Sends a sharded variable's shards to their tasks at once (ps_variable_storage.h).
  FanOutPool shard_calls{FanOutPool::kMaxThreads};
  std::unique_ptr<ps::Placement> placement;
  std::optional<ps::Partitioner> partitioner;
  std::atomic<int64_t> timeout_ms{60'000};
  // With a cluster (not in local mode): the cluster, and the job token and TLS files this
  // worker's channels use, for a coordinator over the strategy (core/coordinator).
  std::optional<ClusterSpec> cluster;
  std::string job_token;
  TlsFiles tls;

  Deadline NewDeadline() const { return Deadline::AfterMs(timeout_ms.load(std::memory_order_relaxed)); }
};

// Local mode (no cluster): one in-process store on CPU:0.
absl::StatusOr<std::shared_ptr<ParameterServers>> LocalParameterServers(ps::PlacementPolicy policy);

// This worker's connections to every ps task of `cluster` (whose current task must be the
// chief or a worker), with the options' job token and TLS files; on the chief, its server
// first. Waits until every ps task answers: DeadlineExceeded naming those that did not
// within `timeout_ms`.
absl::StatusOr<std::shared_ptr<ParameterServers>> ConnectParameterServers(
    const ClusterSpec& cluster, const CommunicationOptions& options, ps::PlacementPolicy policy,
    int64_t timeout_ms);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_BACKEND_PARAMETER_SERVERS_H_
