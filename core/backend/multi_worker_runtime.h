// What a multi-worker job's collectives run on beyond one process: this task's server
// (which, on the chief, hosts the coordination service) and the connected cross-worker
// transport, wrapped in CrossWorker.
#ifndef DISTRIBUTE_CORE_BACKEND_MULTI_WORKER_RUNTIME_H_
#define DISTRIBUTE_CORE_BACKEND_MULTI_WORKER_RUNTIME_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/cluster/cluster_spec.h"
#include "core/collective/communication_options.h"
#include "core/collective/cross_worker.h"
#include "core/device/device_spec.h"

namespace distribute {

class Server;

struct MultiWorkerRuntime {
  // Waits (up to the timeout) until every worker is done too, unless the communicator has
  // failed: a worker that left at once would look dead to the others, whose last
  // collectives may still be in flight.
  ~MultiWorkerRuntime();

  std::unique_ptr<Server> server;
  std::shared_ptr<CrossWorker> cross_worker;  // released before the server it talks through
  std::string key_prefix;  // of this strategy's keys and barriers
  int64_t timeout_ms = 0;
};

// InvalidArgument saying how to set one when `cluster` has no current task.
absl::Status RequireCurrentTask(const ClusterSpec& cluster);

// This task's server for a strategy: start-up bounded by `timeout_ms`, with the options'
// job token and TLS files.
absl::StatusOr<std::unique_ptr<Server>> StartStrategyServer(const ClusterSpec& cluster,
                                                            const CommunicationOptions& options,
                                                            int64_t timeout_ms);

// Starts this task's server, waits (until `timeout_ms`) for every worker task at a
// start-up barrier (naming the tasks that did not come), and connects the workers'
// transport (the one `options` and the replicas' `device_type` call for). Every worker
// must have `replicas_per_worker` replicas.
absl::StatusOr<std::shared_ptr<MultiWorkerRuntime>> ConnectWorkers(
    const ClusterSpec& cluster, const CommunicationOptions& options, DeviceType device_type,
    int32_t replicas_per_worker, int64_t timeout_ms);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_BACKEND_MULTI_WORKER_RUNTIME_H_
