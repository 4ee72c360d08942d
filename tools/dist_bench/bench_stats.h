// dist-bench: order statistics of a sample of timings, shared by the in-process sections.
#ifndef DISTRIBUTE_TOOLS_DIST_BENCH_BENCH_STATS_H_
#define DISTRIBUTE_TOOLS_DIST_BENCH_BENCH_STATS_H_

#include <chrono>
#include <vector>

namespace dist_bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Stats {
  double median = 0;
  double p90 = 0;
  double p99 = 0;
  double min = 0;
};

// Median (mean of the two middle values for an even count), nearest-rank p90 and p99, and
// the minimum of `v`; all zero when `v` is empty.
Stats Summarize(std::vector<double> v);

}  // namespace dist_bench

#endif  // DISTRIBUTE_TOOLS_DIST_BENCH_BENCH_STATS_H_
