/** @file
 * distribute — cross-device reduction algorithms (tf.distribute.CrossDeviceOps).
 *
 * A strategy over several local devices reduces with one of these. When a strategy is
 * created without one it chooses automatically: the in-process shared-memory all-reduce
 * for CPU replicas, NCCL for GPU replicas. The CPU algorithms, and ReductionToOneDevice and
 * HierarchicalCopy on GPUs, are deterministic: the same inputs on the same replica count
 * give bit-identical results on every run and every replica. NCCL's all-reduce is
 * reproducible only with a fixed NCCL version, topology, algorithm and protocol (set
 * NCCL_ALGO and NCCL_PROTO); use ReductionToOneDevice where bits must not move. float16 and
 * bfloat16 accumulate in float32 (within each step, for HierarchicalCopy on GPUs). */
#ifndef DISTRIBUTE_CROSS_DEVICE_OPS_H_
#define DISTRIBUTE_CROSS_DEVICE_OPS_H_

#include <stdint.h>

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** @name Algorithms */ /** @{ */
/** Which algorithm a dist_cross_device_ops_t is. Values are the DIST_CROSS_DEVICE_OPS_*
 * constants. */
typedef int32_t dist_cross_device_ops_kind_t;

/** Reduce every replica's value on one device, then copy the result to each replica
 * (tf.distribute.ReductionToOneDevice). */
#define DIST_CROSS_DEVICE_OPS_REDUCTION_TO_ONE_DEVICE 1
/** Values are packed into num_packs buffers, reduced hierarchically, then copied back
 * (tf.distribute.HierarchicalCopyAllReduce). */
#define DIST_CROSS_DEVICE_OPS_HIERARCHICAL_COPY 2
/** Replica threads reduce disjoint slices of all buffers in place, then copy the result
 * slices (reduce-scatter + all-gather in shared memory). Small tensors are packed into
 * buffers of up to bytes_per_pack bytes first. */
#define DIST_CROSS_DEVICE_OPS_SHARED_MEMORY 3
/** NCCL's all-reduce between GPU replicas, values of one dtype packed into num_packs
 * buffers first (tf.distribute.NcclAllReduce). A strategy over CPU replicas refuses it. */
#define DIST_CROSS_DEVICE_OPS_NCCL_ALL_REDUCE 4
/** @} */

/** ReductionToOneDevice reducing on `device` (NULL: the first replica's device).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_cross_device_ops_create_reduction_to_one_device(
    const char* device, dist_cross_device_ops_t** out);

/** HierarchicalCopyAllReduce with `num_packs` packs (>= 1; TF's default is 1).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_cross_device_ops_create_hierarchical_copy(
    int32_t num_packs, dist_cross_device_ops_t** out);

/** The in-process shared-memory all-reduce. `bytes_per_pack` > 0 bounds the packs small
 * tensors are fused into; 0 chooses (4 MiB). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_cross_device_ops_create_shared_memory(
    int64_t bytes_per_pack, dist_cross_device_ops_t** out);

/** NcclAllReduce with `num_packs` packs (>= 0: 0 reduces every value on its own; TF's
 * default is 1). Only GPU replicas can use it. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_cross_device_ops_create_nccl_all_reduce(
    int32_t num_packs, dist_cross_device_ops_t** out);

/** The algorithm of `ops`. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_cross_device_ops_kind(
    const dist_cross_device_ops_t* ops, dist_cross_device_ops_kind_t* out_kind);

/** Releases `ops`. Accepts NULL. A strategy created with it keeps its own reference.
 * Thread-safety: one thread at a time per handle. */
DIST_API void dist_cross_device_ops_destroy(dist_cross_device_ops_t* ops);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_CROSS_DEVICE_OPS_H_ */
