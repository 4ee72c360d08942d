// How every service of a task's server checks who is asking: a request without the job's
// token (job_token.h) is Unauthenticated, before the request is looked at, and changes
// nothing. Only the gRPC translation units include this header.
#ifndef DISTRIBUTE_CORE_SERVER_GRPC_AUTHENTICATION_H_
#define DISTRIBUTE_CORE_SERVER_GRPC_AUTHENTICATION_H_

#include <string>

#include <grpcpp/server_context.h>

#include "absl/status/status.h"

namespace distribute {

// OK when the call carries `job_token` (or the job has none, ""); otherwise
// Unauthenticated saying whether the token was missing or wrong.
absl::Status AuthenticateCall(const grpc::ServerContext* context, const std::string& job_token);

}  // namespace distribute

// The first statement of every handler of a class holding the job's token in `token_`.
#define DIST_AUTHENTICATE(context)                                                          \
  if (absl::Status denied = ::distribute::AuthenticateCall(context, token_); !denied.ok()) { \
    return ::distribute::ReplyStatus(context, denied);                                      \
  }

#endif  // DISTRIBUTE_CORE_SERVER_GRPC_AUTHENTICATION_H_
