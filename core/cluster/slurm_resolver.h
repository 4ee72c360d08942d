// TF's SlurmClusterResolver: the cluster of a Slurm job step, from the environment Slurm
// gives every task of `srun`:
//   SLURM_PROCID                  this task's rank (0 ... tasks-1)
//   SLURM_STEP_NUM_TASKS          the step's task count (else SLURM_NTASKS)
//   SLURM_STEP_NODELIST           its nodes, a hostlist (else SLURM_JOB_NODELIST)
//   SLURM_STEP_TASKS_PER_NODE     tasks on each node, "2(x3),1" (else SLURM_TASKS_PER_NODE)
// Task j on a node listens on port_base + j (port_base 0: the DIST_SLURM_PORT_BASE
// variable, else 8888, so that a batch script can move the ports). The jobs and their task counts are the
// caller's (every task a worker when none are given); as TF does, they take the ranks in
// the order of their names (chief, evaluator, ps, worker), each the next `count` ranks,
// and the ranks take the nodes' task slots in node order.
//
// Errors: kNotFound naming a variable that is missing; kInvalidArgument naming a variable
// that is malformed (the hostlist's position included), jobs that ask for another number
// of tasks than Slurm runs, a rank outside them, more task slots needed than the nodes
// offer, or a port past 65535.
#ifndef DISTRIBUTE_CORE_CLUSTER_SLURM_RESOLVER_H_
#define DISTRIBUTE_CORE_CLUSTER_SLURM_RESOLVER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/cluster/cluster_spec.h"
#include "core/cluster/environment_lookup.h"

namespace distribute {

struct SlurmJob {
  std::string name;  // "chief", "worker", "ps" or "evaluator"
  int32_t tasks = 0;
};

struct SlurmSettings {
  std::vector<SlurmJob> jobs;  // empty: every task is a worker
  int32_t port_base = 0;       // 1 ... 65535; 0: DIST_SLURM_PORT_BASE, else 8888
  int32_t tasks_per_node = 0;  // > 0: this many on every node, whatever Slurm says
};

inline constexpr int32_t kDefaultSlurmPortBase = 8888;

absl::StatusOr<ClusterSpec> ClusterSpecFromSlurm(const SlurmSettings& settings,
                                                 const EnvironmentLookup& environment = ProcessEnvironment);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_CLUSTER_SLURM_RESOLVER_H_
