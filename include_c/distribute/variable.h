/** @file
 * distribute — variables (tf.Variable under a strategy).
 *
 * A variable created inside a strategy's scope is distributed, as in TF:
 * - MirroredStrategy: synchronization ON_WRITE (and AUTO) gives a MirroredVariable, one
 *   copy per replica kept equal; ON_READ gives a SyncOnReadVariable, whose copies diverge
 *   in replica context and are aggregated when read in cross-replica context.
 * - CentralStorageStrategy and OneDeviceStrategy: one variable on the parameter device.
 * - No scope (the default strategy): a plain variable on CPU:0.
 * Variables are values (dist_value_t) of kind DIST_VALUE_MIRRORED_VARIABLE,
 * DIST_VALUE_SYNC_ON_READ_VARIABLE or DIST_VALUE_VARIABLE; handles to the same variable
 * share its state. Thread-safety: safe; assignments to one variable are serialised. */
#ifndef DISTRIBUTE_VARIABLE_H_
#define DISTRIBUTE_VARIABLE_H_

#include <stdint.h>

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** @name Synchronization */ /** @{ */
/** tf.VariableSynchronization. Values are the DIST_SYNC_* constants. */
typedef int32_t dist_variable_sync_t;

#define DIST_SYNC_AUTO 0
#define DIST_SYNC_NONE 1
#define DIST_SYNC_ON_WRITE 2
#define DIST_SYNC_ON_READ 3
/** @} */

/** @name Aggregation */ /** @{ */
/** tf.VariableAggregation. Values are the DIST_AGGREGATION_* constants. */
typedef int32_t dist_variable_aggregation_t;

#define DIST_AGGREGATION_NONE 0
#define DIST_AGGREGATION_SUM 1
#define DIST_AGGREGATION_MEAN 2
#define DIST_AGGREGATION_ONLY_FIRST_REPLICA 3
/** @} */

/** Creates a variable with the current strategy (see above) holding a copy of
 * `initial_value` (a tensor) on each of its devices. `name` may be NULL ("Variable",
 * then "Variable_1", ... unique per strategy). Synchronization NONE under a MirroredStrategy
 * (whatever its replica count) is DIST_INVALID_ARGUMENT, as in TF. Must not be called in replica
 * context (variables are created in cross-replica context or with no scope).
 * An integer variable with aggregation MEAN is DIST_INVALID_ARGUMENT, as in TF (the mean
 * of integer updates is not an integer); use SUM, ONLY_FIRST_REPLICA or a float dtype.
 * Variables are saved under their names (dist_strategy_save_variables), so a name must be
 * valid UTF-8 and not "__metadata__" (the safetensors header's reserved key): others are
 * DIST_INVALID_ARGUMENT.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_create(const dist_value_t* initial_value,
                                                           dist_variable_sync_t synchronization,
                                                           dist_variable_aggregation_t aggregation,
                                                           const char* name, dist_value_t** out);

/** Reads the variable: in replica context this replica's copy; in cross-replica context a
 * MirroredVariable's first copy, a SyncOnReadVariable's copies aggregated (SUM, MEAN,
 * ONLY_FIRST_REPLICA; with aggregation NONE there is no cross-replica value and the read is
 * DIST_INVALID_ARGUMENT, as in TF), a plain variable's value. *out is a new tensor (a
 * snapshot). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_read(const dist_value_t* variable,
                                                         dist_value_t** out);

/** The most variables one dist_variables_read or dist_variables_apply_update takes. */
#define DIST_MAX_BATCH_VARIABLES 65536

/** Reads `count` (1 ... DIST_MAX_BATCH_VARIABLES) variables, each as dist_variable_read
 * reads it, into outs[0 .. count-1] (new tensors). The variables of a
 * ParameterServerStrategy are fetched together: each ps task holding any of their shards
 * is asked once for all of them (a few times when they hold more than 1 MiB: large
 * variables gain nothing from sharing a call), the tasks at once; a step that reads 4 variables of 2 shards each makes 2 calls instead of 8.
 * Each variable's value is a snapshot, as from dist_variable_read, but the batch is not
 * one snapshot of all of them. Other variables are read one by one. The same variable may
 * appear more than once. On error (count within range) every outs[i] is NULL and the
 * message names the failing entry ("variables[2]: ..."), or the ps task. Each call to a ps
 * task is bounded by the strategy's timeout. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_variables_read(const dist_value_t* const* variables,
                                                          int32_t count, dist_value_t** outs);

/** Assigns `value`, adds it, or subtracts it, with TF's rules:
 * - replica context, MirroredVariable: the replicas' values are aggregated with the
 *   variable's aggregation (a collective: every replica must call it; the wait is bounded
 *   by the strategy's timeout) and the result is
 *   written to every copy; aggregation NONE is DIST_INVALID_ARGUMENT asking for one.
 * - replica context, SyncOnReadVariable: only this replica's copy changes.
 * - cross-replica context: `value` must be a tensor or a Mirrored value (or another
 *   MirroredVariable); a PerReplica value is DIST_INVALID_ARGUMENT. A SyncOnReadVariable
 *   accepts only a tensor: SUM writes value / num_replicas to every copy, the others the
 *   value itself.
 * The value must match the variable's dtype and shape.
 * Thread-safety: safe; assignments to one variable are serialised. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_assign(dist_value_t* variable,
                                                           const dist_value_t* value);
/** Thread-safety: safe; assignments to one variable are serialised. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_assign_add(dist_value_t* variable,
                                                               const dist_value_t* value);
/** Thread-safety: safe; assignments to one variable are serialised. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_assign_sub(dist_value_t* variable,
                                                               const dist_value_t* value);

/** The variable's name, owned by the variable. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_name(const dist_value_t* variable,
                                                         const char** out_borrowed_name);

/** The number of devices holding a copy of the variable: one per replica for a
 * MirroredVariable or SyncOnReadVariable under MirroredStrategy, 1 for a plain variable
 * or one copy of a distributed variable (dist_value_component).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_device_count(const dist_value_t* variable,
                                                                 int32_t* out_count);

/** The canonical name of the device of copy `index` (0 ... device count - 1), borrowed:
 * valid as long as any handle to the variable lives.
 * Errors: DIST_INVALID_ARGUMENT for a value that is not a variable; DIST_OUT_OF_RANGE
 * for a bad index. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_device(const dist_value_t* variable,
                                                           int32_t index,
                                                           const char** out_borrowed_device);

/** The synchronization and aggregation the variable was created with (AUTO resolved).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_synchronization(
    const dist_value_t* variable, dist_variable_sync_t* out_sync);
/** Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_variable_aggregation(
    const dist_value_t* variable, dist_variable_aggregation_t* out_aggregation);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_VARIABLE_H_ */
