// Bounds on the connections a task's gRPC server keeps open (issue 43, finding 6: one
// unauthenticated process held 19,990 idle connections to the chief, 19,999 of its 20,000
// file descriptors). gRPC 1.51 has no cap on accepted connections, and a connection made by
// gRPC's own listener can be handed to no one else, so the process watches its own file
// descriptors: a thread scans /proc/self/fd a few times a second for the sockets accepted
// on each watched port, groups them by peer address, and shuts down (SHUT_RDWR) the
// connections beyond the caps; gRPC then sees the peer gone and closes the socket as after
// any disconnect. Which go: first those that never carried a call with the job's token
// within a second of being seen, then newer ones still within that second, then those that
// did; the newest first among each. So a job's own connections outlive a flood from any
// address, its own included, and a task that connects during one gets a second to prove
// itself before older strangers.
//
// What it bounds: connections from one peer address, and in total, to one server.
// Handshakes that never finish and connections without calls are gRPC's to close (the
// server sets its handshake timeout and max-connection-idle arguments, server.cc).
// Between two scans (kConnectionScanInterval) a flood may briefly exceed the caps.
//
// Thread-safety: safe. One scanning thread serves every watched port of the process; it
// runs while at least one port is watched.
#ifndef DISTRIBUTE_CORE_SERVER_CONNECTION_LIMITER_H_
#define DISTRIBUTE_CORE_SERVER_CONNECTION_LIMITER_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include "absl/strings/string_view.h"

namespace distribute {

struct ConnectionLimits {
  int64_t max_connections = 1024;          // accepted connections to the server, in total
  int64_t max_connections_per_peer = 256;  // from one peer IP address
};

// How often the process's sockets are scanned.
inline constexpr std::chrono::milliseconds kConnectionScanInterval{100};

// The file descriptors the process may open (RLIMIT_NOFILE's soft limit).
int64_t OpenFileLimit();

// The caps of a server with the cluster's `tasks` when none are given: 1024 in total (at
// least four per task), 256 per peer, both at most a quarter of OpenFileLimit() (and at
// least 16), so that a flood cannot take the process's last descriptors.
ConnectionLimits DefaultConnectionLimits(size_t tasks);

// The watch of one port: registered on creation, unregistered on destruction.
class ConnectionLimiter {
 public:
  // Watches the connections accepted on `port` (as the server's listening socket reports
  // it), cutting those beyond `limits` (both at least 1).
  static std::unique_ptr<ConnectionLimiter> Watch(int port, ConnectionLimits limits);
  ~ConnectionLimiter();
  ConnectionLimiter(const ConnectionLimiter&) = delete;
  ConnectionLimiter& operator=(const ConnectionLimiter&) = delete;

  // The connections cut so far.
  int64_t cut() const;

  // A call with the job's token came from `grpc_peer` (grpc::ServerContext::peer(),
  // "ipv4:ADDRESS:PORT" or "ipv6:[ADDRESS]:PORT"; others are ignored): its connection is
  // kept before those that never proved the token.
  static void NoteAuthenticatedPeer(absl::string_view grpc_peer);

 private:
  ConnectionLimiter(int port, uint64_t id) : port_(port), id_(id) {}
  const int port_;
  const uint64_t id_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_CONNECTION_LIMITER_H_
