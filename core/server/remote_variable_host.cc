#include "core/server/remote_variable_host.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <optional>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/sync_stream.h>

#include "absl/strings/str_cat.h"
#include "server/variables.grpc.pb.h"  // generated
#include "core/cluster/cluster_spec.h"
#include "core/ps/host_tensors.h"
#include "core/ps/names.h"
#include "core/server/grpc_status.h"
#include "core/server/job_channel.h"
#include "core/server/job_token.h"
#include "core/server/tensor_stream.h"
#include "core/server/tls_credentials.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

namespace pb = ::distribute::variables;

// How long WaitReady waits before it pings again a task that answered it is not ready
// (a server shutting down, one whose threads are all busy).
constexpr std::chrono::milliseconds kWaitReadyRetryDelay{50};

// " (while reading variable 'w')"
std::string While(absl::string_view doing) { return absl::StrCat(" (while ", doing, ")"); }

// "variable 'w'", or "3 variables ('w' and 2 more)", for messages.
std::string Batch(size_t count, absl::string_view first) {
  if (count == 1) return absl::StrCat("variable ", ps::QuotedName(first));
  return absl::StrCat(count, " variables (", ps::QuotedName(first), " and ", count - 1, " more)");
}

// What reading an answer stream came to: `status` says what was wrong with the answer, and
// `ended` whether the stream was read to its end (or abandoned part-way).
struct Received {
  absl::Status status;
  bool ended = false;
};

// Receives the tensors `headers` (of the first message of an answer stream) declare, the
// first message's bytes and those of the stream's later messages, into `*tensors`.
// Allocates only once the headers passed (within `max_bytes`).
template <typename Message, typename Stream>
Received ReceiveTensors(std::span<const pb::TensorHeader* const> headers, const Message& first, Stream* stream,
                        uint64_t max_bytes, std::vector<Tensor>* tensors) {
  absl::StatusOr<TensorAssembler> assembler = TensorAssembler::Start(headers, max_bytes);
  if (!assembler.ok()) return {assembler.status(), false};
  if (absl::Status appended = assembler->Append(first.data()); !appended.ok()) return {appended, false};
  absl::Status read =
      ReadChunks<Message>(*assembler, [stream](Message* message) { return stream->Read(message); });
  if (!read.ok()) return {read, false};
  absl::StatusOr<std::vector<Tensor>> received = std::move(*assembler).Finish();
  if (!received.ok()) return {received.status(), true};
  *tensors = *std::move(received);
  return {absl::OkStatus(), true};
}

// Receives the tensor the first message of an answer stream declares, and the bytes of the
// stream's later messages, into `*tensor`.
template <typename Message, typename Stream>
Received ReceiveAnswer(const Message& first, Stream* stream, uint64_t max_bytes, std::optional<Tensor>* tensor) {
  if (!first.has_tensor()) return {absl::InvalidArgumentError("its first message declares no tensor"), false};
  const pb::TensorHeader* header = &first.tensor();
  std::vector<Tensor> tensors;
  Received received =
      ReceiveTensors(std::span<const pb::TensorHeader* const>(&header, 1), first, stream, max_bytes, &tensors);
  if (received.status.ok()) tensor->emplace(std::move(tensors.front()));
  return received;
}

// Ends a call whose answer stream was read as `received` says. The call's own error wins
// when it failed (the transport's or the service's, which explain a short answer); else
// what was wrong with the answer goes to `*answer`. A stream abandoned part-way is
// cancelled first, so that the rest of a useless answer is not waited for.
template <typename Stream>
grpc::Status FinishAnswer(grpc::ClientContext* context, Stream* stream, const Received& received,
                          absl::Status* answer) {
  const bool cancelled = !received.status.ok() && !received.ended;
  if (cancelled) context->TryCancel();
  const grpc::Status status = stream->Finish();
  if (!status.ok() && !(cancelled && status.error_code() == grpc::StatusCode::CANCELLED)) return status;
  *answer = received.status;
  return grpc::Status::OK;
}

class RemoteVariableHost final : public ps::VariableHost {
 public:
  RemoteVariableHost(std::string task, std::string address, std::string token,
                     std::shared_ptr<grpc::Channel> channel, const RemoteVariableHostOptions& options)
      : task_(std::move(task)),
        describe_(absl::StrCat("parameter server ", task_, " (", address, ")")),
        token_(std::move(token)),
        max_message_bytes_(options.max_message_bytes),
        max_tensor_bytes_(options.max_tensor_bytes),
        channel_(std::move(channel)),
        stub_(pb::VariableService::NewStub(channel_)) {}

  const std::string& task() const override { return task_; }

  absl::Status WaitReady(const Deadline& deadline) override {
    const pb::PingRequest request;
    std::string last;  // why the last ping failed, when it did before the deadline
    while (true) {
      grpc::ClientContext context;
      context.set_deadline(ToSystemClock(deadline.when));
      context.set_wait_for_ready(true);  // start-up only: the task may not listen yet
      AddJobToken(context, token_);
      pb::PingResponse response;
      const grpc::Status status = stub_->Ping(&context, request, &response);
      if (status.ok()) return absl::OkStatus();
      const bool from_service = IsServiceError(context);
      if (from_service && status.error_code() != grpc::StatusCode::UNAVAILABLE) {
        return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                            absl::StrCat(describe_, " refused this process: ", status.error_message()));
      }
      if (status.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
        return absl::FailedPreconditionError(absl::StrCat(describe_, " serves no variables (",
                                                          status.error_message(), "): is it a ps task?"));
      }
      if (status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) last = status.error_message();
      if (Clock::now() + kWaitReadyRetryDelay >= deadline.when) {
        return absl::DeadlineExceededError(absl::StrCat(describe_, " did not answer within ", deadline.timeout_ms,
                                                        " ms (while waiting for it to start",
                                                        last.empty() ? "" : "; last error: ", last, ")"));
      }
      std::this_thread::sleep_for(kWaitReadyRetryDelay);
    }
  }

  absl::StatusOr<ps::VariableStore::Creation> CreateIfAbsent(absl::string_view name, const Tensor& initial,
                                                             const Deadline& deadline) override {
    const std::string doing = absl::StrCat("creating variable ", ps::QuotedName(name));
    ASSIGN_OR_RETURN(const WriteMessage write, PrepareWrite(name, initial));
    bool created = false;
    std::optional<Tensor> current;
    RETURN_IF_ERROR(Invoke(deadline, doing, [&](grpc::ClientContext* context, absl::Status* answer) {
      auto stream = stub_->CreateIfAbsent(context);
      WriteChunked(write.first, std::span<const Tensor>(&write.host, 1), max_message_bytes_, stream.get());
      pb::CreateResponse first;
      Received received{absl::InvalidArgumentError("it is empty"), true};
      if (stream->Read(&first)) {
        created = first.created();
        pb::CreateResponse extra;
        if (!created) {
          received = ReceiveAnswer(first, stream.get(), max_tensor_bytes_, &current);
        } else if (stream->Read(&extra)) {
          received = Received{absl::InvalidArgumentError("it goes on after saying the variable was created"), false};
        } else {
          received = Received{absl::OkStatus(), true};
        }
      }
      return FinishAnswer(context, stream.get(), received, answer);
    }));
    // The creator's value is its own initial one, as a store in process answers.
    if (created) return ps::VariableStore::Creation{true, initial};
    return ps::VariableStore::Creation{false, *std::move(current)};
  }

  absl::StatusOr<Tensor> Read(absl::string_view name, const Deadline& deadline) override {
    RETURN_IF_ERROR(ps::CheckPsName("variable name", name));
    pb::ReadRequest request;
    request.set_name(name.data(), name.size());
    std::optional<Tensor> value;
    RETURN_IF_ERROR(Invoke(deadline, absl::StrCat("reading variable ", ps::QuotedName(name)),
                           [&](grpc::ClientContext* context, absl::Status* answer) {
                             auto stream = stub_->Read(context, request);
                             pb::ReadResponse first;
                             const Received received =
                                 stream->Read(&first) ? ReceiveAnswer(first, stream.get(), max_tensor_bytes_, &value)
                                                      : Received{absl::InvalidArgumentError("it is empty"), true};
                             return FinishAnswer(context, stream.get(), received, answer);
                           }));
    return *std::move(value);
  }

  absl::Status Assign(absl::string_view name, const Tensor& value, const Deadline& deadline) override {
    return Write(name, value, deadline, absl::StrCat("assigning variable ", ps::QuotedName(name)),
                 [this](grpc::ClientContext* context, pb::WriteResponse* response) {
                   return stub_->Assign(context, response);
                 });
  }
  absl::Status AssignAdd(absl::string_view name, const Tensor& delta, const Deadline& deadline) override {
    return Write(name, delta, deadline, absl::StrCat("adding to variable ", ps::QuotedName(name)),
                 [this](grpc::ClientContext* context, pb::WriteResponse* response) {
                   return stub_->AssignAdd(context, response);
                 });
  }
  absl::Status AssignSub(absl::string_view name, const Tensor& delta, const Deadline& deadline) override {
    return Write(name, delta, deadline, absl::StrCat("subtracting from variable ", ps::QuotedName(name)),
                 [this](grpc::ClientContext* context, pb::WriteResponse* response) {
                   return stub_->AssignSub(context, response);
                 });
  }

  absl::Status AssignSlot(absl::string_view name, absl::string_view slot, const Tensor& value,
                          const Deadline& deadline) override {
    RETURN_IF_ERROR(ps::CheckPsName("slot name", slot));
    ASSIGN_OR_RETURN(WriteMessage write, PrepareWrite(name, value));
    write.first.set_slot(slot.data(), slot.size());
    return Invoke(deadline, absl::StrCat("writing slot ", ps::QuotedName(slot), " of variable ", ps::QuotedName(name)),
                  [&](grpc::ClientContext* context, absl::Status*) {
                    pb::WriteResponse response;
                    auto stream = stub_->AssignSlot(context, &response);
                    WriteChunked(write.first, std::span<const Tensor>(&write.host, 1), max_message_bytes_,
                                 stream.get());
                    return stream->Finish();
                  });
  }

  absl::Status ApplyUpdate(absl::string_view name, absl::string_view function, std::span<const Tensor> arguments,
                           const ps::Hyperparameters& hyperparameters, const Deadline& deadline) override {
    RETURN_IF_ERROR(ps::CheckPsName("variable name", name));
    RETURN_IF_ERROR(ps::CheckPsName("function name", function));
    pb::UpdateRequest first;
    first.set_name(name.data(), name.size());
    first.set_function(function.data(), function.size());
    for (const auto& [key, value] : hyperparameters) (*first.mutable_hyperparameters())[key] = value;
    std::vector<Tensor> host;
    uint64_t total = 0;
    for (const Tensor& argument : arguments) {
      ASSIGN_OR_RETURN(Tensor on_host, ps::OnHost(argument));
      SetTensorHeader(on_host, first.add_arguments());
      total += on_host.byte_size();
      host.push_back(std::move(on_host));
    }
    RETURN_IF_ERROR(CheckTensorBytes(total));
    RETURN_IF_ERROR(CheckHeaderFits(first.ByteSizeLong(), max_message_bytes_));
    return Invoke(deadline,
                  absl::StrCat("updating variable ", ps::QuotedName(name), " with ", ps::QuotedName(function)),
                  [&](grpc::ClientContext* context, absl::Status*) {
                    pb::WriteResponse response;
                    auto stream = stub_->ApplyUpdate(context, &response);
                    WriteChunked(first, std::span<const Tensor>(host), max_message_bytes_, stream.get());
                    return stream->Finish();
                  });
  }

  BatchLimits batch_limits() const override {
    return BatchLimits{kMaxBatchEntries, max_tensor_bytes_, max_message_bytes_ - kTensorMessageReserveBytes};
  }

  absl::StatusOr<std::vector<Tensor>> ReadMany(std::span<const std::string> names,
                                               const Deadline& deadline) override {
    RETURN_IF_ERROR(CheckBatch(names.size()));
    pb::ReadManyRequest request;
    for (const std::string& name : names) {
      RETURN_IF_ERROR(ps::CheckPsName("variable name", name));
      request.add_names(name);
    }
    RETURN_IF_ERROR(CheckHeaderFits(request.ByteSizeLong(), max_message_bytes_));
    if (!batches_served_.load(std::memory_order_relaxed)) return VariableHost::ReadMany(names, deadline);
    std::vector<Tensor> values;
    absl::Status read = Invoke(deadline, absl::StrCat("reading ", Batch(names.size(), names.front())),
                           [&](grpc::ClientContext* context, absl::Status* answer) {
                             auto stream = stub_->ReadMany(context, request);
                             pb::ReadManyResponse first;
                             Received received{absl::InvalidArgumentError("it is empty"), true};
                             if (stream->Read(&first)) {
                               std::vector<const pb::TensorHeader*> headers;
                               for (const pb::TensorHeader& header : first.tensors()) headers.push_back(&header);
                               received = headers.size() == names.size()
                                              ? ReceiveTensors(std::span<const pb::TensorHeader* const>(headers),
                                                               first, stream.get(), max_tensor_bytes_, &values)
                                              : Received{absl::InvalidArgumentError(absl::StrCat(
                                                             "it declares ", headers.size(), " tensors for ",
                                                             names.size(), " names")),
                                                         false};
                             }
                             return FinishAnswer(context, stream.get(), received, answer);
                           });
    if (Unserved(read)) return VariableHost::ReadMany(names, deadline);
    RETURN_IF_ERROR(read);
    return values;
  }

  absl::StatusOr<UpdatesOutcome> ApplyUpdates(std::span<const UpdateEntry> entries, absl::string_view function,
                                              const ps::Hyperparameters& hyperparameters,
                                              const Deadline& deadline) override {
    RETURN_IF_ERROR(CheckBatch(entries.size()));
    RETURN_IF_ERROR(ps::CheckPsName("function name", function));
    pb::UpdatesRequest first;
    first.set_function(function.data(), function.size());
    for (const auto& [key, value] : hyperparameters) (*first.mutable_hyperparameters())[key] = value;
    std::vector<Tensor> host;
    uint64_t total = 0;
    for (const UpdateEntry& entry : entries) {
      RETURN_IF_ERROR(ps::CheckPsName("variable name", entry.name));
      pb::UpdateEntry* wire = first.add_entries();
      wire->set_name(entry.name);
      for (const Tensor& argument : entry.arguments) {
        ASSIGN_OR_RETURN(Tensor on_host, ps::OnHost(argument));
        SetTensorHeader(on_host, wire->add_arguments());
        total += on_host.byte_size();
        host.push_back(std::move(on_host));
      }
    }
    RETURN_IF_ERROR(CheckTensorBytes(total));
    RETURN_IF_ERROR(CheckHeaderFits(first.ByteSizeLong(), max_message_bytes_));
    if (!batches_served_.load(std::memory_order_relaxed)) {
      return VariableHost::ApplyUpdates(entries, function, hyperparameters, deadline);
    }
    pb::UpdatesResponse response;
    absl::Status sent = Invoke(deadline,
                           absl::StrCat("updating ", Batch(entries.size(), entries.front().name), " with ",
                                        ps::QuotedName(function)),
                           [&](grpc::ClientContext* context, absl::Status* answer) {
                             response.Clear();
                             auto stream = stub_->ApplyUpdates(context, &response);
                             WriteChunked(first, std::span<const Tensor>(host), max_message_bytes_, stream.get());
                             const grpc::Status status = stream->Finish();
                             if (status.ok()) *answer = CheckUpdatesResponse(response, entries.size());
                             return status;
                           });
    // A task without the call has applied nothing: the entries go one by one instead.
    if (Unserved(sent)) return VariableHost::ApplyUpdates(entries, function, hyperparameters, deadline);
    RETURN_IF_ERROR(sent);
    UpdatesOutcome outcome;
    outcome.failed = response.failed();
    if (outcome.failed > 0) {
      outcome.first_failed = response.first_failed();
      outcome.first_error = absl::Status(static_cast<absl::StatusCode>(response.code()), response.message());
    }
    return outcome;
  }

  absl::StatusOr<std::vector<ps::StoredVariableInfo>> List(const Deadline& deadline) override {
    std::vector<ps::StoredVariableInfo> infos;
    RETURN_IF_ERROR(Invoke(deadline, "listing its variables", [&](grpc::ClientContext* context, absl::Status* answer) {
      infos.clear();
      auto stream = stub_->List(context, pb::ListRequest());
      pb::ListResponse page;
      Received received{absl::OkStatus(), true};
      while (received.status.ok() && stream->Read(&page)) {
        for (const pb::VariableInfo& entry : page.variables()) {
          absl::StatusOr<ps::StoredVariableInfo> info = CheckListed(entry, infos.size());
          if (!info.ok()) {
            received = Received{info.status(), false};
            break;
          }
          infos.push_back(*std::move(info));
        }
        page.Clear();
      }
      return FinishAnswer(context, stream.get(), received, answer);
    }));
    return infos;
  }

 private:
  // The first message of a write and the host tensor whose bytes follow it.
  struct WriteMessage {
    pb::WriteRequest first;
    Tensor host;
  };

  absl::StatusOr<WriteMessage> PrepareWrite(absl::string_view name, const Tensor& tensor) const {
    RETURN_IF_ERROR(ps::CheckPsName("variable name", name));
    ASSIGN_OR_RETURN(Tensor host, ps::OnHost(tensor));
    RETURN_IF_ERROR(CheckTensorBytes(host.byte_size()));
    WriteMessage write{pb::WriteRequest(), std::move(host)};
    write.first.set_name(name.data(), name.size());
    SetTensorHeader(write.host, write.first.mutable_tensor());
    return write;
  }

  // Assign, AssignAdd or AssignSub, through `open(context, response)`, which starts the call.
  template <typename Open>
  absl::Status Write(absl::string_view name, const Tensor& tensor, const Deadline& deadline, const std::string& doing,
                     Open&& open) {
    ASSIGN_OR_RETURN(const WriteMessage write, PrepareWrite(name, tensor));
    return Invoke(deadline, doing, [&](grpc::ClientContext* context, absl::Status*) {
      pb::WriteResponse response;
      auto stream = open(context, &response);
      WriteChunked(write.first, std::span<const Tensor>(&write.host, 1), max_message_bytes_, stream.get());
      return stream->Finish();
    });
  }

  absl::Status CheckTensorBytes(uint64_t bytes) const {
    if (bytes <= max_tensor_bytes_) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("the call carries ", bytes, " tensor bytes: at most ",
                                                   max_tensor_bytes_, " (max_tensor_bytes, the ps task's ",
                                                   "max_variable_request_bytes) travel in one call"));
  }

  // Whether `status` says the task has no such call (UNIMPLEMENTED from gRPC: the service
  // itself never answers it); remembers it for later batches.
  bool Unserved(const absl::Status& status) {
    if (status.code() != absl::StatusCode::kUnimplemented) return false;
    batches_served_.store(false, std::memory_order_relaxed);
    return true;
  }

  static absl::Status CheckBatch(size_t count) {
    if (count >= 1 && count <= kMaxBatchEntries) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("a batch of ", count, " variables: one call takes 1 to ", kMaxBatchEntries));
  }

  // An ApplyUpdates answer for `entries` entries, checked: a count and an index within
  // them, a known error code that is not OK, a bounded message.
  static absl::Status CheckUpdatesResponse(const pb::UpdatesResponse& response, size_t entries) {
    if (response.failed() == 0) {
      if (response.first_failed() != 0 || response.code() != 0 || !response.message().empty()) {
        return absl::InvalidArgumentError("it reports the error of a failed entry but no failure");
      }
      return absl::OkStatus();
    }
    const auto count = static_cast<size_t>(entries);
    if (response.failed() < 0 || static_cast<size_t>(response.failed()) > count || response.first_failed() < 0 ||
        static_cast<size_t>(response.first_failed()) >= count) {
      return absl::InvalidArgumentError(absl::StrCat("it reports ", response.failed(), " failures, the first at entry ",
                                                     response.first_failed(), ", of ", count, " entries"));
    }
    if (response.code() <= 0 || response.code() > static_cast<int32_t>(absl::StatusCode::kUnauthenticated) ||
        response.message().size() > kMaxEntryErrorBytes) {
      return absl::InvalidArgumentError(absl::StrCat("it reports a failure with code ", response.code(), " and a ",
                                                     response.message().size(), "-byte message"));
    }
    return absl::OkStatus();
  }

  // An entry of a List answer, checked; `count` entries came before it.
  static absl::StatusOr<ps::StoredVariableInfo> CheckListed(const pb::VariableInfo& entry, size_t count) {
    if (count >= static_cast<size_t>(kMaxVariablesPerTask)) {
      return absl::InvalidArgumentError(absl::StrCat("it lists more than ", kMaxVariablesPerTask, " variables"));
    }
    ps::StoredVariableInfo info;
    RETURN_IF_ERROR(ps::CheckPsName("variable name", entry.name()));
    if (!entry.slot_of().empty()) RETURN_IF_ERROR(ps::CheckPsName("slot_of", entry.slot_of()));
    ASSIGN_OR_RETURN(info.dtype, DTypeFromInt(entry.dtype()));
    ASSIGN_OR_RETURN(info.shape, Shape::Make(std::span<const int64_t>(entry.dims().data(),
                                                                      static_cast<size_t>(entry.dims_size()))));
    info.name = entry.name();
    info.slot_of = entry.slot_of();
    return info;
  }

  // Runs `call(context, answer)` (grpc::Status: the call's end; `*answer`: what was wrong
  // with an answer that arrived) until the deadline: again while the server is too busy to
  // take it, once otherwise. `doing` says what for, in messages.
  template <typename Call>
  absl::Status Invoke(const Deadline& deadline, absl::string_view doing, Call&& call) const {
    while (true) {
      grpc::ClientContext context;
      context.set_deadline(ToSystemClock(deadline.when));
      AddJobToken(context, token_);
      absl::Status answer = absl::OkStatus();
      const grpc::Status status = call(&context, &answer);
      if (!answer.ok()) {
        return absl::InternalError(absl::StrCat(describe_, " sent a malformed answer: ", answer.message(), While(doing)));
      }
      if (status.ok()) return absl::OkStatus();
      const bool from_service = IsServiceError(context);
      if (IsServerBusy(status, from_service) && Clock::now() + kServerBusyRetryDelay < deadline.when) {
        std::this_thread::sleep_for(kServerBusyRetryDelay);
        continue;
      }
      return Failure(status, from_service, deadline, doing);
    }
  }

  // The caller's view of a failed call: the service's own errors as they are (a refused
  // token naming the task), the transport's explained.
  absl::Status Failure(const grpc::Status& status, bool from_service, const Deadline& deadline,
                       absl::string_view doing) const {
    const auto code = static_cast<absl::StatusCode>(status.error_code());
    if (from_service && code == absl::StatusCode::kUnauthenticated) {
      return absl::UnauthenticatedError(absl::StrCat(describe_, " refused this process: ", status.error_message(),
                                                     While(doing)));
    }
    if (from_service) return FromGrpcStatus(status);
    switch (status.error_code()) {
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        return absl::DeadlineExceededError(
            absl::StrCat(describe_, " did not answer within ", deadline.timeout_ms, " ms", While(doing)));
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::CANCELLED:  // the server went away during the call
        return absl::UnavailableError(
            absl::StrCat(describe_, " is unavailable: ", status.error_message(), While(doing)));
      default:
        return absl::Status(code, absl::StrCat("the call to ", describe_, " failed: ", status.error_message(),
                                               While(doing)));
    }
  }

  const std::string task_;
  const std::string describe_;  // "parameter server ps:1 (127.0.0.1:2222)"
  const std::string token_;
  const size_t max_message_bytes_;
  const uint64_t max_tensor_bytes_;
  const std::shared_ptr<grpc::Channel> channel_;
  const std::unique_ptr<pb::VariableService::Stub> stub_;
  // False once the task answered that it has no batch calls (a ps task of an earlier
  // version): batches then go one call per entry, as VariableHost's defaults make them.
  std::atomic<bool> batches_served_{true};
};

}  // namespace

absl::StatusOr<std::unique_ptr<ps::VariableHost>> NewRemoteVariableHost(std::string task, std::string address,
                                                                        RemoteVariableHostOptions options) {
  if (task.empty()) return absl::InvalidArgumentError("the ps task's name is empty: expected e.g. \"ps:1\"");
  RETURN_IF_ERROR(ValidateTaskAddress(absl::StrCat("the address of ", task), address));
  if (options.max_message_bytes < kMinMaxMessageBytes || options.max_message_bytes > size_t{INT_MAX}) {
    return absl::InvalidArgumentError(absl::StrCat("max_message_bytes is ", options.max_message_bytes, ": expected ",
                                                   kMinMaxMessageBytes, " to ", INT_MAX));
  }
  if (options.max_tensor_bytes == 0) return absl::InvalidArgumentError("max_tensor_bytes is 0: expected at least 1");
  ASSIGN_OR_RETURN(std::string token, ResolveJobToken(options.job_token));
  ASSIGN_OR_RETURN(const std::optional<TlsCredentials> tls, LoadTlsCredentials(options.tls));
  std::shared_ptr<grpc::Channel> channel = NewJobChannel(DialAddress(address), tls, options.max_message_bytes);
  return std::unique_ptr<ps::VariableHost>(new RemoteVariableHost(std::move(task), std::move(address), std::move(token),
                                                                  std::move(channel), options));
}

}  // namespace distribute
