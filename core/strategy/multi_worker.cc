#include "core/strategy/multi_worker.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "core/gloo/gloo_communicator.h"
#include "core/server/server.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// The workers in rank order: the chief job's task, then the worker tasks by index.
std::vector<ClusterTask> WorkerTasks(const ClusterSpec& cluster) {
  std::vector<ClusterTask> workers;
  for (const ClusterTask& task : cluster.tasks()) {
    if (task.job == Job::kChief || task.job == Job::kWorker) workers.push_back(task);
  }
  return workers;
}

std::string TaskName(const ClusterTask& task) {
  return absl::StrCat(JobName(task.job), ":", task.index);
}

// The host Gloo listens on: the task's own host ("localhost" as the loopback address).
std::string ListenHost(const std::string& address) {
  std::string host = address.substr(0, address.rfind(':'));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost") return "127.0.0.1";
  return host;
}

// Strategies are created in the same order on every worker, so the n-th one of each
// process names the same communicator.
std::atomic<uint64_t> next_instance{0};

}  // namespace

MultiWorkerRuntime::~MultiWorkerRuntime() {
  if (server != nullptr && cross_worker != nullptr && cross_worker->health().ok()) {
    const absl::Status done = server->coordination().Barrier(absl::StrCat(key_prefix, "shutdown"),
                                                            Deadline::AfterMs(timeout_ms));
    (void)done;  // a peer that failed or never comes: nothing more to wait for
  }
  cross_worker.reset();
  server.reset();
}

absl::StatusOr<std::shared_ptr<MultiWorkerRuntime>> ConnectWorkers(
    const ClusterSpec& cluster, const CommunicationOptions& options, int32_t replicas_per_worker,
    int64_t timeout_ms) {
  if (!cluster.has_task()) {
    return absl::InvalidArgumentError(
        "the cluster has no current task: set one (TF_CONFIG's \"task\" or dist_cluster_set_task)");
  }
  ASSIGN_OR_RETURN(const Job job, cluster.task_type());
  ASSIGN_OR_RETURN(const int32_t index, cluster.task_index());
  if (job != Job::kChief && job != Job::kWorker) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task ", JobName(job), ":", index, " is not a worker: MultiWorkerMirroredStrategy runs on "
        "the chief and the worker tasks"));
  }
  if (options.implementation == CommunicationImplementation::kNccl) {
    return absl::FailedPreconditionError(
        "communication implementation NCCL needs GPU replicas; this strategy's replicas are CPU "
        "devices (use AUTO or RING)");
  }
  const std::vector<ClusterTask> workers = WorkerTasks(cluster);
  std::vector<std::string> names;
  int32_t rank = -1;
  for (const ClusterTask& task : workers) {
    if (task.job == job && task.index == index) rank = static_cast<int32_t>(names.size());
    names.push_back(TaskName(task));
  }
  const uint64_t instance = next_instance.fetch_add(1);
  const Deadline deadline = Deadline::AfterMs(timeout_ms);

  auto runtime = std::make_shared<MultiWorkerRuntime>();
  runtime->timeout_ms = timeout_ms;
  Server::Options server_options;
  server_options.startup_timeout_ms = timeout_ms;
  ASSIGN_OR_RETURN(runtime->server, Server::Start(cluster, server_options));
  CoordinationClient& coordination = runtime->server->coordination();
  const std::string prefix = absl::StrCat("multi_worker_mirrored/", instance, "/");
  runtime->key_prefix = prefix;
  RETURN_IF_ERROR(coordination.Barrier(absl::StrCat(prefix, "startup"), deadline));
  ASSIGN_OR_RETURN(const std::string* address, cluster.task_address(JobName(job), index));
  ASSIGN_OR_RETURN(std::unique_ptr<GlooCommunicator> transport,
                   GlooCommunicator::Connect(coordination, absl::StrCat(prefix, "gloo/"), rank,
                                             std::move(names), ListenHost(*address), deadline));
  runtime->cross_worker = std::make_shared<CrossWorker>(std::move(transport));
  // Every worker must bring as many replicas: the signature says how many.
  RETURN_IF_ERROR(runtime->cross_worker->Barrier(
      absl::StrCat("start with ", replicas_per_worker, " replica(s) per worker"), deadline));
  return runtime;
}

}  // namespace distribute
