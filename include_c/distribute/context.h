/** @file
 * distribute — the replica context (tf.distribute.ReplicaContext).
 *
 * A dist_context_t is handed to each replica function by dist_strategy_run (borrowed,
 * valid until the function returns), returned by dist_current_replica_context (borrowed),
 * or created by dist_strategy_join_replica (owned, released with dist_context_leave).
 * Its calls are collective: every replica of the strategy must make the same sequence of
 * collective calls with values of the same dtype and shape (the op and count must match
 * too); a mismatch is DIST_INVALID_ARGUMENT on every replica, naming the replicas that
 * disagree; so is an argument one replica finds
 * invalid (a bad axis, a bool SUM): every replica's call fails with that replica's reason,
 * and the replicas may go on to the next collective. Each wait is bounded by the
 * strategy's timeout (DIST_DEADLINE_EXCEEDED), and a failure of another replica releases
 * it with DIST_ABORTED.
 * Thread-safety: owner thread only (the replica's thread). */
#ifndef DISTRIBUTE_CONTEXT_H_
#define DISTRIBUTE_CONTEXT_H_

#include <stdint.h>

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/strategy.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** merge_call's function: runs once, on one replica's thread, in cross-replica context,
 * while every replica waits. `args[i]` (borrowed for the call) gathers argument i from all
 * replicas: a PerReplica value, or the object itself when every replica passed the same
 * variable. With ONE replica in sync (OneDevice, the default strategy, Mirrored on one
 * device) nothing is gathered: args[i] is the replica's argument itself (a tensor stays a
 * DIST_VALUE_TENSOR, not a PerReplica of one component). Under MultiWorkerMirrored a
 * tensor argument is always a PerReplica value of this worker's replicas (one component
 * with one replica per worker), so that reductions in the function span every worker.
 * It may store one new value in *out (pre-set to NULL): each replica receives its part of
 * it (its component of a PerReplica or Mirrored value, otherwise the value itself). Every
 * cross-replica `dist_strategy_*` call is legal inside it (reduce, gather, reduce_to,
 * batch_reduce_to, update, variable reads and assignments); `dist_context_*` calls and
 * dist_strategy_run are not (DIST_FAILED_PRECONDITION). */
typedef dist_status_t (*dist_merge_fn)(dist_strategy_t* strategy, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** out, void* user_data);

/** This replica's index, 0 ... num_replicas_in_sync-1 (replica_id_in_sync_group).
 * Thread-safety: safe (the context is immutable). */
DIST_API DIST_NODISCARD dist_status_t dist_context_replica_id(const dist_context_t* context,
                                                              int32_t* out_replica_id);

/** The number of replicas in sync. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_context_num_replicas_in_sync(
    const dist_context_t* context, int32_t* out_count);

/* With one replica (OneDevice, the default strategy's context) the collectives are copies
 * and merge_call runs its function at once; nothing waits. */

/** A new reference to the strategy this replica belongs to, owned by the caller.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_context_strategy(const dist_context_t* context,
                                                            dist_strategy_t** out);

/** The compute device of this replica, canonical name, borrowed: valid while the strategy
 * lives. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_context_device(const dist_context_t* context,
                                                          const char** out_borrowed_device);

/** Overrides, for this replica's collectives from now until its replica function returns
 * (or it leaves, for a joined replica), the strategy's timeout: timeout_ms > 0 bounds each
 * later wait of this replica (up to about 3 years, as dist_strategy_set_timeout_ms);
 * 0 restores the strategy's. Replicas may set different
 * bounds; the first to expire fails the collective for all (DIST_DEADLINE_EXCEEDED on that
 * replica, DIST_ABORTED on the others).
 * Thread-safety: owner thread only. */
DIST_API DIST_NODISCARD dist_status_t dist_context_set_timeout_ms(dist_context_t* context,
                                                                  int64_t timeout_ms);

/** All-reduces a tensor (or this replica's variable value) across replicas; *out is a new
 * tensor on this replica's device, bit-identical on every replica. Collective.
 * Blocks until every replica arrives, at most the timeout (see above).
 * Thread-safety: owner thread only; DIST_FAILED_PRECONDITION from another thread. */
DIST_API DIST_NODISCARD dist_status_t dist_context_all_reduce(dist_context_t* context,
                                                              dist_reduce_op_t op,
                                                              const dist_value_t* value,
                                                              dist_value_t** out);

/** All-reduces a tensor (or this replica's variable value) into `out`, an existing tensor
 * whose memory receives the result: no new value is made, which makes this the form for
 * small all-reduces repeated every step (Horovod's and PyTorch's in-place all-reduce).
 * `out` must be a tensor (not a variable or a distributed value) of value's shape and of
 * the result's dtype: value's, or the floating dtype dist_context_all_reduce gives for an
 * integer MEAN across replicas. It may be `value` itself (in place) and may live on any
 * device: in this replica's memory (host memory for a CPU replica, its GPU for a GPU one)
 * the collective writes it directly, elsewhere the result is copied in. It must not be
 * another replica's `value` or `out` in the same call. A wrong `out` is
 * DIST_INVALID_ARGUMENT on every replica, naming the dtypes and shapes, and nothing is
 * written; when the collective itself fails (DIST_DEADLINE_EXCEEDED, DIST_ABORTED) the
 * contents of `out` are unspecified. Collective; blocks as dist_context_all_reduce.
 * Thread-safety: owner thread only; no other thread may use `out` during the call. */
DIST_API DIST_NODISCARD dist_status_t dist_context_all_reduce_into(dist_context_t* context,
                                                                   dist_reduce_op_t op,
                                                                   const dist_value_t* value,
                                                                   dist_value_t* out);

/** All-reduces `count` tensors in one fused collective; outs[i] is the result for
 * values[i]. Collective; blocks as dist_context_all_reduce.
 * Thread-safety: owner thread only. */
DIST_API DIST_NODISCARD dist_status_t dist_context_batch_all_reduce(
    dist_context_t* context, dist_reduce_op_t op, const dist_value_t* const* values,
    int32_t count, dist_value_t** outs);

/** Concatenates every replica's tensor along `axis` (negative counts from the end), in
 * replica order; the tensors may differ in that axis only. Collective; blocks as
 * dist_context_all_reduce. Thread-safety: owner thread only. */
DIST_API DIST_NODISCARD dist_status_t dist_context_all_gather(dist_context_t* context,
                                                              const dist_value_t* value,
                                                              int32_t axis, dist_value_t** out);

/** Every replica receives a copy of `source_replica`'s tensor; all replicas pass a tensor
 * of the same dtype and shape (only the source's contents are read). Collective; blocks
 * as dist_context_all_reduce. Thread-safety: owner thread only. */
DIST_API DIST_NODISCARD dist_status_t dist_context_broadcast(dist_context_t* context,
                                                             const dist_value_t* value,
                                                             int32_t source_replica,
                                                             dist_value_t** out);

/** Pauses every replica, runs `fn` once in cross-replica context with the gathered
 * arguments, then gives each replica its part of fn's result in *out (NULL when fn stored
 * nothing). All replicas must pass the same num_args. Collective: blocks until every
 * replica arrives and fn returns; the wait for the others is bounded by the timeout, fn's
 * own run time is not. Thread-safety: owner thread only. */
DIST_API DIST_NODISCARD dist_status_t dist_context_merge_call(dist_context_t* context,
                                                              dist_merge_fn fn, void* user_data,
                                                              const dist_value_t* const* args,
                                                              int32_t num_args, dist_value_t** out);

/** Leaves a replica joined with dist_strategy_join_replica and releases the context.
 * Accepts NULL (DIST_OK). Only a joined replica's context is left this way (a run's
 * context or the default one is not), on the joining thread, after every scope entered
 * since has been exited: otherwise DIST_FAILED_PRECONDITION and the context stays valid. Not marked warn-unused-result so
 * that failure paths can call it as cleanup; the status reports misuse. Never blocks.
 * Thread-safety: owner thread only (the joining thread). */
DIST_API dist_status_t dist_context_leave(dist_context_t* context);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_CONTEXT_H_ */
