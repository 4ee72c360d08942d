// A client of a job's servers that is not one of the job's processes, built here from the
// project's coordination.proto as an attacker would build it: every request of both
// services, with the token it is given ("" for none: a stranger; the job's own: a buggy
// process of the job), and a burst of blocking gets that holds no thread of its own.
#ifndef DISTRIBUTE_TESTS_CORE_STRAY_CLIENT_H_
#define DISTRIBUTE_TESTS_CORE_STRAY_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "core/server/job_token.h"
#include "server/coordination.grpc.pb.h"  // generated

namespace distribute::testing {

namespace pb = ::distribute::coordination;

class StrayClient {
 public:
  // A channel that sends what the server accepts (values up to its message bound).
  StrayClient(const std::string& address, std::string token)
      : token_(std::move(token)),
        channel_(grpc::CreateChannel(address, grpc::InsecureChannelCredentials())),
        coordination_(pb::CoordinationService::NewStub(channel_)),
        task_(pb::TaskService::NewStub(channel_)) {}

  grpc::Status Register(const std::string& task, uint64_t incarnation) {
    const auto request = ForTask<pb::RegisterRequest>(task, incarnation);
    return Unary(&Stub::Register, request, /*wait_for_ready=*/true);  // the chief may not listen yet
  }

  grpc::Status Disconnect(const std::string& task, uint64_t incarnation) {
    const auto request = ForTask<pb::DisconnectRequest>(task, incarnation);
    return Unary(&Stub::Disconnect, request);
  }

  // Opens a Watch stream as `task` and reads it to its end.
  grpc::Status Watch(const std::string& task, uint64_t incarnation) {
    const auto request = ForTask<pb::WatchRequest>(task, incarnation);
    Context context(token_);
    auto reader = coordination_->Watch(&context, request);
    pb::WatchEvent event;
    while (reader->Read(&event)) {
    }
    return reader->Finish();
  }

  grpc::Status Set(const std::string& key, const std::string& value) {
    pb::KeyValueSetRequest request;
    request.set_key(key);
    request.set_value(value);
    return Unary(&Stub::KeyValueSet, request);
  }

  grpc::Status Get(const std::string& key, int64_t timeout_ms) {
    pb::KeyValueGetRequest request;
    request.set_key(key);
    request.set_timeout_ms(timeout_ms);
    return Unary(&Stub::KeyValueGet, request);
  }

  grpc::Status GetTask(pb::GetTaskResponse* response) {
    Context context(token_);
    return task_->GetTask(&context, pb::GetTaskRequest(), response);
  }

  // `count` KeyValueGets of `key` sent at once, each asking to wait `timeout_ms`, on one
  // completion queue: the client holds no thread per call, only the server might.
  class PendingGets {
   public:
    struct Call {
      grpc::ClientContext context;
      pb::KeyValueGetResponse response;
      grpc::Status status;
      std::unique_ptr<grpc::ClientAsyncResponseReader<pb::KeyValueGetResponse>> reader;
    };

    PendingGets(StrayClient& client, const std::string& key, int count, int64_t timeout_ms) {
      pb::KeyValueGetRequest request;
      request.set_key(key);
      request.set_timeout_ms(timeout_ms);
      for (int i = 0; i < count; ++i) {
        auto call = std::make_unique<Call>();
        call->context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms) +
                                   std::chrono::seconds(30));
        if (!client.token_.empty()) call->context.AddMetadata(kJobTokenMetadataKey, client.token_);
        call->reader = client.coordination_->PrepareAsyncKeyValueGet(&call->context, request, &queue_);
        call->reader->StartCall();
        call->reader->Finish(&call->response, &call->status, call.get());
        calls_.push_back(std::move(call));
      }
    }

    // Cancels what is still in flight and waits for it.
    ~PendingGets() {
      for (auto& call : calls_) call->context.TryCancel();
      while (finished_ < calls_.size() && Next(std::chrono::seconds(60)) != nullptr) {
      }
      queue_.Shutdown();
      void* tag = nullptr;
      bool ok = false;
      while (queue_.Next(&tag, &ok)) {
      }
    }

    // The next call to finish, or nullptr when none does within `wait`.
    Call* Next(std::chrono::milliseconds wait) {
      void* tag = nullptr;
      bool ok = false;
      if (queue_.AsyncNext(&tag, &ok, std::chrono::system_clock::now() + wait) !=
          grpc::CompletionQueue::GOT_EVENT) {
        return nullptr;
      }
      ++finished_;
      return static_cast<Call*>(tag);
    }

    size_t finished() const { return finished_; }
    size_t size() const { return calls_.size(); }

   private:
    grpc::CompletionQueue queue_;
    std::vector<std::unique_ptr<Call>> calls_;
    size_t finished_ = 0;
  };

 private:
  // A call's context: a generous deadline, and the token when there is one.
  class Context : public grpc::ClientContext {
   public:
    explicit Context(const std::string& token) {
      set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      if (!token.empty()) AddMetadata(kJobTokenMetadataKey, token);
    }
  };

  using Stub = pb::CoordinationService::Stub;

  // A request that names a task and its incarnation (Register, Disconnect, Watch).
  template <typename Request>
  static Request ForTask(const std::string& task, uint64_t incarnation) {
    Request request;
    request.set_task(task);
    request.set_incarnation(incarnation);
    return request;
  }

  // One call of the coordination service, its response dropped.
  template <typename Request, typename Response>
  grpc::Status Unary(grpc::Status (Stub::*rpc)(grpc::ClientContext*, const Request&, Response*),
                     const Request& request, bool wait_for_ready = false) {
    Response response;
    Context context(token_);
    context.set_wait_for_ready(wait_for_ready);
    return (coordination_.get()->*rpc)(&context, request, &response);
  }

  const std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<pb::CoordinationService::Stub> coordination_;
  std::unique_ptr<pb::TaskService::Stub> task_;
};

}  // namespace distribute::testing

#endif  // DISTRIBUTE_TESTS_CORE_STRAY_CLIENT_H_
