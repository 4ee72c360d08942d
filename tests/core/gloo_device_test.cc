// Gloo's device with its event loop in the background (core/gloo/gloo_device.h): the loop
// thread runs at the lowest priority, the caller's priority never changes, a device that
// cannot open is an error; and the transport factory asks for it exactly where the
// workers that share this process's cores (two busy threads each) outnumber them
// (worker_place_test covers the counting itself).
#include "core/gloo/gloo_device.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <netdb.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/backend/transport_factory.h"
#include "gloo/transport/device.h"
#include "status_test_util.h"
#include "worker_threads.h"

namespace distribute {
namespace {

// The niceness of every thread of this process, read from /proc (field 19 of a task's
// stat, counted after the parenthesised command name, which may hold spaces).
std::vector<int> ThreadNiceness() {
  std::vector<int> nices;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return nices;
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    std::ifstream stat(std::string("/proc/self/task/") + entry->d_name + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(text.substr(close + 2));  // field 3 (state) onwards
    std::string field;
    for (int f = 3; f <= 19 && fields >> field; ++f) {
      if (f == 19) nices.push_back(std::atoi(field.c_str()));
    }
  }
  closedir(dir);
  return nices;
}

int CountAt(int nice) {
  int count = 0;
  for (int n : ThreadNiceness()) count += n == nice ? 1 : 0;
  return count;
}

// The threads at `nice`, once two reads 20 ms apart agree: a thread that join() has
// already returned for can still be listed in /proc for a moment (the kernel wakes the
// joiner before it removes the task).
int ThreadsAt(int nice) {
  int count = CountAt(nice);
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const int again = CountAt(nice);
    if (again == count) return count;
    count = again;
  }
  return count;
}

int CallerNice() {
  errno = 0;
  return getpriority(PRIO_PROCESS, 0);
}

int UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

TEST(GlooDeviceTest, BackgroundLoopRunsAtTheLowestPriority) {
  if (CallerNice() != 0) GTEST_SKIP() << "started at niceness " << CallerNice() << ", not the default";
  const int before = ThreadsAt(kBackgroundLoopNice);
  {
    absl::StatusOr<std::shared_ptr<gloo::transport::Device>> device = CreateGlooDevice("127.0.0.1", true);
    ASSERT_TRUE(testing::IsOk(device.status()));
    EXPECT_EQ(ThreadsAt(kBackgroundLoopNice), before + 1);  // the loop; the maker thread has ended
    EXPECT_EQ(CallerNice(), 0);
  }
  EXPECT_EQ(ThreadsAt(kBackgroundLoopNice), before);  // the loop ends with its device
}

TEST(GlooDeviceTest, DefaultLoopKeepsTheCallersPriority) {
  const int nice = CallerNice();
  const int before = ThreadsAt(kBackgroundLoopNice);
  absl::StatusOr<std::shared_ptr<gloo::transport::Device>> device = CreateGlooDevice("127.0.0.1", false);
  ASSERT_TRUE(testing::IsOk(device.status()));
  // (The process's whole thread count is no measure: ThreadSanitizer's own thread comes
  // and goes.)
  EXPECT_EQ(ThreadsAt(kBackgroundLoopNice), before);
  EXPECT_EQ(CallerNice(), nice);
}

TEST(GlooDeviceTest, UnknownHostIsUnavailableAndLeavesNothingBehind) {
  const int before = ThreadsAt(kBackgroundLoopNice);
  const int nice = CallerNice();
  // Debian's Gloo itself crashes on a host that does not resolve (it reads getaddrinfo's
  // result without checking it).
  for (bool background : {true, false}) {
    absl::StatusOr<std::shared_ptr<gloo::transport::Device>> device =
        CreateGlooDevice("no-such-host.invalid", background);
    EXPECT_TRUE(testing::HasError(device, absl::StatusCode::kUnavailable,
                                  {"cannot open the Gloo transport on 'no-such-host.invalid'"}));
  }
  EXPECT_EQ(ThreadsAt(kBackgroundLoopNice), before);
  EXPECT_EQ(CallerNice(), nice);
}

// An empty host is this machine's name, as Gloo takes it: a device where that name
// resolves, an error naming it where it does not (a container without its own name in
// /etc/hosts), never a crash.
TEST(GlooDeviceTest, EmptyHostIsThisMachinesName) {
  char name[256] = {};
  ASSERT_EQ(gethostname(name, sizeof name - 1), 0);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const bool resolves = getaddrinfo(name, nullptr, &hints, &found) == 0;
  if (resolves) freeaddrinfo(found);
  absl::StatusOr<std::shared_ptr<gloo::transport::Device>> device = CreateGlooDevice("", true);
  if (resolves) {
    EXPECT_TRUE(testing::IsOk(device.status()));
  } else {
    EXPECT_TRUE(testing::HasError(device, absl::StatusCode::kUnavailable, {name}));
  }
}

// `workers` Gloo transports connected through the factory, as threads of this process (one
// host): the loop threads at the lowest priority, counted while all are connected.
int BackgroundLoopsOf(int32_t workers) {
  const int before = ThreadsAt(kBackgroundLoopNice);
  std::atomic<int> connected{0};
  std::atomic<int> counted{-1};
  ::distribute::testing::RunWorkerThreads(
      workers, [&](int32_t w, CoordinationClient& client, const std::vector<std::string>& names,
                   const std::string& prefix) {
        const TransportRequest request{&client, prefix, w, names, "127.0.0.1", ""};
        absl::StatusOr<std::unique_ptr<Transport>> transport =
            ConnectTransport(TransportKind::kGlooTcp, request, Deadline::AfterMs(30000));
        ASSERT_TRUE(testing::IsOk(transport.status()));
        ++connected;
        // An all-gather of a byte as a barrier: every worker is connected before worker 0
        // counts, and none goes away before it has counted.
        const char mine = static_cast<char>(w);
        std::vector<char> all(static_cast<size_t>(workers));
        ASSERT_TRUE(testing::IsOk((*transport)->AllGather(&mine, 1, all.data(), Deadline::AfterMs(30000))));
        if (w == 0) counted = ThreadsAt(kBackgroundLoopNice) - before;
        ASSERT_TRUE(testing::IsOk((*transport)->AllGather(&mine, 1, all.data(), Deadline::AfterMs(30000))));
      });
  EXPECT_EQ(connected.load(), workers);
  return counted.load();
}

// Each worker keeps two threads busy (its caller and its loop): the loops go to the
// background where twice the host's workers outnumber its cores.
TEST(GlooDeviceTest, FactoryPutsLoopsInTheBackgroundWhereCallersAndLoopsOutnumberCores) {
  const int cores = UsableCores();
  EXPECT_EQ(BackgroundLoopsOf(1), 2 > cores ? 1 : 0);
  EXPECT_EQ(BackgroundLoopsOf(2), 4 > cores ? 2 : 0);
  const int crowded = cores / 2 + 1;
  if (crowded <= 2) return;  // covered above
  if (crowded > 9) GTEST_SKIP() << cores << " cores: a crowded host is too many connections here";
  EXPECT_EQ(BackgroundLoopsOf(crowded), crowded);
}

}  // namespace
}  // namespace distribute
