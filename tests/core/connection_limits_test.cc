// The bounds on a task server's connections (issue 43, finding 6): a flood of raw TCP
// connections from one loopback address is cut to the per-peer cap and, across addresses,
// to the total cap, while the job's own older connections stay; handshakes that never
// start and connections without calls are closed after their timeouts. The floods are
// bounded (a few hundred sockets) and stay on loopback: 127.0.0.2 and 127.0.0.3 are other
// peers of the same machine. What stays open is judged from the client's side (a socket
// the server cut reads end-of-stream), not from the limiter's own count.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "core/server/connection_limiter.h"
#include "core/server/server.h"
#include "server/variables.grpc.pb.h"  // generated
#include "gtest/gtest.h"
#include "tests/common/free_ports.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::FreePorts;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

using Clock = std::chrono::steady_clock;

constexpr char kToken[] = "connection-limits-test-token";

// A cluster of `tasks` workers on loopback (worker 0 is the chief), running worker `index`.
ClusterSpec Workers(const std::vector<int>& ports, int index) {
  ClusterSpec cluster;
  for (size_t i = 0; i < ports.size(); ++i) {
    EXPECT_TRUE(IsOk(cluster.AddTask("worker", static_cast<int64_t>(i), absl::StrCat("127.0.0.1:", ports[i]))));
  }
  EXPECT_TRUE(IsOk(cluster.SetTask("worker", index)));
  return cluster;
}

std::unique_ptr<Server> StartTask(const std::vector<int>& ports, int index, Server::Options options) {
  options.job_token = kToken;
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(Workers(ports, index), options);
  EXPECT_TRUE(IsOk(server));
  return server.ok() ? std::move(*server) : nullptr;
}

// A TCP connection from `from` (a loopback address) to 127.0.0.1:`port` that sends
// nothing; -1 when it could not be made.
int ConnectFrom(const std::string& from, int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in local{};
  local.sin_family = AF_INET;
  inet_pton(AF_INET, from.c_str(), &local.sin_addr);
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  remote.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof(remote)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Whether the server still holds the connection. gRPC's server speaks first (its HTTP/2
// settings), so what it sent is read and dropped until the socket would block (open) or
// reads end-of-stream or an error (closed).
bool StillOpen(int fd) {
  char bytes[4096];
  for (;;) {
    const ssize_t got = recv(fd, bytes, sizeof(bytes), MSG_DONTWAIT);
    if (got > 0) continue;
    return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

int CountOpen(const std::vector<int>& fds) {
  int open = 0;
  for (int fd : fds) open += StillOpen(fd) ? 1 : 0;
  return open;
}

// `fds` connections, waiting (up to 10 s) until at most `expected` stay open: the count
// then open.
int SettledOpen(const std::vector<int>& fds, int expected) {
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  int open = CountOpen(fds);
  while (open > expected && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    open = CountOpen(fds);
  }
  // A further scan must not cut more: the ones left are within the caps.
  std::this_thread::sleep_for(3 * kConnectionScanInterval);
  return CountOpen(fds);
}

std::vector<int> Flood(const std::string& from, int port, int count) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    const int fd = ConnectFrom(from, port);
    EXPECT_GE(fd, 0) << "connection " << i << " from " << from;
    if (fd >= 0) fds.push_back(fd);
  }
  return fds;
}

void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

// Raw connections wait in gRPC's handshake; the test's own timeouts keep them there.
Server::Options SlowHandshakes() {
  Server::Options options;
  options.handshake_timeout_ms = 60'000;
  return options;
}

// The start-up trial of the issue: the flood comes first, from the job's own address, and
// a worker that connects later still joins, since its connection carries the job's token.
TEST(ConnectionLimitsTest, AFloodFromOnePeerIsCutToThePerPeerCapAndTheJobsConnectionsStay) {
  const std::vector<int> ports = FreePorts(2);
  Server::Options options = SlowHandshakes();
  options.max_connections_per_peer = 8;
  options.max_connections = 64;
  std::unique_ptr<Server> chief = StartTask(ports, 0, options);
  ASSERT_NE(chief, nullptr);
  std::vector<int> same_peer = Flood("127.0.0.1", ports[0], 100);
  std::this_thread::sleep_for(3 * kConnectionScanInterval);  // the flood fills the cap
  // The job's worker connects after the flood, from 127.0.0.1 as the flood did.
  std::unique_ptr<Server> worker = StartTask(ports, 1, options);
  ASSERT_NE(worker, nullptr);
  std::vector<int> other_peer = Flood("127.0.0.2", ports[0], 200);
  // The worker's connection proved the token: it takes part of 127.0.0.1's cap and stays.
  const int open_same = SettledOpen(same_peer, 7);
  const int open_other = SettledOpen(other_peer, 8);
  std::cout << "open after the flood: " << open_same << " of 100 from 127.0.0.1, " << open_other
            << " of 200 from 127.0.0.2\n";
  EXPECT_LE(open_same, 7);
  EXPECT_GE(open_same, 4);  // what the worker's channels leave of the cap
  EXPECT_EQ(open_other, 8);
  // The worker was never cut off: its Watch stream is alive, so the chief did not lose it,
  // and a value set on one task is read on the other.
  EXPECT_TRUE(IsOk(chief->coordination().PeerHealth()));
  ASSERT_TRUE(IsOk(worker->coordination().Set("after-flood", "yes")));
  absl::StatusOr<std::string> value = chief->coordination().Get("after-flood", Deadline::AfterMs(10'000));
  ASSERT_TRUE(IsOk(value));
  EXPECT_EQ(*value, "yes");
  CloseAll(same_peer);
  CloseAll(other_peer);
  worker->Stop();
  const auto start = Clock::now();
  chief->Stop();
  std::cout << "the chief stopped in "
            << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count() << " ms\n";
}

TEST(ConnectionLimitsTest, TheTotalCapHoldsAcrossPeers) {
  const std::vector<int> ports = FreePorts(1);
  Server::Options options = SlowHandshakes();
  options.max_connections_per_peer = 48;
  options.max_connections = 64;
  std::unique_ptr<Server> chief = StartTask(ports, 0, options);
  ASSERT_NE(chief, nullptr);
  std::vector<int> second = Flood("127.0.0.2", ports[0], 100);
  std::vector<int> third = Flood("127.0.0.3", ports[0], 100);
  std::vector<int> all = second;
  all.insert(all.end(), third.begin(), third.end());
  const int open = SettledOpen(all, 64);
  const int open_second = CountOpen(second);
  std::cout << "open after the flood: " << open << " of 200 (" << open_second << " from 127.0.0.2)\n";
  EXPECT_EQ(open, 64);
  EXPECT_LE(open_second, 48);
  EXPECT_LE(open - open_second, 48);
  CloseAll(all);
  // Once the flood is gone, its room is free again.
  std::vector<int> later = Flood("127.0.0.3", ports[0], 10);
  std::this_thread::sleep_for(3 * kConnectionScanInterval);
  EXPECT_EQ(CountOpen(later), 10);
  CloseAll(later);
}

TEST(ConnectionLimitsTest, ASilentConnectionIsClosedAfterTheHandshakeTimeout) {
  const std::vector<int> ports = FreePorts(1);
  Server::Options options;
  options.handshake_timeout_ms = 300;
  std::unique_ptr<Server> chief = StartTask(ports, 0, options);
  ASSERT_NE(chief, nullptr);
  const std::vector<int> silent = Flood("127.0.0.2", ports[0], 3);
  EXPECT_EQ(SettledOpen(silent, 0), 0);
  CloseAll(silent);
}

TEST(ConnectionLimitsTest, AConnectionWithoutCallsIsClosedAfterTheIdleTimeout) {
  const std::vector<int> ports = FreePorts(1);
  Server::Options options;
  options.connection_idle_timeout_ms = 300;
  std::unique_ptr<Server> chief = StartTask(ports, 0, options);
  ASSERT_NE(chief, nullptr);
  // A client that finishes the HTTP/2 handshake and then makes no call: the server's
  // GOAWAY sends its channel back to IDLE (its own idle timer is 30 minutes).
  std::shared_ptr<grpc::Channel> channel =
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", ports[0]), grpc::InsecureChannelCredentials());
  ASSERT_TRUE(channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10)));
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (channel->GetState(false) == GRPC_CHANNEL_READY && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(channel->GetState(false), GRPC_CHANNEL_READY);
}

// A client's calls at once on one connection are capped: with two variable-service
// streams held open on a connection capped at 2, a third call on it waits (its deadline
// passes), while the same call on another connection goes through; once the two end, the
// first connection serves again.
TEST(ConnectionLimitsTest, CallsAtOnceOnOneConnectionAreCapped) {
  const std::vector<int> ports = FreePorts(2);
  Server::Options options;
  options.job_token = kToken;
  options.max_streams_per_connection = 2;
  options.stream_idle_timeout_ms = 60'000;
  std::vector<std::unique_ptr<Server>> servers;
  for (const char* job : {"worker", "ps"}) {
    ClusterSpec cluster;
    ASSERT_TRUE(IsOk(cluster.AddTask("worker", 0, absl::StrCat("127.0.0.1:", ports[0]))));
    ASSERT_TRUE(IsOk(cluster.AddTask("ps", 0, absl::StrCat("127.0.0.1:", ports[1]))));
    ASSERT_TRUE(IsOk(cluster.SetTask(job, 0)));
    absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(cluster, options);
    ASSERT_TRUE(IsOk(server));
    servers.push_back(std::move(*server));
  }
  // Two channels with different arguments never share a connection.
  const auto channel = [&](int id) {
    grpc::ChannelArguments arguments;
    arguments.SetInt("distribute.test.channel", id);
    return grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", ports[1]), grpc::InsecureChannelCredentials(),
                                     arguments);
  };
  auto first = variables::VariableService::NewStub(channel(1));
  auto second = variables::VariableService::NewStub(channel(2));
  const auto ping = [](variables::VariableService::Stub& stub, int64_t deadline_ms) {
    grpc::ClientContext context;
    context.AddMetadata("dist-job-token", kToken);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
    variables::PingRequest request;
    variables::PingResponse response;
    return stub.Ping(&context, request, &response).error_code();
  };
  ASSERT_EQ(ping(*first, 10'000), grpc::StatusCode::OK);  // the connection is up
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<variables::WriteResponse> responses(2);
  std::vector<std::unique_ptr<grpc::ClientWriter<variables::WriteRequest>>> held;
  for (int i = 0; i < 2; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->AddMetadata("dist-job-token", kToken);
    held.push_back(first->Assign(contexts.back().get(), &responses[i]));
    variables::WriteRequest request;
    request.set_name("w");
    request.mutable_tensor()->set_dtype(static_cast<int32_t>(DType::kFloat32));
    request.mutable_tensor()->add_dims(4);
    request.mutable_tensor()->set_byte_size(16);
    ASSERT_TRUE(held.back()->Write(request));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // both streams reached the server
  EXPECT_EQ(ping(*first, 1000), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_EQ(ping(*second, 10'000), grpc::StatusCode::OK);
  for (auto& context : contexts) context->TryCancel();
  for (auto& stream : held) stream->Finish();
  EXPECT_EQ(ping(*first, 10'000), grpc::StatusCode::OK);
}

TEST(ConnectionLimitsTest, OutOfRangeBoundsAreRefused) {
  const std::vector<int> ports = FreePorts(1);
  const auto refused = [&](Server::Options options, const std::string& words) {
    EXPECT_TRUE(HasError(Server::Start(Workers(ports, 0), options), absl::StatusCode::kInvalidArgument, {words}))
        << words;
  };
  Server::Options options;
  options.max_connections = -1;
  refused(options, "max_connections (-1)");
  options = {};
  options.max_connections_per_peer = kMaxConnectionsCap + 1;
  refused(options, "max_connections_per_peer (1048577)");
  options = {};
  options.max_streams_per_connection = 0;
  refused(options, "max_streams_per_connection is 0");
  options = {};
  options.connection_idle_timeout_ms = 0;
  refused(options, "connection_idle_timeout_ms is 0 ms");
  options = {};
  options.handshake_timeout_ms = -5;
  refused(options, "handshake_timeout_ms is -5 ms");
}

TEST(ConnectionLimitsTest, DefaultsFollowTheClusterAndTheFileLimit) {
  const int64_t quarter = std::max<int64_t>(OpenFileLimit() / 4, 16);
  const ConnectionLimits small = DefaultConnectionLimits(3);
  EXPECT_EQ(small.max_connections, std::min<int64_t>(1024, quarter));
  EXPECT_EQ(small.max_connections_per_peer, std::min<int64_t>(256, small.max_connections));
  const ConnectionLimits large = DefaultConnectionLimits(1000);
  EXPECT_EQ(large.max_connections, std::min<int64_t>(4000, quarter));
}

}  // namespace
}  // namespace distribute
