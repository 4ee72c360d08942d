// dist-bench: two-thread STREAM copy and add (see stream_ceiling.h).
#include "stream_ceiling.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "bench_stats.h"
#include "spin_barrier.h"

namespace dist_bench {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int kThreads = 2;

// Small arrays are timed over several passes between two barriers, so that the barrier
// costs little next to the kernel: each timed block moves at least this many bytes of c.
constexpr int64_t kMinBlockBytes = 16 * kMiB;

enum class Kernel { kCopy, kAdd };

struct Arrays {
  std::vector<float> a, b, c;
};

// One pass of `kernel` over elements [begin, end). The empty asm keeps the compiler from
// merging the identical passes of a block into one.
void Pass(Kernel kernel, Arrays* arrays, int64_t begin, int64_t end) {
  const float* a = arrays->a.data();
  const float* b = arrays->b.data();
  float* c = arrays->c.data();
  if (kernel == Kernel::kCopy) {
    for (int64_t i = begin; i < end; ++i) c[i] = a[i];
  } else {
    for (int64_t i = begin; i < end; ++i) c[i] = a[i] + b[i];
  }
  asm volatile("" : : "r"(c) : "memory");
}

// Best seconds of `blocks` timed blocks of `passes` passes, on kThreads threads.
double BestBlockSeconds(Kernel kernel, Arrays* arrays, int64_t passes, int blocks) {
  const int64_t count = static_cast<int64_t>(arrays->c.size());
  SpinBarrier barrier(kThreads);
  double best = 1e30;
  auto body = [&](int thread) {
    const int64_t begin = count * thread / kThreads;
    const int64_t end = count * (thread + 1) / kThreads;
    for (int block = 0; block < blocks; ++block) {
      barrier.Wait();
      const auto t0 = Clock::now();
      for (int64_t p = 0; p < passes; ++p) Pass(kernel, arrays, begin, end);
      barrier.Wait();
      if (thread == 0) best = std::min(best, Seconds(Clock::now() - t0));
    }
  };
  std::thread other(body, 1);
  body(0);
  other.join();
  return best;
}

void CheckResult(Kernel kernel, const Arrays& arrays) {
  for (size_t i = 0; i < arrays.c.size(); ++i) {
    const float expected = kernel == Kernel::kCopy ? arrays.a[i] : arrays.a[i] + arrays.b[i];
    if (arrays.c[i] != expected) {
      std::fflush(stdout);
      std::fprintf(stderr, "dist-bench: STREAM %s wrote %g at element %zu, expected %g\n",
                   kernel == Kernel::kCopy ? "copy" : "add", arrays.c[i], i, expected);
      std::exit(1);
    }
  }
}

}  // namespace

void PrintStreamCeiling(int64_t max_bytes, bool quick) {
  const int blocks = quick ? 3 : 10;
  std::printf(
      "#\n# physical ceiling: STREAM-style kernels on %d threads, each over half of float32 "
      "arrays, best of %d timed blocks\n",
      kThreads, blocks);
  std::printf(
      "# copy: c[i] = a[i], 2 x size bytes; add: c[i] = a[i] + b[i], 3 x size bytes (GB/s = "
      "1e9 B/s; small arrays run several passes per block)\n");
  std::printf("#%13s %8s %11s %11s\n", "size(B)", "passes", "copy(GB/s)", "add(GB/s)");
  for (int64_t bytes : {64 * kKiB, 1 * kMiB, 16 * kMiB, 256 * kMiB}) {
    if (bytes > max_bytes) {
      std::printf("# %12" PRId64 " skipped (above --max-bytes)\n", bytes);
      continue;
    }
    const size_t count = static_cast<size_t>(bytes) / sizeof(float);
    Arrays arrays;
    arrays.a.resize(count);
    arrays.b.resize(count);
    arrays.c.assign(count, 0.0f);  // touch every page before timing
    for (size_t i = 0; i < count; ++i) {
      arrays.a[i] = static_cast<float>(i % 1000);
      arrays.b[i] = static_cast<float>(i % 3);
    }
    const int64_t passes = std::max<int64_t>(1, kMinBlockBytes / bytes);
    const double copy_seconds = BestBlockSeconds(Kernel::kCopy, &arrays, passes, blocks);
    CheckResult(Kernel::kCopy, arrays);
    const double add_seconds = BestBlockSeconds(Kernel::kAdd, &arrays, passes, blocks);
    CheckResult(Kernel::kAdd, arrays);
    const double moved = static_cast<double>(passes) * static_cast<double>(bytes);
    std::printf(" %13" PRId64 " %8" PRId64 " %11.2f %11.2f\n", bytes, passes,
                2.0 * moved / copy_seconds / 1e9, 3.0 * moved / add_seconds / 1e9);
    std::fflush(stdout);
  }
}

}  // namespace dist_bench
