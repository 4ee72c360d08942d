// The job token: its rules (length, characters, constant-time comparison, where it comes
// from, when a job may run without one), and a stranger's requests against a running job
// that has one: every call of both services, without a token and with a wrong one, is
// UNAUTHENTICATED and changes nothing, and the job goes on unharmed.
#include "core/server/job_token.h"

#include <stdlib.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "core/server/server.h"
#include "gtest/gtest.h"
#include "server/coordination.grpc.pb.h"  // generated
#include "tests/common/free_ports.h"
#include "tests/core/status_test_util.h"
#include "tests/core/worker_cluster.h"

namespace distribute {
namespace {

namespace pb = ::distribute::coordination;
using ::distribute::testing::FreePorts;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::WorkerCluster;

const std::string kToken = "0123456789abcdef0123456789abcdef";

TEST(JobTokenTest, Rules) {
  EXPECT_TRUE(IsOk(ValidateJobToken("t", "")));
  EXPECT_TRUE(IsOk(ValidateJobToken("t", kToken)));
  EXPECT_TRUE(HasError(ValidateJobToken("DIST_JOB_TOKEN", "short"), absl::StatusCode::kInvalidArgument,
                       {"DIST_JOB_TOKEN has 5 characters: a job token has 16 to 1024"}));
  EXPECT_TRUE(HasError(ValidateJobToken("t", std::string(1025, 'a')), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(ValidateJobToken("t", kToken + " x"), absl::StatusCode::kInvalidArgument,
                       {"printable ASCII without spaces", "0x20"}));
  EXPECT_TRUE(JobTokenMatches(kToken, kToken));
  EXPECT_FALSE(JobTokenMatches(kToken, kToken.substr(1)));
  EXPECT_FALSE(JobTokenMatches(kToken, ""));
  std::string other = kToken;
  other.back() = 'x';
  EXPECT_FALSE(JobTokenMatches(kToken, other));

  ASSERT_EQ(unsetenv("DIST_JOB_TOKEN"), 0);
  EXPECT_EQ(*ResolveJobToken(""), "");
  EXPECT_EQ(*ResolveJobToken(kToken), kToken);
  ASSERT_EQ(setenv("DIST_JOB_TOKEN", "from-the-environment-0123", 1), 0);
  EXPECT_EQ(*ResolveJobToken(""), "from-the-environment-0123");
  EXPECT_EQ(*ResolveJobToken(kToken), kToken);  // the option wins
  ASSERT_EQ(setenv("DIST_JOB_TOKEN", "bad", 1), 0);
  EXPECT_TRUE(HasError(ResolveJobToken(""), absl::StatusCode::kInvalidArgument, {"DIST_JOB_TOKEN has 3"}));
  ASSERT_EQ(unsetenv("DIST_JOB_TOKEN"), 0);
}

TEST(JobTokenTest, WithoutATokenOnlyLoopbackUnlessOptedOut) {
  ASSERT_EQ(unsetenv("DIST_ALLOW_UNAUTHENTICATED"), 0);
  EXPECT_TRUE(IsOk(CheckUnauthenticatedJob(WorkerCluster({1, 2}, 0, "127.0.0.1"), false)));
  EXPECT_TRUE(IsOk(CheckUnauthenticatedJob(WorkerCluster({1, 2}, 0, "localhost"), false)));
  EXPECT_TRUE(IsOk(CheckUnauthenticatedJob(WorkerCluster({1, 2}, 0, "127.3.2.1"), false)));
  EXPECT_TRUE(IsOk(CheckUnauthenticatedJob(WorkerCluster({1, 2}, 0, "[::1]"), false)));
  for (const char* host : {"10.0.0.1", "0.0.0.0", "node-7.example.com", "[fe80::1]"}) {
    EXPECT_TRUE(HasError(CheckUnauthenticatedJob(WorkerCluster({1, 2}, 0, host), false),
                         absl::StatusCode::kFailedPrecondition,
                         {"task worker:0 is at ", host, "not a loopback address", "DIST_JOB_TOKEN",
                          "DIST_ALLOW_UNAUTHENTICATED=1"}))
        << host;
    EXPECT_TRUE(IsOk(CheckUnauthenticatedJob(WorkerCluster({1, 2}, 0, host), true)));
  }
  ASSERT_EQ(setenv("DIST_ALLOW_UNAUTHENTICATED", "1", 1), 0);
  EXPECT_TRUE(IsOk(CheckUnauthenticatedJob(WorkerCluster({1, 2}, 0, "10.0.0.1"), false)));
  ASSERT_EQ(unsetenv("DIST_ALLOW_UNAUTHENTICATED"), 0);

  // The server applies the rule before it binds anything.
  Server::Options options;
  EXPECT_TRUE(HasError(Server::Start(WorkerCluster(FreePorts(2), 0, "0.0.0.0"), options),
                       absl::StatusCode::kFailedPrecondition, {"DIST_JOB_TOKEN"}));
  options.job_token = "short";
  EXPECT_TRUE(HasError(Server::Start(WorkerCluster(FreePorts(2), 0), options),
                       absl::StatusCode::kInvalidArgument, {"the job token has 5 characters"}));
}

// A client from outside the job: the project's .proto, no token or a wrong one.
class Stranger {
 public:
  Stranger(const std::string& address, std::string token) : token_(std::move(token)) {
    auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
    coordination_ = pb::CoordinationService::NewStub(channel);
    task_ = pb::TaskService::NewStub(channel);
  }

  // Every request of both services; each must come back UNAUTHENTICATED.
  std::vector<std::pair<std::string, grpc::Status>> Attack() {
    std::vector<std::pair<std::string, grpc::Status>> results;
    auto call = [&](const char* what, auto&& rpc) {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      if (!token_.empty()) context.AddMetadata(kJobTokenMetadataKey, token_);
      results.emplace_back(what, rpc(&context));
    };
    pb::RegisterRequest reg;
    reg.set_task("worker:1");
    reg.set_incarnation(42);
    call("Register", [&](grpc::ClientContext* c) { pb::RegisterResponse r; return coordination_->Register(c, reg, &r); });
    pb::DisconnectRequest bye;
    bye.set_task("worker:1");
    bye.set_incarnation(42);
    call("Disconnect", [&](grpc::ClientContext* c) { pb::DisconnectResponse r; return coordination_->Disconnect(c, bye, &r); });
    pb::HeartbeatRequest beat;
    beat.set_task("worker:1");
    call("Heartbeat", [&](grpc::ClientContext* c) { pb::HeartbeatResponse r; return coordination_->Heartbeat(c, beat, &r); });
    pb::KeyValueSetRequest set;
    set.set_key("job/key");
    set.set_value("forged");
    call("KeyValueSet", [&](grpc::ClientContext* c) { pb::KeyValueSetResponse r; return coordination_->KeyValueSet(c, set, &r); });
    pb::KeyValueGetRequest get;
    get.set_key("job/key");
    call("KeyValueGet", [&](grpc::ClientContext* c) { pb::KeyValueGetResponse r; return coordination_->KeyValueGet(c, get, &r); });
    pb::BarrierRequest barrier;
    barrier.set_name("b");
    barrier.set_task("worker:1");
    call("Barrier", [&](grpc::ClientContext* c) { pb::BarrierResponse r; return coordination_->Barrier(c, barrier, &r); });
    pb::WatchRequest watch;
    watch.set_task("worker:1");
    call("Watch", [&](grpc::ClientContext* c) {
      auto reader = coordination_->Watch(c, watch);
      pb::WatchEvent event;
      while (reader->Read(&event)) {
      }
      return reader->Finish();
    });
    call("GetTask", [&](grpc::ClientContext* c) { pb::GetTaskResponse r; return task_->GetTask(c, pb::GetTaskRequest(), &r); });
    return results;
  }

 private:
  std::string token_;
  std::unique_ptr<pb::CoordinationService::Stub> coordination_;
  std::unique_ptr<pb::TaskService::Stub> task_;
};

TEST(JobTokenServerTest, StrangersAreUnauthenticatedAndTheJobGoesOn) {
  const std::vector<int> ports = FreePorts(2);
  Server::Options options;
  options.job_token = kToken;
  absl::StatusOr<std::unique_ptr<Server>> chief = Server::Start(WorkerCluster(ports, 0), options);
  ASSERT_TRUE(IsOk(chief));
  absl::StatusOr<std::unique_ptr<Server>> worker = Server::Start(WorkerCluster(ports, 1), options);
  ASSERT_TRUE(IsOk(worker));
  ASSERT_TRUE(IsOk((*chief)->coordination().Set("job/key", "real")));

  std::string wrong = kToken;
  wrong[0] = 'X';
  for (const std::string& token : {std::string(), wrong}) {
    for (int port : ports) {
      Stranger stranger(absl::StrCat("127.0.0.1:", port), token);
      for (const auto& [what, status] : stranger.Attack()) {
        if (port == ports[1] && what != "GetTask") continue;  // only the chief serves coordination
        EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED)
            << what << " on port " << port << ": " << status.error_message();
        EXPECT_NE(status.error_message().find("job token"), std::string::npos) << what;
      }
    }
  }
  // Nothing changed: the key keeps the job's value, both tasks are healthy, and a barrier
  // and the key-value store still work between them.
  EXPECT_EQ(*(*worker)->coordination().Get("job/key", Deadline::AfterMs(30'000)), "real");
  EXPECT_TRUE(IsOk((*chief)->coordination().PeerHealth()));
  EXPECT_TRUE(IsOk((*worker)->coordination().PeerHealth()));
  std::thread other([&] { EXPECT_TRUE(IsOk((*worker)->coordination().Barrier("after", Deadline::AfterMs(30'000)))); });
  EXPECT_TRUE(IsOk((*chief)->coordination().Barrier("after", Deadline::AfterMs(30'000))));
  other.join();
}

TEST(JobTokenServerTest, ATaskWithAnotherTokenCannotJoin) {
  const std::vector<int> ports = FreePorts(2);
  Server::Options options;
  options.job_token = kToken;
  options.startup_timeout_ms = 30'000;
  absl::StatusOr<std::unique_ptr<Server>> chief = Server::Start(WorkerCluster(ports, 0), options);
  ASSERT_TRUE(IsOk(chief));
  Server::Options impostor = options;
  impostor.job_token = "another-job-0123456789";
  EXPECT_TRUE(HasError(Server::Start(WorkerCluster(ports, 1), impostor), absl::StatusCode::kUnauthenticated,
                       {"refused task worker:1", "job token is wrong"}));
  Server::Options none = options;
  none.job_token.clear();
  EXPECT_TRUE(HasError(Server::Start(WorkerCluster(ports, 1), none), absl::StatusCode::kUnauthenticated,
                       {"refused task worker:1", "carries no job token"}));
  EXPECT_TRUE(IsOk((*chief)->coordination().PeerHealth()));
}

}  // namespace
}  // namespace distribute
