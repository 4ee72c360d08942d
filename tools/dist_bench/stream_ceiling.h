// dist-bench: STREAM-style copy and add bandwidth of two threads, the physical ceiling
// that the all-reduce tables are read against (issue 16).
#ifndef DISTRIBUTE_TOOLS_DIST_BENCH_STREAM_CEILING_H_
#define DISTRIBUTE_TOOLS_DIST_BENCH_STREAM_CEILING_H_

#include <cstdint>

namespace dist_bench {

// Prints one table: for arrays of 64 KiB, 1 MiB, 16 MiB and 256 MiB (those not above
// `max_bytes`), the best GB/s of two threads each running c[i] = a[i] (copy) and
// c[i] = a[i] + b[i] (add) over half of float32 arrays. Bytes counted as STREAM counts
// them: 2 x size for copy, 3 x size for add (the write-allocate read of c is not
// counted). Exits the process with status 1 when a kernel computed a wrong element.
void PrintStreamCeiling(int64_t max_bytes, bool quick);

}  // namespace dist_bench

#endif  // DISTRIBUTE_TOOLS_DIST_BENCH_STREAM_CEILING_H_
