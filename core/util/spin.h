// Spinning before parking: waking a parked thread costs microseconds at the median and
// tens of microseconds at the tail, so short waits spin. Spinning only pays while every
// runnable thread has a core; with more threads than cores a spinning waiter steals the
// core from the thread it waits for, so the budget shrinks to a few polls. Budgets are in
// time, not iterations: a PAUSE instruction costs from 10 to 140 cycles across CPUs.
#ifndef DISTRIBUTE_CORE_UTIL_SPIN_H_
#define DISTRIBUTE_CORE_UTIL_SPIN_H_

#include <sched.h>

#include <chrono>
#include <cstdint>

namespace distribute {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// How long (ns) a waiter among `threads` busy threads of this process should spin.
int64_t SpinBudgetNs(int32_t threads);
// How long a waiter that yields its core between polls keeps at it before parking.
inline constexpr int64_t kYieldBudgetNs = 200'000;
// How long a waiter whose awaited thread shares its core (CpuBoard) still pauses before it
// yields. Yielding at once traps two threads on one core while the other core idles: each
// hands the core to the other so promptly that the load balancer never sees both runnable
// and never moves one (measured: the empty 2-replica step stuck at 2.5 us instead of 0.65 in
// 4 of 9 runs). Two microseconds of pausing give it that chance (0 of 8 runs), and cost about
// 10 us of an 8-byte all-reduce step when another process holds the other core.
inline constexpr int64_t kSharedCorePauseNs = 2'000;

// The cores this process may run on: its main thread's affinity mask (what taskset or a
// container set), whichever thread asks; every online CPU where the mask cannot be read.
int32_t ProcessCores();

// Whether `threads` busy threads are more than this process's usable cores: waiters then
// yield their core (to the very thread they wait for, often) instead of spinning on it.
bool Oversubscribed(int32_t threads);

// Polls `done` for about `budget_ns`, pausing (or yielding the core, when `yield`) between
// polls; true when it became true.
// With `yield`, the first `pause_first_ns` still pause instead.
template <typename Done>
bool SpinUntil(int64_t budget_ns, Done&& done, bool yield = false, int64_t pause_first_ns = 0) {
  if (done()) return true;
  bool yielding = yield && pause_first_ns <= 0;
  // The clock is first read after a short first round of polls, so that a wait that ends
  // within it (most of them) reads no clock; the budget then starts that round late.
  std::chrono::steady_clock::time_point start;
  for (bool first = true;; first = false) {
    for (int i = 0; i < (first ? 8 : 32); ++i) {
      if (done()) return true;
      if (yielding) {
        sched_yield();
      } else {
        CpuRelax();
      }
    }
    const auto now = std::chrono::steady_clock::now();
    if (first) start = now;
    const int64_t elapsed_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count();
    if (elapsed_ns >= budget_ns) return done();
    yielding = yield && elapsed_ns >= pause_first_ns;
  }
}

// The spin before a waiter parks, by its situation: among more busy threads than cores
// (`oversubscribed`) it yields for `budget_ns` (SpinBudgetNs gives kYieldBudgetNs then);
// when `shares_core()` says the awaited thread last ran on this core (CpuBoard) it pauses
// kSharedCorePauseNs and then yields for up to kYieldBudgetNs; otherwise it pauses for
// `budget_ns`. `shares_core` runs only when `done` is not already true.
template <typename Done, typename SharesCore>
bool SpinBeforeParking(int64_t budget_ns, bool oversubscribed, SharesCore&& shares_core, Done&& done) {
  if (done()) return true;
  if (oversubscribed) return SpinUntil(budget_ns, done, true);
  if (shares_core()) return SpinUntil(kYieldBudgetNs, done, true, kSharedCorePauseNs);
  return SpinUntil(budget_ns, done);
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_SPIN_H_
