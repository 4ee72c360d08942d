// dist-bench: a plain thread all-reduce written independently of the library, measured in
// the same run as the library's in-process all-reduce so that the table can say how far
// the library is from what two phases over shared memory cost on this machine (issue 16).
#ifndef DISTRIBUTE_TOOLS_DIST_BENCH_REFERENCE_ALL_REDUCE_H_
#define DISTRIBUTE_TOOLS_DIST_BENCH_REFERENCE_ALL_REDUCE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace dist_bench {

// float32 SUM over `replicas` threads, one input and one output buffer per thread.
//
// Buffer policy, the same as the library's row in dist_bench.cc: every replica owns a
// separate input (written once, or before every call with `rewrite_inputs`, outside the
// timing, as the library's row does then) and receives the sum in a separate output (out of
// place). The outputs are allocated and touched once, here, and reused by every
// iteration: the best the library's host-buffer pool can do for the output it returns, so
// the reference pays no allocation and no first touch.
//
// One all-reduce is two phases, each closed by a SpinBarrier (spin, then yield):
//   reduce-scatter: thread t sums slice t (elements [t*count/n, (t+1)*count/n)) of every
//                   input into slice t of its own output;
//   all-gather:     thread t copies every other slice s from output s into its output.
class ReferenceAllReduce {
 public:
  // `replicas` >= 2. Allocates and fills the inputs (element i of replica r is r + 1 + i % 7, so a slice
  // summed or copied to the wrong place shows) and fills the outputs with -1.
  ReferenceAllReduce(int32_t replicas, int64_t count, bool rewrite_inputs = false);

  // Runs `iterations` all-reduces on `replicas` threads (the caller is thread 0).
  // times[i] is thread 0's time of iteration i in seconds, from the end of the previous
  // iteration (or the start of its loop) to the end of this one's last barrier, like the
  // library's row; *loop_seconds is thread 0's whole loop.
  void Run(int64_t iterations, std::vector<double>* times, double* loop_seconds);

  // "" when every element of every output is the exact sum of the inputs (exact in
  // float32: at most 4 x (4 + 6)), else what is wrong.
  std::string Check() const;

 private:
  int64_t SliceBegin(int32_t slice) const;
  void ReduceScatter(int32_t thread);
  void AllGather(int32_t thread);

  int32_t replicas_;
  int64_t count_;
  bool rewrite_inputs_;
  std::vector<std::vector<float>> inputs_;
  std::vector<std::vector<float>> outputs_;
};

}  // namespace dist_bench

#endif  // DISTRIBUTE_TOOLS_DIST_BENCH_REFERENCE_ALL_REDUCE_H_
