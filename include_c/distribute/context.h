/* distribute — the replica context (tf.distribute.ReplicaContext).
 *
 * A dist_context_t is handed to each replica function by dist_strategy_run (borrowed,
 * valid until the function returns) or created by dist_strategy_join_replica (owned,
 * released with dist_context_leave). Its calls are collective: every replica of the
 * strategy must make the same sequence of collective calls with values of the same dtype
 * and shape (the op and count must match too); a mismatch is DIST_INVALID_ARGUMENT on
 * every replica, naming the replicas that disagree; so is an argument one replica finds
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

/* merge_call's function: runs once, on one replica's thread, in cross-replica context,
 * while every replica waits. `args[i]` gathers argument i from all replicas: a PerReplica
 * value, or the object itself when every replica passed the same variable. It may store
 * one new value in *out (pre-set to NULL): each replica receives its part of it (its
 * component of a PerReplica or Mirrored value, otherwise the value itself). Every
 * cross-replica dist_strategy_* call is legal inside it. */
typedef dist_status_t (*dist_merge_fn)(dist_strategy_t* strategy, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** out, void* user_data);

/* This replica's index, 0 ... num_replicas_in_sync-1 (replica_id_in_sync_group). */
DIST_API DIST_NODISCARD dist_status_t dist_context_replica_id(const dist_context_t* context,
                                                              int32_t* out_replica_id);

/* The number of replicas in sync. */
DIST_API DIST_NODISCARD dist_status_t dist_context_num_replicas_in_sync(
    const dist_context_t* context, int32_t* out_count);

/* With one replica (OneDevice, the default strategy's context) the collectives are copies
 * and merge_call runs its function at once; nothing waits. */

/* A new reference to the strategy this replica belongs to. */
DIST_API DIST_NODISCARD dist_status_t dist_context_strategy(const dist_context_t* context,
                                                            dist_strategy_t** out);

/* The compute device of this replica, canonical name, owned by the strategy. */
DIST_API DIST_NODISCARD dist_status_t dist_context_device(const dist_context_t* context,
                                                          const char** out_borrowed_device);

/* Overrides, for this replica's collectives from now until its replica function returns
 * (or it leaves, for a joined replica), the strategy's timeout: timeout_ms > 0 bounds each
 * later wait of this replica; 0 restores the strategy's. Replicas may set different
 * bounds; the first to expire fails the collective for all (DIST_DEADLINE_EXCEEDED on that
 * replica, DIST_ABORTED on the others).
 * Thread-safety: owner thread only. */
DIST_API DIST_NODISCARD dist_status_t dist_context_set_timeout_ms(dist_context_t* context,
                                                               int64_t timeout_ms);

/* All-reduces a tensor (or this replica's variable value) across replicas; *out is a new
 * tensor on this replica's device, bit-identical on every replica. Collective. */
DIST_API DIST_NODISCARD dist_status_t dist_context_all_reduce(dist_context_t* context,
                                                              dist_reduce_op_t op,
                                                              const dist_value_t* value,
                                                              dist_value_t** out);

/* All-reduces `count` tensors in one fused collective; outs[i] is the result for
 * values[i]. Collective. */
DIST_API DIST_NODISCARD dist_status_t dist_context_batch_all_reduce(
    dist_context_t* context, dist_reduce_op_t op, const dist_value_t* const* values,
    int32_t count, dist_value_t** outs);

/* Concatenates every replica's tensor along `axis` (negative counts from the end), in
 * replica order; the tensors may differ in that axis only. Collective. */
DIST_API DIST_NODISCARD dist_status_t dist_context_all_gather(dist_context_t* context,
                                                              const dist_value_t* value,
                                                              int32_t axis, dist_value_t** out);

/* Every replica receives a copy of `source_replica`'s tensor; all replicas pass a tensor
 * of the same dtype and shape (only the source's contents are read). Collective. */
DIST_API DIST_NODISCARD dist_status_t dist_context_broadcast(dist_context_t* context,
                                                             const dist_value_t* value,
                                                             int32_t source_replica,
                                                             dist_value_t** out);

/* Pauses every replica, runs `fn` once in cross-replica context with the gathered
 * arguments, then gives each replica its part of fn's result in *out (NULL when fn stored
 * nothing). All replicas must pass the same num_args. Collective. */
DIST_API DIST_NODISCARD dist_status_t dist_context_merge_call(dist_context_t* context,
                                                              dist_merge_fn fn,
                                                              void* user_data,
                                                              const dist_value_t* const* args, int32_t num_args,
                                                              dist_value_t** out);

/* Leaves a replica joined with dist_strategy_join_replica and releases the context.
 * Accepts NULL. Must be called on the joining thread. Contexts handed to a replica
 * function by dist_strategy_run are not left this way (DIST_FAILED_PRECONDITION). */
DIST_API dist_status_t dist_context_leave(dist_context_t* context);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_CONTEXT_H_ */
