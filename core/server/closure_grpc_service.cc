#include "core/server/closure_grpc_service.h"

#include <utility>

#include <grpcpp/server_context.h>

#include "server/closures.grpc.pb.h"  // generated
#include "core/server/grpc_authentication.h"
#include "core/server/grpc_status.h"

namespace distribute {
namespace {

namespace pb = ::distribute::closures;

class ClosureGrpcService final : public pb::Closures::Service {
 public:
  ClosureGrpcService(ClosureHost* host, std::string job_token, uint64_t incarnation)
      : host_(host), token_(std::move(job_token)), incarnation_(incarnation) {}

  grpc::Status RunClosure(grpc::ServerContext* context, const pb::RunClosureRequest* request,
                          pb::RunClosureResponse* response) override {
    DIST_AUTHENTICATE(context);
    return ReplyStatus(context, host_->RunClosure(*request, response));
  }
  grpc::Status CreateResource(grpc::ServerContext* context, const pb::CreateResourceRequest* request,
                              pb::CreateResourceResponse* response) override {
    DIST_AUTHENTICATE(context);
    return ReplyStatus(context, host_->CreateResource(*request, response));
  }
  grpc::Status ReleaseResources(grpc::ServerContext* context, const pb::ReleaseResourcesRequest* request,
                                pb::ReleaseResourcesResponse* response) override {
    DIST_AUTHENTICATE(context);
    return ReplyStatus(context, host_->ReleaseResources(*request, response));
  }
  grpc::Status Ping(grpc::ServerContext* context, const pb::PingRequest*, pb::PingResponse* response) override {
    DIST_AUTHENTICATE(context);
    response->set_incarnation(incarnation_);
    return grpc::Status::OK;
  }

 private:
  ClosureHost* const host_;
  const std::string token_;
  const uint64_t incarnation_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewClosureGrpcService(ClosureHost* host, std::string job_token,
                                                     uint64_t incarnation) {
  return std::make_unique<ClosureGrpcService>(host, std::move(job_token), incarnation);
}

}  // namespace distribute
