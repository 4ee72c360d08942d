// Collectives on a communicator's device stream: all-reduce, all-gather and broadcast.
// all-gather and broadcast move bytes (ncclUint8), so they take every dtype.
#include <nccl.h>

#include "core/cuda/dtypes.h"
#include "core/cuda/nccl_comms.h"
#include "core/cuda/plugin_entries.h"
#include "core/cuda/plugin_errors.h"

namespace distribute::gpu_plugin {
namespace {

// NCCL's type for a dtype; false for dtypes NCCL has no type for (int16, bool).
bool NcclType(int32_t dtype, ncclDataType_t* out) {
  switch (dtype) {
    case kInt8: *out = ncclInt8; return true;
    case kUInt8: *out = ncclUint8; return true;
    case kInt32: *out = ncclInt32; return true;
    case kInt64: *out = ncclInt64; return true;
    case kFloat16: *out = ncclFloat16; return true;
    case kBFloat16: *out = ncclBfloat16; return true;
    case kFloat32: *out = ncclFloat32; return true;
    case kFloat64: *out = ncclFloat64; return true;
    default: return false;
  }
}

bool NcclOp(int32_t op, ncclRedOp_t* out) {
  switch (op) {
    case kReduceSum: *out = ncclSum; return true;
    case kReduceProduct: *out = ncclProd; return true;
    case kReduceMin: *out = ncclMin; return true;
    case kReduceMax: *out = ncclMax; return true;
    default: return false;
  }
}

// The end of every collective: waits until a non-blocking communicator has queued the work
// (WaitUntilQueued), and names the call on failure.
int FinishCall(const Comm& comm, ncclResult_t result, const char* call, size_t size,
               const char* unit, char* err, size_t err_len) {
  result = WaitUntilQueued(comm, result);
  if (result == ncclSuccess) return 0;
  if (result == ncclInProgress) {
    return FailWith(err, err_len,
                    "%s of %zu %s on GPU:%d (rank %d of %d): still not queued after %d s "
                    "(ncclInProgress): a peer has not joined; abort the communicator",
                    call, size, unit, static_cast<int>(comm.device), static_cast<int>(comm.rank),
                    static_cast<int>(comm.nranks), kQueueLimitSeconds);
  }
  return FailNccl(result, comm, err, err_len, "%s of %zu %s", call, size, unit);
}

}  // namespace

int AllReduce(void* comm, void* stream, const void* send, void* recv, size_t count, int32_t dtype,
              int32_t op, char* err, size_t err_len) {
  const Comm& c = *AsComm(comm);
  ncclDataType_t type;
  if (!NcclType(dtype, &type)) {
    const char* name = DTypeName(dtype);
    return FailWith(err, err_len,
                    "ncclAllReduce on GPU:%d: dtype %s (%d) has no NCCL type; expected int8, uint8, "
                    "int32, int64, float16, bfloat16, float32 or float64",
                    static_cast<int>(c.device), name != nullptr ? name : "unknown", static_cast<int>(dtype));
  }
  ncclRedOp_t nccl_op;
  if (!NcclOp(op, &nccl_op)) {
    const char* name = ReduceOpName(op);
    return FailWith(err, err_len,
                    "ncclAllReduce on GPU:%d: op %s (%d) is not supported; expected SUM (1), MIN (3), "
                    "MAX (4) or PRODUCT (5)",
                    static_cast<int>(c.device), name != nullptr ? name : "unknown", static_cast<int>(op));
  }
  if (UseCommDevice(c, err, err_len) != 0) return 1;
  const ncclResult_t result =
      ncclAllReduce(send, recv, count, type, nccl_op, c.nccl, static_cast<cudaStream_t>(stream));
  return FinishCall(c, result, "ncclAllReduce", count, "elements", err, err_len);
}

int AllGather(void* comm, void* stream, const void* send, void* recv, size_t bytes, char* err,
              size_t err_len) {
  const Comm& c = *AsComm(comm);
  if (UseCommDevice(c, err, err_len) != 0) return 1;
  const ncclResult_t result =
      ncclAllGather(send, recv, bytes, ncclUint8, c.nccl, static_cast<cudaStream_t>(stream));
  return FinishCall(c, result, "ncclAllGather", bytes, "bytes", err, err_len);
}

int Broadcast(void* comm, void* stream, const void* send, void* recv, size_t bytes, int32_t root,
              char* err, size_t err_len) {
  const Comm& c = *AsComm(comm);
  if (UseCommDevice(c, err, err_len) != 0) return 1;
  const ncclResult_t result =
      ncclBroadcast(send, recv, bytes, ncclUint8, root, c.nccl, static_cast<cudaStream_t>(stream));
  return FinishCall(c, result, "ncclBroadcast", bytes, "bytes", err, err_len);
}

}  // namespace distribute::gpu_plugin
