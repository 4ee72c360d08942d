// Where each thread of a group last ran. A waiter that spins on the core of the very
// thread it waits for keeps that thread off the core until the spin budget runs out: when
// another process holds the other core, two replica threads end up sharing one, and each
// rendezvous cost a whole spin budget (about 20 us) before the waiter parked. With the
// board a waiter sees that the awaited thread last ran on its own core and, after a short
// pause (kSharedCorePauseNs, spin.h), yields the core (SpinUntil's yield mode), which hands
// it straight to that thread.
//
// Thread-safety: Mark and SharesCore from any thread; a slot's value may be stale (its
// thread moved since), which only costs a yield or a spin, never correctness.
#ifndef DISTRIBUTE_CORE_UTIL_CPU_BOARD_H_
#define DISTRIBUTE_CORE_UTIL_CPU_BOARD_H_

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace distribute {

class CpuBoard {
 public:
  explicit CpuBoard(int32_t slots) : n_(slots), cpu_(new std::atomic<int32_t>[static_cast<size_t>(slots)]) {
    for (int32_t i = 0; i < n_; ++i) cpu_[i].store(-1, std::memory_order_relaxed);
  }

  // Records the calling thread's CPU in `slot`.
  void Mark(int32_t slot) { cpu_[slot].store(sched_getcpu(), std::memory_order_relaxed); }

  // Whether some slot for which `awaited(slot)` holds last ran on this thread's CPU.
  template <typename Awaited>
  bool SharesCore(Awaited&& awaited) const {
    const int32_t mine = sched_getcpu();
    if (mine < 0) return false;
    for (int32_t i = 0; i < n_; ++i) {
      if (cpu_[i].load(std::memory_order_relaxed) == mine && awaited(i)) return true;
    }
    return false;
  }

 private:
  const int32_t n_;
  std::unique_ptr<std::atomic<int32_t>[]> cpu_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_CPU_BOARD_H_
