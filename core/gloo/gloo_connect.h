// Connecting the workers' Gloo full mesh so that only the job's own processes end up in
// it. Gloo's TCP pairs each listen on a fresh port and take the first connection that
// arrives: a stranger that reaches the port before the real peer (a port scan, a
// misdirected client) would become the pair's peer. So every connection attempt ends
// with a handshake in which each worker proves to each other one that it knows the job
// token (handshake_proof.h), and the workers then agree, through the coordination
// service, whether every pair passed. If any did not (a stranger answered, a connection
// was refused because a stranger took its port), every worker drops the attempt and
// connects again on fresh ports, until the deadline; the stranger is left with a closed
// socket and the job goes on.
//
// A stranger that sends bytes which are not Gloo frames only spoils the attempt too (the
// pair fails on the bad frame). What the handshake cannot stop: a stranger that crafts
// Gloo's own frame format to a listening port before the handshake (Debian's Gloo parses
// frames first, and by its code aborts the process on a frame longer than the receive
// posted for it). TLS for the transport needs a Gloo built with it (Debian's is not);
// docs/security.md says so.
#ifndef DISTRIBUTE_CORE_GLOO_GLOO_CONNECT_H_
#define DISTRIBUTE_CORE_GLOO_GLOO_CONNECT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/server/coordination_client.h"
#include "core/util/deadline.h"

namespace gloo {
class Context;
}

namespace distribute {

struct GlooMeshRequest {
  CoordinationClient* coordination;
  std::string key_prefix;               // the same on every worker, new for every communicator
  int32_t rank;
  std::vector<std::string> task_names;  // every worker, in rank order (for messages)
  std::string hostname;                 // where this worker listens
  std::string job_token;                // "" when the job has none
  bool background_loop = false;         // Gloo's event loop at a low priority (gloo_device.h)
};

// The connected, authenticated context. Errors: kUnavailable naming a task that died (or
// why the attempts kept failing), kDeadlineExceeded at `deadline`.
absl::StatusOr<std::shared_ptr<gloo::Context>> ConnectGlooMesh(const GlooMeshRequest& request,
                                                               const Deadline& deadline);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GLOO_GLOO_CONNECT_H_
