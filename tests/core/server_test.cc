// Server: a chief and workers as Server objects in one process on free loopback ports
// (key-value store and barriers across tasks, a task that never started, a chief that
// never starts, stop/join, message bounds, start errors), and tasks in processes of their
// own that are killed (SIGKILL) to check that every survivor learns which task is gone.
// Waits that must pass use long deadlines; timing is printed, never asserted beyond
// generous bounds.
#include "core/server/server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/common/free_ports.h"
#include "server/coordination.grpc.pb.h"  // generated
#include "tests/core/status_test_util.h"

extern char** environ;

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

constexpr int64_t kLongMs = 30'000;

using ::distribute::testing::FreePorts;

// "HOST:port" for each port.
std::vector<std::string> Addresses(const std::vector<int>& ports, const std::string& host = "127.0.0.1") {
  std::vector<std::string> addresses;
  for (int port : ports) addresses.push_back(absl::StrCat(host, ":", port));
  return addresses;
}

// A cluster of workers at `addresses` (worker 0 is the chief), running worker `index`.
ClusterSpec Workers(const std::vector<std::string>& addresses, int index) {
  ClusterSpec cluster;
  for (size_t i = 0; i < addresses.size(); ++i) {
    EXPECT_TRUE(IsOk(cluster.AddTask("worker", static_cast<int64_t>(i), addresses[i])));
  }
  EXPECT_TRUE(IsOk(cluster.SetTask("worker", index)));
  return cluster;
}

std::unique_ptr<Server> StartOrDie(const ClusterSpec& cluster, const Server::Options& options = {}) {
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(cluster, options);
  EXPECT_TRUE(IsOk(server));
  return server.ok() ? std::move(*server) : nullptr;
}

// Chief and two workers, all started.
struct ThreeTasks {
  explicit ThreeTasks(const std::string& host = "127.0.0.1") : addresses(Addresses(FreePorts(3), host)) {
    for (int i = 0; i < 3; ++i) servers.push_back(StartOrDie(Workers(addresses, i)));
  }
  std::vector<std::string> addresses;
  std::vector<std::unique_ptr<Server>> servers;
};

TEST(ServerTest, KeyValueAcrossTasks) {
  ThreeTasks tasks("localhost");  // "localhost" binds and dials 127.0.0.1
  ASSERT_TRUE(tasks.servers[2] != nullptr);
  EXPECT_TRUE(tasks.servers[0]->is_chief());
  EXPECT_FALSE(tasks.servers[1]->is_chief());
  EXPECT_EQ(tasks.servers[1]->task_name(), "worker:1");
  EXPECT_EQ(tasks.servers[1]->coordination().task_name(), "worker:1");
  EXPECT_EQ(absl::StrCat("localhost:", tasks.servers[1]->port()), tasks.addresses[1]);

  ASSERT_TRUE(IsOk(tasks.servers[1]->coordination().Set("from/worker1", std::string("x\0y", 3))));
  absl::StatusOr<std::string> value = tasks.servers[0]->coordination().Get("from/worker1", Deadline::AfterMs(0));
  ASSERT_TRUE(IsOk(value));
  EXPECT_EQ(*value, std::string("x\0y", 3));
  value = tasks.servers[2]->coordination().Get("from/worker1", Deadline::AfterMs(0));
  ASSERT_TRUE(IsOk(value));
  EXPECT_EQ(*value, std::string("x\0y", 3));

  // A blocking get on one worker wakes when the chief sets the key.
  absl::StatusOr<std::string> waited;
  std::thread getter([&] { waited = tasks.servers[2]->coordination().Get("later", Deadline::AfterMs(kLongMs)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(IsOk(tasks.servers[0]->coordination().Set("later", "v")));
  getter.join();
  ASSERT_TRUE(IsOk(waited));
  EXPECT_EQ(*waited, "v");

  EXPECT_TRUE(HasError(tasks.servers[1]->coordination().Get("never", Deadline::AfterMs(50)),
                       absl::StatusCode::kDeadlineExceeded, {"key 'never' was not set within"}));
  for (const auto& server : tasks.servers) EXPECT_TRUE(IsOk(server->coordination().PeerHealth()));
}

TEST(ServerTest, BarrierAcrossTasks) {
  ThreeTasks tasks;
  ASSERT_TRUE(tasks.servers[2] != nullptr);
  for (int round = 0; round < 2; ++round) {
    std::vector<absl::Status> results(3);
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) {
      threads.emplace_back([&, i] {
        results[i] = tasks.servers[i]->coordination().Barrier("step", Deadline::AfterMs(kLongMs));
      });
    }
    for (std::thread& t : threads) t.join();
    for (const absl::Status& result : results) EXPECT_TRUE(IsOk(result));
  }
}

TEST(ServerTest, BarrierNamesATaskThatNeverStarted) {
  const std::vector<std::string> addresses = Addresses(FreePorts(3));
  std::unique_ptr<Server> chief = StartOrDie(Workers(addresses, 0));
  std::unique_ptr<Server> worker1 = StartOrDie(Workers(addresses, 1));
  ASSERT_TRUE(worker1 != nullptr);
  absl::Status at_chief;
  std::thread waiter([&] { at_chief = chief->coordination().Barrier("startup", Deadline::AfterMs(kLongMs)); });
  const absl::Status at_worker = worker1->coordination().Barrier("startup", Deadline::AfterMs(300));
  waiter.join();
  EXPECT_TRUE(HasError(at_worker, absl::StatusCode::kDeadlineExceeded,
                       {"barrier 'startup' timed out after 300 ms: task worker:2 did not arrive"}));
  EXPECT_EQ(at_chief, at_worker);
}

TEST(ServerTest, WorkerWhoseChiefNeverStartsFailsNamingTheChief) {
  const std::vector<std::string> addresses = Addresses(FreePorts(2));
  Server::Options options;
  options.startup_timeout_ms = 300;
  const auto start = Clock::now();
  absl::StatusOr<std::unique_ptr<Server>> worker = Server::Start(Workers(addresses, 1), options);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_TRUE(HasError(worker, absl::StatusCode::kUnavailable,
                       {absl::StrCat("could not reach the coordination service on chief task worker:0 at ",
                                     addresses[0], " within 300 ms")}));
  EXPECT_LT(seconds, 10.0);
}

TEST(ServerTest, WorkerStartedBeforeTheChiefWaitsForIt) {
  const std::vector<std::string> addresses = Addresses(FreePorts(2));
  absl::StatusOr<std::unique_ptr<Server>> worker;
  std::thread starter([&] { worker = Server::Start(Workers(addresses, 1), {}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::unique_ptr<Server> chief = StartOrDie(Workers(addresses, 0));
  starter.join();
  ASSERT_TRUE(IsOk(worker));
  ASSERT_TRUE(IsOk((*worker)->coordination().Set("k", "v")));
  EXPECT_TRUE(IsOk(chief->coordination().Get("k", Deadline::AfterMs(0))));
}

TEST(ServerTest, StopAndJoinAreIdempotent) {
  ThreeTasks tasks;
  ASSERT_TRUE(tasks.servers[2] != nullptr);
  Server& worker = *tasks.servers[1];
  std::thread joiner([&] { worker.Join(); });
  worker.Stop();
  worker.Stop();
  joiner.join();
  worker.Join();
  EXPECT_TRUE(HasError(worker.coordination().Set("k", "v"), absl::StatusCode::kUnavailable,
                       {"the server of task worker:1 was stopped"}));
  EXPECT_TRUE(HasError(worker.coordination().PeerHealth(), absl::StatusCode::kUnavailable));
  // A clean stop is not a failure for the others.
  EXPECT_TRUE(IsOk(tasks.servers[0]->coordination().WaitForPeerFailure(Deadline::AfterMs(300))));
  EXPECT_TRUE(IsOk(tasks.servers[2]->coordination().PeerHealth()));

  tasks.servers[0]->Stop();
  tasks.servers[0]->Stop();
  tasks.servers[0]->Join();
  EXPECT_TRUE(HasError(tasks.servers[0]->coordination().Get("k", Deadline::AfterMs(0)),
                       absl::StatusCode::kUnavailable, {"coordination service is shutting down"}));
}

TEST(ServerTest, StopReleasesBlockedCalls) {
  ThreeTasks tasks;
  ASSERT_TRUE(tasks.servers[2] != nullptr);
  absl::Status at_worker;
  absl::Status at_chief;
  std::thread worker_get([&] {
    at_worker = tasks.servers[1]->coordination().Get("never", Deadline::AfterMs(kLongMs)).status();
  });
  std::thread chief_barrier([&] {
    at_chief = tasks.servers[0]->coordination().Barrier("never", Deadline::AfterMs(kLongMs));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto start = Clock::now();
  tasks.servers[0]->Stop();  // releases both: the service shuts down
  worker_get.join();
  chief_barrier.join();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 10.0);
  EXPECT_TRUE(HasError(at_chief, absl::StatusCode::kUnavailable, {"coordination service is shutting down"}));
  EXPECT_TRUE(HasError(at_worker, absl::StatusCode::kUnavailable));
}

TEST(ServerTest, WorkersLearnThatTheChiefStopped) {
  ThreeTasks tasks;
  ASSERT_TRUE(tasks.servers[2] != nullptr);
  tasks.servers[0]->Stop();
  for (int i = 1; i < 3; ++i) {
    EXPECT_TRUE(HasError(tasks.servers[i]->coordination().WaitForPeerFailure(Deadline::AfterMs(kLongMs)),
                         absl::StatusCode::kUnavailable,
                         {"task worker:0 is unavailable: the coordination service on chief task worker:0 at ",
                          tasks.addresses[0], " is gone"}));
  }
  EXPECT_TRUE(HasError(tasks.servers[1]->coordination().Set("k", "v"), absl::StatusCode::kUnavailable,
                       {"worker:0"}));
}

TEST(ServerTest, OversizedMessagesAreRejected) {
  ThreeTasks tasks;
  ASSERT_TRUE(tasks.servers[2] != nullptr);
  const size_t max_value = MaxValueBytes(kDefaultMaxMessageBytes);
  EXPECT_TRUE(IsOk(tasks.servers[1]->coordination().Set("fits", std::string(max_value, 'v'))));
  EXPECT_TRUE(HasError(tasks.servers[1]->coordination().Set("big", std::string(max_value + 1, 'v')),
                       absl::StatusCode::kInvalidArgument, {"'big'", "at most"}));
  EXPECT_TRUE(HasError(tasks.servers[0]->coordination().Set("big", std::string(max_value + 1, 'v')),
                       absl::StatusCode::kInvalidArgument, {"'big'", "at most"}));

  // A client that ignores the bound is refused by the transport.
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(64 << 20);
  auto channel = grpc::CreateCustomChannel(tasks.addresses[0], grpc::InsecureChannelCredentials(), args);
  auto stub = coordination::CoordinationService::NewStub(channel);
  coordination::KeyValueSetRequest request;
  request.set_key("raw");
  request.set_value(std::string(kDefaultMaxMessageBytes + 1, 'v'));
  coordination::KeyValueSetResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  const grpc::Status status = stub->KeyValueSet(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
  EXPECT_TRUE(HasError(tasks.servers[0]->coordination().Get("raw", Deadline::AfterMs(0)),
                       absl::StatusCode::kDeadlineExceeded));
}

TEST(ServerTest, EveryTaskAnswersOnItsOwnAddress) {
  ThreeTasks tasks;
  ASSERT_TRUE(tasks.servers[2] != nullptr);
  for (int i = 0; i < 3; ++i) {
    auto channel = grpc::CreateChannel(tasks.addresses[i], grpc::InsecureChannelCredentials());
    auto stub = coordination::TaskService::NewStub(channel);
    coordination::GetTaskResponse response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    const grpc::Status status = stub->GetTask(&context, coordination::GetTaskRequest(), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.task(), absl::StrCat("worker:", i));
    // The incarnation, which lets a caller act for the task, is never handed out: the
    // field is reserved, so the response has nothing beyond the task's name.
    EXPECT_EQ(response.ByteSizeLong(), response.task().size() + 2);
  }
}

TEST(ServerTest, StartErrors) {
  const std::vector<std::string> addresses = Addresses(FreePorts(2));
  ClusterSpec no_task;
  ASSERT_TRUE(IsOk(no_task.AddTask("worker", 0, addresses[0])));
  EXPECT_TRUE(HasError(Server::Start(no_task, {}), absl::StatusCode::kFailedPrecondition,
                       {"the cluster has no current task"}));

  ClusterSpec no_chief;
  ASSERT_TRUE(IsOk(no_chief.AddTask("worker", 1, addresses[0])));
  ASSERT_TRUE(IsOk(no_chief.SetTask("worker", 1)));
  EXPECT_TRUE(HasError(Server::Start(no_chief, {}), absl::StatusCode::kInvalidArgument,
                       {"the cluster has no chief"}));

  Server::Options bad;
  bad.heartbeat_interval_ms = 1000;
  bad.heartbeat_timeout_ms = 1000;
  EXPECT_TRUE(HasError(Server::Start(Workers(addresses, 0), bad), absl::StatusCode::kInvalidArgument,
                       {"heartbeat_timeout_ms (1000) must be longer than heartbeat_interval_ms (1000)"}));
  bad = {};
  bad.startup_timeout_ms = 0;
  EXPECT_TRUE(HasError(Server::Start(Workers(addresses, 0), bad), absl::StatusCode::kInvalidArgument,
                       {"startup_timeout_ms is 0 ms"}));

  // A port in use: a second cluster puts its chief on the first chief's address.
  std::unique_ptr<Server> chief = StartOrDie(Workers(addresses, 0));
  ASSERT_TRUE(chief != nullptr);
  const std::vector<std::string> clash = {addresses[0]};
  EXPECT_TRUE(HasError(Server::Start(Workers(clash, 0), {}), absl::StatusCode::kUnavailable,
                       {"task worker:0 cannot listen on ", addresses[0], "Address already in use"}));
}

TEST(ServerTest, ChiefTaskHostsTheServiceWhenThereIsOne) {
  const std::vector<int> ports = FreePorts(2);
  ClusterSpec cluster;
  ASSERT_TRUE(IsOk(cluster.AddTask("chief", 0, absl::StrCat("127.0.0.1:", ports[0]))));
  ASSERT_TRUE(IsOk(cluster.AddTask("worker", 0, absl::StrCat("127.0.0.1:", ports[1]))));
  ClusterSpec as_worker = cluster;
  ASSERT_TRUE(IsOk(cluster.SetTask("chief", 0)));
  ASSERT_TRUE(IsOk(as_worker.SetTask("worker", 0)));
  std::unique_ptr<Server> chief = StartOrDie(cluster);
  std::unique_ptr<Server> worker = StartOrDie(as_worker);
  ASSERT_TRUE(worker != nullptr);
  EXPECT_TRUE(chief->is_chief());
  EXPECT_EQ(chief->task_name(), "chief:0");
  EXPECT_FALSE(worker->is_chief());
  std::thread other([&] { EXPECT_TRUE(IsOk(chief->coordination().Barrier("b", Deadline::AfterMs(kLongMs)))); });
  EXPECT_TRUE(IsOk(worker->coordination().Barrier("b", Deadline::AfterMs(kLongMs))));
  other.join();
}

// A task of the cluster in a process of its own (server_test_helper).
class HelperProcess {
 public:
  HelperProcess(int index, const std::vector<std::string>& addresses) {
    int to_child[2];
    int from_child[2];
    EXPECT_EQ(pipe2(to_child, O_CLOEXEC), 0);
    EXPECT_EQ(pipe2(from_child, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
    std::vector<std::string> args = {DIST_SERVER_TEST_HELPER, std::to_string(index)};
    args.insert(args.end(), addresses.begin(), addresses.end());
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    // posix_spawn, not fork: this process already runs gRPC's threads.
    EXPECT_EQ(posix_spawn(&pid_, DIST_SERVER_TEST_HELPER, &actions, nullptr, argv.data(), environ), 0);
    posix_spawn_file_actions_destroy(&actions);
    close(to_child[0]);
    close(from_child[1]);
    stdin_ = to_child[1];  // closing it ends the helper
    stdout_ = from_child[0];
  }
  ~HelperProcess() {
    Kill();
    close(stdin_);
    close(stdout_);
  }

  // Whether the helper said "ready" within `timeout_ms`.
  bool WaitReady(int timeout_ms) {
    std::string seen;
    const auto until = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (seen.find("ready\n") == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      pollfd fd{stdout_, POLLIN, 0};
      if (left <= 0 || poll(&fd, 1, static_cast<int>(left)) <= 0) return false;
      char buffer[64];
      const ssize_t n = read(stdout_, buffer, sizeof(buffer));
      if (n <= 0) return false;
      seen.append(buffer, static_cast<size_t>(n));
    }
    return true;
  }

  void Signal(int signal) { kill(pid_, signal); }

  void Kill() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1;
  int stdout_ = -1;
};

TEST(ServerProcessTest, KilledWorkerIsReportedByEveryOtherTask) {
  const std::vector<std::string> addresses = Addresses(FreePorts(3));
  Server::Options options;
  options.heartbeat_timeout_ms = 60'000;  // only the closed connection can tell
  std::unique_ptr<Server> chief = StartOrDie(Workers(addresses, 0), options);
  std::unique_ptr<Server> worker1 = StartOrDie(Workers(addresses, 1), options);
  ASSERT_TRUE(worker1 != nullptr);
  HelperProcess worker2(2, addresses);
  ASSERT_TRUE(worker2.WaitReady(30'000));
  EXPECT_TRUE(IsOk(chief->coordination().PeerHealth()));

  const auto killed = Clock::now();
  worker2.Kill();
  for (Server* survivor : {chief.get(), worker1.get()}) {
    const absl::Status health = survivor->coordination().WaitForPeerFailure(Deadline::AfterMs(kLongMs));
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - killed).count();
    std::cout << survivor->task_name() << " learned of the loss " << ms << " ms after the kill\n";
    EXPECT_TRUE(HasError(health, absl::StatusCode::kUnavailable,
                         {"task worker:2 is unavailable: its connection to the coordination service closed"}));
    EXPECT_LT(ms, 5'000.0);  // the heartbeat timeout is 60 s: this is the connection
    EXPECT_EQ(survivor->coordination().PeerHealth(), health);
  }
  EXPECT_TRUE(HasError(chief->coordination().Barrier("after", Deadline::AfterMs(kLongMs)),
                       absl::StatusCode::kUnavailable, {"worker:2"}));
}

// A stopped process keeps its connection open: only the heartbeat timeout reveals it.
TEST(ServerProcessTest, StoppedWorkerIsLostAfterTheHeartbeatTimeout) {
  const std::vector<std::string> addresses = Addresses(FreePorts(3));
  Server::Options options;
  options.heartbeat_interval_ms = 100;
  options.heartbeat_timeout_ms = 1'500;
  std::unique_ptr<Server> chief = StartOrDie(Workers(addresses, 0), options);
  std::unique_ptr<Server> worker1 = StartOrDie(Workers(addresses, 1), options);
  ASSERT_TRUE(worker1 != nullptr);
  HelperProcess worker2(2, addresses);
  ASSERT_TRUE(worker2.WaitReady(30'000));

  const auto stopped = Clock::now();
  worker2.Signal(SIGSTOP);
  for (Server* survivor : {chief.get(), worker1.get()}) {
    const absl::Status health = survivor->coordination().WaitForPeerFailure(Deadline::AfterMs(kLongMs));
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - stopped).count();
    std::cout << survivor->task_name() << " learned of the stopped task " << ms << " ms after SIGSTOP\n";
    EXPECT_TRUE(HasError(health, absl::StatusCode::kUnavailable,
                         {"task worker:2 is unavailable: no heartbeat for 1500 ms"}));
  }
  worker2.Signal(SIGCONT);
}

TEST(ServerProcessTest, KilledChiefIsReportedByEveryWorker) {
  const std::vector<std::string> addresses = Addresses(FreePorts(3));
  HelperProcess chief(0, addresses);
  ASSERT_TRUE(chief.WaitReady(30'000));
  Server::Options options;
  options.heartbeat_timeout_ms = 60'000;
  std::unique_ptr<Server> worker1 = StartOrDie(Workers(addresses, 1), options);
  std::unique_ptr<Server> worker2 = StartOrDie(Workers(addresses, 2), options);
  ASSERT_TRUE(worker2 != nullptr);

  const auto killed = Clock::now();
  chief.Kill();
  for (Server* survivor : {worker1.get(), worker2.get()}) {
    const absl::Status health = survivor->coordination().WaitForPeerFailure(Deadline::AfterMs(kLongMs));
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - killed).count();
    std::cout << survivor->task_name() << " learned of the chief's loss " << ms << " ms after the kill\n";
    EXPECT_TRUE(HasError(health, absl::StatusCode::kUnavailable,
                         {"the coordination service on chief task worker:0 at ", addresses[0], " is gone"}));
    EXPECT_LT(ms, 5'000.0);
  }
  EXPECT_TRUE(HasError(worker1->coordination().Get("k", Deadline::AfterMs(kLongMs)),
                       absl::StatusCode::kUnavailable, {"worker:0"}));
  // Stopping a worker whose chief is gone must not wait for it.
  const auto stop = Clock::now();
  worker1->Stop();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - stop).count(), 10.0);
}

}  // namespace
}  // namespace distribute
