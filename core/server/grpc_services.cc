#include "core/server/grpc_services.h"

#include <algorithm>
#include <utility>

#include <grpcpp/server_context.h>
#include <grpcpp/support/sync_stream.h>

#include "server/coordination.grpc.pb.h"  // generated
#include "core/server/coordination_service.h"
#include "core/server/grpc_authentication.h"
#include "core/server/grpc_status.h"

namespace distribute {
namespace {

namespace pb = ::distribute::coordination;

// How long a Watch handler waits for news before it checks whether its client is still
// there: the bound on how late the death of a task's process is noticed.
constexpr int64_t kWatchPollMs = 100;

// The wait a request asks for, within what the service grants.
Deadline RequestDeadline(int64_t timeout_ms) {
  return Deadline::AfterMs(std::clamp<int64_t>(timeout_ms, 0, kMaxCoordinationWaitMs));
}

class CoordinationGrpcService final : public pb::CoordinationService::Service {
 public:
  CoordinationGrpcService(CoordinationService* service, std::string token)
      : service_(service), token_(std::move(token)) {}

  grpc::Status Register(grpc::ServerContext* context, const pb::RegisterRequest* request,
                        pb::RegisterResponse*) override {
    DIST_AUTHENTICATE(context);
    return ReplyStatus(context, service_->Register(request->task(), request->incarnation()));
  }

  grpc::Status Disconnect(grpc::ServerContext* context, const pb::DisconnectRequest* request,
                          pb::DisconnectResponse*) override {
    DIST_AUTHENTICATE(context);
    return ReplyStatus(context, service_->Disconnect(request->task(), request->incarnation()));
  }

  grpc::Status Heartbeat(grpc::ServerContext* context, const pb::HeartbeatRequest* request,
                         pb::HeartbeatResponse*) override {
    DIST_AUTHENTICATE(context);
    return ReplyStatus(context, service_->Heartbeat(request->task(), request->incarnation()));
  }

  grpc::Status KeyValueSet(grpc::ServerContext* context, const pb::KeyValueSetRequest* request,
                           pb::KeyValueSetResponse*) override {
    DIST_AUTHENTICATE(context);
    return ReplyStatus(context, service_->Set(request->key(), request->value()));
  }

  grpc::Status KeyValueGet(grpc::ServerContext* context, const pb::KeyValueGetRequest* request,
                           pb::KeyValueGetResponse* response) override {
    DIST_AUTHENTICATE(context);
    const CoordinationService::RemoteCaller caller{[context] { return context->IsCancelled(); }};
    absl::StatusOr<std::string> value =
        service_->Get(request->key(), RequestDeadline(request->timeout_ms()), &caller);
    if (value.ok()) *response->mutable_value() = std::move(*value);
    return ReplyStatus(context, value.status());
  }

  grpc::Status Barrier(grpc::ServerContext* context, const pb::BarrierRequest* request,
                       pb::BarrierResponse*) override {
    DIST_AUTHENTICATE(context);
    const CoordinationService::RemoteCaller caller{[context] { return context->IsCancelled(); }};
    return ReplyStatus(context, service_->Barrier(request->name(), request->task(),
                                                  RequestDeadline(request->timeout_ms()), &caller));
  }

  // Streams the log of lost tasks to the watching task, from the start. The stream's end
  // is the task's death unless it disconnected first, which the service sorts out.
  grpc::Status Watch(grpc::ServerContext* context, const pb::WatchRequest* request,
                     grpc::ServerWriter<pb::WatchEvent>* writer) override {
    DIST_AUTHENTICATE(context);
    const std::string& task = request->task();
    const uint64_t incarnation = request->incarnation();
    // Only a registered task may watch, once (this also counts as a heartbeat).
    if (absl::Status opened = service_->OpenWatch(task, incarnation); !opened.ok()) {
      return ReplyStatus(context, opened);
    }
    pb::WatchEvent event;
    event.mutable_ready();
    bool open = writer->Write(event);
    size_t next = 0;
    while (open && !context->IsCancelled()) {
      absl::StatusOr<std::vector<CoordinationService::TaskFailure>> failures =
          service_->WaitForFailures(next, Deadline::AfterMs(kWatchPollMs));
      if (!failures.ok()) return ReplyStatus(context, failures.status());  // shutting down
      for (const CoordinationService::TaskFailure& failure : *failures) {
        pb::TaskLost* lost = event.mutable_task_lost();
        lost->set_task(failure.task);
        lost->set_message(std::string(failure.status.message()));
        open = open && writer->Write(event);
        ++next;
      }
    }
    service_->ReportConnectionClosed(task, incarnation);
    return grpc::Status::CANCELLED;
  }

 private:
  CoordinationService* const service_;
  const std::string token_;
};

// Names the task; never its incarnation, which is what lets a caller act for the task
// (Heartbeat, Disconnect, Watch) and which, in a job without a token, only the task and the
// coordination service know.
class TaskGrpcService final : public pb::TaskService::Service {
 public:
  TaskGrpcService(std::string task, std::string token) : task_(std::move(task)), token_(std::move(token)) {}

  grpc::Status GetTask(grpc::ServerContext* context, const pb::GetTaskRequest*,
                       pb::GetTaskResponse* response) override {
    DIST_AUTHENTICATE(context);
    response->set_task(task_);
    return grpc::Status::OK;
  }

 private:
  const std::string task_;
  const std::string token_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewCoordinationGrpcService(CoordinationService* service,
                                                          std::string job_token) {
  return std::make_unique<CoordinationGrpcService>(service, std::move(job_token));
}

std::unique_ptr<grpc::Service> NewTaskGrpcService(std::string task, std::string job_token) {
  return std::make_unique<TaskGrpcService>(std::move(task), std::move(job_token));
}

}  // namespace distribute
