/** @file
 * distribute — dense tensors.
 *
 * A tensor is a value of kind DIST_VALUE_TENSOR: a dtype, a shape (rank 0 to
 * DIST_MAX_RANK, each dimension >= 0), a device and a row-major buffer of exactly
 * num_elements * dtype size bytes. Host tensors live on a CPU device; GPU tensors live in
 * device memory and need the CUDA plugin. */
#ifndef DISTRIBUTE_TENSOR_H_
#define DISTRIBUTE_TENSOR_H_

#include <stddef.h>
#include <stdint.h>

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** @name Element types (dtypes) */ /** @{ */
/** An element type. Values are the DIST_* dtype constants below; they equal TensorFlow's
 * DataType numbers so that values can be exchanged without a table. */
typedef int32_t dist_dtype_t;

#define DIST_FLOAT32 1
#define DIST_FLOAT64 2
#define DIST_INT32 3
#define DIST_UINT8 4
#define DIST_INT16 5
#define DIST_INT8 6
#define DIST_INT64 9
#define DIST_BOOL 10
#define DIST_BFLOAT16 14
#define DIST_FLOAT16 19
/** @} */

/** The largest rank a tensor may have. */
#define DIST_MAX_RANK 32

/** Called exactly once, when the last value using a borrowed buffer is destroyed, with the
 * buffer and the user_data given to dist_tensor_wrap. It runs on whichever thread drops
 * the last reference and must not call back into the library. */
typedef void (*dist_release_fn)(void* data, void* user_data);

/** The name of a dtype ("float32", "bfloat16", ...), or "invalid" for a value that is not
 * a dtype. Static string. Thread-safety: safe. */
DIST_API const char* dist_dtype_name(dist_dtype_t dtype);

/** The size in bytes of one element of `dtype` (bool is 1 byte).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_dtype_size(dist_dtype_t dtype, size_t* out_size);

/** Creates a tensor on `device` (a device name; NULL means "CPU:0") by copying `byte_size`
 * bytes from `data`, which must equal the size the dtype and shape give. `data` may be
 * NULL only together with byte_size 0: the tensor is then zero-filled. `shape` holds
 * `rank` dimensions and may be NULL for rank 0. The caller keeps `data`.
 * Errors: DIST_INVALID_ARGUMENT (bad dtype, negative or overflowing shape, size
 * mismatch, malformed device name, a device of another job, replica or task than the
 * local /job:localhost/replica:0/task:0, NULL out), DIST_NOT_FOUND (a device that does not
 * exist here), DIST_FAILED_PRECONDITION (a GPU device without the CUDA plugin),
 * DIST_RESOURCE_EXHAUSTED (allocation failed).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_create(dist_dtype_t dtype, const int64_t* shape,
                                                         int32_t rank, const void* data,
                                                         size_t byte_size, const char* device,
                                                         dist_value_t** out);

/** Creates a host tensor that borrows `data` (byte_size bytes, which must equal the size
 * the dtype and shape give) without copying. `device` must name a CPU device (NULL means
 * "CPU:0"). The caller must keep `data` valid until `release` runs; `release` (which may be
 * NULL) runs exactly once, when the last value sharing the buffer is destroyed. If the
 * call fails, `release` is not called and the caller keeps ownership of `data`.
 * Errors: as dist_tensor_create; a NULL `data` with byte_size > 0 is invalid.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_wrap(dist_dtype_t dtype, const int64_t* shape,
                                                       int32_t rank, void* data, size_t byte_size,
                                                       const char* device, dist_release_fn release,
                                                       void* user_data, dist_value_t** out);

/** The dtype of a tensor. Errors: DIST_INVALID_ARGUMENT for NULL or a value that is not a
 * tensor. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_dtype(const dist_value_t* tensor,
                                                        dist_dtype_t* out_dtype);

/** The rank of a tensor. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_rank(const dist_value_t* tensor,
                                                       int32_t* out_rank);

/** Copies the tensor's dimensions into `out_dims`, which has room for `capacity` entries.
 * Errors: DIST_INVALID_ARGUMENT when capacity is smaller than the rank (out_dims may be
 * NULL for rank 0). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_shape(const dist_value_t* tensor,
                                                        int64_t* out_dims, int32_t capacity);

/** The number of elements (the product of the dimensions; 1 for rank 0).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_num_elements(const dist_value_t* tensor,
                                                               int64_t* out_count);

/** The size of the tensor's buffer in bytes. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_byte_size(const dist_value_t* tensor,
                                                            size_t* out_size);

/** The tensor's buffer: host memory for CPU tensors, device memory for GPU tensors. It is
 * borrowed, valid while any value sharing the buffer lives, and may be written in place
 * (every value sharing it sees the write). An empty tensor may give NULL.
 * Thread-safety: the call is safe; synchronising access to the bytes is the caller's. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_data(const dist_value_t* tensor,
                                                       void** out_borrowed_data);

/** The canonical name of the tensor's device ("/device:CPU:0"). Owned by the tensor and
 * valid while it lives. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_device(const dist_value_t* tensor,
                                                         const char** out_borrowed_device);

/** Copies a tensor to `device` (host to host, host to GPU, GPU to host, GPU to GPU). The
 * result is a new tensor owned by the caller, with its own buffer, even when the device is
 * the same. Errors: as dist_tensor_create for the device.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_copy_to_device(const dist_value_t* tensor,
                                                                 const char* device,
                                                                 dist_value_t** out);

/** @name Scalars as C values */ /** @{ */
/** The one element of a tensor that is a scalar or has exactly one element (any rank), as
 * a C value: dist_tensor_scalar_float32 reads a DIST_FLOAT32 tensor, _float64 a
 * DIST_FLOAT64, _int32 a DIST_INT32, _int64 a DIST_INT64. Nothing is converted: another
 * dtype, or another number of elements, is DIST_INVALID_ARGUMENT naming the tensor's dtype
 * or shape. A GPU tensor is copied to the host first. A distributed value is not a tensor:
 * take a component first (dist_value_component_tensor) or reduce it.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_scalar_float32(const dist_value_t* tensor,
                                                                 float* out_value);
DIST_API DIST_NODISCARD dist_status_t dist_tensor_scalar_float64(const dist_value_t* tensor,
                                                                 double* out_value);
DIST_API DIST_NODISCARD dist_status_t dist_tensor_scalar_int32(const dist_value_t* tensor,
                                                               int32_t* out_value);
DIST_API DIST_NODISCARD dist_status_t dist_tensor_scalar_int64(const dist_value_t* tensor,
                                                               int64_t* out_value);
/** @} */

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_TENSOR_H_ */
