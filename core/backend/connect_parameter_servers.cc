// A worker's connections to the ps tasks of its cluster.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/backend/multi_worker_runtime.h"
#include "core/server/job_token.h"
#include "core/server/remote_variable_host.h"
#include "core/server/server.h"
#include "core/backend/parameter_servers.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<std::shared_ptr<ParameterServers>> ConnectParameterServers(
    const ClusterSpec& cluster, const CommunicationOptions& options, ps::PlacementPolicy policy,
    int64_t timeout_ms) {
  RETURN_IF_ERROR(RequireCurrentTask(cluster));
  RETURN_IF_ERROR(cluster.worker_rank(
                             "ParameterServerStrategy runs on the chief and the worker tasks; a ps "
                             "task serves its variables with dist_server_create and dist_server_join")
                      .status());
  const std::vector<ClusterTask> ps_tasks = cluster.tasks(Job::kPs);
  if (ps_tasks.empty()) {
    return absl::InvalidArgumentError(
        "the cluster has no \"ps\" task: ParameterServerStrategy keeps its variables on ps tasks "
        "(run without a cluster for local mode)");
  }
  const Deadline deadline = Deadline::AfterMs(timeout_ms);
  auto servers = std::make_shared<ParameterServers>();
  ASSIGN_OR_RETURN(const ClusterTask self, cluster.current_task());
  ASSIGN_OR_RETURN(const ClusterTask chief, cluster.chief());
  std::string token;
  if (self.name() == chief.name()) {
    // The chief's server hosts the coordination service the ps tasks' servers register
    // with. Other workers start none: a worker restarted after a crash must be able to
    // come back, and the coordination service never takes a lost task back.
    ASSIGN_OR_RETURN(servers->server, StartStrategyServer(cluster, options, timeout_ms));
    token = servers->server->job_token();
  } else {
    ASSIGN_OR_RETURN(token, ResolveJobToken(options.job_token));
    // As a server does: only a job without a token must be on loopback (and says so).
    if (token.empty()) RETURN_IF_ERROR(CheckUnauthenticatedJob(cluster, /*allow_unauthenticated=*/false));
  }
  servers->cluster = cluster;
  servers->job_token = token;
  servers->tls = options.tls;
  RemoteVariableHostOptions host_options;
  host_options.job_token = token;
  host_options.tls = options.tls;
  for (const ClusterTask& task : ps_tasks) {
    ASSIGN_OR_RETURN(std::unique_ptr<ps::VariableHost> host,
                     NewRemoteVariableHost(task.name(), task.address, host_options));
    servers->hosts.push_back(std::move(host));
    DeviceSpec device = DeviceSpec{}.WithDefaults();
    device.job = "ps";
    device.replica = 0;
    device.task = task.index;
    servers->devices.push_back(device);
  }
  std::vector<std::string> missing;
  for (const std::unique_ptr<ps::VariableHost>& host : servers->hosts) {
    absl::Status ready = host->WaitReady(deadline);
    if (absl::IsDeadlineExceeded(ready)) {
      missing.push_back(host->task());
    } else if (!ready.ok()) {
      return ready;
    }
  }
  if (!missing.empty()) {
    return absl::DeadlineExceededError(absl::StrCat(
        "ParameterServerStrategy: the ps task(s) ", absl::StrJoin(missing, ", "),
        " did not answer within ", timeout_ms, " ms"));
  }
  ASSIGN_OR_RETURN(servers->placement,
                   ps::Placement::Create(static_cast<int32_t>(servers->hosts.size()), policy));
  return servers;
}

}  // namespace distribute
