/** @file
 * distribute — strategies (tf.distribute.Strategy and StrategyExtended).
 *
 * A strategy owns a set of replicas, one per compute device, each served by a persistent
 * library thread created with the strategy. dist_strategy_run calls a C function once
 * per replica, concurrently, in replica context (see context.h); the calling thread acts
 * as replica 0.
 *
 * Where the cross-replica calls may be made: the functions below marked "Cross-replica"
 * (reduce, reduce_axis, gather, reduce_to, reduce_to_device, batch_reduce_to, update,
 * distribute_values_from_function, save_variables, restore_variables) work with no scope
 * entered (as in TF), inside this strategy's scope, inside merge_call's function and
 * inside an update function. In replica context (inside a replica function, or on a
 * thread joined with dist_strategy_join_replica) and inside the scope of a different
 * non-default strategy they fail with DIST_FAILED_PRECONDITION naming the call and the
 * expected context, and change nothing. dist_strategy_run itself fails the same way from a
 * replica function or merge_call's function.
 *
 * The default strategy is active when no scope is entered: one replica on CPU:0,
 * reduce_to returns values unchanged, and variables are plain variables.
 *
 * Every blocking wait (a collective, merge_call, the rendezvous of `run`) is bounded by
 * the strategy's timeout (dist_strategy_set_timeout_ms, 60 s by default); an expired wait
 * fails with DIST_DEADLINE_EXCEEDED. When one replica fails, every replica waiting in a
 * collective or merge_call is released with DIST_ABORTED and `run` returns the first
 * error; the strategy is usable again for the next `run`. */
#ifndef DISTRIBUTE_STRATEGY_H_
#define DISTRIBUTE_STRATEGY_H_

#include <stdint.h>

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** @name Strategy kinds */ /** @{ */
/** The kind of a strategy. Values are the DIST_STRATEGY_* constants. */
typedef int32_t dist_strategy_kind_t;

#define DIST_STRATEGY_DEFAULT 1
#define DIST_STRATEGY_ONE_DEVICE 2
#define DIST_STRATEGY_MIRRORED 3
#define DIST_STRATEGY_CENTRAL_STORAGE 4
#define DIST_STRATEGY_MULTI_WORKER_MIRRORED 5
#define DIST_STRATEGY_PARAMETER_SERVER 6
/** @} */

/** @name Reduce ops */ /** @{ */
/** How values are combined across replicas. Values are the DIST_REDUCE_* constants. SUM
 * and MEAN are TF's tf.distribute.ReduceOp; MIN, MAX and PRODUCT are additions. */
typedef int32_t dist_reduce_op_t;

#define DIST_REDUCE_SUM 1 /**< the sum */
#define DIST_REDUCE_MEAN 2
/**< MEAN of integer values across several replicas returns a float, as TF's true division
 * of the integer sum does: float32 for int8, uint8 and int16, float64 for int32 and int64
 * (int32 {2, 3} and {3, 4} average to float64 {2.5, 3.5}). The sum wraps in the integer
 * dtype first, as TF's does. Everywhere MEAN exists: dist_context_all_reduce and
 * batch_all_reduce, dist_strategy_reduce, reduce_axis (always, even for one replica, as
 * TF divides there), reduce_to and batch_reduce_to; single- and multi-worker, with the
 * same bits on every replica and run. With one replica in sync, or for a value that is the
 * same on every replica (Mirrored, a plain tensor), reduce and all_reduce return the value
 * unchanged, integer dtype included, as TF's do. */
#define DIST_REDUCE_MIN 3 /**< the minimum */
#define DIST_REDUCE_MAX 4 /**< the maximum */
#define DIST_REDUCE_PRODUCT 5 /**< the product */
/** @} */

/** A replica function, called by dist_strategy_run once per replica on that replica's
 * thread. `args` are the run arguments unwrapped for this replica (a PerReplica or
 * Mirrored value becomes this replica's tensor; tensors and variables are passed as they
 * are), borrowed for the call. The function may store up to `num_results` new values in
 * `results` (pre-set to NULL); the library takes ownership of them. Every dist_ call that
 * takes a dist_context_t is legal inside it, and so are tensor and variable calls.
 * Returning a status other than DIST_OK fails the run: the status and this thread's
 * dist_last_error_message() (or a message naming the replica) reach the caller. */
typedef dist_status_t (*dist_replica_fn)(dist_context_t* context, const dist_value_t* const* args,
                                         int32_t num_args, dist_value_t** results,
                                         int32_t num_results, void* user_data);

/** Builds replica `replica_id`'s component of a per-replica value (replica_id counts every
 * worker's replicas); *out takes a new tensor (pre-set to NULL). Called on the thread that
 * called dist_strategy_distribute_values_from_function, in cross-replica context: tensor
 * calls are legal in it, replica-context calls are not. */
typedef dist_status_t (*dist_value_fn)(int32_t replica_id, int32_t num_replicas,
                                       dist_value_t** out, void* user_data);

/** An update function for dist_strategy_update, called once per component of the variable
 * (on the calling thread, in update context) with that component (a plain variable on
 * one device) and the arguments unwrapped for its device. It may store one new value in
 * *out (pre-set to NULL). */
typedef dist_status_t (*dist_update_fn)(dist_value_t* variable, const dist_value_t* const* args,
                                        int32_t num_args, dist_value_t** out, void* user_data);

/* ---- Creation ---- */

/** A OneDeviceStrategy on `device` (e.g. "CPU:0"). The devices of these local strategies
 * are this process's: a name may leave out job, replica and task or give those of the
 * local task, /job:localhost/replica:0/task:0; another job, replica or task
 * ("/job:ps/task:7/device:CPU:0") is DIST_INVALID_ARGUMENT naming the device and the local
 * task. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_create_one_device(const char* device,
                                                                      dist_strategy_t** out);

/** A MirroredStrategy over `devices` (num_devices names; NULL and 0 mean every local GPU,
 * or every logical CPU device when there is no GPU; "GPU:*" names every GPU). Devices must
 * be distinct, and all CPU devices or all GPUs. On GPUs each replica has its own stream;
 * replica-context collectives run on NCCL or the plugin's kernels (cross_device_ops.h) and
 * leave results on each replica's GPU; cross-replica reductions and variable updates stage
 * GPU values through the host.
 * `cross_device_ops` may be NULL (chosen automatically); the strategy keeps its own
 * reference. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_create_mirrored(
    const char* const* devices, int32_t num_devices,
    const dist_cross_device_ops_t* cross_device_ops, dist_strategy_t** out);

/** A CentralStorageStrategy: replicas on `compute_devices` (as for Mirrored), variables in
 * one copy on `parameter_device` (NULL: "CPU:0" when computing on several devices,
 * otherwise the single compute device). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_create_central_storage(
    const char* const* compute_devices, int32_t num_devices, const char* parameter_device,
    dist_strategy_t** out);

/* ---- Multi-worker ---- */

/** @name Communication implementations */ /** @{ */
/** How a MultiWorkerMirroredStrategy's collectives run between workers. Values are the
 * DIST_COMMUNICATION_* constants. */
typedef int32_t dist_communication_implementation_t;

/** Chosen by the library: for CPU replicas, shared memory between workers on one host and
 * Gloo over TCP between hosts (see dist_communication_options_set_shared_memory). The same
 * transports carry the host side of GPU workers (DIST_COMMUNICATION_NCCL). */
#define DIST_COMMUNICATION_AUTO 0
/** TF's RING: for CPU replicas the same transports as AUTO (the collectives are
 * reduce-scatter + all-gather either way). */
#define DIST_COMMUNICATION_RING 1
/** NCCL: GPU replicas. Each worker's replicas are its GPUs (every one, or the first
 * replicas_per_worker); one NCCL communicator spans every GPU of the job. Without usable
 * GPUs creation fails with DIST_FAILED_PRECONDITION giving the reason. (TF's AUTO picks
 * NCCL on a machine with GPUs; here AUTO keeps CPU replicas, so that workers sharing a
 * host's GPU, as local jobs do, keep working: ask for NCCL.) */
#define DIST_COMMUNICATION_NCCL 2
/** @} */

/** @name Shared-memory modes */ /** @{ */
/** Whether workers on one host exchange bytes through shared memory (a POSIX segment per
 * worker, unlinked as soon as every worker has mapped it) instead of TCP. Values are the
 * DIST_SHARED_MEMORY_* constants. */
typedef int32_t dist_shared_memory_t;

/** The DIST_SHARED_MEMORY environment variable ("auto", "on" or "off") when it is set, else
 * shared memory when every worker is on this host: the same hostname, boot id and network
 * namespace, and each worker can open the others' segments. */
#define DIST_SHARED_MEMORY_AUTO 0
/** Shared memory required: creation fails with DIST_FAILED_PRECONDITION naming each
 * worker's host when the workers are not all on one host. */
#define DIST_SHARED_MEMORY_ON 1
/** Never: Gloo over TCP even between workers on one host. */
#define DIST_SHARED_MEMORY_OFF 2
/** @} */

/** New communication options with the defaults: AUTO, the default pack size, the
 * strategy's default timeout (60000 ms) and the default replicas per worker (see
 * dist_communication_options_set_replicas_per_worker). On success *out is the caller's.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_communication_options_create(
    dist_communication_options_t** out);
/** Releases options. Accepts NULL. A strategy created with them keeps its own copy.
 * Thread-safety: one thread at a time per handle. */
DIST_API void dist_communication_options_destroy(dist_communication_options_t* options);

/** DIST_INVALID_ARGUMENT for a value that is not a DIST_COMMUNICATION_* constant.
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_communication_options_set_implementation(
    dist_communication_options_t* options, dist_communication_implementation_t implementation);
/** Sets the shared-memory mode (a DIST_SHARED_MEMORY_* constant; the default is AUTO).
 * A failing worker behaves as over TCP: a worker that dies makes the others' collectives
 * fail with DIST_UNAVAILABLE naming it, one that stops responding makes them fail with
 * DIST_DEADLINE_EXCEEDED at the timeout. Errors: DIST_INVALID_ARGUMENT for another value
 * (nothing changes); an invalid DIST_SHARED_MEMORY value makes strategy creation fail
 * with DIST_INVALID_ARGUMENT naming it.
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_communication_options_set_shared_memory(
    dist_communication_options_t* options, dist_shared_memory_t mode);
/** The largest pack small tensors are fused into (bytes, >= 0; 0: the default).
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_communication_options_set_bytes_per_pack(
    dist_communication_options_t* options, int64_t bytes_per_pack);
/** The deadline of start-up (every worker must arrive within it) and of every collective
 * between workers, in milliseconds (0 < ms <= 604800000, a week; 0: the default, 60000).
 * A worker that stops responding makes the collectives of the others fail with
 * DIST_DEADLINE_EXCEEDED when it passes; a worker that dies makes them fail with
 * DIST_UNAVAILABLE naming it, at once. Either failure is final for the strategy: every
 * later collective fails at once with the same cause.
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_communication_options_set_timeout_ms(
    dist_communication_options_t* options, int64_t timeout_ms);
/** How many replicas this worker runs (1 <= n <= DIST_MAX_LOGICAL_CPU_DEVICES): its
 * logical CPU devices CPU:0 ... CPU:n-1, made available if the process exposes fewer
 * (the logical CPU device count is raised to n, never lowered). 0 restores the default:
 * the DIST_REPLICAS_PER_WORKER environment variable when it is set (read at strategy
 * creation; a value that is not an integer in that range makes creation fail with
 * DIST_INVALID_ARGUMENT naming it), else one replica per worker, as in TF. Every worker
 * must use the same count.
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_communication_options_set_replicas_per_worker(
    dist_communication_options_t* options, int32_t replicas_per_worker);
/** The job token of the strategy's server (dist_server_options_set_job_token says what it
 * is); NULL or "": DIST_JOB_TOKEN from the environment, or none. Errors:
 * DIST_INVALID_ARGUMENT for a malformed token (nothing changes).
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_communication_options_set_job_token(
    dist_communication_options_t* options, const char* token);
/** TLS for the strategy's server and its connection to the chief: the same three files,
 * rules and errors as dist_server_options_set_tls_files (all NULL or "": the DIST_TLS_*
 * environment variables, else none). The files are read when the strategy is created.
 * Errors: DIST_INVALID_ARGUMENT for a certificate without a key or a key without a
 * certificate, a CA without both, or a path longer than 4096 bytes (nothing changes).
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_communication_options_set_tls_files(
    dist_communication_options_t* options, const char* cert_path, const char* key_path, const char* ca_path);

/** A MultiWorkerMirroredStrategy: synchronous training on every worker task (the chief and
 * the worker tasks) of `cluster`, whose current task is this process; NULL `cluster`
 * reads TF_CONFIG from the environment. Every worker runs the same program and creates
 * its strategies in the same order. This process's replicas are its logical CPU devices
 * CPU:0 ... CPU:n-1, n from dist_communication_options_set_replicas_per_worker (by
 * default DIST_REPLICAS_PER_WORKER, else 1; the same n on every worker), or with
 * DIST_COMMUNICATION_NCCL its GPUs (the same number on every worker);
 * num_replicas_in_sync counts the replicas of all workers, and replica ids run over
 * them, worker by worker in rank order (the chief first).
 *
 * When `cluster` is NULL and TF_CONFIG is unset, empty, "{}" or has no (or an empty)
 * "cluster", the strategy runs as TF's does: one local worker with this process's
 * replicas, with no server, no ports and no waiting.
 *
 * Creation starts this task's server (dist_server_t; on the chief it hosts the
 * coordination service) at the task's address, waits for every worker at a start-up
 * barrier, and connects the workers' transport (shared memory on one host, else Gloo
 * over TCP; dist_communication_options_set_shared_memory). `options` may be NULL
 * (defaults).
 *
 * Collectives (all_reduce, all_gather, broadcast, and reduce, gather, reduce_to and
 * batch_reduce_to in cross-replica context) span all workers: local reduce, cross-worker
 * exchange, local broadcast. Results are identical on every worker, and equal bit for bit
 * to those of a single-process MirroredStrategy with as many replicas when the number of
 * workers is a power of two. With NCCL, all_reduce and broadcast run on NCCL across every
 * GPU (its own summation order: reproducible with a fixed NCCL version, topology,
 * NCCL_ALGO and NCCL_PROTO), after the workers check through NCCL that they all make the
 * same call; all_gather and the cross-replica calls go through the host transport. Variables start on every worker from the chief's initial
 * value. distribute_dataset gives this worker's replicas their rows of each global batch
 * (DATA, or AUTO without enough files to shard) or shards the files (FILE).
 *
 * Destroying the strategy (its last reference) waits, up to the timeout, until every
 * worker has destroyed its own (unless the strategy has failed): destroy it before the
 * process exits, or a worker still finishing its last collective may see this one as dead.
 *
 * Errors: DIST_INVALID_ARGUMENT for bad options or a current task that is not a worker;
 * a TF_CONFIG that describes a cluster wrongly (the entry named); DIST_DEADLINE_EXCEEDED
 * naming the tasks that did not arrive within the timeout; DIST_UNAVAILABLE when the
 * chief's coordination service cannot be reached (named; also a failed TLS handshake) or
 * the task's port is taken; DIST_NOT_FOUND or DIST_INVALID_ARGUMENT for a TLS file (named);
 * DIST_FAILED_PRECONDITION for NCCL without usable GPUs; DIST_INVALID_ARGUMENT when
 * workers bring different numbers of GPUs; DIST_DEADLINE_EXCEEDED when the NCCL
 * communicator does not complete (naming this worker's ranks). Blocks up to the options'
 * timeout.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_create_multi_worker_mirrored(
    const dist_cluster_t* cluster, const dist_communication_options_t* options,
    dist_strategy_t** out);

/** A new reference to the process's default strategy. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_get_default(dist_strategy_t** out);

/** Releases this reference. Accepts NULL. The strategy lives on while values, contexts or
 * scopes still use it; its threads stop when the last reference is gone. Must not be
 * called from one of its own replica threads during `run`.
 * Thread-safety: one thread at a time per handle. */
DIST_API void dist_strategy_destroy(dist_strategy_t* strategy);

/* ---- Properties ---- */

/** The strategy's kind (a DIST_STRATEGY_* constant). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_kind(const dist_strategy_t* strategy,
                                                         dist_strategy_kind_t* out_kind);

/** The number of replicas (tf.distribute.Strategy.num_replicas_in_sync): every worker's
 * under MultiWorkerMirrored. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_num_replicas_in_sync(
    const dist_strategy_t* strategy, int32_t* out_count);

/** The compute device of this process's replica `index` (StrategyExtended.worker_devices),
 * canonical name, borrowed: valid while the strategy lives. DIST_OUT_OF_RANGE for a bad
 * index. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_worker_device(const dist_strategy_t* strategy,
                                                                  int32_t index,
                                                                  const char** out_borrowed_device);

/** The number of devices variables are placed on (StrategyExtended.parameter_devices).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_parameter_device_count(
    const dist_strategy_t* strategy, int32_t* out_count);

/** Parameter device `index`, canonical name, borrowed: valid while the strategy lives.
 * DIST_OUT_OF_RANGE for a bad index. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_parameter_device(
    const dist_strategy_t* strategy, int32_t index, const char** out_borrowed_device);

/** Sets the bound on every blocking wait of this strategy, in milliseconds (> 0; the
 * default is 60000). Any value up to INT64_MAX is accepted; waits longer than
 * 100000000000 ms (about 3 years) are bounded at that.
 * Thread-safety: safe; waits already in progress keep their deadline. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_set_timeout_ms(dist_strategy_t* strategy,
                                                                   int64_t timeout_ms);

/* ---- Scopes and the current strategy ---- */

/** Enters the strategy's scope on this thread (a thread-local stack). Re-entering the
 * scope of the strategy already current is allowed; entering a different strategy's
 * scope inside another's is DIST_FAILED_PRECONDITION. Each enter needs one exit.
 * Thread-safety: affects the calling thread only. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_scope_enter(dist_strategy_t* strategy);

/** Leaves the innermost scope, which must be `strategy`'s (else DIST_FAILED_PRECONDITION,
 * and nothing changes). Not marked warn-unused-result, so that failure paths can call it
 * as cleanup. Thread-safety: affects the calling thread only. */
DIST_API dist_status_t dist_strategy_scope_exit(dist_strategy_t* strategy);

/** A new reference to the current strategy: the innermost scope's, the one set with
 * dist_experimental_set_strategy, or the default strategy. Inside a replica function,
 * the strategy running it. Owned by the caller. Thread-safety: safe (per thread). */
DIST_API DIST_NODISCARD dist_status_t dist_get_strategy(dist_strategy_t** out);

/** 1 when a non-default strategy is current on this thread, else 0.
 * Thread-safety: safe (per thread). */
DIST_API DIST_NODISCARD dist_status_t dist_has_strategy(int32_t* out_has);

/** 1 in cross-replica context (inside a scope, or inside merge_call's function), 0 in
 * replica context (inside a replica function, or with no scope under the default
 * strategy), as tf.distribute.in_cross_replica_context. Thread-safety: safe (per thread). */
DIST_API DIST_NODISCARD dist_status_t dist_in_cross_replica_context(int32_t* out_in_cross);

/** The current replica context (tf.distribute.get_replica_context), or NULL in
 * cross-replica context (inside a scope or merge_call's function). With no scope, the
 * default strategy's replica context. Borrowed, never destroyed by the caller: a run's
 * context is valid until the replica function returns, a joined replica's until
 * dist_context_leave, the default strategy's for the life of the process. Never fails.
 * Thread-safety: safe; the result belongs to the calling thread. */
DIST_API dist_context_t* dist_current_replica_context(void);

/** Makes `strategy` current on this thread without a scope (NULL restores the default),
 * like tf.distribute.experimental_set_strategy. Fails inside a scope
 * (DIST_FAILED_PRECONDITION). Thread-safety: affects the calling thread only. */
DIST_API DIST_NODISCARD dist_status_t dist_experimental_set_strategy(dist_strategy_t* strategy);

/** The reduce op a loss should be aggregated with: DIST_REDUCE_SUM, as TF returns outside
 * Estimator. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_get_loss_reduction(dist_reduce_op_t* out_op);

/* ---- Running replicas ---- */

/** Calls `fn(..., user_data)` once per replica, concurrently, in replica context: replica 0
 * on the calling thread, the others on the strategy's threads (named "dist-replica-<i>").
 * Each result slot i merges the replicas' results: one replica's value as it is; the same
 * variable from every replica as that variable; otherwise a PerReplica value. A slot no
 * replica filled is NULL. `results` has room for num_results values, owned by the caller.
 * Errors: the first replica error (see dist_replica_fn); DIST_FAILED_PRECONDITION when
 * called from replica context or from merge_call's function. Blocks until every replica
 * function returned: the library's own waits in it (collectives, merge_call, the
 * rendezvous) are bounded by the timeout, the functions' own work is not.
 * Thread-safety: one `run` per strategy at a time; others wait their turn. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_run(dist_strategy_t* strategy,
                                                        dist_replica_fn fn, void* user_data,
                                                        const dist_value_t* const* args,
                                                        int32_t num_args, dist_value_t** results,
                                                        int32_t num_results);

/** A PerReplica value whose component i is fn(i, num_replicas)
 * (experimental_distribute_values_from_function); with one replica, that tensor. `fn`
 * runs on the calling thread, once per replica, during this call.
 * Cross-replica. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_distribute_values_from_function(
    dist_strategy_t* strategy, dist_value_fn fn, void* user_data, dist_value_t** out);

/** StrategyExtended.value_container: for a component of a distributed variable (from
 * dist_value_component or an update function), a new handle to that distributed
 * variable; for anything else, a new handle to the value itself. Owned by the caller.
 * Works in any context. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_value_container(dist_strategy_t* strategy,
                                                                    const dist_value_t* value,
                                                                    dist_value_t** out);

/** Lets this thread act as replica `replica_id` without `run` (bring your own threads):
 * every thread 0 ... n-1 joins, n being this process's replicas (under
 * MultiWorkerMirrored its replicas per worker: `replica_id` is local, and
 * dist_context_replica_id gives the replica's id among all workers' replicas), uses the
 * context with the usual replica calls
 * (collectives rendezvous as under `run`), and leaves with dist_context_leave. A replica
 * id can be joined by one thread at a time, and not while `run` is active. *out is owned
 * by the caller and released with dist_context_leave (never `dist_*_destroy`). Never
 * blocks; the joined replicas' collectives wait as under `run` (bounded by the timeout).
 * Thread-safety: call from the thread that will act as the replica. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_join_replica(dist_strategy_t* strategy,
                                                                 int32_t replica_id,
                                                                 dist_context_t** out);

/* ---- Cross-replica reductions ---- */

/** Reduces a distributed value across replicas (tf.distribute.Strategy.reduce with
 * axis=None): element-wise over its components, which must agree in dtype and shape; the
 * result is a tensor on the first worker device. A Mirrored value under MEAN, and a plain
 * tensor under MEAN, MIN or MAX or with one replica, reduce to themselves; a plain tensor
 * under SUM or PRODUCT with several replicas is DIST_INVALID_ARGUMENT, as in TF.
 * Cross-replica (see the top of this file). Under MultiWorkerMirrored a collective:
 * blocks until every worker makes the same call, at most the strategy's timeout.
 * Thread-safety: one cross-replica call per strategy at a time (under MultiWorkerMirrored,
 * in the same order on every worker). */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_reduce(dist_strategy_t* strategy,
                                                           dist_reduce_op_t op,
                                                           const dist_value_t* value,
                                                           dist_value_t** out);

/** Reduces across replicas and along `axis` of each component (negative counts from the
 * end). Components may differ in that axis's length (a partial batch): MEAN divides by
 * the total number of reduced elements.
 * Cross-replica; blocks as dist_strategy_reduce.
 * Thread-safety: as dist_strategy_reduce. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_reduce_axis(dist_strategy_t* strategy,
                                                                dist_reduce_op_t op,
                                                                const dist_value_t* value,
                                                                int32_t axis, dist_value_t** out);

/** Concatenates the components along `axis` (Strategy.gather).
 * Cross-replica; blocks as dist_strategy_reduce.
 * Thread-safety: as dist_strategy_reduce. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_gather(dist_strategy_t* strategy,
                                                           const dist_value_t* value, int32_t axis,
                                                           dist_value_t** out);

/** StrategyExtended.reduce_to: reduces `value` to the devices of `destinations` (a
 * variable, a distributed value or a tensor). The result is Mirrored over those devices,
 * or a tensor for one device.
 * Cross-replica; blocks as dist_strategy_reduce.
 * Thread-safety: as dist_strategy_reduce. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_reduce_to(dist_strategy_t* strategy,
                                                              dist_reduce_op_t op,
                                                              const dist_value_t* value,
                                                              const dist_value_t* destinations,
                                                              dist_value_t** out);

/** reduce_to with a device name as the destination.
 * Cross-replica; blocks as dist_strategy_reduce.
 * Thread-safety: as dist_strategy_reduce. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_reduce_to_device(dist_strategy_t* strategy,
                                                                     dist_reduce_op_t op,
                                                                     const dist_value_t* value,
                                                                     const char* device,
                                                                     dist_value_t** out);

/** StrategyExtended.batch_reduce_to: `count` reduce_to calls fused into one collective.
 * `outs` has room for `count` values.
 * Cross-replica; blocks as dist_strategy_reduce.
 * Thread-safety: as dist_strategy_reduce. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_batch_reduce_to(
    dist_strategy_t* strategy, dist_reduce_op_t op, const dist_value_t* const* values,
    const dist_value_t* const* destinations, int32_t count, dist_value_t** outs);

/** StrategyExtended.update: calls fn once per component of `variable` with `args`
 * unwrapped for that component's device (Mirrored values to their component; PerReplica
 * values are an error). With group != 0 the results merge into a Mirrored value (a tensor
 * for one component); with group == 0 *out is a PerReplica value of the results.
 * `fn` runs on the calling thread, in update context (cross-replica: reads, assignments
 * and cross-replica calls are legal in it; replica-context calls are not). Works with no
 * scope entered, as in TF. Cross-replica. Never waits for other replicas.
 * Thread-safety: safe; updates of one variable are serialised. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_update(dist_strategy_t* strategy,
                                                           dist_value_t* variable,
                                                           dist_update_fn fn, void* user_data,
                                                           const dist_value_t* const* args,
                                                           int32_t num_args, int32_t group,
                                                           dist_value_t** out);

/** @name Colocation (colocate_vars_with) */ /** @{ */
/** Variables created (on this thread) until the matching exit are placed on the devices
 * of `variable` (StrategyExtended.colocate_vars_with). Must be inside this strategy's
 * scope (DIST_FAILED_PRECONDITION otherwise, also in replica context). The exit is not
 * warn-unused-result (a cleanup call); it fails with DIST_FAILED_PRECONDITION when no
 * colocation of this strategy is innermost. Never block.
 * Thread-safety: affect the calling thread only. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_colocate_vars_with_enter(
    dist_strategy_t* strategy, const dist_value_t* variable);
DIST_API dist_status_t dist_strategy_colocate_vars_with_exit(
    dist_strategy_t* strategy);
/** @} */

/** 1 when `variable` was created inside this strategy's scope, else 0.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_variable_created_in_scope(
    const dist_strategy_t* strategy, const dist_value_t* variable, int32_t* out_created);

/* ---- Saving variables ---- */

/** Saves every live variable created in this strategy's scope to `path` in the
 * safetensors format, one entry per variable name. SyncOnRead variables are saved
 * aggregated (their cross-replica value). The file is written beside `path` under a
 * temporary name ("<path>.tmp-<writer>-<unique>", the writer being this machine's boot,
 * the process and its start time) and renamed over it, so `path` is never half-written;
 * temporaries of `path` that writers killed before their rename left behind are removed
 * by the next save when their writer process is gone (never a live writer's).
 * Cross-replica. Blocks on file I/O (and, under MultiWorkerMirrored, on reading SyncOnRead
 * variables across workers, bounded by the timeout). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_save_variables(dist_strategy_t* strategy,
                                                                   const char* path);

/** Restores every live variable of this strategy from a safetensors file written by
 * dist_strategy_save_variables (or any tool). A SyncOnRead variable restored from its
 * single saved value gets value / num_replicas on every replica for SUM aggregation and
 * the value itself for MEAN (and the others). A missing name, or a shape or dtype that
 * does not match, is an error and changes no variable. Cross-replica. Blocks on file I/O.
 * Tensors no variable names are skipped whatever their dtype, so files of other producers
 * holding U16, U32, U64, C64 or F8 tensors restore; a variable's own tensor must have a
 * dtype of this library (BOOL, U8, I8, I16, I32, I64, F16, BF16, F32, F64).
 * Thread-safety: safe; not concurrently with assignments to the same variables. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_restore_variables(dist_strategy_t* strategy,
                                                                      const char* path);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_STRATEGY_H_ */
