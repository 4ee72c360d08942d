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
  explicit CpuBoard(int32_t slots) : n_(slots), cpu_(new Slot[static_cast<size_t>(slots)]) {}

  // Records the calling thread's CPU in `slot`. The slot's line is written only when the
  // CPU changed: it stays shared with the cores that read it instead of bouncing on
  // every step.
  void Mark(int32_t slot) {
    const int32_t cpu = sched_getcpu();
    if (cpu_[slot].cpu.load(std::memory_order_relaxed) != cpu) {
      cpu_[slot].cpu.store(cpu, std::memory_order_relaxed);
    }
  }

  // Whether some slot for which `awaited(slot)` holds last ran on this thread's CPU.
  template <typename Awaited>
  bool SharesCore(Awaited&& awaited) const {
    const int32_t mine = sched_getcpu();
    if (mine < 0) return false;
    for (int32_t i = 0; i < n_; ++i) {
      if (cpu_[i].cpu.load(std::memory_order_relaxed) == mine && awaited(i)) return true;
    }
    return false;
  }

 private:
  struct alignas(64) Slot {  // one line per slot: each is written by its own thread
    std::atomic<int32_t> cpu{-1};
  };
  const int32_t n_;
  std::unique_ptr<Slot[]> cpu_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_CPU_BOARD_H_
