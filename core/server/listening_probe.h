// Whether something accepts TCP connections at a task's address: what tells "the chief is
// not up yet" from "the chief is up but this task cannot talk to it" (a TLS mismatch)
// when gRPC reports both as a deadline.
#ifndef DISTRIBUTE_CORE_SERVER_LISTENING_PROBE_H_
#define DISTRIBUTE_CORE_SERVER_LISTENING_PROBE_H_

#include <chrono>
#include <string>

namespace distribute {

// True when a TCP connection to `address` ("host:port", IPv6 hosts in brackets) completes
// within `timeout`; false when it is refused, times out or the host does not resolve.
// Blocks at most `timeout` plus the name lookup.
bool AcceptsConnections(const std::string& address, std::chrono::milliseconds timeout);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_LISTENING_PROBE_H_
