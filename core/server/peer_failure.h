// What a peer failure reported by the coordination service (CoordinationClient's
// PeerHealth / WaitForPeerFailure) means for a transport waiting on that peer. The
// service and its clients compose these messages from the fragments below, and only this
// header reads them back, so the two sides cannot drift apart.
#ifndef DISTRIBUTE_CORE_SERVER_PEER_FAILURE_H_
#define DISTRIBUTE_CORE_SERVER_PEER_FAILURE_H_

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace distribute {

// A task connected but silent for the heartbeat timeout (stopped, hung): "no heartbeat
// for N ms" on the service, "no answer to heartbeats for N ms" on a client about the chief.
inline constexpr absl::string_view kNoHeartbeat = "no heartbeat for ";
inline constexpr absl::string_view kNoHeartbeatAnswer = "no answer to heartbeats for ";
// The chief shut its service down (its program ended or gave up): nobody died.
inline constexpr absl::string_view kServiceShuttingDown = "coordination service is shutting down";

// Whether `peer` (OK when no failure is known) says that a task died: its process or its
// connection is gone. A silent task and a service shut down on purpose are not deaths.
inline bool PeerDied(const absl::Status& peer) {
  if (peer.ok()) return false;
  const absl::string_view message = peer.message();
  return !absl::StrContains(message, kNoHeartbeat) &&
         !absl::StrContains(message, kNoHeartbeatAnswer) &&
         !absl::StrContains(message, kServiceShuttingDown);
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_PEER_FAILURE_H_
