/** @file
 * distribute — the cluster of a multi-worker job: TF_CONFIG or an explicit cluster spec.
 *
 * A cluster has up to four jobs, "chief", "worker", "ps" and "evaluator"; each job maps
 * task indices (>= 0) to addresses "host:port" (port 1 ... 65535; host a hostname, a
 * dotted IPv4 address, or an IPv6 address in brackets: "[::1]:2222"). No two tasks share
 * an address, and a cluster has at most one chief, task 0. The current task is the task
 * this process runs.
 *
 * As in TensorFlow's MultiWorkerMirroredStrategy, the workers are the chief and the worker
 * tasks (never ps or evaluator tasks), and the chief is the "chief" task, or worker 0 when
 * the cluster has no chief.
 *
 * TF_CONFIG is TensorFlow's JSON:
 *   {"cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"]},
 *    "task": {"type": "worker", "index": 1}}
 * A job is a list (task i at position i) or an object from task index to address, whose
 * indices need not be contiguous: {"worker": {"1": "host1:2222", "3": "host3:2222"}}.
 * The keys "environment" and "rpc_layer" (strings) are kept (dist_cluster_environment,
 * dist_cluster_rpc_layer); any other top-level key is ignored, as TF ignores it. The task
 * index may be a number or a string holding one ("index": "1"), as TF accepts both.
 *
 * Where we differ from TF's TFConfigClusterResolver: we reject at parse time what TF only
 * fails on later, when a server starts or a strategy connects: an address without a port
 * or with a malformed host, two tasks at one address, a second chief or a chief other
 * than task 0, and a "task" naming a task not in the cluster. An unknown key inside
 * "task" is an error here (TF ignores it), so that a misspelt "index" is not dropped.
 *
 * Errors: DIST_INVALID_ARGUMENT for a NULL argument and for everything invalid, with a
 * message naming the entry at fault ("task index 2 is out of range: cluster has 2
 * workers", "cluster has two chiefs: ...", "worker[1] address 'h' is malformed: ...").
 *
 * Thread-safety of a cluster: the accessors may run concurrently on one cluster, but
 * dist_cluster_add_task and dist_cluster_set_task need the cluster to themselves (one
 * thread at a time, no concurrent accessor). */
#ifndef DISTRIBUTE_CLUSTER_H_
#define DISTRIBUTE_CLUSTER_H_

#include <stdint.h>

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** Parses TF_CONFIG: the string `json`, or, when `json` is NULL, the TF_CONFIG environment
 * variable. The cluster must have at least one task and "task" must name one of them. On
 * success *out is a new cluster owned by the caller, with its current task set.
 * Errors: DIST_INVALID_ARGUMENT for a NULL `out`, input that is not JSON (the message
 * gives the byte), JSON of the wrong shape or types, and any invalid entry (named);
 * DIST_NOT_FOUND when `json` is NULL and TF_CONFIG is unset or empty.
 * Thread-safety: safe, as long as no thread changes the environment during the call. */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_from_tf_config(const char* json,
                                                                  dist_cluster_t** out);

/* ---- Cluster resolvers (TF's SlurmClusterResolver, and a Kubernetes StatefulSet) ---- */

/** The cluster of a Slurm job step, for the task calling it (TF's SlurmClusterResolver),
 * from the environment srun gives every task:
 *   SLURM_PROCID               this task's rank, 0 ... tasks-1
 *   SLURM_STEP_NUM_TASKS       the step's task count (else SLURM_NTASKS)
 *   SLURM_STEP_NODELIST        its nodes in Slurm's hostlist syntax, "node[01-04,07],gpu5"
 *                              (else SLURM_JOB_NODELIST)
 *   SLURM_STEP_TASKS_PER_NODE  tasks on each node, "2(x3),1" (else SLURM_TASKS_PER_NODE)
 * `jobs` and `task_counts` give num_jobs job names ("chief", "worker", "ps", "evaluator")
 * and their task counts, which must add up to the step's task count; NULL and 0 make
 * every task a worker. As in TF, the jobs take the ranks in the order of their names
 * (chief, evaluator, ps, worker), each the next `count` ranks, and the ranks fill the
 * nodes' task slots in node order; task j on a node listens on port_base + j (port_base 0:
 * the DIST_SLURM_PORT_BASE environment variable, else 8888). tasks_per_node > 0 puts that many tasks on every node, whatever Slurm says.
 * On success *out is a new cluster owned by the caller, with this task as its current one.
 * Errors: DIST_NOT_FOUND naming a variable that is missing (not under srun);
 * DIST_INVALID_ARGUMENT naming a malformed variable (with the byte at fault), jobs whose
 * counts differ from the step's, an unknown or repeated job, too few task slots, a port
 * past 65535, a NULL `out`, or NULL arrays with num_jobs > 0. Lists are bounded at 65536
 * hosts and tasks. Thread-safety: safe, as long as no thread changes the environment
 * during the call. */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_from_slurm(const char* const* jobs,
                                                              const int32_t* task_counts,
                                                              int32_t num_jobs, int32_t port_base,
                                                              int32_t tasks_per_node,
                                                              dist_cluster_t** out);

/** The cluster of a Kubernetes StatefulSet of workers behind a headless service: pod
 * "<set>-<i>" is worker i (worker 0 is the chief) and reaches worker j at
 * "<set>-<j>.<service>:<port>", the DNS name the headless service gives that pod. Each
 * argument left NULL (or 0) is read from the pod's environment, as the manifest sets it:
 *   pod_name  POD_NAME (the downward API's metadata.name), else HOSTNAME
 *   service   DIST_K8S_SERVICE   ("train", or a longer name: "train.ml.svc.cluster.local")
 *   replicas  DIST_K8S_REPLICAS  (1 ... 65536)
 *   port      DIST_K8S_PORT      (1 ... 65535; default 2222)
 * On success *out is a new cluster owned by the caller, with this pod as its current task.
 * Errors: DIST_NOT_FOUND naming a setting neither given nor in the environment;
 * DIST_INVALID_ARGUMENT for a pod name without an ordinal, an ordinal past the replicas,
 * a malformed service name, count or port (each named), a NULL `out`.
 * Thread-safety: safe, as long as no thread changes the environment during the call. */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_from_statefulset(const char* pod_name,
                                                                    const char* service,
                                                                    int32_t replicas, int32_t port,
                                                                    dist_cluster_t** out);

/** Creates an empty cluster without a current task, to fill with dist_cluster_add_task and
 * dist_cluster_set_task. On success *out is owned by the caller.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_create(dist_cluster_t** out);

/** Adds task `index` of `job` at `address` (copied). Fails, changing nothing, on an unknown
 * job, a negative index, a malformed address, a task or an address already in the
 * cluster, and a second chief or a chief other than task 0.
 * Thread-safety: one thread at a time, with no concurrent accessor on this cluster. */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_add_task(dist_cluster_t* cluster, const char* job,
                                                            int32_t index, const char* address);

/** Makes task `index` of `job` the current task. Fails, changing nothing, when that task
 * is not in the cluster.
 * Thread-safety: one thread at a time, with no concurrent accessor on this cluster. */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_set_task(dist_cluster_t* cluster, const char* job,
                                                            int32_t index);

/** The job of the current task ("chief", "worker", "ps" or "evaluator"). The string is
 * static: valid until the process ends, never to be freed.
 * Errors: DIST_FAILED_PRECONDITION before a current task is set.
 * Thread-safety: safe (see the top of this header). */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_task_type(const dist_cluster_t* cluster,
                                                             const char** out_borrowed_type);

/** The index of the current task.
 * Errors: DIST_FAILED_PRECONDITION before a current task is set.
 * Thread-safety: safe (see the top of this header). */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_task_index(const dist_cluster_t* cluster,
                                                              int32_t* out_index);

/** 1 when the current task is the chief (the "chief" task, or worker 0 when the cluster has
 * no chief), else 0. An evaluator is its own chief (1), as in TF's multi_worker_util.
 * Errors: DIST_FAILED_PRECONDITION before a current task is set.
 * Thread-safety: safe (see the top of this header). */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_is_chief(const dist_cluster_t* cluster,
                                                            int32_t* out_is_chief);

/** The number of workers: the chief plus the worker tasks. As TF's
 * multi_worker_util.worker_count, for a current task that is an evaluator it is the
 * number of evaluators (the evaluator runs in a cluster of its own), and for a ps task it
 * is DIST_INVALID_ARGUMENT (TF raises: a ps task has no worker count).
 * Thread-safety: safe (see the top of this header). */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_num_workers(const dist_cluster_t* cluster,
                                                               int32_t* out_count);

/** The number of tasks of `job` (0 for a known job without tasks).
 * Errors: DIST_INVALID_ARGUMENT for an unknown job.
 * Thread-safety: safe (see the top of this header). */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_num_tasks(const dist_cluster_t* cluster,
                                                             const char* job, int32_t* out_count);

/** The index of the `position`-th task of `job` (0 <= position < dist_cluster_num_tasks),
 * in ascending order of index: how to list a job whose indices are not contiguous.
 * Errors: DIST_INVALID_ARGUMENT for an unknown job or a position out of range.
 * Thread-safety: safe (see the top of this header). */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_task_index_at(const dist_cluster_t* cluster,
                                                                 const char* job, int32_t position,
                                                                 int32_t* out_index);

/** The address of task `index` of `job`. The string is owned by the cluster and valid while
 * it lives (adding tasks does not move it).
 * Errors: DIST_INVALID_ARGUMENT for an unknown job or a task not in the cluster.
 * Thread-safety: safe (see the top of this header). */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_task_address(const dist_cluster_t* cluster,
                                                                const char* job, int32_t index,
                                                                const char** out_borrowed_address);

/** Releases a cluster; borrowed addresses become invalid. Accepts NULL.
 * Thread-safety: owner thread only, with no other call on this cluster in flight. */
DIST_API void dist_cluster_destroy(dist_cluster_t* cluster);

/** TF_CONFIG's "rpc_layer" (TFConfigClusterResolver.rpc_layer), e.g. "grpc"; "" when it
 * has none (and for a cluster made with dist_cluster_create). The string is owned by the
 * cluster and valid while it lives.
 * Errors: DIST_INVALID_ARGUMENT for a NULL argument.
 * Thread-safety: safe (see the top of this header). */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_rpc_layer(const dist_cluster_t* cluster,
                                                             const char** out_rpc_layer);

/** TF_CONFIG's "environment", e.g. "cloud"; "" when it has none. (TF's RunConfig reads this
 * key; TFConfigClusterResolver.environment only returns what its constructor was given.) The string is owned by the cluster and valid while it lives.
 * Errors: DIST_INVALID_ARGUMENT for a NULL argument.
 * Thread-safety: safe (see the top of this header). */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_environment(const dist_cluster_t* cluster,
                                                               const char** out_environment);

/** TFConfigClusterResolver.master(): the current task's address, "<rpc_layer>://host:port"
 * when there is an rpc_layer ("grpc://host1:2222") and "host:port" when not; "" when the
 * cluster has a single task or no current task, as in TF. (The chief's address is
 * dist_cluster_task_address of "chief" 0, or of "worker" 0 without a chief.) The string is
 * owned by the cluster and valid until the cluster changes or is destroyed.
 * Errors: DIST_INVALID_ARGUMENT for a NULL argument.
 * Thread-safety: safe (see the top of this header). */
DIST_API DIST_NODISCARD dist_status_t dist_cluster_master(const dist_cluster_t* cluster,
                                                          const char** out_master);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_CLUSTER_H_ */
