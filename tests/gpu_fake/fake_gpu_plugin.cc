// libdist_fake_gpu.so: a CPU stand-in for the CUDA plugin (core/device/gpu_plugin_api.h),
// so that the core's GPU-replica path (strategies over GPU:i, the NCCL collective, streams,
// deadlines and aborts, host staging) runs in every test, on machines without a GPU.
// Tests load it with DIST_CUDA_PLUGIN=<path>; it is never installed.
//
// It is built to catch the mistakes a real GPU would punish:
//   - "Device memory" is host memory handed out as a non-canonical address (bit 62 set on
//     x86-64): core code that dereferences a device pointer faults at once, as it would on
//     a GPU, instead of silently working. Every pointer a call receives is checked against
//     the allocations of the device it claims to be on.
//   - Work queued on a stream runs later, when some call pumps the streams (every entry
//     does), in queue order; a collective completes only when every rank has queued it, so
//     a missing rank leaves its stream "running" and the core's deadline path is exercised.
//   - An aborted communicator fails the collectives its peers still wait in.
//
// Environment: DIST_FAKE_GPU_COUNT (devices, default 2; 0 reports no device),
// DIST_FAKE_GPU_MEMORY (bytes per device, default 1 GiB), DIST_FAKE_GPU_NO_PEER=1 (no peer
// access between devices), DIST_FAKE_GPU_STALL=1 (collectives queued from now on never
// finish: a GPU that hangs, for the deadline path). Read at each call, so tests may change
// them between cases. DIST_FAKE_GPU_ABI=replicas (read when the table is fetched) reports
// the table of a plugin built before the variable-update entries.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/kernels/reduce_kernels.h"
#include "core/device/gpu_plugin_api.h"
#include "core/tensor/dtype.h"

namespace {

using distribute::DType;
using distribute::ReduceOp;

constexpr uintptr_t kDeviceTag = uintptr_t{1} << 62;

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

int Fail(char* err, size_t err_len, const std::string& message) {
  std::snprintf(err, err_len, "%s", message.c_str());
  return 1;
}

std::string Gpu(int32_t device) { return "GPU:" + std::to_string(device); }

// Everything below is guarded by one mutex: the fake is about semantics, not speed.
std::mutex mu;

struct Allocation {
  size_t bytes;
  int32_t device;
};
std::map<uintptr_t, Allocation> allocations;  // by untagged base address
std::vector<size_t> used_bytes;

int32_t DeviceCount() { return EnvInt("DIST_FAKE_GPU_COUNT", 2); }
size_t DeviceMemory() {
  const char* value = std::getenv("DIST_FAKE_GPU_MEMORY");
  return value != nullptr && *value != '\0' ? std::strtoull(value, nullptr, 10) : size_t{1} << 30;
}

bool ValidDevice(int32_t device) { return device >= 0 && device < DeviceCount(); }

// The host address behind `ptr` when [ptr, ptr+bytes) lies in one allocation of `device`
// (or is plain host memory for DIST_GPU_HOST_DEVICE); nullptr with a message otherwise.
char* Resolve(int32_t device, const void* ptr, size_t bytes, std::string& why) {
  const auto raw = reinterpret_cast<uintptr_t>(ptr);
  if (device == DIST_GPU_HOST_DEVICE) {
    if ((raw & kDeviceTag) != 0) {
      why = "a device pointer passed as host memory";
      return nullptr;
    }
    return reinterpret_cast<char*>(raw);
  }
  if ((raw & kDeviceTag) == 0) {
    why = "a host pointer passed as memory of " + Gpu(device);
    return nullptr;
  }
  const uintptr_t host = raw & ~kDeviceTag;
  auto it = allocations.upper_bound(host);
  if (it == allocations.begin()) {
    why = "a pointer to no allocation of " + Gpu(device);
    return nullptr;
  }
  --it;
  if (host + bytes > it->first + it->second.bytes) {
    why = "a range past the end of its allocation on " + Gpu(it->second.device);
    return nullptr;
  }
  if (it->second.device != device) {
    why = "memory of " + Gpu(it->second.device) + " passed as memory of " + Gpu(device);
    return nullptr;
  }
  return reinterpret_cast<char*>(host);
}

// Memory that `device` may read: its own, a peer's (unless peer access is off), or host.
char* ResolveReadable(int32_t device, const void* ptr, size_t bytes, std::string& why) {
  const auto raw = reinterpret_cast<uintptr_t>(ptr);
  if ((raw & kDeviceTag) == 0) return Resolve(DIST_GPU_HOST_DEVICE, ptr, bytes, why);
  auto it = allocations.upper_bound(raw & ~kDeviceTag);
  if (it == allocations.begin()) {
    why = "a pointer to no allocation";
    return nullptr;
  }
  --it;
  const int32_t owner = it->second.device;
  if (owner != device && EnvInt("DIST_FAKE_GPU_NO_PEER", 0) != 0) {
    why = Gpu(device) + " cannot read memory of " + Gpu(owner) + " (no peer access)";
    return nullptr;
  }
  return Resolve(owner, ptr, bytes, why);
}

// ---- streams -------------------------------------------------------------------------------

// One queued operation: returns 0 when it has run, 1 when it cannot run yet, -1 (with a
// message) when it failed.
using Op = std::function<int(std::string& why)>;

struct Stream {
  int32_t device;
  std::deque<Op> queue;
  std::string error;  // sticky, once an operation failed
};
// Never destroyed (as a device's default stream lives as long as the process): the leak
// checker, which runs after static destructors, finds the default streams through them.
std::set<Stream*>& streams = *new std::set<Stream*>;
std::map<int32_t, Stream*>& default_streams = *new std::map<int32_t, Stream*>;

// Runs every runnable operation of every stream until none makes progress.
void Pump() {
  bool progress = true;
  while (progress) {
    progress = false;
    for (Stream* stream : streams) {
      while (!stream->queue.empty() && stream->error.empty()) {
        std::string why;
        const int rc = stream->queue.front()(why);
        if (rc == 1) break;
        stream->queue.pop_front();
        progress = true;
        if (rc != 0) stream->error = why;
      }
    }
  }
}

Stream* StreamOf(int32_t device, void* stream) {
  if (stream != nullptr) return static_cast<Stream*>(stream);
  Stream*& fallback = default_streams[device];
  if (fallback == nullptr) {
    fallback = new Stream{device, {}, {}};
    streams.insert(fallback);
  }
  return fallback;
}

int Enqueue(Stream* stream, Op op, char* err, size_t err_len) {
  if (!stream->error.empty()) return Fail(err, err_len, "the stream failed before: " + stream->error);
  stream->queue.push_back(std::move(op));
  Pump();
  return 0;
}

// ---- communicators -------------------------------------------------------------------------

enum class Kind { kAllReduce, kAllGather, kBroadcast };

// One collective of a group, as every rank queued it.
struct Call {
  explicit Call(Kind k) : kind(k) {}
  Kind kind;
  size_t count = 0;  // elements (all-reduce) or bytes
  int32_t dtype = 0;
  int32_t op = 0;
  int32_t root = 0;
  std::vector<const char*> send;
  std::vector<char*> recv;
  int32_t arrived = 0;
  bool done = false;
  std::string error;
};

struct Group {
  int32_t nranks;
  int32_t joined = 0;
  bool aborted = false;
  std::map<uint64_t, Call> calls;  // by sequence number
};

struct Comm {
  std::shared_ptr<Group> group;
  int32_t rank;
  int32_t device;
  uint64_t next = 0;
};
std::map<std::string, std::shared_ptr<Group>> groups_by_id;

bool NcclDType(int32_t dtype) {
  switch (static_cast<DType>(dtype)) {
    case DType::kInt8:
    case DType::kUInt8:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kFloat16:
    case DType::kBFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
      return true;
    default:
      return false;
  }
}

bool SameCall(const Call& a, const Call& b) {
  return a.kind == b.kind && a.count == b.count && a.dtype == b.dtype && a.op == b.op &&
         a.root == b.root;
}

void RunCall(Call& call, int32_t nranks) {
  if (call.kind == Kind::kAllReduce) {
    const std::vector<const void*> inputs(call.send.begin(), call.send.end());
    std::vector<void*> outputs(call.recv.begin(), call.recv.end());
    distribute::ReduceRange(static_cast<DType>(call.dtype), static_cast<ReduceOp>(call.op),
                            inputs.data(), nranks, outputs.data(), nranks, 0, call.count, 1);
  } else if (call.kind == Kind::kAllGather) {
    for (int32_t to = 0; to < nranks; ++to) {
      for (int32_t from = 0; from < nranks; ++from) {
        std::memmove(call.recv[to] + from * call.count, call.send[from], call.count);
      }
    }
  } else {
    for (int32_t to = 0; to < nranks; ++to) {
      if (call.recv[to] != call.send[call.root]) {
        std::memmove(call.recv[to], call.send[call.root], call.count);
      }
    }
  }
  call.done = true;
}

// Queues rank `comm`'s part of a collective: it arrives when it reaches the front of its
// stream, and runs once every rank has arrived.
int EnqueueCollective(Comm* comm, void* stream, Call shape, const void* send, size_t send_bytes,
                      void* recv, size_t recv_bytes, char* err, size_t err_len) {
  std::string why;
  char* send_host = ResolveReadable(comm->device, send, send_bytes, why);
  char* recv_host = send_host == nullptr ? nullptr : Resolve(comm->device, recv, recv_bytes, why);
  if (send_host == nullptr || recv_host == nullptr) return Fail(err, err_len, "collective on " + Gpu(comm->device) + ": " + why);
  const uint64_t seq = comm->next++;
  const bool stall = EnvInt("DIST_FAKE_GPU_STALL", 0) != 0;
  std::shared_ptr<Group> group = comm->group;
  const int32_t rank = comm->rank;
  bool arrived = false;
  Op op = [group, seq, rank, shape, send_host, recv_host, arrived, stall](std::string& why) mutable {
    if (group->aborted) {
      why = "the communicator was aborted (ncclCommAbort)";
      return -1;
    }
    if (stall) return 1;
    Call& call = group->calls.try_emplace(seq, shape).first->second;
    if (!arrived) {
      if (!SameCall(call, shape)) {
        call.error = "ranks queued different collectives at the same position";
      }
      if (call.send.empty()) {
        call.send.resize(group->nranks);
        call.recv.resize(group->nranks);
      }
      call.send[rank] = send_host;
      call.recv[rank] = recv_host;
      arrived = true;
      if (++call.arrived == group->nranks && call.error.empty()) RunCall(call, group->nranks);
    }
    if (!call.error.empty()) {
      why = call.error;
      return -1;
    }
    return call.done ? 0 : 1;
  };
  return Enqueue(StreamOf(comm->device, stream), std::move(op), err, err_len);
}

// ---- the table's entries -------------------------------------------------------------------

int DeviceCountEntry(int32_t* out_count, char* err, size_t err_len) {
  *out_count = DeviceCount();
  if (*out_count <= 0) return Fail(err, err_len, "the fake GPU plugin was configured with no device");
  return 0;
}

int Allocate(int32_t device, size_t bytes, void** out_ptr, char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  if (!ValidDevice(device)) return Fail(err, err_len, "cudaSetDevice: no " + Gpu(device));
  used_bytes.resize(static_cast<size_t>(DeviceCount()), 0);
  if (used_bytes[device] + bytes > DeviceMemory()) {
    return Fail(err, err_len, "cudaMalloc on " + Gpu(device) + ": out of memory (cudaErrorMemoryAllocation)");
  }
  // Poisoned like fresh device memory; the core must not read it before writing.
  char* host = static_cast<char*>(std::malloc(bytes == 0 ? 1 : bytes));
  if (host == nullptr) return Fail(err, err_len, "host memory behind the fake device ran out");
  std::memset(host, 0xA5, bytes);
  allocations[reinterpret_cast<uintptr_t>(host)] = Allocation{bytes, device};
  used_bytes[device] += bytes;
  *out_ptr = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(host) | kDeviceTag);
  return 0;
}

void Release(int32_t device, void* ptr) {
  std::lock_guard<std::mutex> lock(mu);
  const uintptr_t host = reinterpret_cast<uintptr_t>(ptr) & ~kDeviceTag;
  auto it = allocations.find(host);
  if (it == allocations.end() || it->second.device != device) {
    std::fprintf(stderr, "fake GPU plugin: release of %p, not an allocation of GPU:%d\n", ptr, device);
    std::abort();  // a test double may be loud: the core freed something it does not own
  }
  used_bytes[device] -= it->second.bytes;
  allocations.erase(it);
  std::free(reinterpret_cast<void*>(host));
}

int CopyLocked(int32_t dst_device, void* dst, int32_t src_device, const void* src, size_t bytes,
               std::string& why) {
  char* to = Resolve(dst_device, dst, bytes, why);
  const char* from = to == nullptr ? nullptr : Resolve(src_device, src, bytes, why);
  if (to == nullptr || from == nullptr) return -1;
  std::memmove(to, from, bytes);
  return 0;
}

int Copy(int32_t dst_device, void* dst, int32_t src_device, const void* src, size_t bytes,
         char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  Pump();
  std::string why;
  if (CopyLocked(dst_device, dst, src_device, src, bytes, why) != 0) return Fail(err, err_len, "cudaMemcpy: " + why);
  return 0;
}

int Zero(int32_t device, void* ptr, size_t bytes, char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  std::string why;
  char* host = Resolve(device, ptr, bytes, why);
  if (host == nullptr) return Fail(err, err_len, "cudaMemset: " + why);
  std::memset(host, 0, bytes);
  return 0;
}

int StreamCreate(int32_t device, void** out_stream, char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  if (!ValidDevice(device)) return Fail(err, err_len, "cudaStreamCreate: no " + Gpu(device));
  auto* stream = new Stream{device, {}, {}};
  streams.insert(stream);
  *out_stream = stream;
  return 0;
}

void StreamDestroy(int32_t /*device*/, void* stream) {
  std::lock_guard<std::mutex> lock(mu);
  streams.erase(static_cast<Stream*>(stream));
  delete static_cast<Stream*>(stream);
}

int StreamQuery(int32_t device, void* stream, char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  Pump();
  Stream* s = StreamOf(device, stream);
  if (!s->error.empty()) {
    Fail(err, err_len, "stream of " + Gpu(device) + ": " + s->error);
    return -1;
  }
  return s->queue.empty() ? 0 : 1;
}

int CopyAsync(int32_t dst_device, void* dst, int32_t src_device, const void* src, size_t bytes,
              int32_t stream_device, void* stream, char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  std::string why;
  // Checked when queued, like the CUDA runtime's argument checks; copied when it runs.
  if (Resolve(dst_device, dst, bytes, why) == nullptr || Resolve(src_device, src, bytes, why) == nullptr) {
    return Fail(err, err_len, "cudaMemcpyAsync: " + why);
  }
  Op op = [=](std::string& why) { return CopyLocked(dst_device, dst, src_device, src, bytes, why); };
  return Enqueue(StreamOf(stream_device, stream), std::move(op), err, err_len);
}

int HostAllocatePinned(size_t bytes, void** out_ptr, char* err, size_t err_len) {
  *out_ptr = std::malloc(bytes == 0 ? 1 : bytes);
  return *out_ptr == nullptr ? Fail(err, err_len, "cudaHostAlloc: out of memory") : 0;
}

void HostReleasePinned(void* ptr) { std::free(ptr); }

int Reduce(int32_t device, void* stream, int32_t dtype, int32_t op, const void* const* inputs,
           int32_t num_inputs, void* output, size_t count, int64_t divisor, char* err,
           size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  if (op == 2 || op < 1 || op > 5) return Fail(err, err_len, "reduce: op " + std::to_string(op) + " is not SUM, MIN, MAX or PRODUCT");
  if (!distribute::DTypeFromInt(dtype).ok()) {
    return Fail(err, err_len, "reduce: dtype " + std::to_string(dtype) + " is not one of the ten DIST dtypes");
  }
  const DType type = static_cast<DType>(dtype);
  const bool floating = type == DType::kFloat32 || type == DType::kFloat64 ||
                        type == DType::kFloat16 || type == DType::kBFloat16;
  if (divisor > 1 && !floating) return Fail(err, err_len, "reduce: a divisor needs a floating-point dtype");
  if (num_inputs < 1 || num_inputs > DIST_GPU_REDUCE_MAX_INPUTS) {
    return Fail(err, err_len, "reduce: " + std::to_string(num_inputs) + " inputs; expected 1 to " +
                                  std::to_string(DIST_GPU_REDUCE_MAX_INPUTS));
  }
  const size_t bytes = count * distribute::DTypeSize(static_cast<DType>(dtype));
  std::vector<const void*> hosts;
  std::string why;
  for (int32_t i = 0; i < num_inputs; ++i) {
    const char* host = ResolveReadable(device, inputs[i], bytes, why);
    if (host == nullptr) return Fail(err, err_len, "reduce on " + Gpu(device) + ": input " + std::to_string(i) + ": " + why);
    hosts.push_back(host);
  }
  void* out = Resolve(device, output, bytes, why);
  if (out == nullptr) return Fail(err, err_len, "reduce on " + Gpu(device) + ": output: " + why);
  Op run = [=](std::string&) {
    const ReduceOp reduce_op = divisor > 1 ? ReduceOp::kMean : static_cast<ReduceOp>(op);
    void* outputs[1] = {out};
    distribute::ReduceRange(type, reduce_op, hosts.data(), num_inputs, outputs, 1, 0, count,
                            divisor > 1 ? divisor : 1);
    return 0;
  };
  return Enqueue(StreamOf(device, stream), std::move(run), err, err_len);
}

int EnablePeerAccess(int32_t device, int32_t peer, int32_t* out_enabled, char* err, size_t err_len) {
  if (!ValidDevice(device) || !ValidDevice(peer)) return Fail(err, err_len, "cudaDeviceEnablePeerAccess: no such device");
  *out_enabled = EnvInt("DIST_FAKE_GPU_NO_PEER", 0) != 0 ? 0 : 1;
  return 0;
}

int CommUniqueId(uint8_t out_id[DIST_GPU_UNIQUE_ID_BYTES], char* /*err*/, size_t /*err_len*/) {
  static uint64_t counter = 0;
  std::lock_guard<std::mutex> lock(mu);
  std::memset(out_id, 0, DIST_GPU_UNIQUE_ID_BYTES);
  const uint64_t value = ++counter;
  std::memcpy(out_id, &value, sizeof value);
  std::snprintf(reinterpret_cast<char*>(out_id) + 8, 32, "fake-%d", static_cast<int>(getpid()));
  return 0;
}

int CommInitAll(int32_t count, const int32_t* devices, void** out_comms, char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  auto group = std::make_shared<Group>();
  group->nranks = count;
  group->joined = count;
  for (int32_t i = 0; i < count; ++i) {
    if (!ValidDevice(devices[i])) return Fail(err, err_len, "ncclCommInitAll: no " + Gpu(devices[i]));
  }
  for (int32_t i = 0; i < count; ++i) out_comms[i] = new Comm{group, i, devices[i], 0};
  return 0;
}

int CommInitRank(int32_t device, int32_t nranks, const uint8_t id[DIST_GPU_UNIQUE_ID_BYTES],
                 int32_t rank, void** out_comm, char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  if (!ValidDevice(device)) return Fail(err, err_len, "ncclCommInitRank: no " + Gpu(device));
  if (rank < 0 || rank >= nranks) return Fail(err, err_len, "ncclCommInitRank: invalid rank");
  // Ranks of one fake job live in one process (threads standing in for workers).
  std::shared_ptr<Group>& group =
      groups_by_id[std::string(reinterpret_cast<const char*>(id), DIST_GPU_UNIQUE_ID_BYTES)];
  if (group == nullptr) {
    group = std::make_shared<Group>();
    group->nranks = nranks;
  }
  if (group->nranks != nranks) return Fail(err, err_len, "ncclCommInitRank: ranks disagree on the rank count");
  ++group->joined;
  *out_comm = new Comm{group, rank, device, 0};
  return 0;
}

int CommStatus(void* comm, char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  const Comm* c = static_cast<Comm*>(comm);
  if (c->group->aborted) {
    Fail(err, err_len, "a peer aborted the communicator (ncclRemoteError)");
    return -1;
  }
  return c->group->joined < c->group->nranks ? 1 : 0;
}

void CommAbort(void* comm) {
  std::lock_guard<std::mutex> lock(mu);
  auto* c = static_cast<Comm*>(comm);
  c->group->aborted = true;
  // Queued collectives of every rank fail now (their streams keep the error).
  for (Stream* stream : streams) {
    if (!stream->queue.empty()) Pump();
  }
  delete c;
}

void CommDestroy(void* comm) {
  std::lock_guard<std::mutex> lock(mu);
  delete static_cast<Comm*>(comm);
}

int AllReduce(void* comm, void* stream, const void* send, void* recv, size_t count, int32_t dtype,
              int32_t op, char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  if (!NcclDType(dtype)) return Fail(err, err_len, "ncclAllReduce: dtype " + std::to_string(dtype) + " has no NCCL type");
  if (op == 2 || op < 1 || op > 5) return Fail(err, err_len, "ncclAllReduce: unsupported op");
  Call shape(Kind::kAllReduce);
  shape.count = count;
  shape.dtype = dtype;
  shape.op = op;
  const size_t bytes = count * distribute::DTypeSize(static_cast<DType>(dtype));
  return EnqueueCollective(static_cast<Comm*>(comm), stream, shape, send, bytes, recv, bytes, err, err_len);
}

int AllGather(void* comm, void* stream, const void* send, void* recv, size_t bytes, char* err,
              size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  Call shape(Kind::kAllGather);
  shape.count = bytes;
  auto* c = static_cast<Comm*>(comm);
  return EnqueueCollective(c, stream, shape, send, bytes, recv, bytes * c->group->nranks, err, err_len);
}

int Broadcast(void* comm, void* stream, const void* send, void* recv, size_t bytes, int32_t root,
              char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  Call shape(Kind::kBroadcast);
  shape.count = bytes;
  shape.root = root;
  return EnqueueCollective(static_cast<Comm*>(comm), stream, shape, send, bytes, recv, bytes, err, err_len);
}

int Difference(int32_t device, void* stream, int32_t dtype, const void* a, const void* b, void* output,
               size_t count, char* err, size_t err_len) {
  std::lock_guard<std::mutex> lock(mu);
  if (!distribute::DTypeFromInt(dtype).ok() || dtype == static_cast<int32_t>(DType::kBool)) {
    return Fail(err, err_len, "difference: dtype " + std::to_string(dtype) + " is not a numeric DIST dtype");
  }
  if (count == 0) return 0;
  const DType type = static_cast<DType>(dtype);
  const size_t bytes = count * distribute::DTypeSize(type);
  std::string why;
  const char* a_host = ResolveReadable(device, a, bytes, why);
  const char* b_host = a_host == nullptr ? nullptr : ResolveReadable(device, b, bytes, why);
  char* out = b_host == nullptr ? nullptr : Resolve(device, output, bytes, why);
  if (out == nullptr) return Fail(err, err_len, "difference on " + Gpu(device) + ": " + why);
  Op run = [=](std::string&) {
    if (out != a_host) std::memmove(out, a_host, bytes);
    distribute::SubtractInPlace(type, out, b_host, count);
    return 0;
  };
  return Enqueue(StreamOf(device, stream), std::move(run), err, err_len);
}

const dist_gpu_plugin_v1 kPlugin = {
    sizeof(dist_gpu_plugin_v1), DIST_GPU_PLUGIN_ABI_VERSION, DeviceCountEntry, Allocate, Release,
    Copy, Zero, StreamCreate, StreamDestroy, StreamQuery, CopyAsync, HostAllocatePinned,
    HostReleasePinned, Reduce, EnablePeerAccess, CommUniqueId, CommInitAll, CommInitRank,
    CommStatus, CommAbort, CommDestroy, AllReduce, AllGather, Broadcast, Difference,
};

}  // namespace

// DIST_FAKE_GPU_ABI=replicas: the table of a plugin built before the variable-update
// entries (struct_size stops before `difference`), so the core's fallbacks can be tested.
extern "C" __attribute__((visibility("default"))) const dist_gpu_plugin_v1* dist_gpu_plugin_get(void) {
  static const dist_gpu_plugin_v1 kOlder = [] {
    dist_gpu_plugin_v1 older = kPlugin;
    older.struct_size = DIST_GPU_PLUGIN_V1_REPLICA_SIZE;
    older.difference = nullptr;
    return older;
  }();
  const char* abi = std::getenv("DIST_FAKE_GPU_ABI");
  return abi != nullptr && std::string(abi) == "replicas" ? &kOlder : &kPlugin;
}
