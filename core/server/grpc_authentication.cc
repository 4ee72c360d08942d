#include "core/server/grpc_authentication.h"

#include "core/server/connection_limiter.h"
#include "core/server/job_token.h"

namespace distribute {

absl::Status AuthenticateCall(const grpc::ServerContext* context, const std::string& job_token) {
  if (job_token.empty()) return absl::OkStatus();
  const auto& metadata = context->client_metadata();
  const auto found = metadata.find(kJobTokenMetadataKey);
  if (found != metadata.end() &&
      JobTokenMatches(job_token, absl::string_view(found->second.data(), found->second.size()))) {
    // Its connection is the job's: kept before a flood's (connection_limiter.h).
    ConnectionLimiter::NoteAuthenticatedPeer(context->peer());
    return absl::OkStatus();
  }
  return absl::UnauthenticatedError(
      found == metadata.end() ? "the request carries no job token: this server serves only its job's processes"
                              : "the request's job token is wrong: this server serves only its job's processes");
}

}  // namespace distribute
