/** @file
 * distribute — ParameterServerStrategy (between-graph training with ps tasks) and the
 * function registry of update functions that run where a variable lives.
 *
 * Every task of the job runs the same program with its own TF_CONFIG. Tasks of type "ps"
 * create a server (dist_server_create; a ps task's server hosts the variable service) and
 * dist_server_join it until the job is over. Workers (the chief included) create the
 * strategy, which connects to every ps task.
 *
 * Variables created in the strategy's scope live on the ps tasks, as plain variables
 * (DIST_VALUE_VARIABLE) with one copy, whose device is the ps task's
 * ("/job:ps/replica:0/task:1/device:CPU:0"). They are identified by name: the same name
 * on every worker is the same variable, placed on the same task by the options' policy
 * (round-robin by creation order, as TF's default; or by bytes), or split into shards over
 * several tasks by the options' partitioner (then read and written as one variable, and
 * saved under one name; the shards of different tasks are sent at once, and an assignment
 * or update that fails on one task may be applied on the others, as with TF's partitioned
 * variables: the error is the lowest failing shard's). The first creator's initial value
 * is kept; a later creator (a restarted worker) reads the current value. Creating a name again with another dtype or
 * shape is DIST_INVALID_ARGUMENT naming both. Names are given by the caller here (NULL
 * names are numbered per process, "Variable", "Variable_1", ..., which agree across
 * workers only when every worker creates the same variables in the same order).
 *
 * A worker's replicas are its local CPU devices (dist_communication_options_set_replicas_per_worker),
 * and num_replicas_in_sync counts this worker's replicas only. Within a worker, an
 * assignment in replica context aggregates across its replicas by the variable's
 * aggregation (a collective of this worker's replicas) and the first replica sends the
 * result once; between workers updates are asynchronous: each one is applied on the ps
 * task atomically, in arrival order. Reads in either context fetch the current value.
 *
 * Without a cluster (NULL cluster and TF_CONFIG unset), the strategy runs locally: the
 * variables live in this process on one parameter device (CPU:0), as on the reference page.
 *
 * Failures: a ps task that cannot be reached makes every access to its variables fail
 * with DIST_UNAVAILABLE naming the task (within the strategy's timeout; never a hang); a
 * worker that dies stops no one. */
#ifndef DISTRIBUTE_PARAMETER_SERVER_H_
#define DISTRIBUTE_PARAMETER_SERVER_H_

#include <stdint.h>

#include "distribute/dataset.h"
#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** @name Placement policies */ /** @{ */
/** How variables (or each shard) are assigned to ps tasks. Values are the DIST_PLACEMENT_*
 * constants. */
typedef int32_t dist_placement_policy_t;

/** Task 0, 1, ..., n-1, 0, ... in creation order (TF's replica_device_setter default). */
#define DIST_PLACEMENT_ROUND_ROBIN 0
/** The task with the fewest bytes placed so far, the lowest index on a tie (contrib's
 * GreedyLoadBalancingStrategy with byte_size_load_fn). */
#define DIST_PLACEMENT_GREEDY_BYTES 1
/** @} */

/** New options: round-robin placement and no partitioner. On success *out is the caller's.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_parameter_server_options_create(
    dist_parameter_server_options_t** out);
/** Releases options. Accepts NULL. A strategy created with them keeps its own copy.
 * Thread-safety: one thread at a time per handle. */
DIST_API void dist_parameter_server_options_destroy(dist_parameter_server_options_t* options);

/** DIST_INVALID_ARGUMENT for a value that is not a DIST_PLACEMENT_* constant.
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_parameter_server_options_set_placement(
    dist_parameter_server_options_t* options, dist_placement_policy_t policy);

/** Partitioners (TF's, with TF's shard counts): every variable created in the strategy's
 * scope is split along `axis` into shards, the first dim % n one row larger, named
 * "<name>/part_<i>" on the ps tasks. Setting one replaces any other; num_shards 1 with
 * fixed shards is one shard ("<name>/part_0"). A variable the partitioner refuses (rank 0,
 * an axis past its rank) fails at creation with DIST_INVALID_ARGUMENT naming the
 * partitioner. At most 4096 shards.
 * fixed_size_partitioner(num_shards, axis): 1 <= num_shards <= 4096, axis >= 0.
 * Thread-safety: one thread at a time per options. */
DIST_API DIST_NODISCARD dist_status_t dist_parameter_server_options_set_fixed_shards(
    dist_parameter_server_options_t* options, int64_t num_shards, int32_t axis);
/** min_max_variable_partitioner(max_partitions, axis, min_slice_size): as many shards as
 * keep each at least min_slice_size bytes, at most max_partitions (>= 1); min_slice_size
 * >= 1 (TF's default is 262144). Thread-safety: one thread at a time per options. */
DIST_API DIST_NODISCARD dist_status_t dist_parameter_server_options_set_min_max_shards(
    dist_parameter_server_options_t* options, int64_t max_partitions, int32_t axis,
    int64_t min_slice_size);
/** variable_axis_size_partitioner(max_shard_bytes, axis, max_shards): shards of at most
 * max_shard_bytes (>= 1) bytes, at most max_shards (0: no limit).
 * Thread-safety: one thread at a time per options. */
DIST_API DIST_NODISCARD dist_status_t dist_parameter_server_options_set_max_shard_bytes(
    dist_parameter_server_options_t* options, int64_t max_shard_bytes, int32_t axis,
    int64_t max_shards);
/** Back to no partitioner. Thread-safety (all partitioner setters): one thread at a time
 * per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_parameter_server_options_clear_partitioner(
    dist_parameter_server_options_t* options);

/** A ParameterServerStrategy for this worker of `cluster` (NULL: TF_CONFIG; unset or
 * without a cluster: local mode, see the top of this file). The cluster must have at
 * least one "ps" task, and the current task must be the chief or a worker (a ps task
 * serves with dist_server_create instead: DIST_INVALID_ARGUMENT naming the task).
 * `communication` (may be NULL) gives this worker's replicas, its timeout (every access to
 * a ps task is bounded by it), its job token and TLS files, which must be those of the ps
 * tasks' servers; `options` (may be NULL) the placement. The chief starts its server
 * (which hosts the job's coordination service, that the ps tasks' servers register with);
 * other workers only connect to the ps tasks, so that a restarted worker can rejoin.
 * Creation checks that every ps task answers (waiting up to the timeout for those not up
 * yet: DIST_DEADLINE_EXCEEDED naming them).
 * Errors: as dist_strategy_create_multi_worker_mirrored; DIST_UNAUTHENTICATED when a ps
 * task refuses this worker's job token.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_create_parameter_server(
    const dist_cluster_t* cluster, const dist_communication_options_t* communication,
    const dist_parameter_server_options_t* options, dist_strategy_t** out);

/* ---- Registered update functions ---- */

/** An update function of the registry, run on the ps task that holds the variable (or in
 * this process in local mode), with every other update of that variable held off.
 * `variables` holds the variable's stored value and then its slots, in the order they
 * were declared, as tensors whose buffers are the stored values: write them in place
 * (dist_tensor_data). `args` are the update's arguments, each with the variable's dtype
 * and shape; the hyperparameters come resolved (defaults filled in) as parallel arrays in
 * the declared order. All were checked before the call. Return DIST_OK, or an error
 * after writing nothing. The function must not call back into strategies or variables.
 * For a sharded variable it is called once per shard, with that shard's rows. */
typedef dist_status_t (*dist_registered_update_fn)(
    dist_value_t* const* variables, int32_t num_variables, const dist_value_t* const* args,
    int32_t num_args, const char* const* hyperparameter_names,
    const double* hyperparameter_values, int32_t num_hyperparameters, void* user_data);

/** Registers update function `name` (1 to 1024 bytes of printable ASCII) in this process.
 * Every process of the job (ps tasks included) registers the same functions at start-up,
 * before the servers and strategies are created; a ps task runs the one a worker names.
 * `num_args` (0 ... 16) arguments; `num_slots` (0 ... 16) slot variables named
 * "<variable>/<slot_names[i]>", created beside the variable on its first update with
 * every element slot_initial_values[i]; `num_hyperparameters` (0 ... 64) named numbers
 * with defaults (a NaN default: required). `free_fn` (may be NULL) releases user_data when
 * the function is unregistered (the registry lives until the process ends and does not
 * release what is still registered then). The built-in updates "sgd",
 * "momentum", "nesterov_momentum", "adagrad" and "adam" are registered already (their
 * arguments and hyperparameters are in docs/parameter-servers.md).
 * Errors: DIST_INVALID_ARGUMENT for a bad name, count or slot name; DIST_ALREADY_EXISTS
 * for a name in use; DIST_RESOURCE_EXHAUSTED past 1024 functions. Nothing is registered
 * then (and user_data is not released).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_function_register(
    const char* name, dist_registered_update_fn fn, void* user_data, dist_free_fn free_fn,
    int32_t num_args, const char* const* slot_names, const double* slot_initial_values,
    int32_t num_slots, const char* const* hyperparameter_names,
    const double* hyperparameter_defaults, int32_t num_hyperparameters);

/** Removes a registered function. DIST_NOT_FOUND when absent; DIST_FAILED_PRECONDITION for
 * a built-in. Calls running finish first. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_function_unregister(const char* name);

/** 1 when `name` is registered in this process, else 0. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_function_is_registered(const char* name,
                                                                 int32_t* out_registered);

/** Applies registered update `function` to `variable` (a variable of a
 * ParameterServerStrategy) where it lives, atomically with every other update of it.
 * `args` are tensors, `num_hyperparameters` named numbers override the function's
 * defaults. In cross-replica context the update is sent once. In replica context every
 * replica of this worker must call it: the arguments are aggregated across the worker's
 * replicas by the variable's aggregation (SUM, MEAN, ONLY_FIRST_REPLICA; NONE is
 * DIST_INVALID_ARGUMENT, as for assignments) and the first replica sends one update.
 * Errors: DIST_INVALID_ARGUMENT for a variable of another strategy kind (use
 * dist_strategy_update), wrong arguments or hyperparameters (named); DIST_NOT_FOUND for a
 * function the ps task does not know; DIST_UNAVAILABLE naming an unreachable ps task;
 * DIST_DEADLINE_EXCEEDED after the strategy's timeout.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_apply_update(
    dist_value_t* variable, const char* function, const dist_value_t* const* args,
    int32_t num_args, const char* const* hyperparameter_names,
    const double* hyperparameter_values, int32_t num_hyperparameters);

/** dist_variable_apply_update on `count` (1 ... DIST_MAX_BATCH_VARIABLES) variables of
 * ParameterServerStrategies at once: variable i with its own `num_args` arguments
 * args[i * num_args .. i * num_args + num_args - 1], every one with the same function and
 * hyperparameters. Each ps task gets one call carrying the updates of every shard it holds
 * (a few when they carry more than 1 MiB), the tasks at once. In replica context
 * every replica of this worker calls it with the same variables: the arguments of all of
 * them are aggregated in one collective per aggregation (SUM, MEAN; ONLY_FIRST_REPLICA by
 * broadcast; NONE is DIST_INVALID_ARGUMENT before anything is sent) and the first replica
 * sends the batch; every replica must pass the same variables in the same order, and a
 * replica whose batch fails a local check fails every replica's call with its error.
 * Handles, the function name, and each argument's dtype and shape against its variable are
 * checked before anything is sent; what only the ps task knows (whether the function
 * exists, its argument count and dtypes, hyperparameter names) is checked there for each
 * shard. Each shard's update is atomic; every update is attempted whatever the others'
 * outcome, and the error of the first variable (then shard) that failed is returned,
 * naming it ("variables[2] ('w'): ..."), the others staying applied (as the shards of one
 * variable do). A call to a ps task that fails as a whole (the task unreachable, the
 * strategy's timeout, which bounds each call) leaves its shards' updates unknown and is
 * reported as the failure of its first one. In messages "args[j]" is the failing
 * variable's own argument j. Errors: those of dist_variable_apply_update.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_variables_apply_update(
    dist_value_t* const* variables, int32_t count, const char* function,
    const dist_value_t* const* args, int32_t num_args, const char* const* hyperparameter_names,
    const double* hyperparameter_values, int32_t num_hyperparameters);

/** @name Shards */ /** @{ */
/** The number of shards of a variable of a ParameterServerStrategy (1 when unpartitioned),
 * and the ps task index holding shard `index`. DIST_INVALID_ARGUMENT for another variable;
 * DIST_OUT_OF_RANGE for a bad index. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_num_shards(const dist_value_t* variable,
                                                               int32_t* out_count);
DIST_API DIST_NODISCARD dist_status_t dist_variable_shard_task(const dist_value_t* variable,
                                                               int32_t index,
                                                               int32_t* out_task);
/** @} */

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_PARAMETER_SERVER_H_ */
