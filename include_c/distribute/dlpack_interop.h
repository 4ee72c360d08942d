/** @file
 * distribute — exchange tensors with other frameworks through DLPack.
 *
 * Optional header: it needs <dlpack/dlpack.h> (Debian's libdlpack-dev, DLPack 0.6 ABI);
 * distribute.h does not include it. Both directions share the buffer, never copy it.
 * Bool tensors use the DLPack >= 0.8 type code kDLBool (6) with 8 bits. */
#ifndef DISTRIBUTE_DLPACK_INTEROP_H_
#define DISTRIBUTE_DLPACK_INTEROP_H_

#include <dlpack/dlpack.h>

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** Exports a tensor as a DLManagedTensor that shares its buffer. The caller owns *out and
 * releases it by calling (*out)->deleter(*out) exactly once; the buffer stays alive until
 * then, even if the tensor is destroyed first. CPU tensors export as kDLCPU, GPU tensors
 * as kDLCUDA with the GPU index. Strides are NULL (compact row-major).
 * Errors: DIST_INVALID_ARGUMENT for NULL arguments or a value that is not a tensor.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_to_dlpack(const dist_value_t* tensor,
                                                            DLManagedTensor** out);

/** Imports a DLManagedTensor without copying. On success the new tensor owns `managed` and
 * calls managed->deleter(managed) exactly once, when the last value sharing the buffer is
 * destroyed. On failure nothing is taken: the caller still owns `managed`.
 * Accepted: kDLCPU and kDLCUDAHost (as CPU:0), kDLCUDA (as GPU:device_id); lanes 1;
 * compact row-major strides (or NULL); the dtypes of tensor.h (kDLFloat 16/32/64,
 * kDLBfloat 16, kDLInt 8/16/32/64, kDLUInt 8, kDLBool 8).
 * The producer is trusted for its memory: that data + byte_offset holds the tensor's bytes
 * and stays valid until the deleter runs. Checked before anything is read: the range does
 * not wrap, and in host memory it lies in the user address space with its first and last
 * bytes on pages mapped in this process (an offset such as 2^63 is refused, not read).
 * Errors: DIST_INVALID_ARGUMENT naming the field that is not supported, or the range.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_tensor_from_dlpack(DLManagedTensor* managed,
                                                              dist_value_t** out);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_DLPACK_INTEROP_H_ */
