#include "core/server/grpc_status.h"

#include <string>

namespace distribute {
namespace {
constexpr char kOriginKey[] = "dist-origin";
// Named after the first service that used it; every service of the job's servers sends it.
constexpr char kOriginService[] = "coordination";
}  // namespace

grpc::Status ReplyStatus(grpc::ServerContext* context, const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  context->AddTrailingMetadata(kOriginKey, kOriginService);
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

bool IsServiceError(const grpc::ClientContext& context) {
  const auto& metadata = context.GetServerTrailingMetadata();
  auto it = metadata.find(kOriginKey);
  return it != metadata.end() && it->second == kOriginService;
}

}  // namespace distribute
