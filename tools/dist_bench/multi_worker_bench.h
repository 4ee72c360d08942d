// dist-bench --multi-worker: the cross-worker all-reduce table (see multi_worker_bench.cc).
#ifndef DISTRIBUTE_TOOLS_DIST_BENCH_MULTI_WORKER_BENCH_H_
#define DISTRIBUTE_TOOLS_DIST_BENCH_MULTI_WORKER_BENCH_H_

#include <cstdint>

namespace dist_bench {

// Run by every worker under distrun (TF_CONFIG, DIST_REPLICAS_PER_WORKER). Worker 0 prints
// the table of MultiWorkerMirroredStrategy all-reduce timings next to raw Gloo's ring
// all-reduce, measured in the same processes on the same sizes (8 bytes to `max_bytes`).
// Returns the exit status: 0, or 1 when a call failed (with its message on stderr).
int RunMultiWorkerBench(int64_t max_bytes, bool quick);

}  // namespace dist_bench

#endif  // DISTRIBUTE_TOOLS_DIST_BENCH_MULTI_WORKER_BENCH_H_
