#include "core/backend/multi_worker_runtime.h"

#include <atomic>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/backend/transport_factory.h"
#include "core/server/server.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// Strategies are created in the same order on every worker, so the n-th one of each
// process names the same communicator.
std::atomic<uint64_t> next_instance{0};

}  // namespace

MultiWorkerRuntime::~MultiWorkerRuntime() {
  // Before the last barrier: a worker that passes it and goes on to create the next
  // strategy must find the chief's next server, not join this one as it goes away.
  if (server != nullptr) server->StopAcceptingTasks();
  if (server != nullptr && cross_worker != nullptr && cross_worker->health().ok()) {
    const absl::Status done = server->coordination().Barrier(absl::StrCat(key_prefix, "shutdown"),
                                                            Deadline::AfterMs(timeout_ms));
    (void)done;  // a peer that failed or never comes: nothing more to wait for
  }
  cross_worker.reset();
  server.reset();
}

absl::Status RequireCurrentTask(const ClusterSpec& cluster) {
  if (cluster.has_task()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "the cluster has no current task: set one (TF_CONFIG's \"task\" or dist_cluster_set_task)");
}

absl::StatusOr<std::unique_ptr<Server>> StartStrategyServer(const ClusterSpec& cluster,
                                                            const CommunicationOptions& options,
                                                            int64_t timeout_ms) {
  Server::Options server_options;
  server_options.startup_timeout_ms = timeout_ms;
  server_options.job_token = options.job_token;
  server_options.tls = options.tls;
  return Server::Start(cluster, server_options);
}

absl::StatusOr<std::shared_ptr<MultiWorkerRuntime>> ConnectWorkers(
    const ClusterSpec& cluster, const CommunicationOptions& options, DeviceType device_type,
    int32_t replicas_per_worker, int64_t timeout_ms) {
  RETURN_IF_ERROR(RequireCurrentTask(cluster));
  ASSIGN_OR_RETURN(const int32_t rank,
                   cluster.worker_rank("MultiWorkerMirroredStrategy runs on the chief and the "
                                       "worker tasks"));
  ASSIGN_OR_RETURN(const ClusterTask self, cluster.current_task());
  ASSIGN_OR_RETURN(const TransportKind transport_kind, ChooseTransport(options, device_type));
  ASSIGN_OR_RETURN(const bool share_tensors, SharedTensorsFromEnvironment());
  const uint64_t instance = next_instance.fetch_add(1);
  const Deadline deadline = Deadline::AfterMs(timeout_ms);

  auto runtime = std::make_shared<MultiWorkerRuntime>();
  runtime->timeout_ms = timeout_ms;
  ASSIGN_OR_RETURN(runtime->server, StartStrategyServer(cluster, options, timeout_ms));
  CoordinationClient& coordination = runtime->server->coordination();
  const std::string prefix = absl::StrCat("multi_worker_mirrored/", instance, "/");
  runtime->key_prefix = prefix;
  RETURN_IF_ERROR(coordination.Barrier(absl::StrCat(prefix, "startup"), deadline));
  std::vector<std::string> names;
  for (const ClusterTask& task : cluster.workers()) names.push_back(task.name());
  const TransportRequest request{&coordination, prefix, rank, std::move(names), ListenHost(self.address),
                                 runtime->server->job_token(), share_tensors};
  ASSIGN_OR_RETURN(std::unique_ptr<Transport> transport,
                   ConnectTransport(transport_kind, request, deadline));
  runtime->cross_worker = std::make_shared<CrossWorker>(std::move(transport));
  // Every worker must bring as many replicas: the signature says how many.
  RETURN_IF_ERROR(runtime->cross_worker->Barrier(
      absl::StrCat("start with ", replicas_per_worker, " replica(s) per worker"), deadline));
  return runtime;
}

}  // namespace distribute
