// The gRPC handlers of the variable service (variables.proto) that a ps task's server
// hosts in front of its VariableStore. Each checks the job token first (a request without
// it is Unauthenticated and changes nothing), then the whole request: names
// (core/ps/names.h), counts, tensor headers and then their bytes (tensor_stream.h). Only a
// request that passes reaches the store; its answer, error or not, goes back as it is,
// marked as the service's own (grpc_status.h), so a worker sees the store's own code and
// message as it would in process.
//
// What one call may hold: a thread of the server (the server bounds how many), at most
// max_request_bytes of tensor data, allocated only once the headers declaring it passed
// and taken from a budget of max_inflight_bytes that all calls share.
#ifndef DISTRIBUTE_CORE_SERVER_VARIABLE_GRPC_SERVICE_H_
#define DISTRIBUTE_CORE_SERVER_VARIABLE_GRPC_SERVICE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/ps/variable_store.h"
#include "core/server/variable_service_limits.h"

namespace grpc {
class Service;
}  // namespace grpc

namespace distribute {

struct VariableServiceOptions {
  std::string job_token;  // what every request must carry ("": the job has none)
  size_t max_message_bytes = 0;  // the server's bound, which answers are chunked to fit
  uint64_t max_request_bytes = 0;  // the tensor bytes of one request, all its tensors together
  // The tensor bytes all requests in flight hold together; a request waits (up to the
  // stream idle limit) for its bytes, and fails ResourceExhausted if they stay taken.
  uint64_t max_inflight_bytes = kDefaultMaxVariableRequestBytes;
  // A request stream that sends nothing for this long is cancelled (stream_watchdog.h).
  int64_t stream_idle_timeout_ms = kDefaultStreamIdleTimeoutMs;
};

// Handlers over `store`, which must outlive the gRPC server they are registered with.
std::unique_ptr<grpc::Service> NewVariableGrpcService(ps::VariableStore* store, VariableServiceOptions options);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_VARIABLE_GRPC_SERVICE_H_
