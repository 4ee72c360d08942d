// ProcessCores: the process's cores whichever thread asks, a thread pinned to one core
// included (it used to be the asking thread's own mask).
#include "core/util/spin.h"

#include <pthread.h>
#include <sched.h>

#include <thread>

#include "gtest/gtest.h"

namespace distribute {
namespace {

TEST(SpinTest, ProcessCoresIsTheMainThreadsMaskEvenFromAPinnedThread) {
  cpu_set_t main_set;
  CPU_ZERO(&main_set);
  ASSERT_EQ(sched_getaffinity(0, sizeof main_set, &main_set), 0);  // the test's main thread
  const int main_count = CPU_COUNT(&main_set);
  EXPECT_EQ(ProcessCores(), main_count);
  if (main_count < 2) GTEST_SKIP() << "one usable CPU: a pinned thread's mask is the process's";
  int first = 0;
  while (!CPU_ISSET(first, &main_set)) ++first;
  int pinned_count = -1;
  int answered = -1;
  std::thread pinned([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(first, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) return;
    cpu_set_t mine;
    CPU_ZERO(&mine);
    if (sched_getaffinity(0, sizeof mine, &mine) == 0) pinned_count = CPU_COUNT(&mine);
    answered = ProcessCores();
  });
  pinned.join();
  ASSERT_EQ(pinned_count, 1) << "the thread could not be pinned";
  EXPECT_EQ(answered, main_count);
}

}  // namespace
}  // namespace distribute
