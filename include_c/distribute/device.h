/** @file
 * distribute — device names and the local devices.
 *
 * Device names follow TensorFlow: the full form
 * "/job:worker/replica:0/task:1/device:GPU:0", any subset of its parts in that order
 * ("/job:worker/device:CPU:0", "/device:GPU:1"), the short form "CPU:0" / "GPU:1", the
 * legacy "/cpu:0", and "*" for an unspecified index ("/device:CPU:*"). The device type is
 * case-insensitive; CPU and GPU are the known types. The canonical string lists the parts
 * that are set, in that order, with the type in upper case: "CPU:0" becomes
 * "/device:CPU:0".
 *
 * Local devices are the logical CPU devices CPU:0 ... CPU:n-1 (each one a replica on its
 * own thread; n defaults to the number of hardware threads and can be set with
 * dist_set_logical_cpu_device_count) and, when the CUDA plugin finds GPUs, GPU:0 ...
 * GPU:m-1. A machine without GPUs or without the plugin simply has m = 0. */
#ifndef DISTRIBUTE_DEVICE_H_
#define DISTRIBUTE_DEVICE_H_

#include <stdint.h>

#include "distribute/export.h"
#include "distribute/status.h"
#include "distribute/types.h"

DIST_EXTERN_C_BEGIN

/** @name Device types */ /** @{ */
/** A device type. Values are the DIST_DEVICE_* constants. */
typedef int32_t dist_device_type_t;

#define DIST_DEVICE_CPU 1
#define DIST_DEVICE_GPU 2
/** @} */

/** The most logical CPU devices a process may configure. */
#define DIST_MAX_LOGICAL_CPU_DEVICES 256

/** Parses a device name. On success *out is a new device owned by the caller.
 * Errors: DIST_INVALID_ARGUMENT for a NULL argument or a malformed name, with a message
 * naming the part that is wrong; an unknown device type is an error too.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_device_parse(const char* name, dist_device_t** out);

/** Releases a device. Accepts NULL. Thread-safety: one thread at a time per handle. */
DIST_API void dist_device_destroy(dist_device_t* device);

/** The canonical name ("/job:worker/replica:0/task:1/device:GPU:0"). The string is owned by
 * the device and valid while it lives.
 * Thread-safety: safe (a device never changes after creation). */
DIST_API DIST_NODISCARD dist_status_t dist_device_name(const dist_device_t* device,
                                                       const char** out_borrowed_name);

/** The job name, or "" when the name has no job part. Owned by the device.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_device_job(const dist_device_t* device,
                                                      const char** out_borrowed_job);

/** The replica number, or -1 when the name has no replica part. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_device_replica(const dist_device_t* device,
                                                          int32_t* out_replica);

/** The task number, or -1 when the name has no task part. Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_device_task(const dist_device_t* device,
                                                       int32_t* out_task);

/** The device type (DIST_DEVICE_CPU or DIST_DEVICE_GPU), or 0 when the name has no device
 * part ("/job:worker/task:0"). Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_device_type(const dist_device_t* device,
                                                       dist_device_type_t* out_type);

/** The device index, or -1 when it is unspecified ("/device:CPU:*") or absent.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_device_index(const dist_device_t* device,
                                                        int32_t* out_index);

/** Sets how many logical CPU devices this process exposes (1 ... DIST_MAX_LOGICAL_CPU_DEVICES).
 * Objects created before the call keep the devices they were created with.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_set_logical_cpu_device_count(int32_t count);

/** The number of local devices: the logical CPU devices, then the GPUs the CUDA plugin
 * found (none when there is no plugin or no GPU; that is not an error).
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_local_device_count(int32_t* out_count);

/** The local device at `index` (0 <= index < dist_local_device_count), CPUs first, as a new
 * device owned by the caller, named in full ("/job:localhost/replica:0/task:0/device:CPU:0").
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_local_device_get(int32_t index, dist_device_t** out);

/** Why there are no GPUs, when there are none: a static description such as "the CUDA plugin
 * libdistribute_cuda.so.0 was not found" or "no CUDA driver"; "" when GPUs were found.
 * The string is owned by the library and valid until the process ends.
 * Thread-safety: safe. */
DIST_API DIST_NODISCARD dist_status_t dist_gpu_unavailable_reason(const char** out_borrowed_reason);

DIST_EXTERN_C_END

#endif /* DISTRIBUTE_DEVICE_H_ */
