/** @file
 * distribute — the cluster coordinator of TF 2's parameter-server training
 * (tf.distribute.experimental.coordinator.ClusterCoordinator over ParameterServerStrategy).
 *
 * One process, the chief, is the coordinator: it creates a ParameterServerStrategy, its
 * variables (which live on the ps tasks) and a coordinator over the strategy, and then
 * schedules functions by name. Worker and ps tasks only serve: each registers the job's
 * functions (dist_closure_register, dist_dataset_function_register; the same names in
 * every process, before its server starts), creates its server (dist_server_create) and
 * dist_server_join's it. A "worker" task's server runs the closures the coordinator sends
 * it, one at a time, with a ParameterServerStrategy of its own (its replicas: the
 * coordinator strategy's replicas per worker) whose variables are the coordinator's.
 *
 * Semantics (TF's):
 * - dist_coordinator_schedule returns at once with a remote value; the closure (function
 *   name and arguments) runs on some free worker. dist_remote_value_fetch waits for its
 *   result; dist_coordinator_join waits for every closure scheduled; done says whether all
 *   have finished.
 * - A worker that dies, or stops answering within the strategy's timeout, has its closure
 *   put back at the front of the queue and run on another worker: a closure is never lost
 *   and its remote value is resolved once. Its effects on variables may then have happened
 *   twice (TF's at-least-once: the worker may have updated a variable before it died).
 *   The coordinator keeps probing a lost worker; when it answers again (restarted), it is
 *   given closures again and its per-worker datasets and iterators are created anew.
 * - An error of a function itself (a ps task that cannot be reached is one: DIST_UNAVAILABLE
 *   naming it) fails its remote value and is reported by the next schedule, join or done
 *   (once: the call that reports it clears it); the closures still queued then are cancelled
 *   (their remote values fail with DIST_CANCELLED). DIST_OUT_OF_RANGE from a per-worker
 *   iterator is such an error: the end of an epoch surfaces at join.
 * - Every wait is bounded: fetch and join fail with DIST_DEADLINE_EXCEEDED when no
 *   closure has finished for the strategy's timeout (dist_strategy_set_timeout_ms), naming
 *   the workers that are lost.
 *
 * Wire and security: closures travel as a function name and typed arguments (tensors,
 * variable descriptions, per-worker resource ids) in messages of at most 4 MiB, carrying
 * the job token; a worker refuses a request without it, an unknown function name, and
 * arguments that do not decode. */
#ifndef DISTRIBUTE_COORDINATOR_H_
#define DISTRIBUTE_COORDINATOR_H_

#include <stdint.h>

#include "distribute/dataset.h"
#include "distribute/export.h"
#include "distribute/input.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/* ---- Functions run on workers (every process registers the same ones) ---- */

/** A scheduled function, run on a worker. `strategy` is the worker's
 * ParameterServerStrategy (lent for the call): dist_strategy_run on it runs a replica
 * function on the worker's replicas, and its variables are the ones the arguments name.
 * `args` (lent) are the arguments, resolved on this worker (dist_closure_args_value,
 * dist_closure_args_iterator). The function may store a tensor in *out_result (the library
 * takes it; NULL: no result), which the coordinator's remote value returns. Return DIST_OK
 * or an error code; the message of the last failed library call on this thread during the
 * function goes with it. */
typedef dist_status_t (*dist_closure_fn)(dist_strategy_t* strategy, const dist_closure_args_t* args,
                                         dist_value_t** out_result, void* user_data);

/** Registers closure function `name` (1 to 1024 bytes of printable ASCII) in this process.
 * `free_fn` (may be NULL) releases user_data when the function is unregistered.
 * Errors: DIST_INVALID_ARGUMENT for a bad name or NULL fn; DIST_ALREADY_EXISTS for a name
 * in use; DIST_RESOURCE_EXHAUSTED past 1024 functions. Nothing is registered then (and
 * user_data is not released). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_closure_register(const char* name, dist_closure_fn fn,
                                                            void* user_data, dist_free_fn free_fn);
/** DIST_NOT_FOUND when absent. Calls running finish first. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_closure_unregister(const char* name);
/** 1 when `name` is a registered closure function in this process. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_closure_is_registered(const char* name, int32_t* out_registered);

/** Registers dataset function `name` for dist_coordinator_create_per_worker_dataset: a
 * worker calls it with its input context (num_input_pipelines: the number of workers the
 * coordinator schedules on; input_pipeline_id: this worker's place among them) to build
 * its dataset. Same rules and errors as
 * dist_closure_register. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_function_register(const char* name, dist_dataset_fn fn,
                                                                     void* user_data, dist_free_fn free_fn);
/** Removes dataset function `name`, as dist_closure_unregister removes a closure function.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dataset_function_unregister(const char* name);

/* ---- Arguments of a scheduled function ---- */

/** @name Argument kinds */ /** @{ */
/** The kind of an argument of a scheduled function (dist_closure_args_kind). Values are
 * the DIST_CLOSURE_ARG_* constants. */
typedef int32_t dist_closure_arg_kind_t;
#define DIST_CLOSURE_ARG_TENSOR 0   /**< a host tensor, copied into the closure */
#define DIST_CLOSURE_ARG_VARIABLE 1 /**< a variable of the coordinator's strategy */
#define DIST_CLOSURE_ARG_ITERATOR 2 /**< a per-worker iterator: each worker's own */
/** @} */

/** An empty argument list, owned by the caller (at most 64 arguments of at most 4 MiB of
 * tensor data together). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_closure_args_create(dist_closure_args_t** out);
/** Accepts NULL; does nothing for a list lent to a closure function.
 * Thread-safety: owner thread only. */
DIST_API void dist_closure_args_destroy(dist_closure_args_t* args);
/** Appends a tensor (copied when scheduled; its device must be a CPU) or a variable of a
 * ParameterServerStrategy (passed by reference: the worker reads and updates the same
 * variable). DIST_INVALID_ARGUMENT for another value (a PerReplica or Mirrored value, a
 * variable of another strategy kind), past 64 arguments or 4 MiB; nothing changes then.
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_closure_args_add_value(dist_closure_args_t* args,
                                                                  const dist_value_t* value);
/** Appends a per-worker iterator (dist_per_worker_make_iterator): the closure sees the
 * iterator of the worker it runs on. DIST_INVALID_ARGUMENT for a per-worker dataset.
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_closure_args_add_per_worker(dist_closure_args_t* args,
                                                                       const dist_per_worker_t* value);
/** @name Argument count and kinds */ /** @{ */
/** The number of arguments, and the kind of argument `index` (DIST_OUT_OF_RANGE for a bad
 * index). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_closure_args_count(const dist_closure_args_t* args,
                                                              int32_t* out_count);
DIST_API DIST_NODISCARD dist_status_t dist_closure_args_kind(const dist_closure_args_t* args, int32_t index,
                                                             dist_closure_arg_kind_t* out_kind);
/** @} */
/** In a closure function: argument `index`, a tensor or a variable of the worker's strategy,
 * lent for the call (read and update it; do not destroy it). On a list made with
 * dist_closure_args_create: the value added (lent as well). DIST_INVALID_ARGUMENT when the
 * argument is an iterator; DIST_OUT_OF_RANGE for a bad index. Thread-safety: safe while no
 * thread adds to the list. */
DIST_API DIST_NODISCARD dist_status_t dist_closure_args_value(const dist_closure_args_t* args, int32_t index,
                                                              dist_value_t** out_value);
/** In a closure function: this worker's iterator of per-worker iterator argument `index`,
 * lent for the call; dist_iterator_get_next on it yields PerReplica values for
 * dist_strategy_run, and DIST_OUT_OF_RANGE at the end (return it: it ends the epoch at
 * the coordinator's join). DIST_INVALID_ARGUMENT for another kind of argument, or on a
 * list made with dist_closure_args_create; DIST_OUT_OF_RANGE for a bad index.
 * Thread-safety: safe while no thread adds to the list. */
DIST_API DIST_NODISCARD dist_status_t dist_closure_args_iterator(const dist_closure_args_t* args, int32_t index,
                                                                 dist_iterator_t** out_iterator);

/* ---- The coordinator (on the chief) ---- */

/** A coordinator over `strategy`, a ParameterServerStrategy created on the chief of its
 * cluster (the "chief" task, or worker 0 when there is none, as under distrun): the
 * coordinator schedules on the other "worker" tasks, at least one. The
 * coordinator keeps the strategy alive. Creation returns at once; workers that are not up
 * yet are waited for by the closures (as lost workers are).
 * Errors: DIST_INVALID_ARGUMENT for another strategy kind, a local-mode strategy, a
 * cluster without a worker task besides the chief, or a current task that is not the chief;
 * DIST_ALREADY_EXISTS when the strategy has a coordinator already (TF allows one).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_coordinator_create(dist_strategy_t* strategy,
                                                              dist_coordinator_t** out);
/** Cancels the closures still queued, waits for those running (at most the strategy's
 * timeout), releases the per-worker resources on the workers and the coordinator.
 * Accepts NULL. Remote values and per-worker handles stay valid (a remote value not
 * resolved then fails with DIST_CANCELLED). Thread-safety: owner thread only, with no
 * other call on this coordinator in flight. */
DIST_API void dist_coordinator_destroy(dist_coordinator_t* coordinator);

/** Schedules registered closure function `function` with `args` (NULL: none; copied, so
 * the list may be destroyed or changed at once) and returns at once with its remote value
 * in *out (owned by the caller). The queue holds at most 65536 closures: past that,
 * schedule waits for room (at most the timeout).
 * Errors: the error of a closure that failed since the last join, schedule or done (which
 * also cancels the closures queued; *out is then NULL and nothing is scheduled);
 * DIST_INVALID_ARGUMENT for a bad function name or an argument of another coordinator's
 * strategy; DIST_DEADLINE_EXCEEDED when the queue stayed full for the timeout.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_coordinator_schedule(dist_coordinator_t* coordinator,
                                                                const char* function,
                                                                const dist_closure_args_t* args,
                                                                dist_remote_value_t** out);
/** Waits until every closure scheduled so far has finished. Errors: the first error of a
 * closure since the last join, schedule or done (cleared by being reported; the queued
 * closures are cancelled); DIST_DEADLINE_EXCEEDED when no closure finished, and none went
 * back to the queue from a lost worker, for the strategy's timeout (the closures carry on;
 * a closure that hangs on a stopped worker is put back when its request's timeout ends,
 * which restarts the wait, so a healthy worker gets to run it). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_coordinator_join(dist_coordinator_t* coordinator);
/** *out_done is 1 when no closure is queued or running, else 0. Errors: as join's (a
 * closure's error is reported here once). Never blocks. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_coordinator_done(dist_coordinator_t* coordinator,
                                                            int32_t* out_done);
/** The number of worker tasks the coordinator schedules on. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_coordinator_num_workers(const dist_coordinator_t* coordinator,
                                                                   int32_t* out_count);

/* ---- Remote values ---- */

/** Waits for the closure and gives its result: *out a new tensor owned by the caller, or
 * NULL when the function stored none. May be called again (a new copy each time).
 * Errors: the closure's own error (code and message, from any later fetch as well);
 * DIST_CANCELLED for a closure cancelled after another failed, or by destroy;
 * DIST_DEADLINE_EXCEEDED as join's. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_remote_value_fetch(dist_remote_value_t* value, dist_value_t** out);
/** *out_ready is 1 once the closure has finished (with a result or an error), else 0.
 * Never blocks. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_remote_value_is_ready(const dist_remote_value_t* value,
                                                                 int32_t* out_ready);
/** Releases a remote value; the closure still runs. Accepts NULL.
 * Thread-safety: owner thread only. */
DIST_API void dist_remote_value_destroy(dist_remote_value_t* value);

/* ---- Per-worker datasets and iterators ---- */

/** coordinator.create_per_worker_dataset: every worker builds a dataset with registered
 * dataset function `dataset_function` and distributes it over its replicas as
 * dist_strategy_distribute_dataset does, auto-sharded across the worker tasks by the
 * options' policy (AUTO, FILE, DATA, OFF; NULL options: the defaults). The result, owned
 * by the caller, is a per-worker value: make iterators of it with
 * dist_per_worker_make_iterator. Workers build it when they first need it (and again
 * after a restart); a function a worker does not know, or a dataset that fails to build,
 * fails the closures that use it. Errors: DIST_INVALID_ARGUMENT for a bad name.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_coordinator_create_per_worker_dataset(
    dist_coordinator_t* coordinator, const char* dataset_function, const dist_input_options_t* options,
    dist_per_worker_t** out);
/** The same, as dist_strategy_distribute_datasets_from_function: the dataset function
 * shards by its input context itself, and nothing is auto-sharded. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_coordinator_create_per_worker_dataset_from_function(
    dist_coordinator_t* coordinator, const char* dataset_function, const dist_input_options_t* options,
    dist_per_worker_t** out);
/** iter(per_worker_dataset): a new per-worker iterator (a fresh pass on every worker),
 * owned by the caller. DIST_INVALID_ARGUMENT for an iterator. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_per_worker_make_iterator(const dist_per_worker_t* dataset,
                                                                    dist_per_worker_t** out);
/** Releases a per-worker dataset or iterator (and, in the background, its components on
 * the workers). Closures already scheduled with it still see it. Accepts NULL.
 * Thread-safety: owner thread only. */
DIST_API void dist_per_worker_destroy(dist_per_worker_t* value);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_COORDINATOR_H_ */
