// NCCL communicators: the unique id, creation (all in this process, or one rank of many),
// state, abort and destruction.
#include "core/cuda/nccl_comms.h"

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdarg>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <type_traits>

#include "core/cuda/devices.h"
#include "core/cuda/plugin_entries.h"
#include "core/cuda/plugin_errors.h"
#include "core/device/gpu_plugin_api.h"

namespace distribute::gpu_plugin {
namespace {

static_assert(sizeof(ncclUniqueId) == DIST_GPU_UNIQUE_ID_BYTES, "the ABI's id is an ncclUniqueId");
static_assert(std::is_same_v<int32_t, int>, "device lists are passed to NCCL as int arrays");

const char* ResultName(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return nullptr;  // a code newer than this plugin
  }
}

// The asynchronous state: ncclSuccess (usable), ncclInProgress (being created, or queuing
// a call), or the error that broke it. A failure of the query itself counts as that error.
ncclResult_t AsyncState(const Comm& comm) {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t result = ncclCommGetAsyncError(comm.nccl, &state);
  return result != ncclSuccess ? result : state;
}

// Frees a communicator that may be broken, stuck or still being created: ncclCommAbort
// raises NCCL's abort flag, so that its kernels and its creation thread stop instead of
// waiting for peers, and then frees it.
void AbortAndFree(Comm* comm) {
  (void)cudaSetDevice(comm->device);
  (void)ncclCommAbort(comm->nccl);
  (void)cudaGetLastError();  // nothing reports these failures: keep them out of later checks
  delete comm;
}

}  // namespace

int FailNccl(ncclResult_t result, const Comm& where, char* err, size_t err_len,
             const char* call_format, ...) {
  ErrorMessage message(err, err_len);
  va_list args;
  va_start(args, call_format);
  message.AppendV(call_format, args);
  va_end(args);
  message.AppendDevice(where.device);
  if (where.rank >= 0) {
    message.Append(" (rank %d of %d)", static_cast<int>(where.rank), static_cast<int>(where.nranks));
  }
  if (const char* name = ResultName(result); name != nullptr) {
    message.Append(": %s", name);
  } else {
    message.Append(": ncclResult %d", static_cast<int>(result));
  }
  message.Append(": %s", ncclGetErrorString(result));
  // NCCL keeps one last-error text for the whole process, not one per communicator: it may
  // describe this failure or an older one, so it comes after the code's own description.
  const char* last = ncclGetLastError(where.nccl);
  if (last != nullptr && last[0] != '\0') message.Append("; NCCL: %s", last);
  return 1;
}

int UseCommDevice(const Comm& comm, char* err, size_t err_len) {
  return UseDevice(comm.device, err, err_len);
}

ncclResult_t WaitUntilQueued(const Comm& comm, ncclResult_t result) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(kQueueLimitSeconds);
  auto pause = std::chrono::microseconds(20);
  while (result == ncclInProgress) {
    if (std::chrono::steady_clock::now() >= limit) return ncclInProgress;
    std::this_thread::sleep_for(pause);
    // Back off to 1 ms: connecting to peers takes milliseconds to seconds.
    if (pause < std::chrono::milliseconds(1)) pause *= 2;
    result = AsyncState(comm);
  }
  return result;
}

int CommUniqueId(uint8_t* out_id, char* err, size_t err_len) {
  std::memset(out_id, 0, DIST_GPU_UNIQUE_ID_BYTES);
  ncclUniqueId id;
  const ncclResult_t result = ncclGetUniqueId(&id);
  if (result != ncclSuccess) {
    return FailNccl(result, Comm{nullptr, kNoDevice, -1, 0}, err, err_len, "ncclGetUniqueId");
  }
  std::memcpy(out_id, id.internal, DIST_GPU_UNIQUE_ID_BYTES);
  return 0;
}

int CommInitAll(int32_t count, const int32_t* devices, void** out_comms, char* err, size_t err_len) {
  if (count < 1) {
    return FailWith(err, err_len, "ncclCommInitAll: %d devices; expected at least 1", static_cast<int>(count));
  }
  for (int32_t i = 0; i < count; ++i) out_comms[i] = nullptr;
  // Allocated before NCCL's communicators exist, so that nothing can fail after them.
  std::unique_ptr<ncclComm_t[]> nccl(new (std::nothrow) ncclComm_t[static_cast<size_t>(count)]());
  bool allocated = nccl != nullptr;
  for (int32_t i = 0; allocated && i < count; ++i) {
    out_comms[i] = new (std::nothrow) Comm{nullptr, devices[i], i, count};
    allocated = out_comms[i] != nullptr;
  }
  if (!allocated) {
    for (int32_t i = 0; i < count; ++i) {
      delete AsComm(out_comms[i]);
      out_comms[i] = nullptr;
    }
    return FailWith(err, err_len, "ncclCommInitAll of %d GPUs: out of host memory", static_cast<int>(count));
  }
  // ncclCommInitAll makes each device current in turn and restores the caller's.
  const ncclResult_t result = ncclCommInitAll(nccl.get(), count, devices);
  if (result != ncclSuccess) {
    char list[96] = "";
    ErrorMessage names(list, sizeof list);
    for (int32_t i = 0; i < count; ++i) names.Append(i == 0 ? "%d" : ",%d", static_cast<int>(devices[i]));
    for (int32_t i = 0; i < count; ++i) {
      delete AsComm(out_comms[i]);
      out_comms[i] = nullptr;
    }
    return FailNccl(result, Comm{nullptr, kNoDevice, -1, count}, err, err_len,
                    "ncclCommInitAll of GPUs %s", list);
  }
  for (int32_t i = 0; i < count; ++i) AsComm(out_comms[i])->nccl = nccl[static_cast<size_t>(i)];
  return 0;
}

int CommInitRank(int32_t device, int32_t nranks, const uint8_t* id, int32_t rank, void** out_comm,
                 char* err, size_t err_len) {
  *out_comm = nullptr;
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return FailWith(err, err_len, "ncclCommInitRankConfig on GPU:%d: rank %d of %d; expected 0 <= rank < nranks",
                    static_cast<int>(device), static_cast<int>(rank), static_cast<int>(nranks));
  }
  std::unique_ptr<Comm> comm(new (std::nothrow) Comm{nullptr, device, rank, nranks});
  if (comm == nullptr) {
    return FailWith(err, err_len, "ncclCommInitRankConfig on GPU:%d: out of host memory", static_cast<int>(device));
  }
  // NCCL creates the communicator on the current device.
  if (UseDevice(device, err, err_len) != 0) return 1;
  ncclUniqueId unique_id;
  std::memcpy(unique_id.internal, id, DIST_GPU_UNIQUE_ID_BYTES);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  // Non-blocking: creation waits for every rank to join; this way it runs in NCCL's thread
  // while the core polls comm_status and can abort on its deadline.
  config.blocking = 0;
  const ncclResult_t result = ncclCommInitRankConfig(&comm->nccl, nranks, unique_id, rank, &config);
  if (result != ncclSuccess && result != ncclInProgress) {
    FailNccl(result, *comm, err, err_len, "ncclCommInitRankConfig");
    if (comm->nccl != nullptr) AbortAndFree(comm.release());
    return 1;
  }
  *out_comm = comm.release();
  return 0;
}

int CommStatus(void* comm, char* err, size_t err_len) {
  // Needs no current device: ncclCommGetAsyncError only reads the communicator's state.
  const Comm& c = *AsComm(comm);
  ncclResult_t state = ncclSuccess;
  const ncclResult_t result = ncclCommGetAsyncError(c.nccl, &state);
  if (result != ncclSuccess) {
    FailNccl(result, c, err, err_len, "ncclCommGetAsyncError");
    return -1;
  }
  if (state == ncclSuccess) return 0;
  if (state == ncclInProgress) return 1;
  FailNccl(state, c, err, err_len, "NCCL communicator (asynchronous error from ncclCommGetAsyncError)");
  return -1;
}

void CommAbort(void* comm) {
  if (comm != nullptr) AbortAndFree(AsComm(comm));
}

void CommDestroy(void* comm) {
  if (comm == nullptr) return;
  Comm* c = AsComm(comm);
  // ncclCommDestroy refuses a communicator that is still being created or has failed, and
  // frees nothing: abort those instead.
  if (AsyncState(*c) != ncclSuccess) {
    AbortAndFree(c);
    return;
  }
  // No ncclCommFinalize: it waits until every rank has finalized, which a lost peer never
  // does. ncclCommDestroy alone frees the local resources once the local work has finished.
  (void)cudaSetDevice(c->device);
  (void)ncclCommDestroy(c->nccl);
  (void)cudaGetLastError();  // nothing reports these failures: keep them out of later checks
  delete c;
}

}  // namespace distribute::gpu_plugin
