/** @file
 * distribute — the opaque handle types of the C API.
 *
 * Every handle is a pointer to an incomplete struct. A handle returned through an
 * `**out` parameter is owned by the caller and released with its type's
 * dist_<object>_destroy(), which accepts NULL; borrowed handles are only ever return
 * values (see distribute.h). Children keep their parents alive, so handles may be
 * destroyed in any order.
 *
 * Misuse detection (after sqlite's): every handle carries its type, checked on each call
 * that takes it. A handle of another type (a dataset passed as a strategy), a handle
 * destroyed recently, and, from a callback, a result the callback does not own (one of
 * its arguments, or the strategy merge_call lent it) give DIST_INVALID_ARGUMENT naming the
 * argument and the expected type ("argument 'strategy' is not a dist_strategy_t (it is a
 * dist_dataset_t)", "argument 'strategy' was destroyed") and change nothing; the destroy
 * functions do nothing for such a handle. The library keeps the memory of the last few
 * hundred destroyed handles unreused for this; a use after destroy once that memory has
 * been reused, and any pointer that is not a handle at all, are still undefined behaviour.
 * Destroying a handle the library lent to a callback does nothing. */
#ifndef DISTRIBUTE_TYPES_H_
#define DISTRIBUTE_TYPES_H_

#include <stdint.h>

/** A parsed TensorFlow device name (see device.h). */
typedef struct dist_device dist_device_t;

/** A value: a tensor, or a distributed value (PerReplica, Mirrored, a distributed
 * variable) with one component per replica (see value.h and tensor.h). */
typedef struct dist_value dist_value_t;

/** A distribution strategy (tf.distribute.Strategy and StrategyExtended). */
typedef struct dist_strategy dist_strategy_t;

/** A replica context, handed to a replica function (tf.distribute.ReplicaContext). */
typedef struct dist_context dist_context_t;

/** An input pipeline (tf.data.Dataset; see dataset.h). */
typedef struct dist_dataset dist_dataset_t;

/** A dataset distributed over a strategy's replicas (tf.distribute.DistributedDataset; see
 * input.h): iterated, never transformed. */
typedef struct dist_distributed_dataset dist_distributed_dataset_t;

/** One pass over a dataset (yielding tensors) or a distributed dataset (yielding PerReplica
 * values). */
typedef struct dist_iterator dist_iterator_t;

/** The input context handed to a dataset function, or made with
 * dist_input_context_create (tf.distribute.InputContext). */
typedef struct dist_input_context dist_input_context_t;

/** How a dataset is distributed (tf.distribute.InputOptions; see input.h). */
typedef struct dist_input_options dist_input_options_t;

/** A cluster description: TF_CONFIG or an explicit cluster spec. */
typedef struct dist_cluster dist_cluster_t;

/** An in-process server for one task of a cluster (see server.h). */
typedef struct dist_server dist_server_t;

/** Configuration of a server: timeouts of startup and heartbeats (see server.h). */
typedef struct dist_server_options dist_server_options_t;

/** Cross-device reduction and broadcast algorithms (tf.distribute.CrossDeviceOps). */
typedef struct dist_cross_device_ops dist_cross_device_ops_t;

/** How MultiWorkerMirroredStrategy communicates between workers
 * (tf.distribute.experimental.CommunicationOptions; see strategy.h). */
typedef struct dist_communication_options dist_communication_options_t;

/** Where a ParameterServerStrategy places its variables (see parameter_server.h). */
typedef struct dist_parameter_server_options dist_parameter_server_options_t;

/** The coordinator of TF 2 parameter-server training (see coordinator.h). */
typedef struct dist_coordinator dist_coordinator_t;

/** The result of a function scheduled by a coordinator, once it is ready (RemoteValue). */
typedef struct dist_remote_value dist_remote_value_t;

/** A per-worker dataset or iterator of a coordinator (PerWorkerValues). */
typedef struct dist_per_worker dist_per_worker_t;

/** The arguments of a scheduled function (see coordinator.h). */
typedef struct dist_closure_args dist_closure_args_t;

#endif /* DISTRIBUTE_TYPES_H_ */
