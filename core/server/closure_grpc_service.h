// The gRPC handlers of the closure service (closures.proto) that a worker task's server
// hosts for the job's coordinator: each checks the job token first (a request without it
// is Unauthenticated and changes nothing), answers Ping itself with the server's
// incarnation, and hands every other request to the ClosureHost (closure_host.h). Message
// sizes are bounded by the server's max_message_bytes; the host checks the rest.
#ifndef DISTRIBUTE_CORE_SERVER_CLOSURE_GRPC_SERVICE_H_
#define DISTRIBUTE_CORE_SERVER_CLOSURE_GRPC_SERVICE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "core/server/closure_host.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace distribute {

// Threads of a worker's server the closure service may hold at once (one closure runs at a
// time; the others wait for it, or are a ping, a resource or a release).
inline constexpr int kClosureServiceThreads = 8;

// Handlers over `host`, which must outlive the gRPC server they are registered with.
std::unique_ptr<grpc::Service> NewClosureGrpcService(ClosureHost* host, std::string job_token,
                                                     uint64_t incarnation);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_CLOSURE_GRPC_SERVICE_H_
