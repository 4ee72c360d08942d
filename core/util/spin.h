// Spinning before parking: waking a parked thread costs microseconds at the median and
// tens of microseconds at the tail, so short waits spin. Spinning only pays while every
// runnable thread has a core; with more threads than cores a spinning waiter steals the
// core from the thread it waits for, so the budget shrinks to a few polls.
#ifndef DISTRIBUTE_CORE_UTIL_SPIN_H_
#define DISTRIBUTE_CORE_UTIL_SPIN_H_

#include <cstdint>

namespace distribute {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// How many polls a waiter among `threads` busy threads should spin before parking.
int32_t SpinBudget(int32_t threads);

// Polls `done` up to `budget` times; true when it became true.
template <typename Done>
bool SpinUntil(int32_t budget, Done&& done) {
  for (int32_t i = 0; i < budget; ++i) {
    if (done()) return true;
    CpuRelax();
  }
  return done();
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_SPIN_H_
