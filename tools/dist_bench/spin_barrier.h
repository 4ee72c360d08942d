// dist-bench: the barrier of the benchmark's own reference kernels (reference_all_reduce.cc,
// stream_ceiling.cc), written independently of the library's synchronisation.
#ifndef DISTRIBUTE_TOOLS_DIST_BENCH_SPIN_BARRIER_H_
#define DISTRIBUTE_TOOLS_DIST_BENCH_SPIN_BARRIER_H_

#include <atomic>
#include <cstdint>
#include <thread>

namespace dist_bench {

// A reusable barrier for a fixed number of threads on two atomics: an arrival count and a
// generation. A waiter spins (with the CPU's pause hint) for a bounded number of rounds,
// then yields its core on every further round, so that on a machine with fewer cores than
// threads the thread that must still arrive gets to run; it never sleeps in the kernel.
class SpinBarrier {
 public:
  explicit SpinBarrier(int32_t parties) : parties_(parties) {}
  SpinBarrier(const SpinBarrier&) = delete;
  SpinBarrier& operator=(const SpinBarrier&) = delete;

  void Wait() {
    // Read the generation before arriving: the last arrival bumps it, and may do so
    // before this thread looks again.
    const uint32_t generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
      // Reset before publishing: nobody arrives for the next round before seeing the
      // new generation.
      arrived_.store(0, std::memory_order_relaxed);
      generation_.store(generation + 1, std::memory_order_release);
      return;
    }
    for (int32_t spins = 0; generation_.load(std::memory_order_acquire) == generation; ++spins) {
      if (spins < kSpinsBeforeYield) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
      } else {
        std::this_thread::yield();
      }
    }
  }

 private:
  // A pause takes 10 to 140 cycles depending on the CPU: 128 of them are at most about
  // 5 us, short enough that with more threads than cores (4 replicas on 2 cores) a waiter
  // soon lets the thread that must still arrive run.
  static constexpr int32_t kSpinsBeforeYield = 128;
  const int32_t parties_;
  alignas(64) std::atomic<int32_t> arrived_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};
};

}  // namespace dist_bench

#endif  // DISTRIBUTE_TOOLS_DIST_BENCH_SPIN_BARRIER_H_
