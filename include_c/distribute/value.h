/** @file
 * distribute — values: tensors and distributed values.
 *
 * A dist_value_t is a tensor (one dense array on one device) or a distributed value with
 * one component per replica: PerReplica (each replica's own data), Mirrored (the same data
 * on every replica), and the distributed variables. Values are immutable handles to
 * reference-counted storage: destroying a value never invalidates another value that
 * shares its storage. */
#ifndef DISTRIBUTE_VALUE_H_
#define DISTRIBUTE_VALUE_H_

#include <stdint.h>

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** @name Value kinds */ /** @{ */
/** The kind of a value. Values are the DIST_VALUE_* constants. */
typedef int32_t dist_value_kind_t;

#define DIST_VALUE_TENSOR 1
#define DIST_VALUE_PER_REPLICA 2
#define DIST_VALUE_MIRRORED 3
#define DIST_VALUE_MIRRORED_VARIABLE 4
#define DIST_VALUE_SYNC_ON_READ_VARIABLE 5
#define DIST_VALUE_VARIABLE 6
/** @} */

/** The kind of `value`.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_value_kind(const dist_value_t* value,
                                                      dist_value_kind_t* out_kind);

/** The number of components: 1 for a tensor or a plain variable, one per replica (or per
 * device holding a copy) for a distributed value (experimental_local_results).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_value_num_components(const dist_value_t* value,
                                                                int32_t* out_count);

/** Component `index` of a value as a new handle: a tensor of a PerReplica or Mirrored
 * value, the copy of a distributed variable on one device (a plain variable whose
 * container is the distributed one), or the value itself for index 0 of a tensor or plain
 * variable. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_value_component(const dist_value_t* value,
                                                           int32_t index, dist_value_t** out);

/** Component `index` of any value as a new tensor with its own buffer, owned by the caller:
 * a copy of a PerReplica or Mirrored component, a snapshot of a MirroredVariable's or
 * SyncOnReadVariable's copy on one device (its current value, whatever the context), a
 * copy of a tensor or plain variable for index 0. Later writes to the value or to the
 * result never reach the other.
 * Errors: DIST_OUT_OF_RANGE for an index outside 0 ... num_components-1.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_value_component_tensor(const dist_value_t* value,
                                                                  int32_t index,
                                                                  dist_value_t** out);

/** A PerReplica value with the given tensor components (count >= 1), shared, not copied.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_value_create_per_replica(
    const dist_value_t* const* components, int32_t count, dist_value_t** out);

/** A Mirrored value with the given tensor components, which must have equal dtype and
 * shape (the caller vouches that their contents are equal). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_value_create_mirrored(
    const dist_value_t* const* components, int32_t count, dist_value_t** out);

/** Releases a value. Accepts NULL. Storage shared with other values stays alive until the
 * last value using it is destroyed; a borrowed buffer's release callback runs then.
 * Thread-safety: one thread at a time per value. */
DIST_API void dist_value_destroy(dist_value_t* value);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_VALUE_H_ */
