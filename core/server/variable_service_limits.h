// Bounds on what the variable service of a ps task (variable_grpc_service.h) and its
// client (remote_variable_host.h) send and accept. Both sides check them, the server
// before it allocates a byte for a request, the client before it sends one (for a precise
// message) and before it allocates a byte for an answer (a server is trusted no further).
#ifndef DISTRIBUTE_CORE_SERVER_VARIABLE_SERVICE_LIMITS_H_
#define DISTRIBUTE_CORE_SERVER_VARIABLE_SERVICE_LIMITS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "core/util/physical_memory.h"

namespace distribute {

// The largest message the variable service sends with tensor data (less when the message
// bound is smaller): large tensors travel in chunks, so that no message nears a bound, and
// two tasks whose bounds differ but are both at least this (the default is) still accept
// each other's messages.
inline constexpr size_t kTensorMessageBytes = size_t{4} << 20;

// Room kept in every message beside its chunk: a tensor header (kMaxRank dimensions),
// field tags and lengths. Requests with larger headers (an update's hyperparameters) give
// their first message less data instead.
inline constexpr size_t kTensorMessageReserveBytes = 4096;

// The default bound on the tensor bytes of one request or answer, all its tensors
// together (Server::Options::max_variable_request_bytes; the client's max_tensor_bytes):
// what one call may make the other side buffer.
inline constexpr uint64_t kDefaultMaxVariableRequestBytes = uint64_t{1} << 30;

// The machine's memory, or the 16 GiB the defaults below were set for when it cannot be
// read.
inline uint64_t MachineMemoryBytes() { return PhysicalMemoryBytes().value_or(uint64_t{16} << 30); }

// The default bound on the tensor bytes all requests to one ps task hold at once
// (Server::Options::max_variable_inflight_bytes): an eighth of the machine's memory, at
// least one request's worth (1 GiB) and at most 4 GiB.
inline uint64_t DefaultMaxVariableInflightBytes() {
  return std::clamp(MachineMemoryBytes() / 8, kDefaultMaxVariableRequestBytes, uint64_t{4} << 30);
}

// The default bound on a ps task's variables and slots (Server::Options::
// max_variable_bytes): half the machine's memory, at most 16 GiB.
inline uint64_t DefaultMaxVariableBytes() { return std::min(MachineMemoryBytes() / 2, uint64_t{16} << 30); }

// The most variables (slots included) a ps task may be configured to hold: List pages
// through them, and a client accepts no more.
inline constexpr int64_t kMaxVariablesPerTask = int64_t{1} << 22;

// The most variables (or shards) one ReadMany or ApplyUpdates call may name. A client
// cuts a larger batch into several calls (and fewer entries when their names and headers
// would not fit one message, or their tensors the byte bound).
inline constexpr size_t kMaxBatchEntries = 1024;

// The longest error message an ApplyUpdates answer carries for its first failed entry.
inline constexpr size_t kMaxEntryErrorBytes = 1024;

// The most hyperparameters one update may name (registered functions declare a handful).
inline constexpr size_t kMaxUpdateHyperparameters = 64;

// Variable-service calls a ps task's server runs at once beyond its other calls: each
// holds a thread, and up to max_variable_request_bytes, while it runs. Past it gRPC
// answers RESOURCE_EXHAUSTED before any handler runs, and clients send again.
inline constexpr int kVariableServiceThreads = 32;

// How long a request stream of the variable service may send nothing before the ps task
// cancels it (Server::Options::stream_idle_timeout_ms): a client sends a tensor's chunks
// back to back, so only a stuck or hostile one waits this long, while holding a thread.
inline constexpr int64_t kDefaultStreamIdleTimeoutMs = 10'000;

// The data bytes of one message under a bound of `max_message_bytes` (at least
// kMinMaxMessageBytes, which leaves room for the reserve): at most kTensorMessageBytes
// less the reserve.
inline size_t TensorChunkBytes(size_t max_message_bytes) {
  const size_t message = max_message_bytes < kTensorMessageBytes ? max_message_bytes : kTensorMessageBytes;
  return message > kTensorMessageReserveBytes ? message - kTensorMessageReserveBytes : 1;
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_VARIABLE_SERVICE_LIMITS_H_
