// dist-bench: order statistics (see bench_stats.h).
#include "bench_stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace dist_bench {

Stats Summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    size_t i = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    if (i > 0) --i;
    return v[std::min(i, v.size() - 1)];
  };
  s.median = v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  s.p90 = at(0.9);
  s.p99 = at(0.99);
  s.min = v.front();
  return s;
}

}  // namespace dist_bench
