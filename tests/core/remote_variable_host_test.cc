// The worker's side of the variable service on its own: its arguments, and its defences
// against the task it calls, played by fake services on loopback: a hung task misses the
// caller's deadline naming the task, and an answer that breaks the protocol is an Internal
// error naming the task, refused before anything is allocated for it.
#include "core/server/remote_variable_host.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/variables.grpc.pb.h"  // generated
#include "core/server/variable_service_limits.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

namespace pb = ::distribute::variables;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

Deadline Long() { return Deadline::AfterMs(30'000); }

TEST(RemoteVariableHostTest, NewRemoteVariableHostChecksItsArguments) {
  RemoteVariableHostOptions options;
  EXPECT_TRUE(HasError(NewRemoteVariableHost("", "127.0.0.1:1", options), absl::StatusCode::kInvalidArgument,
                       {"name is empty"}));
  EXPECT_TRUE(HasError(NewRemoteVariableHost("ps:0", "no port", options), absl::StatusCode::kInvalidArgument,
                       {"the address of ps:0"}));
  options.max_message_bytes = 100;
  EXPECT_TRUE(HasError(NewRemoteVariableHost("ps:0", "127.0.0.1:1", options), absl::StatusCode::kInvalidArgument,
                       {"max_message_bytes is 100"}));
  options = RemoteVariableHostOptions();
  options.max_tensor_bytes = 0;
  EXPECT_TRUE(HasError(NewRemoteVariableHost("ps:0", "127.0.0.1:1", options), absl::StatusCode::kInvalidArgument,
                       {"max_tensor_bytes is 0"}));
  options = RemoteVariableHostOptions();
  options.job_token = "short";
  EXPECT_TRUE(HasError(NewRemoteVariableHost("ps:0", "127.0.0.1:1", options), absl::StatusCode::kInvalidArgument));
}

// A server on a free loopback port running `service` (which must outlive it); its address
// in `*address`.
std::unique_ptr<grpc::Server> ServeOnLoopback(grpc::Service* service, std::string* address) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  EXPECT_NE(port, 0);
  *address = absl::StrCat("127.0.0.1:", port);
  return server;
}

// A service that answers every Read with `answer` (a protocol breach to test the client on).
class FakeReadService final : public pb::VariableService::Service {
 public:
  explicit FakeReadService(std::vector<pb::ReadResponse> answer) : answer_(std::move(answer)) {}
  grpc::Status Read(grpc::ServerContext*, const pb::ReadRequest*, grpc::ServerWriter<pb::ReadResponse>* writer) override {
    for (const pb::ReadResponse& message : answer_) writer->Write(message);
    return grpc::Status::OK;
  }

 private:
  const std::vector<pb::ReadResponse> answer_;
};

// What a host makes of `answer` to a Read.
absl::Status ReadFromFake(std::vector<pb::ReadResponse> answer) {
  FakeReadService service(std::move(answer));
  std::string address;
  std::unique_ptr<grpc::Server> server = ServeOnLoopback(&service, &address);
  absl::StatusOr<std::unique_ptr<ps::VariableHost>> host =
      NewRemoteVariableHost("ps:7", address, RemoteVariableHostOptions());
  EXPECT_TRUE(IsOk(host));
  const absl::Status status = (*host)->Read("w", Long()).status();
  server->Shutdown();
  return status;
}

// A service whose Read never answers (a hung ps task): it waits until the call is cancelled.
class HungReadService final : public pb::VariableService::Service {
 public:
  grpc::Status Read(grpc::ServerContext* context, const pb::ReadRequest*,
                    grpc::ServerWriter<pb::ReadResponse>*) override {
    while (!context->IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return grpc::Status::CANCELLED;
  }
};

TEST(RemoteVariableHostTest, AHungTaskMissesTheDeadlineNamingTheTask) {
  HungReadService service;
  std::string address;
  std::unique_ptr<grpc::Server> server = ServeOnLoopback(&service, &address);
  absl::StatusOr<std::unique_ptr<ps::VariableHost>> host =
      NewRemoteVariableHost("ps:3", address, RemoteVariableHostOptions());
  ASSERT_TRUE(IsOk(host));
  const Clock::time_point start = Clock::now();
  EXPECT_TRUE(HasError((*host)->Read("w", Deadline::AfterMs(300)), absl::StatusCode::kDeadlineExceeded,
                       {"parameter server ps:3 (" + address + ") did not answer within 300 ms",
                        "(while reading variable 'w')"}));
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(250));
  server->Shutdown();
}

pb::ReadResponse Answer(std::vector<int64_t> dims, uint64_t byte_size, std::string data) {
  pb::ReadResponse message;
  message.mutable_tensor()->set_dtype(static_cast<int32_t>(DType::kFloat32));
  for (int64_t dim : dims) message.mutable_tensor()->add_dims(dim);
  message.mutable_tensor()->set_byte_size(byte_size);
  message.set_data(std::move(data));
  return message;
}

TEST(RemoteVariableHostTest, MalformedAnswersAreInternalErrorsNamingTheTask) {
  EXPECT_TRUE(HasError(ReadFromFake({}), absl::StatusCode::kInternal, {"parameter server ps:7", "it is empty"}));
  EXPECT_TRUE(HasError(ReadFromFake({Answer({4}, 16, std::string(12, 'x'))}), absl::StatusCode::kInternal,
                       {"ended after 12 of the 16"}));
  EXPECT_TRUE(HasError(ReadFromFake({Answer({1}, 4, std::string(8, 'x'))}), absl::StatusCode::kInternal,
                       {"more tensor bytes than the 4"}));
  EXPECT_TRUE(HasError(ReadFromFake({Answer({int64_t{1} << 30}, uint64_t{4} << 30, "")}), absl::StatusCode::kInternal,
                       {"bytes one call may carry"}));
  pb::ReadResponse undeclared;
  undeclared.set_data("abcd");
  EXPECT_TRUE(HasError(ReadFromFake({undeclared}), absl::StatusCode::kInternal, {"declares no tensor"}));
  EXPECT_TRUE(HasError(ReadFromFake({Answer({2}, 8, "abcd"), Answer({1}, 4, "efgh")}), absl::StatusCode::kInternal,
                       {"message 1 of the stream carries more than tensor bytes"}));
}

// A service that answers every ReadMany with `reads` and every ApplyUpdates with
// `updates` (protocol breaches to test the client on).
class FakeBatchService final : public pb::VariableService::Service {
 public:
  FakeBatchService(std::vector<pb::ReadManyResponse> reads, pb::UpdatesResponse updates)
      : reads_(std::move(reads)), updates_(std::move(updates)) {}
  grpc::Status ReadMany(grpc::ServerContext*, const pb::ReadManyRequest*,
                        grpc::ServerWriter<pb::ReadManyResponse>* writer) override {
    for (const pb::ReadManyResponse& message : reads_) writer->Write(message);
    return grpc::Status::OK;
  }
  grpc::Status ApplyUpdates(grpc::ServerContext*, grpc::ServerReader<pb::UpdatesRequest>* reader,
                            pb::UpdatesResponse* response) override {
    pb::UpdatesRequest request;
    while (reader->Read(&request)) {
    }
    *response = updates_;
    return grpc::Status::OK;
  }

 private:
  const std::vector<pb::ReadManyResponse> reads_;
  const pb::UpdatesResponse updates_;
};

// What a host makes of `reads` answering a ReadMany of two names, or of `updates`
// answering ApplyUpdates of two entries.
absl::Status BatchFromFake(std::vector<pb::ReadManyResponse> reads, pb::UpdatesResponse updates, bool read) {
  FakeBatchService service(std::move(reads), std::move(updates));
  std::string address;
  std::unique_ptr<grpc::Server> server = ServeOnLoopback(&service, &address);
  absl::StatusOr<std::unique_ptr<ps::VariableHost>> host =
      NewRemoteVariableHost("ps:7", address, RemoteVariableHostOptions());
  EXPECT_TRUE(IsOk(host));
  absl::Status status;
  if (read) {
    status = (*host)->ReadMany(std::vector<std::string>{"a", "b"}, Long()).status();
  } else {
    const std::vector<ps::VariableHost::UpdateEntry> entries = {{"a", {}}, {"b", {}}};
    status = (*host)->ApplyUpdates(entries, "sgd", {}, Long()).status();
  }
  server->Shutdown();
  return status;
}

pb::ReadManyResponse Declaring(int tensors) {
  pb::ReadManyResponse message;
  for (int i = 0; i < tensors; ++i) {
    pb::TensorHeader* header = message.add_tensors();
    header->set_dtype(static_cast<int32_t>(DType::kFloat32));
    header->add_dims(1);
    header->set_byte_size(4);
  }
  message.set_data(std::string(4 * static_cast<size_t>(tensors), 'x'));
  return message;
}

pb::UpdatesResponse Failures(int32_t failed, int32_t first, int32_t code, std::string message) {
  pb::UpdatesResponse response;
  response.set_failed(failed);
  response.set_first_failed(first);
  response.set_code(code);
  response.set_message(std::move(message));
  return response;
}

TEST(RemoteVariableHostTest, MalformedBatchAnswersAreInternalErrorsNamingTheTask) {
  EXPECT_TRUE(IsOk(BatchFromFake({Declaring(2)}, {}, true)));
  EXPECT_TRUE(HasError(BatchFromFake({}, {}, true), absl::StatusCode::kInternal,
                       {"parameter server ps:7", "it is empty", "reading 2 variables ('a' and 1 more)"}));
  EXPECT_TRUE(HasError(BatchFromFake({Declaring(3)}, {}, true), absl::StatusCode::kInternal,
                       {"it declares 3 tensors for 2 names"}));
  EXPECT_TRUE(HasError(BatchFromFake({Declaring(1)}, {}, true), absl::StatusCode::kInternal,
                       {"it declares 1 tensors for 2 names"}));

  constexpr auto kNotFound = static_cast<int32_t>(absl::StatusCode::kNotFound);
  EXPECT_TRUE(IsOk(BatchFromFake({}, Failures(0, 0, 0, ""), false)));
  EXPECT_TRUE(IsOk(BatchFromFake({}, Failures(2, 1, kNotFound, "gone"), false)));
  EXPECT_TRUE(HasError(BatchFromFake({}, Failures(3, 0, kNotFound, "x"), false), absl::StatusCode::kInternal,
                       {"it reports 3 failures, the first at entry 0, of 2 entries",
                        "updating 2 variables ('a' and 1 more) with 'sgd'"}));
  EXPECT_TRUE(HasError(BatchFromFake({}, Failures(1, 2, kNotFound, "x"), false), absl::StatusCode::kInternal,
                       {"the first at entry 2, of 2 entries"}));
  EXPECT_TRUE(HasError(BatchFromFake({}, Failures(1, -1, kNotFound, "x"), false), absl::StatusCode::kInternal,
                       {"the first at entry -1"}));
  EXPECT_TRUE(HasError(BatchFromFake({}, Failures(1, 0, 0, "x"), false), absl::StatusCode::kInternal,
                       {"a failure with code 0"}));
  EXPECT_TRUE(HasError(BatchFromFake({}, Failures(1, 0, 99, "x"), false), absl::StatusCode::kInternal,
                       {"a failure with code 99"}));
  EXPECT_TRUE(HasError(BatchFromFake({}, Failures(1, 0, kNotFound, std::string(kMaxEntryErrorBytes + 1, 'm')), false),
                       absl::StatusCode::kInternal, {"1025-byte message"}));
  EXPECT_TRUE(HasError(BatchFromFake({}, Failures(0, 1, kNotFound, ""), false), absl::StatusCode::kInternal,
                       {"reports the error of a failed entry but no failure"}));
}

// The outcome a well-formed answer reports comes back as it was sent.
TEST(RemoteVariableHostTest, ABatchOutcomeCarriesTheFirstFailure) {
  FakeBatchService service({}, Failures(2, 1, static_cast<int32_t>(absl::StatusCode::kNotFound), "no variable 'b'"));
  std::string address;
  std::unique_ptr<grpc::Server> server = ServeOnLoopback(&service, &address);
  absl::StatusOr<std::unique_ptr<ps::VariableHost>> host =
      NewRemoteVariableHost("ps:7", address, RemoteVariableHostOptions());
  ASSERT_TRUE(IsOk(host));
  const std::vector<ps::VariableHost::UpdateEntry> entries = {{"a", {}}, {"b", {}}};
  absl::StatusOr<ps::VariableHost::UpdatesOutcome> outcome = (*host)->ApplyUpdates(entries, "sgd", {}, Long());
  server->Shutdown();
  ASSERT_TRUE(IsOk(outcome));
  EXPECT_EQ(outcome->failed, 2);
  EXPECT_EQ(outcome->first_failed, 1);
  EXPECT_TRUE(HasError(outcome->first_error, absl::StatusCode::kNotFound, {"no variable 'b'"}));
}

// A ps task of an earlier version: Read and ApplyUpdate, but no batch calls.
class EarlierTask final : public pb::VariableService::Service {
 public:
  grpc::Status Read(grpc::ServerContext*, const pb::ReadRequest* request,
                    grpc::ServerWriter<pb::ReadResponse>* writer) override {
    reads.fetch_add(1);
    pb::ReadResponse message;
    message.mutable_tensor()->set_dtype(static_cast<int32_t>(DType::kFloat32));
    message.mutable_tensor()->add_dims(1);
    message.mutable_tensor()->set_byte_size(4);
    const float value = request->name() == "a" ? 1.0f : 2.0f;
    message.set_data(std::string(reinterpret_cast<const char*>(&value), 4));
    writer->Write(message);
    return grpc::Status::OK;
  }
  grpc::Status ApplyUpdate(grpc::ServerContext*, grpc::ServerReader<pb::UpdateRequest>* reader,
                           pb::WriteResponse*) override {
    pb::UpdateRequest request;
    while (reader->Read(&request)) {
    }
    updates.fetch_add(1);
    return grpc::Status::OK;
  }
  std::atomic<int> reads{0};
  std::atomic<int> updates{0};
};

TEST(RemoteVariableHostTest, BatchesToAnEarlierTaskGoOneCallPerEntry) {
  EarlierTask service;
  std::string address;
  std::unique_ptr<grpc::Server> server = ServeOnLoopback(&service, &address);
  absl::StatusOr<std::unique_ptr<ps::VariableHost>> host =
      NewRemoteVariableHost("ps:7", address, RemoteVariableHostOptions());
  ASSERT_TRUE(IsOk(host));
  for (int round = 1; round <= 2; ++round) {
    absl::StatusOr<std::vector<Tensor>> read = (*host)->ReadMany(std::vector<std::string>{"a", "b", "a"}, Long());
    ASSERT_TRUE(IsOk(read));
    ASSERT_EQ(read->size(), 3u);
    EXPECT_EQ(*static_cast<const float*>((*read)[0].data()), 1.0f);
    EXPECT_EQ(*static_cast<const float*>((*read)[1].data()), 2.0f);
    EXPECT_EQ(*static_cast<const float*>((*read)[2].data()), 1.0f);
    EXPECT_EQ(service.reads.load(), 3 * round);
    const std::vector<ps::VariableHost::UpdateEntry> entries = {{"a", {}}, {"b", {}}};
    absl::StatusOr<ps::VariableHost::UpdatesOutcome> outcome = (*host)->ApplyUpdates(entries, "sgd", {}, Long());
    ASSERT_TRUE(IsOk(outcome));
    EXPECT_EQ(outcome->failed, 0);
    EXPECT_EQ(service.updates.load(), 2 * round);
  }
  server->Shutdown();
}

}  // namespace
}  // namespace distribute
