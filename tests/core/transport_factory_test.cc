// ConnectTransport's census, between worker threads of this process (one host): workers
// whose options chose different transports all fail at once with a message that names
// every worker's choice, instead of waiting in different transports for the deadline;
// workers that agree get the transport they chose (shared memory relays, Gloo does not).
#include "core/backend/transport_factory.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/collective/transport.h"
#include "core/shm/shm_transport.h"
#include "status_test_util.h"
#include "worker_threads.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

constexpr int64_t kDeadlineMs = 30000;

// Connects one worker thread per entry of `kinds`, each with its own choice, and returns
// each worker's status (OK: it connected and an all-gather of a byte crossed) and whether
// its transport relays.
struct Outcome {
  absl::Status status;
  bool relays = false;
};

std::vector<Outcome> ConnectWithChoices(const std::vector<TransportKind>& kinds) {
  const int32_t workers = static_cast<int32_t>(kinds.size());
  std::vector<Outcome> outcomes(kinds.size());
  ::distribute::testing::RunWorkerThreads(
      workers, [&](int32_t w, CoordinationClient& client, const std::vector<std::string>& names,
                   const std::string& prefix) {
        const TransportRequest request{&client, prefix, w, names, "127.0.0.1", ""};
        absl::StatusOr<std::unique_ptr<Transport>> transport =
            ConnectTransport(kinds[static_cast<size_t>(w)], request, Deadline::AfterMs(kDeadlineMs));
        Outcome& outcome = outcomes[static_cast<size_t>(w)];
        if (!transport.ok()) {
          outcome.status = transport.status();
          return;
        }
        outcome.relays = (*transport)->relays();
        const char mine = static_cast<char>('a' + w);
        std::vector<char> all(static_cast<size_t>(workers));
        outcome.status = (*transport)->AllGather(&mine, 1, all.data(), Deadline::AfterMs(kDeadlineMs));
        for (int32_t r = 0; outcome.status.ok() && r < workers; ++r) {
          if (all[static_cast<size_t>(r)] != 'a' + r) outcome.status = absl::InternalError("wrong byte gathered");
        }
      });
  return outcomes;
}

TEST(TransportFactoryTest, WorkersThatChoseAlikeConnectThroughTheirChoice) {
  for (const TransportKind kind :
       {TransportKind::kGlooTcp, TransportKind::kSharedMemory, TransportKind::kSharedMemoryOnOneHost}) {
    SCOPED_TRACE(static_cast<int32_t>(kind));
    for (const Outcome& outcome : ConnectWithChoices({kind, kind, kind})) {
      EXPECT_TRUE(IsOk(outcome.status));
      // One host: "auto" is shared memory too.
      EXPECT_EQ(outcome.relays, kind != TransportKind::kGlooTcp);
    }
  }
}

TEST(TransportFactoryTest, DifferentChoicesFailEveryWorkerAtOnceNamingEachChoice) {
  using K = TransportKind;
  const std::vector<std::vector<K>> mixes = {{K::kGlooTcp, K::kSharedMemory},
                                             {K::kSharedMemoryOnOneHost, K::kGlooTcp},
                                             {K::kSharedMemory, K::kSharedMemoryOnOneHost},
                                             {K::kSharedMemoryOnOneHost, K::kSharedMemoryOnOneHost, K::kGlooTcp}};
  for (const std::vector<K>& kinds : mixes) {
    SCOPED_TRACE(kinds.size());
    // Before the census these waited in different transports: kDeadlineExceeded.
    const std::vector<Outcome> outcomes = ConnectWithChoices(kinds);
    for (const Outcome& outcome : outcomes) {
      EXPECT_TRUE(HasError(outcome.status, absl::StatusCode::kFailedPrecondition,
                           {"different cross-worker transports", "DIST_SHARED_MEMORY"}));
      for (size_t w = 0; w < kinds.size(); ++w) {
        const std::string choice = absl::StrCat(
            "worker:", w, " ",
            kinds[w] == K::kGlooTcp        ? "TCP (shared memory off)"
            : kinds[w] == K::kSharedMemory ? "shared memory (on)"
                                           : "shared memory on one host, else TCP (auto)");
        EXPECT_TRUE(absl::StrContains(outcome.status.message(), choice)) << outcome.status << " lacks " << choice;
      }
    }
  }
}

// Shared memory between worker threads pinned to `cpus` (one CPU each; -1: left as they
// are): whether each worker's transport yields its core while it waits.
std::vector<int> YieldsWhenPinnedTo(const std::vector<int>& cpus) {
  std::vector<int> yields(cpus.size(), -1);
  ::distribute::testing::RunWorkerThreads(
      static_cast<int32_t>(cpus.size()),
      [&](int32_t w, CoordinationClient& client, const std::vector<std::string>& names, const std::string& prefix) {
        const int cpu = cpus[static_cast<size_t>(w)];
        if (cpu >= 0) {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(cpu, &set);
          ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof set, &set), 0);
        }
        const TransportRequest request{&client, prefix, w, names, "127.0.0.1", ""};
        absl::StatusOr<std::unique_ptr<Transport>> transport =
            ConnectTransport(TransportKind::kSharedMemory, request, Deadline::AfterMs(kDeadlineMs));
        ASSERT_TRUE(IsOk(transport.status()));
        const auto* shared = dynamic_cast<const shm::ShmTransport*>(transport->get());
        ASSERT_NE(shared, nullptr);
        yields[static_cast<size_t>(w)] = shared->yields_core() ? 1 : 0;
      });
  return yields;
}

TEST(TransportFactoryTest, SharedMemoryWaitersYieldWhereTheirWorkersShareTooFewCores) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  if (!CPU_ISSET(0, &mine) || !CPU_ISSET(1, &mine)) GTEST_SKIP() << "needs CPUs 0 and 1";
  // One core each: spin.
  EXPECT_EQ(YieldsWhenPinnedTo({0, 1}), (std::vector<int>{0, 0}));
  // Both on CPU 0: each waits for a worker that needs its core. (Counting workers against
  // this process's cores, as before the census, said 2 workers fit 2 cores and spun.)
  EXPECT_EQ(YieldsWhenPinnedTo({0, 0}), (std::vector<int>{1, 1}));
  // One on CPU 0 and one on CPUs 0 and 1 (unpinned, on a 2-CPU process): 2 workers, 2 CPUs.
  if (CPU_COUNT(&mine) == 2) {
    EXPECT_EQ(YieldsWhenPinnedTo({0, -1}), (std::vector<int>{0, 0}));
  }
}

}  // namespace
}  // namespace distribute

namespace distribute {
namespace {

// Which choices end in one transport, on one host and on several.
TEST(TransportFactoryTest, ChoicesAgreeWhereTheyEndInOneTransport) {
  using K = TransportKind;
  const std::vector<std::string> one_host = {"a boot net:[1]", "a boot net:[1]"};
  const std::vector<std::string> two_hosts = {"a boot1 net:[1]", "b boot2 net:[2]"};
  struct Case {
    std::vector<K> kinds;
    bool on_one_host;
    bool on_two_hosts;
  };
  const std::vector<Case> cases = {
      {{K::kGlooTcp, K::kGlooTcp}, true, true},
      {{K::kSharedMemory, K::kSharedMemory}, true, true},  // on two hosts both refuse, alike
      {{K::kSharedMemoryOnOneHost, K::kSharedMemoryOnOneHost}, true, true},
      {{K::kSharedMemoryOnOneHost, K::kGlooTcp}, false, true},  // "auto" off one host is TCP
      {{K::kGlooTcp, K::kSharedMemoryOnOneHost}, false, true},
      {{K::kSharedMemory, K::kGlooTcp}, false, false},
      {{K::kSharedMemory, K::kSharedMemoryOnOneHost}, false, false},  // "auto" falls back, "on" refuses
      {{K::kSharedMemoryOnOneHost, K::kSharedMemory}, false, false},
      {{static_cast<K>(99), K::kGlooTcp}, false, false},  // a kind this library does not know
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::Message() << static_cast<int32_t>(c.kinds[0]) << " " << static_cast<int32_t>(c.kinds[1]));
    EXPECT_EQ(TransportChoicesAgree(c.kinds, one_host), c.on_one_host);
    EXPECT_EQ(TransportChoicesAgree(c.kinds, two_hosts), c.on_two_hosts);
  }
  // Three workers, one of them elsewhere: "auto" is TCP for all of them.
  const std::vector<std::string> three = {"a boot net:[1]", "a boot net:[1]", "b boot2 net:[2]"};
  EXPECT_TRUE(TransportChoicesAgree(std::vector<K>{K::kSharedMemoryOnOneHost, K::kGlooTcp, K::kSharedMemoryOnOneHost}, three));
  EXPECT_FALSE(TransportChoicesAgree(std::vector<K>{K::kSharedMemoryOnOneHost, K::kGlooTcp, K::kSharedMemoryOnOneHost},
                                     std::vector<std::string>(3, "a boot net:[1]")));
}

}  // namespace
}  // namespace distribute
