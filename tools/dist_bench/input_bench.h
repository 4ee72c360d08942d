// dist-bench: the input-pipeline sections (see input_bench.cc).
#ifndef DISTRIBUTE_TOOLS_DIST_BENCH_INPUT_BENCH_H_
#define DISTRIBUTE_TOOLS_DIST_BENCH_INPUT_BENCH_H_

namespace dist_bench {

// Prints the iterator-throughput and TFRecord-read tables with their targets. `quick`
// uses small sizes and short loops. Exits the process with status 1 when a library call
// fails (after removing its temporary file).
void RunInputBench(bool quick);

}  // namespace dist_bench

#endif  // DISTRIBUTE_TOOLS_DIST_BENCH_INPUT_BENCH_H_
