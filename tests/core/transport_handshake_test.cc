// The cross-worker transport's handshake (core/gloo/gloo_connect.h, handshake_proof.h):
// proofs are bound to the token, the communicator, the attempt and the direction; a
// stranger that takes a worker's Gloo port during start-up is dropped and the workers
// connect again on fresh ports, then all-reduce correctly (20 runs); the published
// addresses carry no stack bytes; workers that do not share the token fail with a clear
// error instead of talking to each other.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/collective/cross_worker.h"
#include "core/gloo/gloo_transport.h"
#include "core/gloo/handshake_proof.h"
#include "core/server/coordination_service.h"
#include "core/server/local_coordination_client.h"
#include "status_test_util.h"

namespace distribute {
namespace {

constexpr char kToken[] = "a-job-token-of-sufficient-length";

TEST(HandshakeProofTest, BoundToTokenPrefixAndDirection) {
  const HandshakeProof proof = MakeHandshakeProof(kToken, "job/0/try0/", 0, 1);
  EXPECT_TRUE(CheckHandshakeProof(proof, kToken, "job/0/try0/", 0, 1));
  EXPECT_FALSE(CheckHandshakeProof(proof, kToken, "job/0/try0/", 1, 0));      // the other direction
  EXPECT_FALSE(CheckHandshakeProof(proof, kToken, "job/0/try1/", 0, 1));      // another attempt
  EXPECT_FALSE(CheckHandshakeProof(proof, "another-token-xxxxxxxx", "job/0/try0/", 0, 1));
  EXPECT_FALSE(CheckHandshakeProof(proof, "", "job/0/try0/", 0, 1));
  // Separators: ranks 1 and 23 are not rank 12 and 3.
  EXPECT_NE(MakeHandshakeProof(kToken, "p", 1, 23), MakeHandshakeProof(kToken, "p", 12, 3));
  // HMAC-SHA256(token, "distribute transport handshake v1\0job/0/try0/\0" "0\0" "1"),
  // computed with Python's hmac module.
  const HandshakeProof expected = {0x91, 0x2e, 0x21, 0x25, 0x14, 0xb5, 0xc6, 0xd7, 0x58, 0xd3, 0xc1,
                                   0xba, 0x31, 0xc3, 0xb4, 0xd4, 0x4e, 0x09, 0x21, 0x29, 0x39, 0xc8,
                                   0x3a, 0x02, 0x1f, 0xe1, 0x79, 0x0c, 0x93, 0xfa, 0xaf, 0x60};
  EXPECT_EQ(proof, expected);
}

// The listening ports of a Gloo address list (Gloo 0.5: per peer, a sockaddr_storage and
// a sequence number).
std::vector<uint16_t> ListeningPorts(const std::string& addresses) {
  constexpr size_t kAddressBytes = sizeof(sockaddr_storage) + sizeof(ssize_t);
  std::vector<uint16_t> ports;
  for (size_t at = 0; at + kAddressBytes <= addresses.size(); at += kAddressBytes) {
    sockaddr_in in{};
    std::memcpy(&in, addresses.data() + at, sizeof(in));
    if (in.sin_family == AF_INET) ports.push_back(ntohs(in.sin_port));
  }
  return ports;
}

// A connection from outside the job to 127.0.0.1:`port` (-1 when refused).
int ConnectStranger(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

class TransportHandshakeTest : public ::testing::Test {
 protected:
  TransportHandshakeTest() {
    for (int32_t w = 0; w < kWorkers; ++w) names_.push_back(absl::StrCat("worker:", w));
    CoordinationService::Options options;
    options.tasks = names_;
    options.barrier_tasks = names_;
    service_ = std::make_unique<CoordinationService>(options);
  }

  static constexpr int32_t kWorkers = 2;
  std::vector<std::string> names_;
  std::unique_ptr<CoordinationService> service_;
};

// A worker connects, every worker sums its rank + 1 across workers.
void ConnectAndSum(CoordinationService* service, const std::vector<std::string>& names, int32_t w,
                   const std::string& prefix, const std::string& token, absl::Status* status, float* sum) {
  LocalCoordinationClient client(service, names[static_cast<size_t>(w)]);
  absl::StatusOr<std::unique_ptr<GlooTransport>> transport =
      GlooTransport::Connect(client, prefix, w, names, "127.0.0.1", token, Deadline::AfterMs(30000));
  *status = transport.status();
  if (!transport.ok()) return;
  CrossWorker cross(*std::move(transport));
  const float mine = static_cast<float>(w + 1);
  void* output = sum;
  const CrossWorker::Segment segment{DType::kFloat32, 1, 0, std::span<void* const>(&output, 1)};
  *status = cross.AllReduce(ReduceOp::kSum, &mine, sizeof(mine), std::span<const CrossWorker::Segment>(&segment, 1),
                            1, "all_reduce float32[1]", Deadline::AfterMs(30000));
}

TEST_F(TransportHandshakeTest, AStrangerOnAPortDuringStartupIsDroppedAndTheJobConnects) {
  int retried_runs = 0;
  for (int run = 0; run < 20; ++run) {
    SCOPED_TRACE(absl::StrCat("run ", run));
    const std::string prefix = absl::StrCat("stranger/", run, "/");
    absl::Status status[kWorkers];
    float sum[kWorkers] = {0, 0};
    // Worker 0 starts alone: its pair to worker 1 listens, and the stranger reaches the
    // port (read from the rendezvous key, as a port scan would find it) before worker 1
    // exists.
    std::thread first(ConnectAndSum, service_.get(), names_, 0, prefix, kToken, &status[0], &sum[0]);
    LocalCoordinationClient peek(service_.get(), names_[1]);
    absl::StatusOr<std::string> addresses = peek.Get(absl::StrCat(prefix, "try0/0"), Deadline::AfterMs(30000));
    ASSERT_TRUE(addresses.ok()) << addresses.status();
    // What the key holds is the addresses and nothing else (no stack bytes past them).
    constexpr size_t kAddressBytes = sizeof(sockaddr_storage) + sizeof(ssize_t);
    ASSERT_EQ(addresses->size() % kAddressBytes, 0u);
    for (size_t at = 0; at < addresses->size(); at += kAddressBytes) {
      for (size_t i = sizeof(sockaddr_in); i < sizeof(sockaddr_storage); ++i) {
        ASSERT_EQ((*addresses)[at + i], 0) << "byte " << i << " of an address";
      }
    }
    std::vector<int> strangers;
    for (uint16_t port : ListeningPorts(*addresses)) strangers.push_back(ConnectStranger(port));
    ASSERT_FALSE(strangers.empty());
    std::thread second(ConnectAndSum, service_.get(), names_, 1, prefix, kToken, &status[1], &sum[1]);
    first.join();
    second.join();
    for (int fd : strangers) {
      if (fd >= 0) close(fd);
    }
    for (int32_t w = 0; w < kWorkers; ++w) {
      EXPECT_TRUE(status[w].ok()) << status[w];
      EXPECT_EQ(sum[w], 3.0f);
    }
    // The attempt the stranger spoiled (when worker 0 turned out to be the listening side
    // of the pair, which the ports decide) was given up and a second one made.
    if (peek.Get(absl::StrCat(prefix, "try1/0"), Deadline::AfterMs(0)).ok()) ++retried_runs;
  }
  // Worker 0 listens in about half the runs: the retry must have been exercised.
  EXPECT_GT(retried_runs, 0);
}

// A stranger that sends bytes that are not Gloo frames (a probe, another protocol) breaks
// only the attempt it spoiled.
TEST_F(TransportHandshakeTest, AStrangerSendingGarbageIsDroppedAndTheJobConnects) {
  for (int run = 0; run < 5; ++run) {
    SCOPED_TRACE(absl::StrCat("run ", run));
    const std::string prefix = absl::StrCat("garbage/", run, "/");
    absl::Status status[kWorkers];
    float sum[kWorkers] = {0, 0};
    std::thread first(ConnectAndSum, service_.get(), names_, 0, prefix, kToken, &status[0], &sum[0]);
    LocalCoordinationClient peek(service_.get(), names_[1]);
    absl::StatusOr<std::string> addresses = peek.Get(absl::StrCat(prefix, "try0/0"), Deadline::AfterMs(30000));
    ASSERT_TRUE(addresses.ok()) << addresses.status();
    char junk[256];
    for (size_t i = 0; i < sizeof(junk); ++i) junk[i] = static_cast<char>((i * 7919 + run * 31) & 0xff);
    std::vector<int> strangers;
    for (uint16_t port : ListeningPorts(*addresses)) {
      strangers.push_back(ConnectStranger(port));
      if (strangers.back() >= 0) (void)!write(strangers.back(), junk, sizeof(junk));
    }
    std::thread second(ConnectAndSum, service_.get(), names_, 1, prefix, kToken, &status[1], &sum[1]);
    first.join();
    second.join();
    for (int fd : strangers) {
      if (fd >= 0) close(fd);
    }
    for (int32_t w = 0; w < kWorkers; ++w) {
      EXPECT_TRUE(status[w].ok()) << status[w];
      EXPECT_EQ(sum[w], 3.0f);
    }
  }
}

TEST_F(TransportHandshakeTest, WorkersWithDifferentTokensFailNamingTheProblem) {
  absl::Status status[kWorkers];
  float sum[kWorkers] = {0, 0};
  std::thread first(ConnectAndSum, service_.get(), names_, 0, "tokens", kToken, &status[0], &sum[0]);
  std::thread second(ConnectAndSum, service_.get(), names_, 1, "tokens", "another-token-of-some-length",
                     &status[1], &sum[1]);
  first.join();
  second.join();
  for (int32_t w = 0; w < kWorkers; ++w) {
    EXPECT_EQ(status[w].code(), absl::StatusCode::kUnavailable) << status[w];
    EXPECT_NE(status[w].message().find("did not prove that it belongs to the job"), std::string::npos)
        << status[w];
  }
}

}  // namespace
}  // namespace distribute
