// Bounds on what a coordination request may carry. They are checked where a request
// enters the service (in process or over gRPC) and, for a precise message, by a remote
// client before it sends: a request over a bound is kInvalidArgument, never a gRPC
// RESOURCE_EXHAUSTED from deep inside the transport.
#ifndef DISTRIBUTE_CORE_SERVER_COORDINATION_LIMITS_H_
#define DISTRIBUTE_CORE_SERVER_COORDINATION_LIMITS_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distribute {

// Keys and barrier names: non-empty, at most this many bytes.
inline constexpr size_t kMaxCoordinationKeyBytes = 4096;

// What a message needs beside its value (the key, the field tags, gRPC framing).
inline constexpr size_t kCoordinationMessageOverheadBytes = kMaxCoordinationKeyBytes + 1024;

// The default bound on a gRPC message, both directions.
inline constexpr size_t kDefaultMaxMessageBytes = size_t{4} << 20;

// The smallest message bound that still leaves room for a useful value.
inline constexpr size_t kMinMaxMessageBytes = 2 * kCoordinationMessageOverheadBytes;

// The longest wait (Get, Barrier, timeouts of the server options) the service grants: a
// day. Longer requests are clamped, so a handler thread is never held for ever.
inline constexpr int64_t kMaxCoordinationWaitMs = int64_t{24} * 60 * 60 * 1000;

// Caps on what the service holds for the whole job (CoordinationService::Options). Each
// bounds something a process with the job's token, buggy or not, could otherwise grow
// without end; past a cap a request fails with kResourceExhausted naming the cap and
// changes nothing.
//
// The key-value store: the bytes of keys and values together, and how many keys. Generous
// for real jobs: a strategy's Gloo rendezvous stores a few hundred bytes per worker.
inline constexpr size_t kDefaultMaxStoreBytes = size_t{64} << 20;
inline constexpr size_t kDefaultMaxStoreKeys = 65536;
// Barriers the service keeps (a failed one stays, to fail later calls the same way), with
// names of at most kMaxCoordinationKeyBytes: apart from the store, so that a store filled
// by a buggy process cannot stop the job's barriers.
inline constexpr size_t kDefaultMaxBarriers = 16384;

// Waits of other tasks (Get, Barrier) pending at once, each of which holds one of the
// chief's gRPC server threads. A job needs one or two per task at a time; the default
// leaves room for programs that wait on several keys at once.
inline constexpr size_t kMinDefaultPendingWaits = 64;
inline constexpr size_t kDefaultPendingWaitsPerTask = 16;
// The most any option may allow: the bound on the chief's threads must stay an int.
inline constexpr size_t kMaxPendingWaits = size_t{1} << 16;
inline constexpr size_t kMaxClusterTasksForThreads = size_t{1} << 16;

// The default cap on pending waits for a cluster of `tasks` tasks.
size_t DefaultMaxPendingWaits(size_t tasks);

// Threads a server keeps beyond pending waits and Watch streams: short calls (Set,
// Heartbeat, Register, GetTask) and gRPC's own pollers.
inline constexpr size_t kServerThreadsForShortCalls = 32;

// The most threads a task's gRPC server may run: on the chief every pending wait and the
// Watch stream of every task (one each) besides the short calls. Past it gRPC answers a
// request with RESOURCE_EXHAUSTED instead of starting a thread.
int ServerThreadLimit(size_t watching_tasks, size_t max_pending_waits);

// The largest value that fits a message of `max_message_bytes`.
inline size_t MaxValueBytes(size_t max_message_bytes) {
  return max_message_bytes > kCoordinationMessageOverheadBytes
             ? max_message_bytes - kCoordinationMessageOverheadBytes
             : 0;
}

// `text` quoted and escaped for a one-line message, cut after 64 bytes: keys come from
// users and may be binary.
std::string QuotedKey(absl::string_view text);

// InvalidArgument unless `key` is non-empty and at most kMaxCoordinationKeyBytes long;
// `what` says what it is ("key", "barrier name").
absl::Status CheckCoordinationKey(absl::string_view what, absl::string_view key);

// InvalidArgument when a value of `size` bytes under `key` exceeds `max_value_bytes`.
absl::Status CheckCoordinationValue(absl::string_view key, size_t size, size_t max_value_bytes);

// InvalidArgument unless 0 <= timeout_ms <= kMaxCoordinationWaitMs; `name` names it.
absl::Status CheckWaitTimeoutMs(absl::string_view name, int64_t timeout_ms);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_COORDINATION_LIMITS_H_
