// The environment that tells each worker where it sits in the job: TF_CONFIG on
// loopback ports plus DIST_RANK, DIST_WORLD_SIZE and DIST_REPLICAS_PER_WORKER, and the
// job's secret DIST_JOB_TOKEN (which every request between its processes must carry).
#ifndef DISTRIBUTE_TOOLS_DISTRUN_CLUSTER_ENV_H_
#define DISTRIBUTE_TOOLS_DISTRUN_CLUSTER_ENV_H_

#include <cstdint>
#include <string>
#include <vector>

namespace distrun {

// Finds `count` distinct free TCP ports on 127.0.0.1 by binding port 0. All sockets
// stay open until every port is chosen (so the kernel cannot hand out one twice) and
// are closed before returning.
//
// Race: between this close and the worker's own bind, another process on the machine
// may take a port; the worker then fails to listen and the job fails with its status.
// The window is the time to fork/exec the workers, so this is rare; rerunning helps.
//
// Returns false and sets *error on failure.
bool FindFreeLoopbackPorts(int count, std::vector<uint16_t>* ports, std::string* error);

// The loopback ports of the job's tasks, by job.
struct ClusterPorts {
  std::vector<uint16_t> workers;  // job "worker"; index 0 acts as the chief
  std::vector<uint16_t> ps;       // job "ps" (parameter servers); may be empty
};

// One task of the job: a worker (DIST_RANK = index) or a ps task.
struct TaskId {
  bool ps = false;
  int index = 0;
};

// {"cluster": {"worker": ["127.0.0.1:P0", ...], "ps": [...]}, "task": {"type": "worker",
// "index": i}}; the "ps" job is left out when there are no ps tasks.
std::string TfConfigJson(const ClusterPorts& ports, TaskId task);

// `base` (NULL-terminated, like environ) without any TF_CONFIG, DIST_RANK,
// DIST_WORLD_SIZE, DIST_REPLICAS_PER_WORKER or DIST_JOB_TOKEN, plus those set for `task`:
// DIST_RANK only for a worker (a ps task has no rank among the workers).
std::vector<std::string> TaskEnvironment(char* const* base, const ClusterPorts& ports,
                                         TaskId task, int replicas_per_worker,
                                         const std::string& job_token);

// The job's token: DIST_JOB_TOKEN from `base` when set (a job the user secures with
// its own secret), else 64 fresh hex digits from /dev/urandom. Returns false and sets
// *error when there is no random source.
bool JobToken(char* const* base, std::string* token, std::string* error);

}  // namespace distrun

#endif  // DISTRIBUTE_TOOLS_DISTRUN_CLUSTER_ENV_H_
