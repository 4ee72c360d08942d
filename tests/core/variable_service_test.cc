// The variable service of a ps task over gRPC: a chief and a ps task as Server objects in
// one process on loopback ports, reached through NewRemoteVariableHost as a worker reaches
// them. Values are checked against arithmetic done here and against the ps task's store
// read directly; malformed requests go through a raw stub. (The client's own defences,
// against hung tasks and malformed answers, are in remote_variable_host_test.cc.) Waits
// that must pass use long deadlines; the one bound asserted on time (a stopped ps task
// fails a call within its deadline) is the deadline plus a margin.
#include "core/server/remote_variable_host.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "server/variables.grpc.pb.h"  // generated
#include "core/ps/function_registry.h"
#include "core/server/grpc_status.h"
#include "core/server/server.h"
#include "tests/common/free_ports.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

namespace pb = ::distribute::variables;
using ::distribute::testing::FloatsOf;
using ::distribute::testing::FloatTensor;
using ::distribute::testing::FreePorts;
using ::distribute::testing::HasError;
using ::distribute::testing::IntsOf;
using ::distribute::testing::IntTensor;
using ::distribute::testing::IsOk;
using ::distribute::testing::ZeroTensor;

constexpr char kToken[] = "variable-service-test-token";
constexpr int64_t kLongMs = 30'000;

Deadline Long() { return Deadline::AfterMs(kLongMs); }

Tensor Floats(DType dtype, const std::vector<double>& values) { return FloatTensor(dtype, values); }

Tensor Ints(const std::vector<int64_t>& values) { return IntTensor(DType::kInt64, values); }

// A chief (worker:0) and ps task ps:1 started in this process; ps:0 is in the cluster but
// never starts. `host` reaches ps:1 with the job's token.
struct PsCluster {
  explicit PsCluster(Server::Options server_options = {}) : options(std::move(server_options)) {
    options.job_token = kToken;
    const std::vector<int> ports = FreePorts(3);
    for (int port : ports) addresses.push_back(absl::StrCat("127.0.0.1:", port));
    chief = Start("worker", 0);
    if (chief != nullptr) ps = Start("ps", 1);
    if (ps != nullptr) host = Host("ps:1", addresses[2]);
  }

  ClusterSpec Spec(const std::string& job, int index) const {
    ClusterSpec cluster;
    EXPECT_TRUE(IsOk(cluster.AddTask("worker", 0, addresses[0])));
    EXPECT_TRUE(IsOk(cluster.AddTask("ps", 0, addresses[1])));
    EXPECT_TRUE(IsOk(cluster.AddTask("ps", 1, addresses[2])));
    EXPECT_TRUE(IsOk(cluster.SetTask(job, index)));
    return cluster;
  }

  std::unique_ptr<Server> Start(const std::string& job, int index) const {
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(Spec(job, index), options);
    EXPECT_TRUE(IsOk(server)) << job << ":" << index;
    return server.ok() ? std::move(*server) : nullptr;
  }

  std::unique_ptr<ps::VariableHost> Host(const std::string& task, const std::string& address,
                                         const std::string& token = kToken) const {
    RemoteVariableHostOptions host_options;
    host_options.job_token = token;
    host_options.max_message_bytes = options.max_message_bytes;
    absl::StatusOr<std::unique_ptr<ps::VariableHost>> made = NewRemoteVariableHost(task, address, host_options);
    EXPECT_TRUE(IsOk(made));
    return made.ok() ? std::move(*made) : nullptr;
  }

  ps::VariableStore& store() const { return *ps->variable_store(); }

  Server::Options options;
  std::vector<std::string> addresses;  // worker:0, ps:0, ps:1
  std::unique_ptr<Server> chief;
  std::unique_ptr<Server> ps;
  std::unique_ptr<ps::VariableHost> host;
};

TEST(VariableServiceTest, OnlyPsTasksHoldVariables) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  EXPECT_EQ(cluster.chief->variable_store(), nullptr);
  ASSERT_NE(cluster.ps->variable_store(), nullptr);
  EXPECT_EQ(cluster.host->task(), "ps:1");
  EXPECT_TRUE(IsOk(cluster.host->WaitReady(Long())));
  // The chief's server hosts no variable service.
  std::unique_ptr<ps::VariableHost> chief = cluster.Host("worker:0", cluster.addresses[0]);
  EXPECT_TRUE(HasError(chief->WaitReady(Long()), absl::StatusCode::kFailedPrecondition,
                       {"parameter server worker:0 (", "serves no variables"}));
}

TEST(VariableServiceTest, TheFirstCreatorWinsAndLaterOnesGetTheCurrentValue) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  absl::StatusOr<ps::VariableStore::Creation> first =
      cluster.host->CreateIfAbsent("w", Floats(DType::kFloat32, {1, 2, 3}), Long());
  ASSERT_TRUE(IsOk(first));
  EXPECT_TRUE(first->created);
  EXPECT_EQ(FloatsOf(first->value), (std::vector<double>{1, 2, 3}));
  ASSERT_TRUE(IsOk(cluster.host->AssignAdd("w", Floats(DType::kFloat32, {10, 10, 10}), Long())));

  // A second creator (another worker, a restarted one) gets the current value, not its own.
  std::unique_ptr<ps::VariableHost> other = cluster.Host("ps:1", cluster.addresses[2]);
  absl::StatusOr<ps::VariableStore::Creation> second =
      other->CreateIfAbsent("w", Floats(DType::kFloat32, {7, 7, 7}), Long());
  ASSERT_TRUE(IsOk(second));
  EXPECT_FALSE(second->created);
  EXPECT_EQ(FloatsOf(second->value), (std::vector<double>{11, 12, 13}));
  EXPECT_EQ(second->value.device().type, DeviceType::kCpu);
  EXPECT_EQ(FloatsOf(*cluster.store().Read("w")), (std::vector<double>{11, 12, 13}));

  // Another dtype or shape under the same name is the store's refusal, as it is.
  EXPECT_TRUE(HasError(other->CreateIfAbsent("w", Floats(DType::kFloat32, {1, 2}), Long()),
                       absl::StatusCode::kInvalidArgument, {"variable 'w' is created as float32 [2]", "float32 [3]"}));
}

TEST(VariableServiceTest, ReadAssignAddSubWithExactValues) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  ps::VariableHost& host = *cluster.host;
  ASSERT_TRUE(IsOk(host.CreateIfAbsent("step", Ints({0, 0}), Long())));
  ASSERT_TRUE(IsOk(host.CreateIfAbsent("w", Floats(DType::kFloat64, {0.5, -1.25}), Long())));

  ASSERT_TRUE(IsOk(host.Assign("step", Ints({40, -7}), Long())));
  ASSERT_TRUE(IsOk(host.AssignAdd("step", Ints({2, int64_t{1} << 40}), Long())));
  ASSERT_TRUE(IsOk(host.AssignSub("step", Ints({100, 3}), Long())));
  absl::StatusOr<Tensor> step = host.Read("step", Long());
  ASSERT_TRUE(IsOk(step));
  EXPECT_EQ(step->dtype(), DType::kInt64);
  EXPECT_EQ(IntsOf(*step), (std::vector<int64_t>{40 + 2 - 100, -7 + (int64_t{1} << 40) - 3}));

  ASSERT_TRUE(IsOk(host.AssignAdd("w", Floats(DType::kFloat64, {0.25, 0.125}), Long())));
  ASSERT_TRUE(IsOk(host.AssignSub("w", Floats(DType::kFloat64, {1.0, -2.0}), Long())));
  absl::StatusOr<Tensor> w = host.Read("w", Long());
  ASSERT_TRUE(IsOk(w));
  EXPECT_EQ(FloatsOf(*w), (std::vector<double>{0.5 + 0.25 - 1.0, -1.25 + 0.125 + 2.0}));

  // The store's errors come back with their code and message.
  EXPECT_TRUE(HasError(host.Read("missing", Long()), absl::StatusCode::kNotFound, {"no variable 'missing'"}));
  EXPECT_TRUE(HasError(host.AssignAdd("w", Floats(DType::kFloat64, {1, 2, 3}), Long()),
                       absl::StatusCode::kInvalidArgument, {"variable 'w' is float64 [2]", "float64 [3]"}));
  EXPECT_TRUE(HasError(host.Read("bad\x01name", Long()), absl::StatusCode::kInvalidArgument, {"printable ASCII"}));
}

TEST(VariableServiceTest, ApplyUpdateSgdAndListWithSlots) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  ps::VariableHost& host = *cluster.host;
  const std::vector<double> w0 = {1.0, -2.0, 0.5};
  const std::vector<double> g = {0.5, 0.25, -1.0};
  ASSERT_TRUE(IsOk(host.CreateIfAbsent("w", Floats(DType::kFloat64, w0), Long())));
  const Tensor gradient = Floats(DType::kFloat64, g);
  ASSERT_TRUE(IsOk(host.ApplyUpdate("w", "sgd", std::span<const Tensor>(&gradient, 1), {{"learning_rate", 0.1}},
                                    Long())));
  absl::StatusOr<Tensor> w = host.Read("w", Long());
  ASSERT_TRUE(IsOk(w));
  const std::vector<double> got = FloatsOf(*w);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(got[i], w0[i] - 0.1 * g[i]) << i;

  // Momentum keeps its slot beside the variable: accum = g, then w -= lr * accum.
  ASSERT_TRUE(IsOk(host.CreateIfAbsent("v", Floats(DType::kFloat64, {2.0}), Long())));
  const Tensor one = Floats(DType::kFloat64, {1.0});
  ASSERT_TRUE(IsOk(host.ApplyUpdate("v", "momentum", std::span<const Tensor>(&one, 1),
                                    {{"learning_rate", 0.5}, {"momentum", 0.9}}, Long())));
  EXPECT_EQ(FloatsOf(*host.Read("v", Long())), (std::vector<double>{2.0 - 0.5 * 1.0}));
  EXPECT_EQ(FloatsOf(*host.Read("v/momentum", Long())), (std::vector<double>{1.0}));

  absl::StatusOr<std::vector<ps::StoredVariableInfo>> listed = host.List(Long());
  ASSERT_TRUE(IsOk(listed));
  ASSERT_EQ(listed->size(), 3u);
  EXPECT_EQ((*listed)[0].name, "v");
  EXPECT_EQ((*listed)[1].name, "v/momentum");
  EXPECT_EQ((*listed)[1].slot_of, "v");
  EXPECT_EQ((*listed)[2].name, "w");
  EXPECT_EQ((*listed)[2].slot_of, "");
  EXPECT_EQ((*listed)[2].dtype, DType::kFloat64);
  EXPECT_EQ((*listed)[2].shape.dims(), (distribute::Dims{3}));

  // The store's refusals of an update: unknown function, missing hyperparameter.
  EXPECT_TRUE(HasError(host.ApplyUpdate("w", "no_such", std::span<const Tensor>(&gradient, 1), {}, Long()),
                       absl::StatusCode::kNotFound, {"no_such"}));
  EXPECT_TRUE(HasError(host.ApplyUpdate("v", "momentum", std::span<const Tensor>(&one, 1), {}, Long()),
                       absl::StatusCode::kInvalidArgument, {"momentum"}));
}

TEST(VariableServiceTest, AssignSlotCreatesThenOverwritesASlot) {
  // A restore into a fresh ps task: the slot does not exist until written.
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  ps::VariableHost& host = *cluster.host;
  ASSERT_TRUE(IsOk(host.CreateIfAbsent("w", Floats(DType::kFloat64, {1.0, 2.0}), Long())));
  ASSERT_TRUE(IsOk(host.AssignSlot("w", "m", Floats(DType::kFloat64, {3.0, 4.0}), Long())));
  EXPECT_EQ(FloatsOf(*host.Read("w/m", Long())), (std::vector<double>{3.0, 4.0}));
  ASSERT_TRUE(IsOk(host.AssignSlot("w", "m", Floats(DType::kFloat64, {5.0, 6.0}), Long())));
  EXPECT_EQ(FloatsOf(*host.Read("w/m", Long())), (std::vector<double>{5.0, 6.0}));
  absl::StatusOr<std::vector<ps::StoredVariableInfo>> listed = host.List(Long());
  ASSERT_TRUE(IsOk(listed));
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[1].slot_of, "w");
  // Refusals change nothing: another shape, an unknown variable, a slot as the variable.
  EXPECT_TRUE(HasError(host.AssignSlot("w", "m", Floats(DType::kFloat64, {1.0}), Long()),
                       absl::StatusCode::kInvalidArgument, {"slot"}));
  EXPECT_TRUE(HasError(host.AssignSlot("nope", "m", Floats(DType::kFloat64, {1.0}), Long()),
                       absl::StatusCode::kNotFound, {"nope"}));
  EXPECT_TRUE(HasError(host.AssignSlot("w/m", "m", Floats(DType::kFloat64, {1.0, 2.0}), Long()),
                       absl::StatusCode::kInvalidArgument, {"slot"}));
  EXPECT_EQ(FloatsOf(*host.Read("w/m", Long())), (std::vector<double>{5.0, 6.0}));
}

TEST(VariableServiceTest, SixtyFourMebibyteTensorRoundTrip) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  constexpr int64_t kBytes = int64_t{64} << 20;
  Tensor big = ZeroTensor(DType::kUInt8, {kBytes});
  auto* bytes = static_cast<uint8_t*>(big.data());
  for (int64_t i = 0; i < kBytes; ++i) bytes[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  ASSERT_TRUE(IsOk(cluster.host->CreateIfAbsent("big", big, Long())));
  absl::StatusOr<Tensor> back = cluster.host->Read("big", Long());
  ASSERT_TRUE(IsOk(back));
  ASSERT_EQ(back->byte_size(), static_cast<size_t>(kBytes));
  EXPECT_EQ(back->shape().dims(), (distribute::Dims{kBytes}));
  EXPECT_EQ(std::memcmp(back->data(), big.data(), static_cast<size_t>(kBytes)), 0);
  // The store holds the same bytes.
  absl::StatusOr<Tensor> stored = cluster.store().Read("big");
  ASSERT_TRUE(IsOk(stored));
  EXPECT_EQ(std::memcmp(stored->data(), big.data(), static_cast<size_t>(kBytes)), 0);
}

// w += a - b, for float64: an update with two arguments, whose bytes travel back to back.
absl::Status RegisterAddDifference() {
  static const absl::Status registered = [] {
    ps::UpdateFunction f;
    f.num_arguments = 2;
    f.dtypes = {DType::kFloat64};
    f.apply = [](const ps::UpdateCall& call) {
      auto* w = static_cast<double*>(call.variables[0].data());
      const auto* a = static_cast<const double*>(call.arguments[0].data());
      const auto* b = static_cast<const double*>(call.arguments[1].data());
      for (int64_t i = 0; i < call.variables[0].shape().num_elements(); ++i) w[i] += a[i] - b[i];
      return absl::OkStatus();
    };
    return ps::FunctionRegistry::Global().Register("test_add_difference", std::move(f));
  }();
  return registered;
}

TEST(VariableServiceTest, SmallMessagesCarryLargeTensorsInManyChunks) {
  Server::Options options;
  options.max_message_bytes = kMinMaxMessageBytes;  // chunks of a few KiB
  PsCluster cluster(options);
  ASSERT_TRUE(cluster.host != nullptr);
  ASSERT_TRUE(IsOk(RegisterAddDifference()));
  constexpr int64_t kCount = 100'003;  // not a multiple of any chunk
  std::vector<double> w(kCount), a(kCount), b(kCount);
  for (int64_t i = 0; i < kCount; ++i) {
    w[i] = static_cast<double>(i);
    a[i] = static_cast<double>(3 * i % 1000);
    b[i] = static_cast<double>(i % 7) * 0.5;
  }
  ASSERT_TRUE(IsOk(cluster.host->CreateIfAbsent("w", Floats(DType::kFloat64, w), Long())));
  const std::vector<Tensor> arguments = {Floats(DType::kFloat64, a), Floats(DType::kFloat64, b)};
  ASSERT_TRUE(IsOk(cluster.host->ApplyUpdate("w", "test_add_difference", arguments, {}, Long())));
  absl::StatusOr<Tensor> back = cluster.host->Read("w", Long());
  ASSERT_TRUE(IsOk(back));
  const std::vector<double> got = FloatsOf(*back);
  ASSERT_EQ(got.size(), static_cast<size_t>(kCount));
  int64_t wrong = 0;
  for (int64_t i = 0; i < kCount; ++i) wrong += got[i] != w[i] + (a[i] - b[i]) ? 1 : 0;
  EXPECT_EQ(wrong, 0);
  // A request whose names alone would not fit a message is refused before it is sent.
  ps::Hyperparameters long_names;
  for (int i = 0; i < 20; ++i) long_names[absl::StrCat(i, std::string(1000, 'h'))] = 1.0;
  EXPECT_TRUE(HasError(cluster.host->ApplyUpdate("w", "test_add_difference", arguments, long_names, Long()),
                       absl::StatusCode::kInvalidArgument, {"more than the 10240 bytes of a message"}));
  // A later creator receives the current value in as many chunks.
  absl::StatusOr<ps::VariableStore::Creation> again =
      cluster.host->CreateIfAbsent("w", Floats(DType::kFloat64, w), Long());
  ASSERT_TRUE(IsOk(again));
  EXPECT_FALSE(again->created);
  EXPECT_EQ(FloatsOf(again->value), got);
}

TEST(VariableServiceTest, TasksWithDifferentMessageBoundsOfFourMebibytesOrMoreTalk) {
  Server::Options options;
  options.max_message_bytes = size_t{64} << 20;
  PsCluster cluster(options);
  ASSERT_TRUE(cluster.host != nullptr);
  RemoteVariableHostOptions host_options;
  host_options.job_token = kToken;  // and the default bound, 4 MiB
  absl::StatusOr<std::unique_ptr<ps::VariableHost>> host =
      NewRemoteVariableHost("ps:1", cluster.addresses[2], host_options);
  ASSERT_TRUE(IsOk(host));
  std::vector<double> values(size_t{2} << 20);  // 8 MiB of float32
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i % 4099);
  ASSERT_TRUE(IsOk((*host)->CreateIfAbsent("w", Floats(DType::kFloat32, values), Long())));
  absl::StatusOr<Tensor> back = (*host)->Read("w", Long());
  ASSERT_TRUE(IsOk(back));
  EXPECT_EQ(FloatsOf(*back), values);
}

TEST(VariableServiceTest, ConcurrentAddsLoseNothing) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  constexpr int kThreads = 8;
  constexpr int kAdds = 200;
  ASSERT_TRUE(IsOk(cluster.host->CreateIfAbsent("counter", Ints({0, 0}), Long())));
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Tensor delta = Ints({1, t + 1});
      for (int i = 0; i < kAdds; ++i) {
        if (!cluster.host->AssignAdd("counter", delta, Long()).ok()) ++failures;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  absl::StatusOr<Tensor> counter = cluster.host->Read("counter", Long());
  ASSERT_TRUE(IsOk(counter));
  // Thread t adds t + 1 each time: 200 * (1 + 2 + ... + 8).
  EXPECT_EQ(IntsOf(*counter), (std::vector<int64_t>{kThreads * kAdds, kAdds * kThreads * (kThreads + 1) / 2}));
}

TEST(VariableServiceTest, AWrongTokenIsRefusedAndCreatesNothing) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  std::unique_ptr<ps::VariableHost> stranger = cluster.Host("ps:1", cluster.addresses[2], "not-the-job-token-0000");
  ASSERT_TRUE(stranger != nullptr);
  EXPECT_TRUE(HasError(stranger->CreateIfAbsent("w", Floats(DType::kFloat32, {1}), Long()),
                       absl::StatusCode::kUnauthenticated, {"parameter server ps:1", "job token is wrong"}));
  EXPECT_TRUE(HasError(stranger->List(Long()), absl::StatusCode::kUnauthenticated, {"ps:1"}));
  EXPECT_EQ(cluster.store().size(), 0);
  // WaitReady gives up at once on a refusal rather than retrying until its deadline.
  const Clock::time_point start = Clock::now();
  EXPECT_TRUE(HasError(stranger->WaitReady(Long()), absl::StatusCode::kUnauthenticated, {"ps:1"}));
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(kLongMs));
  EXPECT_TRUE(IsOk(cluster.host->WaitReady(Long())));
}

// The token and a deadline on a raw call.
void Prepare(grpc::ClientContext& context) {
  context.AddMetadata("dist-job-token", kToken);
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(kLongMs));
}

pb::WriteRequest Declaring(const std::string& name, int32_t dtype, std::vector<int64_t> dims, uint64_t byte_size,
                           std::string data) {
  pb::WriteRequest request;
  request.set_name(name);
  request.mutable_tensor()->set_dtype(dtype);
  for (int64_t dim : dims) request.mutable_tensor()->add_dims(dim);
  request.mutable_tensor()->set_byte_size(byte_size);
  request.set_data(std::move(data));
  return request;
}

pb::WriteRequest DataOnly(std::string data) {
  pb::WriteRequest request;
  request.set_data(std::move(data));
  return request;
}

// Sends `messages` as a CreateIfAbsent stream: the call's status, and whether the error
// was marked as the service's own.
struct RawOutcome {
  grpc::Status status;
  bool from_service = false;
};
RawOutcome RawCreate(pb::VariableService::Stub& stub, const std::vector<pb::WriteRequest>& messages) {
  grpc::ClientContext context;
  Prepare(context);
  auto stream = stub.CreateIfAbsent(&context);
  for (const pb::WriteRequest& message : messages) {
    if (!stream->Write(message)) break;
  }
  stream->WritesDone();
  pb::CreateResponse response;
  while (stream->Read(&response)) {
  }
  RawOutcome outcome{stream->Finish(), false};
  outcome.from_service = IsServiceError(context);
  return outcome;
}

// Sends `request` alone as an ApplyUpdate stream.
RawOutcome RawUpdate(pb::VariableService::Stub& stub, const pb::UpdateRequest& request) {
  grpc::ClientContext context;
  Prepare(context);
  pb::WriteResponse response;
  auto stream = stub.ApplyUpdate(&context, &response);
  stream->Write(request);
  stream->WritesDone();
  RawOutcome outcome{stream->Finish(), false};
  outcome.from_service = IsServiceError(context);
  return outcome;
}

::testing::AssertionResult RefusedAsInvalid(const RawOutcome& outcome, const std::string& part) {
  if (outcome.status.error_code() != grpc::StatusCode::INVALID_ARGUMENT) {
    return ::testing::AssertionFailure() << "expected INVALID_ARGUMENT, got " << outcome.status.error_code() << " "
                                         << outcome.status.error_message();
  }
  if (outcome.status.error_message().find(part) == std::string::npos) {
    return ::testing::AssertionFailure() << "\"" << outcome.status.error_message() << "\" lacks \"" << part << "\"";
  }
  if (!outcome.from_service) return ::testing::AssertionFailure() << "the error lacks the service's mark";
  return ::testing::AssertionSuccess();
}

TEST(VariableServiceTest, MalformedRequestsAreInvalidAndChangeNothing) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  auto stub = pb::VariableService::NewStub(grpc::CreateChannel(cluster.addresses[2], grpc::InsecureChannelCredentials()));
  constexpr int32_t kFloat32 = static_cast<int32_t>(DType::kFloat32);
  const std::string twelve(12, 'x');
  const std::string sixteen(16, 'x');

  // Bytes that do not match the declared shape: too few, too many, a byte_size that lies.
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {Declaring("w", kFloat32, {4}, 16, twelve)}),
                               "ended after 12 of the 16 tensor bytes"));
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {Declaring("w", kFloat32, {4}, 16, twelve), DataOnly(twelve)}),
                               "more tensor bytes than the 16"));
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {Declaring("w", kFloat32, {4}, 15, twelve)}),
                               "byte_size is 15 but a float32 tensor of shape [4] has 16 bytes"));
  // Huge shapes, refused before anything is allocated: past the request bound, an element
  // count that overflows, a rank past kMaxRank.
  EXPECT_TRUE(RefusedAsInvalid(
      RawCreate(*stub, {Declaring("w", kFloat32, {int64_t{1} << 20, int64_t{1} << 20}, uint64_t{1} << 42, "")}),
      "more than the 1073741824 bytes one call may carry"));
  EXPECT_TRUE(RefusedAsInvalid(
      RawCreate(*stub, {Declaring("w", kFloat32, {int64_t{1} << 40, int64_t{1} << 40}, 0, "")}), "too many elements"));
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {Declaring("w", kFloat32, std::vector<int64_t>(33, 1), 4, "")}),
                               "rank 33"));
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {Declaring("w", kFloat32, {-1}, 0, "")}), "dimensions must be >= 0"));
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {Declaring("w", 99, {1}, 4, "abcd")}), "99"));
  // Bad names.
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {Declaring("", kFloat32, {4}, 16, sixteen)}), "variable name is empty"));
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {Declaring("w\n", kFloat32, {4}, 16, sixteen)}), "printable ASCII"));
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {Declaring(std::string(1025, 'w'), kFloat32, {4}, 16, sixteen)}),
                               "at most 1024"));
  // Broken streams: none at all, a header without a tensor, a later message declaring
  // again, a later message without bytes.
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {}), "the request stream is empty"));
  pb::WriteRequest no_tensor;
  no_tensor.set_name("w");
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {no_tensor}), "declares no tensor"));
  EXPECT_TRUE(RefusedAsInvalid(
      RawCreate(*stub, {Declaring("w", kFloat32, {4}, 16, twelve), Declaring("w", kFloat32, {1}, 4, "abcd")}),
      "more than tensor bytes"));
  EXPECT_TRUE(RefusedAsInvalid(RawCreate(*stub, {Declaring("w", kFloat32, {4}, 16, twelve), DataOnly("")}),
                               "no tensor bytes"));

  // An update naming too many arguments or hyperparameters.
  pb::UpdateRequest many_arguments;
  many_arguments.set_name("w");
  many_arguments.set_function("sgd");
  for (int i = 0; i < 17; ++i) many_arguments.add_arguments()->set_dtype(kFloat32);
  EXPECT_TRUE(RefusedAsInvalid(RawUpdate(*stub, many_arguments), "17 argument tensors: at most 16"));
  pb::UpdateRequest many_hyperparameters;
  many_hyperparameters.set_name("w");
  many_hyperparameters.set_function("sgd");
  for (int i = 0; i < 65; ++i) (*many_hyperparameters.mutable_hyperparameters())[absl::StrCat("h", i)] = 1.0;
  EXPECT_TRUE(RefusedAsInvalid(RawUpdate(*stub, many_hyperparameters), "65 hyperparameters: at most 64"));
  // A ping asking for more than a message back.
  {
    grpc::ClientContext context;
    Prepare(context);
    pb::PingRequest request;
    request.set_reply_bytes(uint64_t{1} << 40);
    pb::PingResponse response;
    EXPECT_EQ(stub->Ping(&context, request, &response).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }

  // Nothing was created, and the service answers a good request afterwards.
  EXPECT_EQ(cluster.store().size(), 0);
  EXPECT_EQ(cluster.store().bytes(), 0u);
  RawOutcome good = RawCreate(*stub, {Declaring("w", kFloat32, {4}, 16, twelve), DataOnly("abcd")});
  EXPECT_TRUE(good.status.ok()) << good.status.error_message();
  absl::StatusOr<Tensor> w = cluster.host->Read("w", Long());
  ASSERT_TRUE(IsOk(w));
  EXPECT_EQ(std::string(static_cast<const char*>(w->data()), 16), twelve + "abcd");
}

// Issue 43, finding 3: with the job's token, streams that declare a tensor and then send
// nothing held the ps task's service threads for ever; 100 of them starved the job
// (RESOURCE_EXHAUSTED "Server Threadpool Exhausted"). Now each is cancelled once it sent
// nothing for the idle limit, and the job's own calls go through meanwhile.
TEST(VariableServiceTest, IdleRequestStreamsAreCancelledAndDoNotStarveTheJob) {
  Server::Options options;
  options.stream_idle_timeout_ms = 500;
  PsCluster cluster(options);
  ASSERT_TRUE(cluster.host != nullptr);
  auto stub = pb::VariableService::NewStub(grpc::CreateChannel(cluster.addresses[2], grpc::InsecureChannelCredentials()));
  constexpr int kIdle = 100;  // against kVariableServiceThreads = 32
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientWriter<pb::WriteRequest>>> streams;
  std::vector<pb::WriteResponse> responses(kIdle);
  for (int i = 0; i < kIdle; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    Prepare(*contexts.back());
    streams.push_back(stub->Assign(contexts.back().get(), &responses[i]));
    streams.back()->Write(Declaring("w", static_cast<int32_t>(DType::kFloat32), {4}, 16, "abcd"));
  }
  // The job's own calls: sent again while the threads are taken, they go through once the
  // idle streams are cancelled, well within their deadline.
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(IsOk(cluster.host->CreateIfAbsent("v", Floats(DType::kFloat32, {1, 2}), Deadline::AfterMs(20'000))));
  ASSERT_TRUE(IsOk(cluster.host->AssignAdd("v", Floats(DType::kFloat32, {1, 1}), Deadline::AfterMs(20'000))));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  // Every idle stream ended, none of them wrote "w".
  for (int i = 0; i < kIdle; ++i) {
    const grpc::Status status = streams[i]->Finish();
    EXPECT_FALSE(status.ok()) << i;
  }
  EXPECT_FALSE(cluster.store().Read("w").ok());
  absl::StatusOr<Tensor> v = cluster.store().Read("v");
  ASSERT_TRUE(IsOk(v));
  EXPECT_EQ(static_cast<const float*>(v->data())[1], 3.0f);
}

// Issue 43, finding 3: the requests in flight at a ps task held up to 32 x 1 GiB together.
// Now they share a budget (max_variable_inflight_bytes): with two requests of 64 KiB
// holding a budget of 128 KiB (and still sending, so the watchdog leaves them alone), a
// third waits for room and, after the idle limit, fails ResourceExhausted naming the cap,
// allocating and writing nothing. Once the two finish, the budget is whole again.
TEST(VariableServiceTest, RequestsInFlightShareTheTasksByteBudget) {
  constexpr int64_t kElements = 16 * 1024;  // float32: 64 KiB
  constexpr uint64_t kBytes = kElements * 4;
  Server::Options options;
  options.stream_idle_timeout_ms = 1500;
  options.max_variable_request_bytes = kBytes;
  options.max_variable_inflight_bytes = 2 * kBytes;
  PsCluster cluster(options);
  ASSERT_TRUE(cluster.host != nullptr);
  auto stub = pb::VariableService::NewStub(grpc::CreateChannel(cluster.addresses[2], grpc::InsecureChannelCredentials()));
  const int32_t kFloat32 = static_cast<int32_t>(DType::kFloat32);
  const std::string chunk(1024, '\0');  // float zeros

  // Two holders declare 64 KiB each and trickle it, a chunk every 100 ms.
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<pb::WriteResponse> responses(2);
  std::vector<std::unique_ptr<grpc::ClientWriter<pb::WriteRequest>>> holders;
  for (int i = 0; i < 2; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    Prepare(*contexts.back());
    holders.push_back(stub->Assign(contexts.back().get(), &responses[i]));
    ASSERT_TRUE(holders.back()->Write(Declaring(absl::StrCat("held", i), kFloat32, {kElements}, kBytes, chunk)));
  }
  std::atomic<bool> finish{false};
  std::thread trickle([&] {
    size_t sent = chunk.size();
    while (!finish.load() && sent + chunk.size() < kBytes) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      for (auto& holder : holders) holder->Write(DataOnly(chunk));
      sent += chunk.size();
    }
    // The rest at once, once asked to finish (or when only the last chunk is left).
    while (!finish.load()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (auto& holder : holders) {
      holder->Write(DataOnly(std::string(kBytes - sent, '\0')));
      holder->WritesDone();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the holders took the budget

  const auto start = std::chrono::steady_clock::now();
  RawOutcome third = RawCreate(*stub, {Declaring("third", kFloat32, {kElements}, kBytes, std::string(kBytes, '\0'))});
  const auto waited = std::chrono::steady_clock::now() - start;
  std::cout << "third request: " << third.status.error_message() << " after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(waited).count() << " ms\n";
  EXPECT_EQ(third.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(third.from_service);
  EXPECT_NE(third.status.error_message().find("max_variable_inflight_bytes"), std::string::npos);
  EXPECT_NE(third.status.error_message().find(absl::StrCat("of the ", 2 * kBytes, " tensor bytes")), std::string::npos);
  EXPECT_GE(waited, std::chrono::milliseconds(1000));  // it waited for room first
  EXPECT_FALSE(cluster.store().Read("third").ok());

  finish.store(true);
  trickle.join();
  for (auto& holder : holders) {
    const grpc::Status status = holder->Finish();
    // Assign of a variable that does not exist: NotFound from the store, so the bytes
    // were received whole.
    EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << status.error_message();
  }
  // The budget is whole again: a request of the whole budget's half goes through at once.
  RawOutcome later = RawCreate(*stub, {Declaring("later", kFloat32, {kElements}, kBytes, std::string(kBytes, '\0'))});
  EXPECT_TRUE(later.status.ok()) << later.status.error_message();
  EXPECT_TRUE(cluster.store().Read("later").ok());
}

// A budget below one request's bound could never receive the largest request: refused.
TEST(VariableServiceTest, AnInflightBudgetBelowTheRequestBoundIsRefused) {
  Server::Options options;
  options.max_variable_request_bytes = 1 << 20;
  options.max_variable_inflight_bytes = (1 << 20) - 1;
  EXPECT_TRUE(HasError(options.Validate(), absl::StatusCode::kInvalidArgument,
                       {"max_variable_inflight_bytes (1048575) is less than max_variable_request_bytes (1048576)"}));
  // The defaults: at least one request, at most 4 GiB, at most an eighth of the memory
  // unless that is below one request.
  const Server::Options defaults;
  EXPECT_GE(defaults.max_variable_inflight_bytes, defaults.max_variable_request_bytes);
  EXPECT_LE(defaults.max_variable_inflight_bytes, uint64_t{4} << 30);
  const uint64_t memory = static_cast<uint64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_LE(defaults.max_variable_inflight_bytes, std::max<uint64_t>(memory / 8, uint64_t{1} << 30));
  EXPECT_LE(defaults.max_variable_bytes, memory / 2);
}

TEST(VariableServiceTest, AStoppedPsTaskIsUnavailableWithinTheDeadline) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  ASSERT_TRUE(IsOk(cluster.host->CreateIfAbsent("w", Floats(DType::kFloat32, {1}), Long())));
  cluster.ps->Stop();
  constexpr int64_t kDeadlineMs = 5000;
  const Clock::time_point start = Clock::now();
  const absl::Status read = cluster.host->Read("w", Deadline::AfterMs(kDeadlineMs)).status();
  std::cout << read << "\n";
  EXPECT_TRUE(HasError(read, absl::StatusCode::kUnavailable,
                       {"parameter server ps:1 (" + cluster.addresses[2] + ") is unavailable: ",
                        "(while reading variable 'w')"}));
  EXPECT_TRUE(HasError(cluster.host->AssignAdd("w", Floats(DType::kFloat32, {1}), Deadline::AfterMs(kDeadlineMs)),
                       absl::StatusCode::kUnavailable, {"ps:1", "(while adding to variable 'w')"}));
  const auto elapsed = Clock::now() - start;
  std::cout << "two calls to a stopped ps task failed after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count() << " ms\n";
  EXPECT_LT(elapsed, std::chrono::milliseconds(2 * kDeadlineMs + 2000));
}

TEST(VariableServiceTest, ATaskThatNeverStartedFailsWaitReadyAtTheDeadline) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  std::unique_ptr<ps::VariableHost> absent = cluster.Host("ps:0", cluster.addresses[1]);
  const Clock::time_point start = Clock::now();
  EXPECT_TRUE(HasError(absent->WaitReady(Deadline::AfterMs(300)), absl::StatusCode::kDeadlineExceeded,
                       {"parameter server ps:0 (", "did not answer within 300 ms"}));
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(250));
  // An ordinary call does not wait for the task to come up.
  EXPECT_TRUE(HasError(absent->Read("w", Deadline::AfterMs(kLongMs)), absl::StatusCode::kUnavailable,
                       {"parameter server ps:0", "is unavailable"}));
}

TEST(VariableServiceTest, WaitReadyWaitsForAPsTaskThatStartsLater) {
  const std::vector<int> ports = FreePorts(2);
  const std::string chief_address = absl::StrCat("127.0.0.1:", ports[0]);
  const std::string ps_address = absl::StrCat("127.0.0.1:", ports[1]);
  RemoteVariableHostOptions host_options;
  host_options.job_token = kToken;
  absl::StatusOr<std::unique_ptr<ps::VariableHost>> host = NewRemoteVariableHost("ps:0", ps_address, host_options);
  ASSERT_TRUE(IsOk(host));
  absl::Status ready;
  std::thread waiter([&] { ready = (*host)->WaitReady(Long()); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  Server::Options options;
  options.job_token = kToken;
  std::vector<std::unique_ptr<Server>> servers;
  for (const char* job : {"worker", "ps"}) {
    ClusterSpec cluster;
    ASSERT_TRUE(IsOk(cluster.AddTask("worker", 0, chief_address)));
    ASSERT_TRUE(IsOk(cluster.AddTask("ps", 0, ps_address)));
    ASSERT_TRUE(IsOk(cluster.SetTask(job, 0)));
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(cluster, options);
    ASSERT_TRUE(IsOk(server));
    servers.push_back(std::move(*server));
  }
  waiter.join();
  EXPECT_TRUE(IsOk(ready));
  EXPECT_TRUE(IsOk((*host)->CreateIfAbsent("w", Floats(DType::kFloat32, {1}), Long())));
}

TEST(VariableServiceTest, TheStoreBoundsComeFromTheServerOptions) {
  Server::Options options;
  options.max_variables = 1;
  PsCluster cluster(options);
  ASSERT_TRUE(cluster.host != nullptr);
  ASSERT_TRUE(IsOk(cluster.host->CreateIfAbsent("a", Floats(DType::kFloat32, {1}), Long())));
  EXPECT_TRUE(HasError(cluster.host->CreateIfAbsent("b", Floats(DType::kFloat32, {1}), Long()),
                       absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(cluster.store().size(), 1);

  Server::Options bad;
  bad.max_variables = 0;
  EXPECT_TRUE(HasError(bad.Validate(), absl::StatusCode::kInvalidArgument, {"max_variables is 0"}));
  bad = Server::Options();
  bad.max_variable_request_bytes = 0;
  EXPECT_TRUE(HasError(bad.Validate(), absl::StatusCode::kInvalidArgument, {"max_variable_request_bytes (0)"}));
}

TEST(VariableServiceTest, RequestsPastTheBoundsAreRefusedBeforeTheyAreSent) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  RemoteVariableHostOptions options;
  options.job_token = kToken;
  options.max_tensor_bytes = 8;
  absl::StatusOr<std::unique_ptr<ps::VariableHost>> small = NewRemoteVariableHost("ps:1", cluster.addresses[2], options);
  ASSERT_TRUE(IsOk(small));
  EXPECT_TRUE(HasError((*small)->CreateIfAbsent("w", Floats(DType::kFloat32, {1, 2, 3}), Long()),
                       absl::StatusCode::kInvalidArgument, {"12 tensor bytes: at most 8"}));
  EXPECT_TRUE(HasError((*small)->Assign("bad\x01", Floats(DType::kFloat32, {1}), Long()),
                       absl::StatusCode::kInvalidArgument, {"printable ASCII"}));
  EXPECT_EQ(cluster.store().size(), 0);
  // An answer larger than the host accepts is refused before it is allocated.
  ASSERT_TRUE(IsOk(cluster.host->CreateIfAbsent("w", Floats(DType::kFloat32, {1, 2, 3}), Long())));
  EXPECT_TRUE(HasError((*small)->Read("w", Long()), absl::StatusCode::kInternal,
                       {"parameter server ps:1", "sent a malformed answer", "bytes one call may carry"}));
}

// ReadMany and ApplyUpdates: one call for several variables of the task.
TEST(VariableServiceTest, ReadManyAndApplyUpdatesInOneCall) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  ps::VariableHost& host = *cluster.host;
  ASSERT_TRUE(IsOk(host.CreateIfAbsent("a", Floats(DType::kFloat64, {1.0, 2.0}), Long())));
  ASSERT_TRUE(IsOk(host.CreateIfAbsent("b", Ints({7}), Long())));
  ASSERT_TRUE(IsOk(host.CreateIfAbsent("c", Floats(DType::kFloat32, {}), Long())));  // empty

  const std::vector<std::string> names = {"b", "a", "c", "a"};
  absl::StatusOr<std::vector<Tensor>> read = host.ReadMany(names, Long());
  ASSERT_TRUE(IsOk(read));
  ASSERT_EQ(read->size(), 4u);
  EXPECT_EQ(IntsOf((*read)[0]), (std::vector<int64_t>{7}));
  EXPECT_EQ(FloatsOf((*read)[1]), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ((*read)[2].shape().num_elements(), 0);
  EXPECT_EQ((*read)[2].dtype(), DType::kFloat32);
  EXPECT_EQ(FloatsOf((*read)[3]), (std::vector<double>{1.0, 2.0}));

  // A name the task lacks fails the whole read, naming it.
  EXPECT_TRUE(HasError(host.ReadMany(std::vector<std::string>{"a", "missing"}, Long()), absl::StatusCode::kNotFound,
                       {"no variable 'missing'"}));

  // sgd on two variables in one call: w -= lr * g, each with its own gradient.
  ASSERT_TRUE(IsOk(host.CreateIfAbsent("d", Floats(DType::kFloat64, {10.0}), Long())));
  std::vector<ps::VariableHost::UpdateEntry> entries = {
      {"a", {Floats(DType::kFloat64, {0.5, -1.0})}},
      {"d", {Floats(DType::kFloat64, {4.0})}},
  };
  absl::StatusOr<ps::VariableHost::UpdatesOutcome> applied =
      host.ApplyUpdates(entries, "sgd", {{"learning_rate", 0.25}}, Long());
  ASSERT_TRUE(IsOk(applied));
  EXPECT_EQ(applied->failed, 0);
  EXPECT_EQ(FloatsOf(*cluster.store().Read("a")), (std::vector<double>{1.0 - 0.25 * 0.5, 2.0 + 0.25 * 1.0}));
  EXPECT_EQ(FloatsOf(*cluster.store().Read("d")), (std::vector<double>{10.0 - 0.25 * 4.0}));

  // Entries that fail (a missing variable, a wrong shape) leave the others applied, and the
  // answer names the first of them.
  entries = {
      {"a", {Floats(DType::kFloat64, {1.0, 1.0})}},
      {"missing", {Floats(DType::kFloat64, {1.0})}},
      {"d", {Floats(DType::kFloat64, {1.0, 2.0, 3.0})}},
      {"d", {Floats(DType::kFloat64, {2.0})}},
  };
  applied = host.ApplyUpdates(entries, "sgd", {{"learning_rate", 1.0}}, Long());
  ASSERT_TRUE(IsOk(applied));
  EXPECT_EQ(applied->failed, 2);
  EXPECT_EQ(applied->first_failed, 1);
  EXPECT_TRUE(HasError(applied->first_error, absl::StatusCode::kNotFound, {"missing"}));
  EXPECT_EQ(FloatsOf(*cluster.store().Read("a")), (std::vector<double>{1.0 - 0.25 * 0.5 - 1.0, 2.0 + 0.25 - 1.0}));
  EXPECT_EQ(FloatsOf(*cluster.store().Read("d")), (std::vector<double>{10.0 - 1.0 - 2.0}));

  // Refused before anything is sent: no entries, too many, a bad name.
  EXPECT_TRUE(HasError(host.ReadMany({}, Long()), absl::StatusCode::kInvalidArgument, {"a batch of 0 variables"}));
  EXPECT_TRUE(HasError(host.ReadMany(std::vector<std::string>(kMaxBatchEntries + 1, "a"), Long()),
                       absl::StatusCode::kInvalidArgument, {"1 to 1024"}));
  EXPECT_TRUE(HasError(host.ApplyUpdates({}, "sgd", {}, Long()), absl::StatusCode::kInvalidArgument,
                       {"a batch of 0 variables"}));
  const std::vector<ps::VariableHost::UpdateEntry> bad_name = {{"bad\x01", {Floats(DType::kFloat64, {1.0})}}};
  EXPECT_TRUE(
      HasError(host.ApplyUpdates(bad_name, "sgd", {}, Long()), absl::StatusCode::kInvalidArgument, {"printable ASCII"}));
}

// The batch limits a remote host reports, and reads past the byte bound refused by the
// task before it copies anything.
TEST(VariableServiceTest, BatchesAreBounded) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  const ps::VariableHost::BatchLimits limits = cluster.host->batch_limits();
  EXPECT_EQ(limits.entries, kMaxBatchEntries);
  EXPECT_EQ(limits.tensor_bytes, kDefaultMaxVariableRequestBytes);
  EXPECT_EQ(limits.header_bytes, kDefaultMaxMessageBytes - kTensorMessageReserveBytes);

  Server::Options small_options;
  small_options.max_variable_request_bytes = 16;
  PsCluster small(small_options);
  ASSERT_TRUE(small.host != nullptr);
  ASSERT_TRUE(IsOk(small.host->CreateIfAbsent("w", Floats(DType::kFloat64, {1.0, 2.0}), Long())));
  EXPECT_TRUE(IsOk(small.host->ReadMany(std::vector<std::string>{"w"}, Long())));
  EXPECT_TRUE(HasError(small.host->ReadMany(std::vector<std::string>{"w", "w"}, Long()),
                       absl::StatusCode::kInvalidArgument, {"take 32 bytes together: at most 16"}));
}

// A ReadMany whose answer's headers would not fit a message is refused by the task before
// it copies anything; one whose request would not fit is refused before it is sent.
TEST(VariableServiceTest, BatchHeadersMustFitOneMessage) {
  Server::Options options;
  options.max_message_bytes = kMinMaxMessageBytes;
  PsCluster cluster(options);
  ASSERT_TRUE(cluster.host != nullptr);
  const std::vector<int64_t> ones(kMaxRank, 1);
  ASSERT_TRUE(IsOk(cluster.host->CreateIfAbsent("r", ZeroTensor(DType::kFloat32, ones), Long())));
  EXPECT_TRUE(IsOk(cluster.host->ReadMany(std::vector<std::string>(8, "r"), Long())));
  EXPECT_TRUE(HasError(cluster.host->ReadMany(std::vector<std::string>(kMaxBatchEntries, "r"), Long()),
                       absl::StatusCode::kInvalidArgument, {"do not fit one message", "ask for fewer variables"}));
  EXPECT_TRUE(HasError(cluster.host->ReadMany(std::vector<std::string>(20, std::string(1000, 'n')), Long()),
                       absl::StatusCode::kInvalidArgument, {"more than the 10240 bytes of a message"}));
}

// Sends `request` as a ReadMany call through a raw stub, reading its answer to the end.
RawOutcome RawReadMany(pb::VariableService::Stub& stub, const pb::ReadManyRequest& request) {
  grpc::ClientContext context;
  Prepare(context);
  auto stream = stub.ReadMany(&context, request);
  pb::ReadManyResponse response;
  while (stream->Read(&response)) {
  }
  RawOutcome outcome{stream->Finish(), false};
  outcome.from_service = IsServiceError(context);
  return outcome;
}

// Sends `messages` as an ApplyUpdates stream.
RawOutcome RawUpdates(pb::VariableService::Stub& stub, const std::vector<pb::UpdatesRequest>& messages) {
  grpc::ClientContext context;
  Prepare(context);
  pb::UpdatesResponse response;
  auto stream = stub.ApplyUpdates(&context, &response);
  for (const pb::UpdatesRequest& message : messages) {
    if (!stream->Write(message)) break;
  }
  stream->WritesDone();
  RawOutcome outcome{stream->Finish(), false};
  outcome.from_service = IsServiceError(context);
  return outcome;
}

TEST(VariableServiceTest, MalformedBatchRequestsAreInvalidAndChangeNothing) {
  PsCluster cluster;
  ASSERT_TRUE(cluster.host != nullptr);
  ASSERT_TRUE(IsOk(cluster.host->CreateIfAbsent("w", Floats(DType::kFloat32, {1, 2}), Long())));
  auto stub = pb::VariableService::NewStub(grpc::CreateChannel(cluster.addresses[2], grpc::InsecureChannelCredentials()));
  constexpr int32_t kFloat32 = static_cast<int32_t>(DType::kFloat32);

  pb::ReadManyRequest none;
  EXPECT_TRUE(RefusedAsInvalid(RawReadMany(*stub, none), "0 names: expected 1 to 1024"));
  pb::ReadManyRequest too_many;
  for (size_t i = 0; i <= kMaxBatchEntries; ++i) too_many.add_names("w");
  EXPECT_TRUE(RefusedAsInvalid(RawReadMany(*stub, too_many), "1025 names"));
  pb::ReadManyRequest bad_name;
  bad_name.add_names("w");
  bad_name.add_names("");
  EXPECT_TRUE(RefusedAsInvalid(RawReadMany(*stub, bad_name), "variable name is empty"));

  // Updates: no entries, too many, too many arguments for one entry, a bad name, bytes
  // that do not match the headers.
  pb::UpdatesRequest request;
  request.set_function("sgd");
  (*request.mutable_hyperparameters())["learning_rate"] = 1.0;
  EXPECT_TRUE(RefusedAsInvalid(RawUpdates(*stub, {request}), "0 entries"));
  pb::UpdatesRequest many = request;
  for (size_t i = 0; i <= kMaxBatchEntries; ++i) many.add_entries()->set_name("w");
  EXPECT_TRUE(RefusedAsInvalid(RawUpdates(*stub, {many}), "1025 entries"));
  pb::UpdatesRequest many_arguments = request;
  pb::UpdateEntry* entry = many_arguments.add_entries();
  entry->set_name("w");
  for (int i = 0; i < 17; ++i) entry->add_arguments()->set_dtype(kFloat32);
  EXPECT_TRUE(RefusedAsInvalid(RawUpdates(*stub, {many_arguments}), "17 argument tensors: at most 16"));
  pb::UpdatesRequest unnamed = request;
  unnamed.add_entries();
  EXPECT_TRUE(RefusedAsInvalid(RawUpdates(*stub, {unnamed}), "variable name is empty"));
  pb::UpdatesRequest short_bytes = request;
  pb::UpdateEntry* declared = short_bytes.add_entries();
  declared->set_name("w");
  pb::TensorHeader* header = declared->add_arguments();
  header->set_dtype(kFloat32);
  header->add_dims(2);
  header->set_byte_size(8);
  short_bytes.set_data("abcd");
  EXPECT_TRUE(RefusedAsInvalid(RawUpdates(*stub, {short_bytes}), "ended after 4 of the 8 tensor bytes"));

  EXPECT_EQ(FloatsOf(*cluster.store().Read("w")), (std::vector<double>{1, 2}));
  EXPECT_EQ(cluster.store().size(), 1);
}

}  // namespace
}  // namespace distribute
