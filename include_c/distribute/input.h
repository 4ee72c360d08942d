/** @file
 * distribute — distributing datasets over a strategy's replicas.
 *
 * See dataset.h for datasets and iterators. Thread-safety: options and input contexts are
 * used by one thread at a time; the distribute calls are safe. */
#ifndef DISTRIBUTE_INPUT_H_
#define DISTRIBUTE_INPUT_H_

#include <stdint.h>

#include "distribute/dataset.h"
#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** @name Auto-shard policies */ /** @{ */
/** tf.data.experimental.AutoShardPolicy. Values are the DIST_AUTO_SHARD_* constants. */
typedef int32_t dist_auto_shard_policy_t;

#define DIST_AUTO_SHARD_OFF 0   /**< each input pipeline reads the whole dataset */
#define DIST_AUTO_SHARD_AUTO 1  /**< FILE when the source reads files, else DATA */
#define DIST_AUTO_SHARD_FILE 2  /**< each input pipeline reads its share of the files */
#define DIST_AUTO_SHARD_DATA 3  /**< each input pipeline keeps its share of the elements */
/** @} */

/** @name Input replication modes */ /** @{ */
/** tf.distribute.InputReplicationMode. Values are the DIST_INPUT_* constants. */
typedef int32_t dist_input_replication_mode_t;

#define DIST_INPUT_PER_WORKER 1
#define DIST_INPUT_PER_REPLICA 2
/** @} */

/** @name Partial-batch splits */ /** @{ */
/** How dist_strategy_distribute_dataset splits a partial global batch of p rows (the last
 * batch of a dataset batched with its remainder) across R replicas. Values are the
 * DIST_PARTIAL_BATCH_* constants. */
typedef int32_t dist_partial_batch_split_t;

/** ceil(global batch size / R) rows per replica in order, as a full batch is split: the
 * last replicas may get empty batches. range(10).batch(4) over 2 replicas ends with [8, 9]
 * and []; a last batch of 6 of a global batch of 8 gives 4 + 2. The default: the
 * reference page's example of reduce with an axis describes it. */
#define DIST_PARTIAL_BATCH_IN_ORDER 0
/** TF 2.x's rebatching: ceil(p / R) rows per replica in order. range(10).batch(4) over 2
 * replicas ends with [8] and [9]; a last batch of 6 of 8 gives 3 + 3. */
#define DIST_PARTIAL_BATCH_EVEN 1
/** @} */

/** Builds the dataset for one input pipeline (dist_strategy_distribute_datasets_from_function):
 * stores a new dataset, batched by the per-replica batch size, in *out. The context is
 * borrowed for the call. */
typedef dist_status_t (*dist_dataset_fn)(const dist_input_context_t* context, dist_dataset_t** out,
                                         void* user_data);

/* ---- Input options (tf.distribute.InputOptions) ---- */

/** New options: prefetch depth 1 per replica, PER_WORKER, AUTO sharding, global batches,
 * no fetch to device. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_input_options_create(dist_input_options_t** out);
/** Thread-safety: one thread at a time per handle. */
DIST_API void dist_input_options_destroy(dist_input_options_t* options);

/** Batches each replica's iterator prepares ahead (>= 0; 0 disables prefetching).
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_input_options_set_prefetch_depth(dist_input_options_t* options,
                                                                           int64_t depth);
/** Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_input_options_set_replication_mode(
    dist_input_options_t* options, dist_input_replication_mode_t mode);
/** Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_input_options_set_auto_shard_policy(
    dist_input_options_t* options, dist_auto_shard_policy_t policy);
/** Copy each replica's batch to its device (TF's experimental_fetch_to_device; on by
 * default, as in TF): for GPU replicas the next step's batch is copied while the current
 * step runs (pinned staging memory, a copy stream per replica); off, their batches stay in
 * host memory. CPU replicas' batches are in place either way.
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_input_options_set_fetch_to_device(dist_input_options_t* options,
                                                                            int32_t enable);
/** The contrib MirroredStrategy semantics: each incoming batch is already one replica's
 * batch; replicas take consecutive batches instead of splitting one.
 * Thread-safety: one thread at a time per handle. */
DIST_API DIST_NODISCARD dist_status_t dist_input_options_set_per_replica_batches(
    dist_input_options_t* options, int32_t enable);
/** How a partial global batch is split (DIST_PARTIAL_BATCH_IN_ORDER, the default, or
 * DIST_PARTIAL_BATCH_EVEN for TF 2.x's split), by every strategy's distribute_dataset,
 * single- and multi-worker. Full batches split the same either way. Another value is
 * DIST_INVALID_ARGUMENT and leaves the options unchanged.
 * Thread-safety: one thread at a time per options object. */
DIST_API DIST_NODISCARD dist_status_t dist_input_options_set_partial_batch_split(
    dist_input_options_t* options, dist_partial_batch_split_t split);

/* ---- Distribution ---- */

/** Strategy.experimental_distribute_dataset: `dataset` must be batched by the global batch
 * size; each batch is split along its first axis across the replicas. `options` may be
 * NULL (defaults). *out is a new distributed dataset, owned by the caller: iterate it
 * with dist_distributed_dataset_make_iterator.
 * Errors: a dataset whose elements are not batches (a rank-0 component) fails at the
 * first get_next; FILE sharding with fewer files than input pipelines fails here (with
 * one input pipeline, as on a single worker, no policy shards anything).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_distribute_dataset(dist_strategy_t* strategy,
                                                                       const dist_dataset_t* dataset,
                                                                       const dist_input_options_t* options,
                                                                       dist_distributed_dataset_t** out);

/** Strategy.experimental_distribute_datasets_from_function: `fn` is called (on this thread,
 * during this call) once per worker (PER_WORKER: its dataset yields per-replica batches,
 * and the worker's replicas take consecutive batches, one each per step) or once per
 * replica (PER_REPLICA: replica i iterates its own dataset). A replica whose dataset ends
 * first gets empty batches until every replica's has ended; under MultiWorkerMirrored
 * until every replica of every worker's has ended (the workers agree at each
 * dist_iterator_get_next, which is then a collective: every worker calls it in the same
 * order as its other collectives, each wait bounded by the strategy's timeout; a worker
 * whose pipeline gave no element at all cannot shape empty batches and fails with
 * DIST_FAILED_PRECONDITION). `free_fn` (may be NULL)
 * releases user_data once fn is no longer needed (before this call returns).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_distribute_datasets_from_function(
    dist_strategy_t* strategy, dist_dataset_fn fn, void* user_data, dist_free_fn free_fn,
    const dist_input_options_t* options, dist_distributed_dataset_t** out);

/** A new iterator at the start of a distributed dataset, owned by the caller; its
 * get_next yields one PerReplica value per component, every replica ending in the same
 * step. Every iterator is an independent pass.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_distributed_dataset_make_iterator(
    const dist_distributed_dataset_t* dataset, dist_iterator_t** out);

/** The number of components of each element. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_distributed_dataset_num_components(
    const dist_distributed_dataset_t* dataset, int32_t* out_count);

/** Releases a distributed dataset. Accepts NULL. Iterators made from it stay valid.
 * Thread-safety: one thread at a time per handle. */
DIST_API void dist_distributed_dataset_destroy(dist_distributed_dataset_t* dataset);

/** The contrib entry points of the reference pages: make_dataset_iterator is
 * distribute_dataset then make_iterator; make_input_fn_iterator is
 * distribute_datasets_from_function (PER_WORKER) then make_iterator.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_make_dataset_iterator(dist_strategy_t* strategy,
                                                                          const dist_dataset_t* dataset,
                                                                          dist_iterator_t** out);
/** Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_strategy_make_input_fn_iterator(dist_strategy_t* strategy,
                                                                           dist_dataset_fn fn,
                                                                           void* user_data,
                                                                           dist_iterator_t** out);

/* ---- Input context (tf.distribute.InputContext) ---- */

/** A new input context, owned by the caller (to build a dataset for one input pipeline
 * outside distribute_datasets_from_function, or to test a dataset function):
 * num_input_pipelines >= 1, 0 <= input_pipeline_id < num_input_pipelines,
 * num_replicas_in_sync >= 1, else DIST_INVALID_ARGUMENT naming the argument.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_input_context_create(int32_t num_input_pipelines,
                                                                int32_t input_pipeline_id,
                                                                int32_t num_replicas_in_sync,
                                                                dist_input_context_t** out);
/** Releases a context from dist_input_context_create. Accepts NULL. The context a dataset
 * function receives is borrowed and must not be passed here.
 * Thread-safety: one thread at a time per handle. */
DIST_API void dist_input_context_destroy(dist_input_context_t* context);


/** The number of input pipelines (workers, or replicas for PER_REPLICA). Either kind of context. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_input_context_num_input_pipelines(
    const dist_input_context_t* context, int32_t* out_count);
/** This input pipeline's id, 0 ... num_input_pipelines-1. Either kind of context. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_input_context_input_pipeline_id(
    const dist_input_context_t* context, int32_t* out_id);
/** The number of replicas in sync. Either kind of context. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_input_context_num_replicas_in_sync(
    const dist_input_context_t* context, int32_t* out_count);
/** global_batch_size / num_replicas_in_sync; DIST_INVALID_ARGUMENT when it does not divide.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_input_context_per_replica_batch_size(
    const dist_input_context_t* context, int64_t global_batch_size, int64_t* out_size);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_INPUT_H_ */
