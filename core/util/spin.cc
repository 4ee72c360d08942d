#include "core/util/spin.h"

#include <sched.h>
#include <unistd.h>

#include <thread>

namespace distribute {
namespace {

int32_t Cores() {
  static const int32_t cores = ProcessCores();
  return cores;
}

}  // namespace

int32_t ProcessCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  // getpid() names the main thread; 0 would name the calling thread, whose own pinning is
  // not the process's (a pinned worker thread asking first made every later thread look
  // crowded).
  if (sched_getaffinity(getpid(), sizeof set, &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int32_t>(hw);
}

bool Oversubscribed(int32_t threads) { return threads > Cores(); }

int64_t SpinBudgetNs(int32_t threads) {
  const int32_t cores = Cores();
  // About 20 us: longer than the skew between replicas that reach a collective together,
  // shorter than the tail of a futex wake-up (40-60 us), and short enough that a waiter
  // sharing its core with the thread it waits for gives the core back quickly.
  if (threads <= cores) return 20'000;
  // More threads than cores: a spinning waiter would steal the core from the thread it
  // waits for, so waiters yield instead (SpinUntil's `yield`): the scheduler runs the
  // others at once, which is far cheaper than a futex sleep and wake-up per rendezvous.
  return kYieldBudgetNs;
}

}  // namespace distribute
