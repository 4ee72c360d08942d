// The seam between a worker task's server and what runs the coordinator's closures on it.
// The server (this layer) hosts the closure service (closures.proto): it checks the job
// token and the message bounds, then hands each request to the ClosureHost. The host lives
// above the server (core/coordinator/worker_closure_host.h: registered functions, the
// worker's own ParameterServerStrategy, per-worker datasets and iterators), so the C API
// passes a factory for it in Server::Options; a server without one hosts no closure
// service.
//
// Every answer the host decides, errors included, goes in the response's `status`
// (closures.proto); the methods return non-OK only for a request the host cannot
// answer at all, which the service turns into an RPC error of that code.
//
// Thread-safety: the methods may be called concurrently (the gRPC server's threads);
// the host serializes what must be (one closure at a time).
#ifndef DISTRIBUTE_CORE_SERVER_CLOSURE_HOST_H_
#define DISTRIBUTE_CORE_SERVER_CLOSURE_HOST_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cluster/cluster_spec.h"
#include "core/util/tls_files.h"
#include "server/closures.pb.h"

namespace distribute {

class ClosureHost {
 public:
  virtual ~ClosureHost() = default;
  virtual absl::Status RunClosure(const closures::RunClosureRequest& request,
                                  closures::RunClosureResponse* response) = 0;
  virtual absl::Status CreateResource(const closures::CreateResourceRequest& request,
                                      closures::CreateResourceResponse* response) = 0;
  virtual absl::Status ReleaseResources(const closures::ReleaseResourcesRequest& request,
                                        closures::ReleaseResourcesResponse* response) = 0;
};

// What a host learns from the server that hosts it.
struct ClosureHostContext {
  ClusterSpec cluster;     // current task: this worker
  std::string job_token;   // the token the server checks and its clients carry ("" none)
  TlsFiles tls;            // the server's TLS files, for the worker's own channels
  uint64_t incarnation = 0;  // the server's, which every answer carries
};

using ClosureHostFactory =
    std::function<absl::StatusOr<std::unique_ptr<ClosureHost>>(const ClosureHostContext& context)>;

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_CLOSURE_HOST_H_
