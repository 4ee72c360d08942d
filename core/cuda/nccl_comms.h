// NCCL communicators as the plugin hands them out. A `void* comm` of the ABI points to a
// Comm: NCCL's communicator plus the device and rank it was created for. The plugin keeps
// those itself because ncclCommCuDevice and ncclCommUserRank fail on a communicator that
// is still being created or has failed, which is when abort and error messages need them.
#ifndef DISTRIBUTE_CORE_CUDA_NCCL_COMMS_H_
#define DISTRIBUTE_CORE_CUDA_NCCL_COMMS_H_

#include <nccl.h>

#include <cstddef>
#include <cstdint>

#if NCCL_VERSION_CODE < NCCL_VERSION(2, 14, 0)
#error "the CUDA plugin needs NCCL 2.14 or later (ncclCommInitRankConfig, non-blocking communicators)"
#endif

namespace distribute::gpu_plugin {

struct Comm {
  ncclComm_t nccl = nullptr;
  int32_t device = 0;
  int32_t rank = -1;  // -1 in messages about no single rank (ncclCommInitAll)
  int32_t nranks = 0;
};

inline Comm* AsComm(void* comm) { return static_cast<Comm*>(comm); }

// Writes "<call> on GPU:<device> (rank <r> of <n>): <ncclResult name>: <description>; NCCL:
// <ncclGetLastError>", <call> printf-formatted from call_format, and returns 1. `where`
// may be a Comm that does not exist yet, for a failed creation.
int FailNccl(ncclResult_t result, const Comm& where, char* err, size_t err_len,
             const char* call_format, ...) __attribute__((format(printf, 5, 6)));

// Makes the communicator's device current (see UseDevice); 0, or 1 with a message.
int UseCommDevice(const Comm& comm, char* err, size_t err_len);

// What a call on a communicator returned, once its work is on the stream. On a non-blocking
// communicator (CommInitRank's) a collective may return ncclInProgress before that, while
// NCCL connects to peers on first use; the ABI promises that a collective that returned 0
// is queued, so that stream_query tells when it finished. Waits until NCCL has queued it or
// failed, at most kQueueLimitSeconds; ncclInProgress means the limit passed.
inline constexpr int kQueueLimitSeconds = 300;
ncclResult_t WaitUntilQueued(const Comm& comm, ncclResult_t result);

}  // namespace distribute::gpu_plugin

#endif  // DISTRIBUTE_CORE_CUDA_NCCL_COMMS_H_
