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

// Whether `threads` busy threads are more than this process's usable cores: waiters then
// yield their core (to the very thread they wait for, often) instead of spinning on it.
bool Oversubscribed(int32_t threads);

// Polls `done` for about `budget_ns`, pausing (or yielding the core, when `yield`) between
// polls; true when it became true.
template <typename Done>
bool SpinUntil(int64_t budget_ns, Done&& done, bool yield = false) {
  if (done()) return true;
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    for (int i = 0; i < 32; ++i) {
      if (done()) return true;
      if (yield) {
        sched_yield();
      } else {
        CpuRelax();
      }
    }
    const auto elapsed = std::chrono::steady_clock::now() - start;
    if (std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count() >= budget_ns) {
      return done();
    }
  }
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_SPIN_H_
