#include "core/server/remote_closure_client.h"

#include <climits>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include "absl/strings/str_cat.h"
#include "server/closures.grpc.pb.h"  // generated
#include "core/cluster/cluster_spec.h"
#include "core/server/grpc_status.h"
#include "core/server/job_channel.h"
#include "core/server/job_token.h"
#include "core/server/tls_credentials.h"
#include "core/util/mutex.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

namespace pb = ::distribute::closures;

class RemoteClosureClient final : public ClosureClient {
 public:
  RemoteClosureClient(std::string task, std::string address, std::string token,
                      std::shared_ptr<grpc::Channel> channel)
      : task_(std::move(task)),
        address_(std::move(address)),
        token_(std::move(token)),
        stub_(pb::Closures::NewStub(std::move(channel))) {}

  const std::string& task() const override { return task_; }

  absl::Status RunClosure(const pb::RunClosureRequest& request, pb::RunClosureResponse* response,
                          Deadline deadline) override {
    return Call(deadline, "running a closure", [&](grpc::ClientContext* context) {
      return stub_->RunClosure(context, request, response);
    });
  }
  absl::Status CreateResource(const pb::CreateResourceRequest& request, pb::CreateResourceResponse* response,
                              Deadline deadline) override {
    return Call(deadline, "creating a per-worker resource", [&](grpc::ClientContext* context) {
      return stub_->CreateResource(context, request, response);
    });
  }
  absl::Status ReleaseResources(const pb::ReleaseResourcesRequest& request, pb::ReleaseResourcesResponse* response,
                                Deadline deadline) override {
    return Call(deadline, "releasing per-worker resources", [&](grpc::ClientContext* context) {
      return stub_->ReleaseResources(context, request, response);
    });
  }
  absl::Status Ping(pb::PingResponse* response, Deadline deadline) override {
    const pb::PingRequest request;
    return Call(deadline, "pinging it", [&](grpc::ClientContext* context) {
      return stub_->Ping(context, request, response);
    });
  }

  void Cancel() override {
    MutexLock lock(&mu_);
    cancelled_ = true;
    for (grpc::ClientContext* context : in_flight_) context->TryCancel();
  }

 private:
  // One call, sent again while the server turns it away for lack of threads (no handler saw
  // it). The failure model of closure_client.h: OK when the worker answered; its refusal of
  // the token as Unauthenticated; anything else names the worker and what went wrong.
  template <typename Invoke>
  absl::Status Call(Deadline deadline, absl::string_view doing, Invoke invoke) {
    while (true) {
      grpc::ClientContext context;
      context.set_deadline(ToSystemClock(deadline.when));
      AddJobToken(context, token_);
      {
        MutexLock lock(&mu_);
        if (cancelled_) return absl::CancelledError(absl::StrCat("the coordinator stopped talking to ", task_));
        in_flight_.insert(&context);
      }
      const grpc::Status status = invoke(&context);
      {
        MutexLock lock(&mu_);
        in_flight_.erase(&context);
      }
      if (status.ok()) return absl::OkStatus();
      const bool from_service = IsServiceError(context);
      if (IsServerBusy(status, from_service) && Clock::now() + kServerBusyRetryDelay < deadline.when) {
        std::this_thread::sleep_for(kServerBusyRetryDelay);
        continue;
      }
      const absl::Status failure = FromGrpcStatus(status);
      if (from_service && absl::IsUnauthenticated(failure)) {
        return absl::UnauthenticatedError(absl::StrCat("worker ", task_, " refused this job's token: ", failure.message()));
      }
      return absl::Status(failure.code(), absl::StrCat("worker ", task_, " (", address_, ") did not answer ", doing,
                                                       ": ", failure.message()));
    }
  }

  const std::string task_;
  const std::string address_;
  const std::string token_;
  const std::unique_ptr<pb::Closures::Stub> stub_;
  Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::set<grpc::ClientContext*> in_flight_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<ClosureClient>> NewRemoteClosureClient(const std::string& task,
                                                                      const std::string& address,
                                                                      const RemoteClosureClientOptions& options) {
  if (task.empty()) return absl::InvalidArgumentError("the worker task's name is empty: expected e.g. \"worker:1\"");
  RETURN_IF_ERROR(ValidateTaskAddress(absl::StrCat("the address of ", task), address));
  if (options.max_message_bytes < 1024 || options.max_message_bytes > size_t{INT_MAX}) {
    return absl::InvalidArgumentError(absl::StrCat("max_message_bytes is ", options.max_message_bytes));
  }
  ASSIGN_OR_RETURN(std::string token, ResolveJobToken(options.job_token));
  ASSIGN_OR_RETURN(const std::optional<TlsCredentials> tls, LoadTlsCredentials(options.tls));
  std::shared_ptr<grpc::Channel> channel = NewJobChannel(DialAddress(address), tls, options.max_message_bytes);
  return std::unique_ptr<ClosureClient>(
      new RemoteClosureClient(task, address, std::move(token), std::move(channel)));
}

}  // namespace distribute
