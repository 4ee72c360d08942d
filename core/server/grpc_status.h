// absl::Status <-> grpc::Status (the code numbers are the same), and how a client tells an
// error a service of the job's servers produced (the coordination, task and variable
// services) from a transport failure: the service marks its own errors with trailing
// metadata. Only the gRPC translation units include this header.
#ifndef DISTRIBUTE_CORE_SERVER_GRPC_STATUS_H_
#define DISTRIBUTE_CORE_SERVER_GRPC_STATUS_H_

#include <grpcpp/client_context.h>
#include <grpcpp/server_context.h>
#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace distribute {

// The handler's reply: `status` as a grpc::Status, marked as the service's own when it
// is an error.
grpc::Status ReplyStatus(grpc::ServerContext* context, const absl::Status& status);

absl::Status FromGrpcStatus(const grpc::Status& status);

// Whether a finished call's error came from the service (rather than the transport).
bool IsServiceError(const grpc::ClientContext& context);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_GRPC_STATUS_H_
