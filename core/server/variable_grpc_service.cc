#include "core/server/variable_grpc_service.h"

#include <chrono>
#include <span>
#include <utility>
#include <vector>

#include <grpcpp/server_context.h>
#include <grpcpp/support/sync_stream.h>

#include "absl/strings/str_cat.h"
#include "server/variables.grpc.pb.h"  // generated
#include "core/ps/names.h"
#include "core/server/grpc_authentication.h"
#include "core/server/grpc_status.h"
#include "core/server/stream_watchdog.h"
#include "core/server/tensor_stream.h"
#include "core/server/variable_service_limits.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

namespace pb = ::distribute::variables;

// A checked Create / Assign / AssignAdd / AssignSub request with its tensor.
struct WriteCall {
  std::string name;
  Tensor tensor;
  std::string slot;  // AssignSlot's; empty for the others
};

// The store's operations that take one tensor and answer with a status.
using StoreWrite = absl::Status (ps::VariableStore::*)(absl::string_view, const Tensor&);

absl::Status EmptyStream() {
  return absl::InvalidArgumentError(
      "the request stream is empty: its first message must name the variable and declare its tensors");
}

class VariableGrpcService final : public pb::VariableService::Service {
 public:
  VariableGrpcService(ps::VariableStore* store, VariableServiceOptions options)
      : store_(store),
        token_(std::move(options.job_token)),
        max_message_bytes_(options.max_message_bytes),
        max_request_bytes_(options.max_request_bytes),
        inflight_(options.max_inflight_bytes),
        watchdog_(std::chrono::milliseconds(options.stream_idle_timeout_ms)) {}

  grpc::Status Ping(grpc::ServerContext* context, const pb::PingRequest* request,
                    pb::PingResponse* response) override {
    DIST_AUTHENTICATE(context);
    const size_t most = max_message_bytes_ - kDataFieldOverheadBytes;
    if (request->reply_bytes() > most) {
      return ReplyStatus(context, absl::InvalidArgumentError(absl::StrCat(
                                      "a ping may ask for at most ", most, " bytes back, not ", request->reply_bytes())));
    }
    response->mutable_payload()->resize(request->reply_bytes());
    return grpc::Status::OK;
  }

  grpc::Status CreateIfAbsent(grpc::ServerContext* context,
                              grpc::ServerReaderWriter<pb::CreateResponse, pb::WriteRequest>* stream) override {
    DIST_AUTHENTICATE(context);
    ByteBudget::Reservation held(inflight_);
    absl::StatusOr<WriteCall> call = Receive<WriteCall>(context, stream, [&](auto* in) { return ReceiveWrite(in, held); });
    if (!call.ok()) return ReplyStatus(context, call.status());
    absl::StatusOr<ps::VariableStore::Creation> creation = store_->CreateIfAbsent(call->name, call->tensor);
    if (!creation.ok()) return ReplyStatus(context, creation.status());
    pb::CreateResponse first;
    first.set_created(creation->created);
    if (creation->created) {
      stream->WriteLast(first, grpc::WriteOptions());
      return grpc::Status::OK;
    }
    SetTensorHeader(creation->value, first.mutable_tensor());
    // A write that fails means the caller is gone: there is no one left to answer.
    WriteChunked(std::move(first), std::span<const Tensor>(&creation->value, 1), max_message_bytes_, stream);
    return grpc::Status::OK;
  }

  grpc::Status Read(grpc::ServerContext* context, const pb::ReadRequest* request,
                    grpc::ServerWriter<pb::ReadResponse>* writer) override {
    DIST_AUTHENTICATE(context);
    if (absl::Status name = ps::CheckPsName("variable name", request->name()); !name.ok()) {
      return ReplyStatus(context, name);
    }
    absl::StatusOr<Tensor> value = store_->Read(request->name());
    if (!value.ok()) return ReplyStatus(context, value.status());
    pb::ReadResponse first;
    SetTensorHeader(*value, first.mutable_tensor());
    WriteChunked(std::move(first), std::span<const Tensor>(&*value, 1), max_message_bytes_, writer);
    return grpc::Status::OK;
  }

  grpc::Status Assign(grpc::ServerContext* context, grpc::ServerReader<pb::WriteRequest>* reader,
                      pb::WriteResponse*) override {
    return Write(context, reader, &ps::VariableStore::Assign);
  }
  grpc::Status AssignAdd(grpc::ServerContext* context, grpc::ServerReader<pb::WriteRequest>* reader,
                         pb::WriteResponse*) override {
    return Write(context, reader, &ps::VariableStore::AssignAdd);
  }
  grpc::Status AssignSub(grpc::ServerContext* context, grpc::ServerReader<pb::WriteRequest>* reader,
                         pb::WriteResponse*) override {
    return Write(context, reader, &ps::VariableStore::AssignSub);
  }
  grpc::Status AssignSlot(grpc::ServerContext* context, grpc::ServerReader<pb::WriteRequest>* reader,
                          pb::WriteResponse*) override {
    DIST_AUTHENTICATE(context);
    ByteBudget::Reservation held(inflight_);
    absl::StatusOr<WriteCall> call = Receive<WriteCall>(context, reader, [&](auto* in) { return ReceiveWrite(in, held); });
    if (!call.ok()) return ReplyStatus(context, call.status());
    return ReplyStatus(context, store_->AssignSlot(call->name, call->slot, call->tensor));
  }

  grpc::Status ApplyUpdate(grpc::ServerContext* context, grpc::ServerReader<pb::UpdateRequest>* reader,
                           pb::WriteResponse*) override {
    DIST_AUTHENTICATE(context);
    pb::UpdateRequest first;
    absl::StatusOr<ps::Hyperparameters> hyperparameters;
    ByteBudget::Reservation held(inflight_);
    absl::StatusOr<std::vector<Tensor>> arguments =
        Receive<std::vector<Tensor>>(context, reader, [&](auto* in) -> absl::StatusOr<std::vector<Tensor>> {
          if (!in->Read(&first)) return EmptyStream();
          hyperparameters = CheckUpdate(first);
          RETURN_IF_ERROR(hyperparameters.status());
          std::vector<const pb::TensorHeader*> headers;
          for (const pb::TensorHeader& header : first.arguments()) headers.push_back(&header);
          return ReceiveTensors(headers, first.data(), in, held);
        });
    if (!arguments.ok()) return ReplyStatus(context, arguments.status());
    return ReplyStatus(context,
                       store_->ApplyUpdate(first.name(), first.function(), *arguments, *hyperparameters));
  }

  grpc::Status ReadMany(grpc::ServerContext* context, const pb::ReadManyRequest* request,
                        grpc::ServerWriter<pb::ReadManyResponse>* writer) override {
    DIST_AUTHENTICATE(context);
    absl::Status counted = CheckBatchSize(static_cast<size_t>(request->names_size()), "names");
    if (!counted.ok()) return ReplyStatus(context, counted);
    for (const std::string& name : request->names()) {
      if (absl::Status checked = ps::CheckPsName("variable name", name); !checked.ok()) {
        return ReplyStatus(context, checked);
      }
    }
    // The headers first, from the variables' sizes, so that a request for more than the
    // bounds copies nothing.
    pb::ReadManyResponse first;
    uint64_t total = 0;
    for (const std::string& name : request->names()) {
      absl::StatusOr<ps::StoredVariableInfo> info = store_->Info(name);
      if (!info.ok()) return ReplyStatus(context, info.status());
      const uint64_t bytes = DTypeSize(info->dtype) * static_cast<uint64_t>(info->shape.num_elements());
      pb::TensorHeader* header = first.add_tensors();
      header->set_dtype(static_cast<int32_t>(info->dtype));
      header->mutable_dims()->Assign(info->shape.dims().begin(), info->shape.dims().end());
      header->set_byte_size(bytes);
      total += bytes;
    }
    // What one call may make either side buffer bounds the answer as it bounds requests.
    if (total > max_request_bytes_) {
      return ReplyStatus(context, absl::InvalidArgumentError(absl::StrCat(
                                      "the ", request->names_size(), " variables asked for take ", total,
                                      " bytes together: at most ", max_request_bytes_,
                                      " (max_variable_request_bytes) travel in one answer")));
    }
    if (absl::Status fits = CheckHeaderFits(first.ByteSizeLong(), max_message_bytes_); !fits.ok()) {
      return ReplyStatus(context, absl::InvalidArgumentError(absl::StrCat(
                                      "the answer's tensor headers do not fit one message: ", fits.message(),
                                      "; ask for fewer variables per call")));
    }
    std::vector<Tensor> values;
    values.reserve(static_cast<size_t>(request->names_size()));
    for (const std::string& name : request->names()) {
      absl::StatusOr<Tensor> value = store_->Read(name);  // its shape is the one declared above
      if (!value.ok()) return ReplyStatus(context, value.status());
      values.push_back(*std::move(value));
    }
    WriteChunked(std::move(first), std::span<const Tensor>(values), max_message_bytes_, writer);
    return grpc::Status::OK;
  }

  grpc::Status ApplyUpdates(grpc::ServerContext* context, grpc::ServerReader<pb::UpdatesRequest>* reader,
                            pb::UpdatesResponse* response) override {
    DIST_AUTHENTICATE(context);
    pb::UpdatesRequest first;
    absl::StatusOr<ps::Hyperparameters> hyperparameters;
    ByteBudget::Reservation held(inflight_);
    absl::StatusOr<std::vector<Tensor>> arguments =
        Receive<std::vector<Tensor>>(context, reader, [&](auto* in) -> absl::StatusOr<std::vector<Tensor>> {
          if (!in->Read(&first)) return EmptyStream();
          hyperparameters = CheckUpdates(first);
          RETURN_IF_ERROR(hyperparameters.status());
          std::vector<const pb::TensorHeader*> headers;
          for (const pb::UpdateEntry& entry : first.entries()) {
            for (const pb::TensorHeader& header : entry.arguments()) headers.push_back(&header);
          }
          return ReceiveTensors(headers, first.data(), in, held);
        });
    if (!arguments.ok()) return ReplyStatus(context, arguments.status());
    size_t next = 0;  // the first argument of the current entry
    for (int index = 0; index < first.entries_size(); ++index) {
      // A caller that gave up (its deadline, a cancel) no longer holds a thread here.
      if (context->IsCancelled()) return ReplyStatus(context, absl::CancelledError("the call was cancelled"));
      const pb::UpdateEntry& entry = first.entries(index);
      const auto count = static_cast<size_t>(entry.arguments_size());
      const absl::Status applied =
          store_->ApplyUpdate(entry.name(), first.function(),
                              std::span<const Tensor>(arguments->data() + next, count), *hyperparameters);
      next += count;
      if (applied.ok()) continue;
      if (response->failed() == 0) {
        response->set_first_failed(index);
        response->set_code(static_cast<int32_t>(applied.code()));
        response->set_message(std::string(applied.message().substr(0, kMaxEntryErrorBytes)));
      }
      response->set_failed(response->failed() + 1);
    }
    return grpc::Status::OK;
  }

  // The variables in pages that fit a message, sorted by name (as Names() gives them).
  grpc::Status List(grpc::ServerContext* context, const pb::ListRequest*,
                    grpc::ServerWriter<pb::ListResponse>* writer) override {
    DIST_AUTHENTICATE(context);
    const size_t page_bytes = TensorChunkBytes(max_message_bytes_);
    pb::ListResponse page;
    size_t page_size = 0;
    for (const std::string& name : store_->Names()) {
      absl::StatusOr<ps::StoredVariableInfo> info = store_->Info(name);
      if (!info.ok()) continue;  // cannot happen: a name is never removed
      pb::VariableInfo entry;
      entry.set_name(info->name);
      entry.set_dtype(static_cast<int32_t>(info->dtype));
      entry.mutable_dims()->Assign(info->shape.dims().begin(), info->shape.dims().end());
      entry.set_slot_of(info->slot_of);
      // Each entry adds its bytes, a tag and a length to the page.
      const size_t entry_size = entry.ByteSizeLong() + kDataFieldOverheadBytes;
      if (page_size > 0 && page_size + entry_size > page_bytes) {
        if (!writer->Write(page)) return grpc::Status::OK;  // the caller is gone
        page.Clear();
        page_size = 0;
      }
      *page.add_variables() = std::move(entry);
      page_size += entry_size;
    }
    writer->Write(page);  // the last page, empty when the task holds nothing
    return grpc::Status::OK;
  }

 private:
  grpc::Status Write(grpc::ServerContext* context, grpc::ServerReader<pb::WriteRequest>* reader, StoreWrite op) {
    DIST_AUTHENTICATE(context);
    ByteBudget::Reservation held(inflight_);
    absl::StatusOr<WriteCall> call = Receive<WriteCall>(context, reader, [&](auto* in) { return ReceiveWrite(in, held); });
    if (!call.ok()) return ReplyStatus(context, call.status());
    return ReplyStatus(context, (store_->*op)(call->name, call->tensor));
  }

  // A write request's name and tensor, read whole from `stream`.
  template <typename Stream>
  absl::StatusOr<WriteCall> ReceiveWrite(Stream* stream, ByteBudget::Reservation& held) {
    pb::WriteRequest first;
    if (!stream->Read(&first)) return EmptyStream();
    RETURN_IF_ERROR(ps::CheckPsName("variable name", first.name()));
    if (!first.has_tensor()) {
      return absl::InvalidArgumentError(absl::StrCat("the request for variable ", ps::QuotedName(first.name()),
                                                     " declares no tensor"));
    }
    const pb::TensorHeader* header = &first.tensor();
    ASSIGN_OR_RETURN(std::vector<Tensor> tensors,
                     ReceiveTensors(std::span<const pb::TensorHeader* const>(&header, 1), first.data(), stream, held));
    return WriteCall{std::move(*first.mutable_name()), std::move(tensors.front()),
                     std::move(*first.mutable_slot())};
  }

  // The tensors `headers` declare: `first_data`, then the bytes of the stream's later
  // messages. Allocates only once every header passed and `held` took their bytes from
  // the task's in-flight budget (waiting for them up to the stream idle limit). Each
  // handler declares its `held`, so the bytes stay counted until the store used them.
  template <typename Stream>
  absl::StatusOr<std::vector<Tensor>> ReceiveTensors(std::span<const pb::TensorHeader* const> headers,
                                                     const std::string& first_data, Stream* stream,
                                                     ByteBudget::Reservation& held) {
    absl::StatusOr<TensorAssembler> assembler = TensorAssembler::Start(
        headers, max_request_bytes_, &held, ByteBudget::Clock::now() + watchdog_.idle_limit());
    if (absl::IsResourceExhausted(assembler.status())) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the request's ", assembler.status().message(), ": the ps task's calls hold ", inflight_.in_use(),
          " of the ", inflight_.capacity(), " tensor bytes it lets requests hold at once (max_variable_inflight_bytes)"));
    }
    if (!assembler.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("the request's ", assembler.status().message()));
    }
    RETURN_IF_ERROR(assembler->Append(first_data));
    RETURN_IF_ERROR(ReadRequestChunks(*assembler, stream));
    return std::move(*assembler).Finish();
  }

  template <typename Request>
  static absl::Status ReadRequestChunks(TensorAssembler& assembler,
                                        StreamWatchdog::Reader<grpc::ServerReader<Request>>* reader) {
    return ReadChunks<Request>(assembler, [reader](Request* message) { return reader->Read(message); });
  }
  template <typename Response, typename Request>
  static absl::Status ReadRequestChunks(TensorAssembler& assembler,
                                        StreamWatchdog::Reader<grpc::ServerReaderWriter<Response, Request>>* stream) {
    return ReadChunks<Request>(assembler, [stream](Request* message) { return stream->Read(message); });
  }

  // `receive(reader)` over `stream` while the watchdog watches it: a stream that sends
  // nothing for the idle limit is cancelled, and the call fails saying so.
  template <typename Result, typename Stream, typename ReceiveFn>
  absl::StatusOr<Result> Receive(grpc::ServerContext* context, Stream* stream, ReceiveFn receive) {
    StreamWatchdog::Watch watch(watchdog_, context);
    StreamWatchdog::Reader<Stream> reader(stream, &watch);
    absl::StatusOr<Result> received = receive(&reader);
    if (!received.ok() && watch.cancelled()) {
      received = absl::DeadlineExceededError(absl::StrCat(
          "the request stream sent nothing for ", watchdog_.idle_limit().count(),
          " ms and was cancelled: a stream that stops sending would hold one of the ps task's ",
          kVariableServiceThreads, " service threads"));
    }
    return received;
  }

  // The first message of an update, but for its tensors: names and counts, and the
  // hyperparameters it names.
  static absl::StatusOr<ps::Hyperparameters> CheckUpdate(const pb::UpdateRequest& first) {
    RETURN_IF_ERROR(ps::CheckPsName("variable name", first.name()));
    RETURN_IF_ERROR(CheckArgumentCount(first.arguments_size()));
    return CheckHyperparameters(first.function(), first.hyperparameters());
  }

  static absl::Status CheckBatchSize(size_t count, absl::string_view what) {
    if (count >= 1 && count <= kMaxBatchEntries) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("the request carries ", count, " ", what, ": expected 1 to ", kMaxBatchEntries));
  }

  // The first message of a batch of updates, but for its tensors: the function, the
  // entries' names and argument counts, and the hyperparameters.
  static absl::StatusOr<ps::Hyperparameters> CheckUpdates(const pb::UpdatesRequest& first) {
    RETURN_IF_ERROR(CheckBatchSize(static_cast<size_t>(first.entries_size()), "entries"));
    for (const pb::UpdateEntry& entry : first.entries()) {
      RETURN_IF_ERROR(ps::CheckPsName("variable name", entry.name()));
      RETURN_IF_ERROR(CheckArgumentCount(entry.arguments_size()));
    }
    return CheckHyperparameters(first.function(), first.hyperparameters());
  }

  static absl::Status CheckArgumentCount(int count) {
    if (count <= ps::kMaxUpdateArguments) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("the update declares ", count, " argument tensors: at most ", ps::kMaxUpdateArguments));
  }

  template <typename Map>
  static absl::StatusOr<ps::Hyperparameters> CheckHyperparameters(const std::string& function, const Map& given) {
    RETURN_IF_ERROR(ps::CheckPsName("function name", function));
    if (static_cast<size_t>(given.size()) > kMaxUpdateHyperparameters) {
      return absl::InvalidArgumentError(absl::StrCat("the update names ", given.size(),
                                                     " hyperparameters: at most ", kMaxUpdateHyperparameters));
    }
    ps::Hyperparameters hyperparameters;
    for (const auto& [name, value] : given) {
      RETURN_IF_ERROR(ps::CheckPsName("hyperparameter name", name));
      hyperparameters.emplace(name, value);
    }
    return hyperparameters;
  }

  ps::VariableStore* const store_;
  const std::string token_;
  const size_t max_message_bytes_;
  const uint64_t max_request_bytes_;
  ByteBudget inflight_;
  StreamWatchdog watchdog_;
};

}  // namespace

std::unique_ptr<grpc::Service> NewVariableGrpcService(ps::VariableStore* store, VariableServiceOptions options) {
  return std::make_unique<VariableGrpcService>(store, std::move(options));
}

}  // namespace distribute
