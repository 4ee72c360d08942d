#include "core/server/job_channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/support/channel_arguments.h>

#include "core/server/job_token.h"

namespace distribute {

std::shared_ptr<grpc::Channel> NewJobChannel(const std::string& address, const std::optional<TlsCredentials>& tls,
                                             size_t max_message_bytes) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(max_message_bytes));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(address, ChannelCredentialsFor(tls), args);
}

void AddJobToken(grpc::ClientContext& context, const std::string& job_token) {
  if (!job_token.empty()) context.AddMetadata(kJobTokenMetadataKey, job_token);
}

std::chrono::system_clock::time_point ToSystemClock(Clock::time_point when) {
  return std::chrono::system_clock::now() +
         std::chrono::duration_cast<std::chrono::system_clock::duration>(when - Clock::now());
}

bool IsServerBusy(const grpc::Status& status, bool from_service) {
  return !from_service && status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED &&
         status.error_message().find("Threadpool Exhausted") != std::string::npos;
}

}  // namespace distribute
