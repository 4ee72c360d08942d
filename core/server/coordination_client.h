// What a task can ask of the cluster's coordination service (hosted by the chief's
// server): a key-value store with a blocking get, named barriers, and the health of the
// other tasks. The chief talks to its service in process; every other task over gRPC.
// The Gloo rendezvous store and MultiWorkerMirroredStrategy are written against this
// interface only.
//
// Errors: kDeadlineExceeded when a wait runs out (a barrier's message names the tasks that
// did not arrive, as "worker:1"), kUnavailable when the service or a peer is gone (the
// message names the task), kInvalidArgument for a bad key or name.
//
// Thread-safety: safe; calls may block concurrently on different keys and barriers.
#ifndef DISTRIBUTE_CORE_SERVER_COORDINATION_CLIENT_H_
#define DISTRIBUTE_CORE_SERVER_COORDINATION_CLIENT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/util/deadline.h"

namespace distribute {

class CoordinationClient {
 public:
  virtual ~CoordinationClient() = default;

  // This task's name as the service knows it ("worker:0", "chief:0").
  virtual const std::string& task_name() const = 0;

  // Stores `value` under `key` (overwriting) and wakes every Get waiting for it.
  virtual absl::Status Set(absl::string_view key, absl::string_view value) = 0;

  // The value under `key`, waiting until some task sets it or `deadline` passes
  // (kDeadlineExceeded naming the key).
  virtual absl::StatusOr<std::string> Get(absl::string_view key, const Deadline& deadline) = 0;

  // Returns when every task of the barrier's set (the workers: chief and worker tasks)
  // has called Barrier with the same `name`, or fails at `deadline` with a message naming
  // the tasks that did not arrive.
  virtual absl::Status Barrier(absl::string_view name, const Deadline& deadline) = 0;

  // OK while every peer is known alive; else kUnavailable naming the first task lost and
  // how it was detected ("task worker:1 is unavailable: its connection to the
  // coordination service closed"). Never blocks.
  virtual absl::Status PeerHealth() = 0;

  // Like PeerHealth, but waits until a peer failure is known or `deadline` passes (then
  // returns OK). Used after a transport error to name the task that caused it.
  virtual absl::Status WaitForPeerFailure(const Deadline& deadline) = 0;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_COORDINATION_CLIENT_H_
