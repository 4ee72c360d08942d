// dist-bench: performance report for the in-process collectives, in the style of
// nccl-tests. Uses only the public C API (distribute/distribute.h).
//
// It prints, in this order:
//   1. a copy-bandwidth baseline (memcpy of one large buffer, best of a few),
//   2. the physical ceiling: STREAM-style copy and add bandwidth of two threads
//      (stream_ceiling.cc),
//   3. for MirroredStrategy over CPU:0..CPU:n-1 (n = 2 and 4), one table of
//      dist_context_all_reduce(SUM) timings from 8 bytes up to --max-bytes, float32,
//      with algbw, busbw and memory efficiency against the baseline, and at every size
//      the time of a reference thread all-reduce measured in the same run
//      (reference_all_reduce.h) with ours/ref (below 1: the library is faster), and the
//      time of dist_context_all_reduce_into (no new value per call) with into/ref; the
//      inputs are written once (the reference reads them so), or rewritten
//      before every call with --rewrite-inputs (as a training step writes its gradients),
//   4. the time of an empty dist_strategy_run step for 1, 2 and 4 replicas,
//   5. the replica wake path: median and p99 of an empty 2-replica step and of an 8-byte
//      all-reduce step, alone and next to a busy process this program forks
//      (busy_competitor.h),
//   6. the 8-byte all-reduce latency with 2 replicas,
//   7. the targets of the issue with "met" / "NOT met",
//   8. the input-pipeline sections (input_bench.cc): iterator throughput over host
//      tensors against memcpy, and TFRecord read throughput against `cat`, with their
//      targets. `--input` prints only these.
// `--parameter-server` runs dist-bench-ps, installed beside this program, instead: a ps
// task's variable service on loopback next to the raw gRPC round trip (ps_bench.cc; it
// links the C++ core, which a program of the C API cannot link too).
//
// Timings are a report, never asserted: the program exits 0 when every call succeeded,
// 1 when a library call failed (with dist_last_error_message) and 2 on bad flags.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <climits>
#include <unistd.h>

#include "bench_stats.h"
#include "busy_competitor.h"
#include "distribute/distribute.h"
#include "input_bench.h"
#include "multi_worker_bench.h"
#include "reference_all_reduce.h"
#include "spin_barrier.h"
#include "stream_ceiling.h"

namespace {

using dist_bench::Clock;
using dist_bench::Seconds;
using dist_bench::Stats;
using dist_bench::Summarize;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kDefaultMaxBytes = 256 * kMiB;
constexpr int64_t kQuickMaxBytes = 4 * kMiB;
constexpr int64_t kTargetBytes = 64 * kMiB;  // the memory-efficiency target's size

// Targets from issue 3, "Speed".
constexpr double kTargetMemEff = 0.7;
constexpr double kTargetEmptyRunUs = 10.0;
constexpr double kTargetLatency8Us = 2.0;

[[noreturn]] void Fail(const char* what, dist_status_t status) {
  std::fflush(stdout);
  std::fprintf(stderr, "dist-bench: %s failed: %s: %s\n", what, dist_status_name(status),
               dist_last_error_message());
  std::exit(1);
}

#define CHECK_DIST(call)                          \
  do {                                            \
    const dist_status_t status_ = (call);         \
    if (status_ != DIST_OK) Fail(#call, status_); \
  } while (0)

// Prints the usage: on stdout and exit 0 for --help, on stderr and exit 2 after a problem.
[[noreturn]] void Usage(const char* argv0, const char* problem) {
  if (problem != nullptr) std::fprintf(stderr, "dist-bench: %s\n", problem);
  std::fprintf(problem != nullptr ? stderr : stdout,
               "usage: %s [--quick] [--input | --no-input] [--multi-worker] [--parameter-server] [--coordinator] [--gpu]\n"
               "          [--max-bytes N]\n"
               "          [--algo shared|one|hier] [--rewrite-inputs]\n"
               "  --quick        stop at 4 MiB and use fewer iterations (for CI); the input\n"
               "                 sections use batches up to 1 MiB and a 16 MiB TFRecord file\n"
               "  --input        only the input-pipeline sections (iterator throughput,\n"
               "                 TFRecord read throughput)\n"
               "  --no-input     the in-process collective sections without the input ones\n"
               "  --multi-worker under distrun (distrun -n 2 dist-bench --multi-worker): the\n"
               "                 MultiWorkerMirroredStrategy all-reduce table next to raw\n"
               "                 Gloo's ring all-reduce (default max 16 MiB)\n"
               "  --parameter-server  a ps task's variable service on loopback: Read and\n"
               "                 AssignAdd next to the raw gRPC round trip of the same bytes\n"
               "                 (default max 64 MiB, at most 256 MiB; runs dist-bench-ps)\n"
               "  --gpu          GPU replicas: all-reduce next to raw NCCL, the reduction kernels\n"
               "                 next to a device-to-device copy (runs dist-bench-gpu, built with\n"
               "                 the CUDA toolkit)\n"
               "  --coordinator  scheduled closures on 1-3 loopback workers: schedule + fetch\n"
               "                 latency and throughput next to a raw gRPC round trip (runs\n"
               "                 dist-bench-coordinator)\n"
               "  --max-bytes N  largest all-reduce and copy-baseline size in bytes\n"
               "                 (>= 8; default 256 MiB; suffixes K, M, G allowed)\n"
               "  --algo A       cross-device ops: shared (shared-memory all-reduce, the\n"
               "                 default), one (ReductionToOneDevice), hier\n"
               "                 (HierarchicalCopyAllReduce with 1 pack)\n"
               "  --rewrite-inputs  the in-process all-reduce tables rewrite every replica's\n"
               "                 input (the library's and the reference's) before each call,\n"
               "                 outside the timing, as a training step writes its gradients\n",
               argv0);
  std::exit(problem != nullptr ? 2 : 0);
}

struct Options {
  bool quick = false;
  bool input_only = false;
  bool no_input = false;
  bool multi_worker = false;
  bool parameter_server = false;
  bool coordinator = false;
  bool gpu = false;
  bool max_bytes_given = false;
  bool rewrite_inputs = false;
  int64_t max_bytes = kDefaultMaxBytes;
  std::string algo = "shared";
};

bool ParseBytes(const char* text, int64_t* out) {
  if (text == nullptr || *text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || text[0] == '-') return false;
  unsigned long long scale = 1;
  if (*end != '\0') {
    switch (*end) {
      case 'k':
      case 'K':
        scale = kKiB;
        break;
      case 'm':
      case 'M':
        scale = kMiB;
        break;
      case 'g':
      case 'G':
        scale = 1024 * kMiB;
        break;
      default:
        return false;
    }
    ++end;
    if (*end == 'i' || *end == 'I') ++end;
    if (*end == 'b' || *end == 'B') ++end;
    if (*end != '\0') return false;
  }
  if (value > (1ull << 40) / scale) return false;
  *out = static_cast<int64_t>(value * scale);
  return true;
}

Options ParseArgs(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::string prefix = std::string(name) + "=";
      if (arg.rfind(prefix, 0) == 0) return argv[i] + prefix.size();
      if (i + 1 >= argc) Usage(argv[0], (std::string(name) + " needs a value").c_str());
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      Usage(argv[0], nullptr);
    } else if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--input") {
      options.input_only = true;
    } else if (arg == "--no-input") {
      options.no_input = true;
    } else if (arg == "--multi-worker") {
      options.multi_worker = true;
    } else if (arg == "--parameter-server") {
      options.parameter_server = true;
    } else if (arg == "--gpu") {
      options.gpu = true;
    } else if (arg == "--coordinator") {
      options.coordinator = true;
    } else if (arg == "--rewrite-inputs") {
      options.rewrite_inputs = true;
    } else if (arg == "--max-bytes" || arg.rfind("--max-bytes=", 0) == 0) {
      const char* text = value("--max-bytes");
      options.max_bytes_given = true;
      if (!ParseBytes(text, &options.max_bytes) || options.max_bytes < 8) {
        Usage(argv[0], (std::string("bad --max-bytes value '") + text + "'").c_str());
      }
    } else if (arg == "--algo" || arg.rfind("--algo=", 0) == 0) {
      options.algo = value("--algo");
      if (options.algo != "shared" && options.algo != "one" && options.algo != "hier") {
        Usage(argv[0], ("unknown --algo '" + options.algo + "'").c_str());
      }
    } else {
      Usage(argv[0], ("unknown argument '" + arg + "'").c_str());
    }
  }
  if (options.input_only && options.no_input) Usage(argv[0], "--input and --no-input exclude each other");
  if (options.quick) options.max_bytes = std::min(options.max_bytes, kQuickMaxBytes);
  return options;
}

std::string FormatBytes(int64_t bytes) {
  char buf[32];
  if (bytes >= kMiB && bytes % kMiB == 0) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " MiB", bytes / kMiB);
  } else if (bytes >= kKiB && bytes % kKiB == 0) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " KiB", bytes / kKiB);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRId64 " B", bytes);
  }
  return buf;
}

// ---- Copy baseline ----

// (bytes read + bytes written) / time of the best of a few memcpy calls of `bytes`.
double CopyBandwidth(int64_t bytes, int repeats, double* best_seconds) {
  const size_t n = static_cast<size_t>(bytes);
  char* src = static_cast<char*>(std::aligned_alloc(64, (n + 63) / 64 * 64));
  char* dst = static_cast<char*>(std::aligned_alloc(64, (n + 63) / 64 * 64));
  if (src == nullptr || dst == nullptr) {
    std::fprintf(stderr,
                 "dist-bench: allocating 2 x %" PRId64 " bytes for the copy baseline failed\n",
                 bytes);
    std::exit(1);
  }
  std::memset(src, 1, n);
  std::memset(dst, 2, n);  // touch every page before timing
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = Clock::now();
    std::memcpy(dst, src, n);
    const auto t1 = Clock::now();
    best = std::min(best, Seconds(t1 - t0));
    // Keep the copy observable so it is not elided.
    if (dst[n / 2] != 1) {
      std::fprintf(stderr, "dist-bench: memcpy baseline copied the wrong bytes\n");
      std::exit(1);
    }
  }
  std::free(src);
  std::free(dst);
  *best_seconds = best;
  return 2.0 * static_cast<double>(bytes) / best;
}

// ---- Strategies ----

dist_cross_device_ops_t* CreateOps(const std::string& algo) {
  dist_cross_device_ops_t* ops = nullptr;
  if (algo == "shared") {
    CHECK_DIST(dist_cross_device_ops_create_shared_memory(0, &ops));
  } else if (algo == "one") {
    CHECK_DIST(dist_cross_device_ops_create_reduction_to_one_device(nullptr, &ops));
  } else {
    CHECK_DIST(dist_cross_device_ops_create_hierarchical_copy(1, &ops));
  }
  return ops;
}

dist_strategy_t* CreateMirrored(int32_t replicas, const std::string& algo) {
  std::vector<std::string> names;
  std::vector<const char*> devices;
  for (int32_t r = 0; r < replicas; ++r) names.push_back("CPU:" + std::to_string(r));
  for (const std::string& name : names) devices.push_back(name.c_str());
  dist_cross_device_ops_t* ops = CreateOps(algo);
  dist_strategy_t* strategy = nullptr;
  CHECK_DIST(dist_strategy_create_mirrored(devices.data(), replicas, ops, &strategy));
  dist_cross_device_ops_destroy(ops);
  int32_t count = 0;
  CHECK_DIST(dist_strategy_num_replicas_in_sync(strategy, &count));
  if (count != replicas) {
    std::fprintf(stderr, "dist-bench: strategy has %d replicas, expected %d\n", count, replicas);
    std::exit(1);
  }
  return strategy;
}

// ---- All-reduce ----

struct AllReduceJob {
  std::vector<dist_value_t*> inputs;  // one tensor per replica, on that replica's device
  int64_t iterations = 0;
  std::vector<double> times;  // per-iteration seconds, filled by replica 0
  double loop_seconds = 0;    // replica 0's whole loop
  int64_t count = 0;          // elements
  int32_t replicas = 0;
  bool into = false;  // dist_context_all_reduce_into a tensor made once, not a new value per call
  // Each replica rewrites its input before every call, then waits for the others at
  // `rewritten` (the benchmark's own barrier), outside the timing.
  bool rewrite = false;
  std::vector<float*> input_data;
  std::unique_ptr<dist_bench::SpinBarrier> rewritten;
  bool bad_result = false;
  std::string bad_message;
};

dist_status_t AllReduceReplica(dist_context_t* context, const dist_value_t* const* /*args*/,
                               int32_t /*num_args*/, dist_value_t** /*results*/,
                               int32_t /*num_results*/, void* user_data) {
  auto* job = static_cast<AllReduceJob*>(user_data);
  int32_t replica = 0;
  dist_status_t status = dist_context_replica_id(context, &replica);
  if (status != DIST_OK) return status;
  const dist_value_t* input = job->inputs[static_cast<size_t>(replica)];
  double* times = replica == 0 ? job->times.data() : nullptr;
  dist_value_t* out = nullptr;
  if (job->into) {
    const int64_t shape[1] = {job->count};
    const char* device = nullptr;
    status = dist_context_device(context, &device);
    if (status == DIST_OK) status = dist_tensor_create(DIST_FLOAT32, shape, 1, nullptr, 0, device, &out);
    if (status != DIST_OK) return status;
  }
  const auto loop_start = Clock::now();
  auto t0 = loop_start;
  for (int64_t i = 0; i < job->iterations; ++i) {
    if (job->rewrite) {
      float* data = job->input_data[static_cast<size_t>(replica)];
      std::fill(data, data + job->count, static_cast<float>(replica + 1));
      job->rewritten->Wait();
      if (times != nullptr) t0 = Clock::now();
    }
    if (job->into) {
      status = dist_context_all_reduce_into(context, DIST_REDUCE_SUM, input, out);
    } else {
      if (out != nullptr) {
        dist_value_destroy(out);
        out = nullptr;
      }
      status = dist_context_all_reduce(context, DIST_REDUCE_SUM, input, &out);
    }
    if (status != DIST_OK) return status;
    if (times != nullptr) {
      const auto t1 = Clock::now();
      times[i] = Seconds(t1 - t0);
      t0 = t1;
    }
  }
  if (replica == 0) job->loop_seconds = Seconds(Clock::now() - loop_start);
  // Replica r contributed r + 1 everywhere: the sum is n (n + 1) / 2, exact in float32.
  if (out != nullptr) {
    void* data = nullptr;
    status = dist_tensor_data(out, &data);
    if (status != DIST_OK) return status;
    const float expected = static_cast<float>(job->replicas * (job->replicas + 1) / 2);
    const float* f = static_cast<const float*>(data);
    const int64_t probes[3] = {0, job->count / 2, job->count - 1};
    for (int64_t p : probes) {
      if (f[p] != expected && replica == 0) {
        job->bad_result = true;
        job->bad_message = "element " + std::to_string(p) + " is " + std::to_string(f[p]) +
                           ", expected " + std::to_string(expected);
      }
    }
    dist_value_destroy(out);
  }
  return DIST_OK;
}

void RunAllReduce(dist_strategy_t* strategy, AllReduceJob* job, int64_t iterations) {
  job->iterations = iterations;
  job->times.assign(static_cast<size_t>(iterations), 0.0);
  CHECK_DIST(dist_strategy_run(strategy, AllReduceReplica, job, nullptr, 0, nullptr, 0));
  if (job->bad_result) {
    std::fprintf(stderr, "dist-bench: wrong all-reduce result: %s\n", job->bad_message.c_str());
    std::exit(1);
  }
}

struct Row {
  int64_t bytes = 0;
  int64_t count = 0;
  int64_t iterations = 0;
  Stats us;
  double algbw = 0;
  double busbw = 0;
  double memeff = 0;
  Stats into_us;  // dist_context_all_reduce_into, same size, same run
  Stats ref_us;   // the reference thread all-reduce of the same size, same run
};

std::vector<int64_t> Sizes(int64_t max_bytes) {
  // Powers of 4 from 8 bytes (8, 32, 128, ...), plus the 64 MiB target size and the
  // largest size itself when the sequence steps over them.
  std::vector<int64_t> sizes;
  for (int64_t b = 8; b <= max_bytes; b *= 4) sizes.push_back(b);
  if (kTargetBytes <= max_bytes) sizes.push_back(kTargetBytes);
  sizes.push_back(max_bytes / 4 * 4);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  return sizes;
}

// A loop of k timed operations: fills *times with the seconds of each (k entries) and
// *loop_seconds with the whole loop's.
using TimedLoop = std::function<void(int64_t k, std::vector<double>* times, double* loop_seconds)>;

// Warms up and calibrates `loop`, growing the iteration count until one loop takes long
// enough to estimate the time per operation; returns the iteration count of a loop of the
// target time. The estimate is the median of the calibration loop (one slow first
// iteration, e.g. a parked thread waking up, would otherwise make a fast size look slow),
// bounded below by a quarter of the mean so that a heavy tail still limits the loop's
// length.
int64_t Calibrate(const TimedLoop& loop, const Options& options) {
  const double target_seconds = options.quick ? 0.01 : 0.1;
  const double calibrate_seconds = options.quick ? 0.002 : 0.02;
  const int64_t min_iterations = options.quick ? 2 : 5;
  const int64_t max_iterations = options.quick ? 20000 : 1000000;
  std::vector<double> times;
  double loop_seconds = 0;
  int64_t k = 1;
  double per_op = 0;
  while (true) {
    loop(k, &times, &loop_seconds);
    const double mean = loop_seconds / static_cast<double>(k);
    per_op = std::max(Summarize(times).median, mean / 4);
    if ((loop_seconds >= calibrate_seconds && k >= 4) || k >= max_iterations) break;
    k = std::min(max_iterations, k < 4 ? 4 : k * 8);
  }
  return std::clamp<int64_t>(static_cast<int64_t>(target_seconds / std::max(per_op, 1e-9)), min_iterations,
                             max_iterations);
}

// Calibrate, then the measured loop: its per-operation microseconds.
Stats CalibrateAndMeasure(const TimedLoop& loop, const Options& options, int64_t* iterations) {
  *iterations = Calibrate(loop, options);
  std::vector<double> times;
  double loop_seconds = 0;
  loop(*iterations, &times, &loop_seconds);
  for (double& t : times) t *= 1e6;
  return Summarize(std::move(times));
}

// Up to this size a row's three loops (ours with a new value, ours into, the reference)
// run interleaved, every buffer alive at once; above it one after another, each freeing
// its buffers first (at 256 MiB and 4 replicas both sets at once would double the
// memory the run needs).
constexpr int64_t kInterleavedMaxBytes = int64_t{16} << 20;
constexpr int kInterleavedRounds = 5;

// Calibrates every loop, then runs them in turn, kInterleavedRounds times, each run a
// share of its iterations; returns each loop's per-operation microseconds over all its
// rounds, and its iteration count. On this kind of machine a small row's time moves 2x
// when the vCPUs move or another process wakes; run one after another, the loops of a
// row could each meet a different state, and their ratio showed it (a 2 KiB reference at
// 0.26 us beside 0.46 at 8 B). Interleaved, such a change falls on all of them alike.
std::vector<Stats> MeasureInterleaved(const std::vector<TimedLoop>& loops, const Options& options,
                                      std::vector<int64_t>* iterations) {
  iterations->clear();
  for (const TimedLoop& loop : loops) iterations->push_back(Calibrate(loop, options));
  std::vector<std::vector<double>> all(loops.size());
  for (int round = 0; round < kInterleavedRounds; ++round) {
    for (size_t l = 0; l < loops.size(); ++l) {
      const int64_t k = std::max<int64_t>(1, ((*iterations)[l] + kInterleavedRounds - 1) / kInterleavedRounds);
      std::vector<double> times;
      double loop_seconds = 0;
      loops[l](k, &times, &loop_seconds);
      for (double t : times) all[l].push_back(t * 1e6);
    }
  }
  std::vector<Stats> stats;
  for (std::vector<double>& times : all) stats.push_back(Summarize(std::move(times)));
  return stats;
}

// Exits with a message when the reference's result is wrong.
void CheckReference(const dist_bench::ReferenceAllReduce& reference, int32_t replicas, int64_t bytes) {
  const std::string wrong = reference.Check();
  if (!wrong.empty()) {
    std::fflush(stdout);
    std::fprintf(stderr, "dist-bench: wrong reference all-reduce result, %d threads, %" PRId64
                 " bytes: %s\n", replicas, bytes, wrong.c_str());
    std::exit(1);
  }
}

// The reference all-reduce of `bytes` on `replicas` threads, timed like the library's row.
TimedLoop ReferenceLoop(dist_bench::ReferenceAllReduce& reference) {
  return [&reference](int64_t k, std::vector<double>* times, double* loop_seconds) {
    reference.Run(k, times, loop_seconds);
  };
}

std::vector<Row> AllReduceTable(int32_t replicas, const Options& options, double copy_bw) {
  dist_strategy_t* strategy = CreateMirrored(replicas, options.algo);

  std::printf(
      "#\n# all-reduce: MirroredStrategy over CPU:0..CPU:%d (%d replicas), cross-device ops "
      "'%s', op SUM, float32\n",
      replicas - 1, replicas, options.algo.c_str());
  std::printf(
      "# time: median (p90) microseconds per all-reduce, timed on replica 0 inside the "
      "replica function\n");
  std::printf(
      "# memeff: (2 x %d x bytes / time) / copy bandwidth (above 1 when the buffers "
      "fit in cache)\n",
      replicas);
  std::printf(
      "# ref_us: median microseconds of the reference (%d threads, reduce-scatter + "
      "all-gather, spin-then-yield barrier, separate input and output per thread; "
      "reference_all_reduce.h); ours/ref < 1: we are faster\n",
      replicas);
  std::printf(
      "# up to %" PRId64 " MiB the time, into_us and ref_us loops run interleaved, %d rounds each "
      "(a change of the machine's state falls on all three alike); above, one after another\n",
      kInterleavedMaxBytes >> 20, kInterleavedRounds);
  std::printf(
      "# into_us: median microseconds of dist_context_all_reduce_into a tensor made once per "
      "replica (no new value per call)\n");
  std::printf(options.rewrite_inputs
                  ? "# inputs: every replica (and reference thread) rewrites its input before each call, outside the "
                    "timing (--rewrite-inputs)\n#\n"
                  : "# inputs: written once, read by every call (both sides; --rewrite-inputs rewrites them before each "
                    "call)\n#\n");
  std::printf("#%13s %12s %8s %6s %11s %11s %10s %10s %8s %11s %9s %9s %9s %9s\n", "size(B)",
              "count", "type", "redop", "time(us)", "p90(us)", "algbw", "busbw", "memeff", "ref_us",
              "ours/ref", "into_us", "into/ref", "iters");
  std::printf("#%13s %12s %8s %6s %11s %11s %10s %10s %8s %11s %9s %9s %9s %9s\n", "",
              "(elements)", "", "", "", "", "(GB/s)", "(GB/s)", "", "", "", "", "", "");
  std::fflush(stdout);

  std::vector<Row> rows;
  for (int64_t bytes : Sizes(options.max_bytes)) {
    AllReduceJob job;
    job.replicas = replicas;
    job.count = bytes / 4;
    for (int32_t r = 0; r < replicas; ++r) {
      const int64_t shape[1] = {job.count};
      const std::string device = "CPU:" + std::to_string(r);
      dist_value_t* tensor = nullptr;
      CHECK_DIST(dist_tensor_create(DIST_FLOAT32, shape, 1, nullptr, 0, device.c_str(), &tensor));
      void* data = nullptr;
      CHECK_DIST(dist_tensor_data(tensor, &data));
      float* f = static_cast<float*>(data);
      std::fill(f, f + job.count, static_cast<float>(r + 1));
      job.inputs.push_back(tensor);
      job.input_data.push_back(f);
    }
    job.rewrite = options.rewrite_inputs;
    job.rewritten = std::make_unique<dist_bench::SpinBarrier>(replicas);

    Row row;
    row.bytes = bytes;
    row.count = job.count;
    // The library's loop, with a new value per call or into a tensor made once.
    const auto library_loop = [&](bool into) -> TimedLoop {
      return [&, into](int64_t k, std::vector<double>* times, double* loop_seconds) {
        job.into = into;
        RunAllReduce(strategy, &job, k);
        *times = job.times;
        *loop_seconds = job.loop_seconds;
      };
    };
    const TimedLoop ours = library_loop(false);
    const TimedLoop into = library_loop(true);
    if (bytes <= kInterleavedMaxBytes) {
      dist_bench::ReferenceAllReduce reference(replicas, bytes / 4, options.rewrite_inputs);
      std::vector<int64_t> iterations;
      const std::vector<Stats> stats = MeasureInterleaved({ours, into, ReferenceLoop(reference)}, options, &iterations);
      CheckReference(reference, replicas, bytes);
      row.us = stats[0];
      row.into_us = stats[1];
      row.ref_us = stats[2];
      row.iterations = iterations[0];
      for (dist_value_t* t : job.inputs) dist_value_destroy(t);
    } else {
      row.us = CalibrateAndMeasure(ours, options, &row.iterations);
      int64_t into_iterations = 0;
      row.into_us = CalibrateAndMeasure(into, options, &into_iterations);
      for (dist_value_t* t : job.inputs) dist_value_destroy(t);
      dist_bench::ReferenceAllReduce reference(replicas, bytes / 4, options.rewrite_inputs);
      int64_t reference_iterations = 0;
      row.ref_us = CalibrateAndMeasure(ReferenceLoop(reference), options, &reference_iterations);
      CheckReference(reference, replicas, bytes);
    }

    const double seconds = row.us.median * 1e-6;
    row.algbw = static_cast<double>(bytes) / seconds / 1e9;
    row.busbw = row.algbw * 2.0 * (replicas - 1) / replicas;
    row.memeff = (2.0 * replicas * static_cast<double>(bytes) / seconds) / copy_bw;
    std::printf(" %13" PRId64 " %12" PRId64 " %8s %6s %11.2f %11.2f %10.3f %10.3f %8.3f %11.2f "
                "%9.2f %9.2f %9.2f %9" PRId64 "\n",
                row.bytes, row.count, "float", "sum", row.us.median, row.us.p90, row.algbw,
                row.busbw, row.memeff, row.ref_us.median, row.us.median / row.ref_us.median,
                row.into_us.median, row.into_us.median / row.ref_us.median, row.iterations);
    std::fflush(stdout);
    rows.push_back(row);
  }
  dist_strategy_destroy(strategy);
  return rows;
}

// ---- Empty run ----

dist_status_t EmptyReplica(dist_context_t*, const dist_value_t* const*, int32_t, dist_value_t**,
                           int32_t, void*) {
  return DIST_OK;
}

Stats EmptyRun(int32_t replicas, const Options& options, int64_t* out_iterations) {
  dist_strategy_t* strategy = CreateMirrored(replicas, options.algo);
  const double target_seconds = options.quick ? 0.02 : 0.3;
  const int64_t max_iterations = options.quick ? 2000 : 200000;
  // Warm up and calibrate.
  int64_t warm = 0;
  const auto w0 = Clock::now();
  while (warm < 50 || (Seconds(Clock::now() - w0) < target_seconds / 10 && warm < max_iterations)) {
    CHECK_DIST(dist_strategy_run(strategy, EmptyReplica, nullptr, nullptr, 0, nullptr, 0));
    ++warm;
  }
  const double per_run = Seconds(Clock::now() - w0) / static_cast<double>(warm);
  const int64_t iterations = std::clamp<int64_t>(
      static_cast<int64_t>(target_seconds / std::max(per_run, 1e-9)), 100, max_iterations);
  std::vector<double> us(static_cast<size_t>(iterations));
  for (int64_t i = 0; i < iterations; ++i) {
    const auto t0 = Clock::now();
    const dist_status_t status =
        dist_strategy_run(strategy, EmptyReplica, nullptr, nullptr, 0, nullptr, 0);
    const auto t1 = Clock::now();
    if (status != DIST_OK) Fail("dist_strategy_run(empty replica function)", status);
    us[static_cast<size_t>(i)] = Seconds(t1 - t0) * 1e6;
  }
  dist_strategy_destroy(strategy);
  *out_iterations = iterations;
  return Summarize(std::move(us));
}

// ---- Replica wake path ----

constexpr int64_t kWakeSamples = 2000;  // per row, --quick too: p99 needs them

// Microseconds of `samples` dist_strategy_run steps of `fn`, each timed by the caller,
// after 100 untimed steps.
Stats TimeSteps(dist_strategy_t* strategy, dist_replica_fn fn, void* user_data,
                int64_t samples) {
  std::vector<double> us(static_cast<size_t>(samples));
  for (int64_t i = -100; i < samples; ++i) {
    const auto t0 = Clock::now();
    const dist_status_t status = dist_strategy_run(strategy, fn, user_data, nullptr, 0, nullptr, 0);
    const auto t1 = Clock::now();
    if (status != DIST_OK) Fail("dist_strategy_run(wake-path step)", status);
    if (i >= 0) us[static_cast<size_t>(i)] = Seconds(t1 - t0) * 1e6;
  }
  return Summarize(std::move(us));
}

// The empty step and the 8-byte all-reduce step (one dist_context_all_reduce of 2 float32
// per replica, result checked) on 2 replicas, without and then with a busy process
// competing for a core: does a replica that the step needs wake in microseconds, or does
// it sleep while the work is microseconds away?
void WakePathTable(const Options& options) {
  dist_strategy_t* strategy = CreateMirrored(2, options.algo);
  AllReduceJob job;
  job.replicas = 2;
  job.count = 2;
  job.iterations = 1;
  job.times.assign(1, 0.0);
  for (int32_t r = 0; r < 2; ++r) {
    const int64_t shape[1] = {job.count};
    const std::string device = "CPU:" + std::to_string(r);
    dist_value_t* tensor = nullptr;
    CHECK_DIST(dist_tensor_create(DIST_FLOAT32, shape, 1, nullptr, 0, device.c_str(), &tensor));
    void* data = nullptr;
    CHECK_DIST(dist_tensor_data(tensor, &data));
    std::fill(static_cast<float*>(data), static_cast<float*>(data) + job.count,
              static_cast<float>(r + 1));
    job.inputs.push_back(tensor);
  }

  std::printf(
      "#\n# replica wake path: 2 replicas, one dist_strategy_run step timed by the caller, "
      "%" PRId64 " steps per row\n",
      kWakeSamples);
  std::printf(
      "# competitor: none, or a child process this program forks to spin on one core "
      "for the row (then kills)\n");
  std::printf("#%19s %12s %11s %11s %11s %14s\n", "step", "competitor", "median(us)", "p99(us)",
              "min(us)", "child_cpu(s)");
  for (const bool busy : {false, true}) {
    for (const bool all_reduce : {false, true}) {
      const auto t0 = Clock::now();  // the competitor spins from its start to its Stop
      std::unique_ptr<dist_bench::BusyCompetitor> competitor;
      if (busy) competitor = std::make_unique<dist_bench::BusyCompetitor>();
      const Stats s = all_reduce ? TimeSteps(strategy, AllReduceReplica, &job, kWakeSamples)
                                 : TimeSteps(strategy, EmptyReplica, nullptr, kWakeSamples);
      const double wall = Seconds(Clock::now() - t0);
      const double child_cpu = competitor != nullptr ? competitor->Stop() : 0.0;
      if (job.bad_result) {
        std::fprintf(stderr, "dist-bench: wrong all-reduce result: %s\n", job.bad_message.c_str());
        std::exit(1);
      }
      char competitor_text[32];
      if (competitor == nullptr) {
        std::snprintf(competitor_text, sizeof competitor_text, "none");
      } else {
        std::snprintf(competitor_text, sizeof competitor_text, "busy,cpu%d", competitor->cpu());
      }
      char child_text[32] = "-";
      if (competitor != nullptr) {
        std::snprintf(child_text, sizeof child_text, "%.2f/%.2f", child_cpu, wall);
      }
      std::printf(" %19s %12s %11.2f %11.2f %11.2f %14s\n",
                  all_reduce ? "all-reduce 8 B" : "empty", competitor_text, s.median, s.p99,
                  s.min, child_text);
      std::fflush(stdout);
    }
  }
  std::printf(
      "# child_cpu: CPU seconds the competitor used / wall seconds from its fork to its kill "
      "(near 1: it held its core throughout)\n");
  for (dist_value_t* t : job.inputs) dist_value_destroy(t);
  dist_strategy_destroy(strategy);
}

const char* Verdict(bool met) { return met ? "met" : "NOT met"; }

// Replaces this process with `program` (dist-bench-ps, dist-bench-coordinator) from this
// program's directory.
[[noreturn]] void RunCoreBench(const Options& options, const char* program) {
  char self[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) {
    std::fprintf(stderr, "dist-bench: cannot find this program's directory: %s\n", std::strerror(errno));
    std::exit(1);
  }
  std::string path(self, static_cast<size_t>(length));
  path = path.substr(0, path.rfind('/') + 1) + program;
  std::vector<std::string> args = {path};
  if (options.quick) args.push_back("--quick");
  if (options.max_bytes_given && !options.coordinator) {
    args.push_back("--max-bytes");
    args.push_back(std::to_string(options.max_bytes));
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  execv(path.c_str(), argv.data());
  std::fprintf(stderr, "dist-bench: cannot run %s: %s\n", path.c_str(), std::strerror(errno));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = ParseArgs(argc, argv);
  if (options.parameter_server) RunCoreBench(options, "dist-bench-ps");
  if (options.coordinator) RunCoreBench(options, "dist-bench-coordinator");
  if (options.gpu) RunCoreBench(options, "dist-bench-gpu");
  if (options.multi_worker) {
    const int64_t max_bytes = options.max_bytes_given ? options.max_bytes
                              : options.quick        ? kMiB
                                                     : 16 * kMiB;
    return dist_bench::RunMultiWorkerBench(max_bytes, options.quick);
  }

  CHECK_DIST(dist_set_logical_cpu_device_count(4));

  if (options.input_only) {
    std::printf("# dist-bench (distribute %s): input pipeline%s\n", DIST_VERSION_STRING,
                options.quick ? " (--quick)" : "");
    std::printf("# hardware threads: %u\n", std::thread::hardware_concurrency());
    dist_bench::RunInputBench(options.quick);
    return 0;
  }

  std::printf("# dist-bench (distribute %s): in-process collectives\n", DIST_VERSION_STRING);
  std::printf("# hardware threads: %u, cross-device ops: %s, max bytes: %" PRId64 "%s\n",
              std::thread::hardware_concurrency(), options.algo.c_str(), options.max_bytes,
              options.quick ? " (--quick)" : "");

  // Other processes competing for the cores distort every number below (spinning waits
  // most of all), so say how busy the machine was.
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    char load[128] = {0};
    if (std::fgets(load, sizeof load, f) != nullptr) {
      load[std::strcspn(load, "\n")] = '\0';
      std::printf("# load average at start (1, 5, 15 min, runnable/total): %s\n", load);
    }
    std::fclose(f);
  }

  // 1. Copy baseline; 2. its two-thread STREAM ceiling.
  double copy_seconds = 0;
  const int copy_repeats = options.quick ? 3 : 5;
  const double copy_bw = CopyBandwidth(options.max_bytes, copy_repeats, &copy_seconds);
  std::printf(
      "# copy baseline: memcpy of %s, best of %d: %.3f ms, %.3f GB/s (bytes read + "
      "bytes written)\n",
      FormatBytes(options.max_bytes).c_str(), copy_repeats, copy_seconds * 1e3, copy_bw / 1e9);
  std::fflush(stdout);
  dist_bench::PrintStreamCeiling(options.max_bytes, options.quick);

  // 3. All-reduce tables, each size next to the reference.
  std::vector<Row> rows2 = AllReduceTable(2, options, copy_bw);
  std::vector<Row> rows4 = AllReduceTable(4, options, copy_bw);

  // 4. Empty run steps.
  std::printf(
      "#\n# empty run step: dist_strategy_run of a replica function that does nothing, "
      "timed by the caller\n");
  std::printf("#%9s %11s %11s %11s %9s\n", "replicas", "median(us)", "p90(us)", "min(us)", "iters");
  Stats empty2;
  for (int32_t replicas : {1, 2, 4}) {
    int64_t iterations = 0;
    const Stats s = EmptyRun(replicas, options, &iterations);
    if (replicas == 2) empty2 = s;
    std::printf(" %9d %11.2f %11.2f %11.2f %9" PRId64 "\n", replicas, s.median, s.p90, s.min,
                iterations);
    std::fflush(stdout);
  }

  // 5. Replica wake path.
  WakePathTable(options);

  // 6. 8-byte latency, 2 replicas (the first row of the 2-replica table).
  const Row& small = rows2.front();
  std::printf(
      "#\n# 8-byte all-reduce, 2 replicas: median %.2f us, p90 %.2f us (target: median "
      "< %.0f us)\n",
      small.us.median, small.us.p90, kTargetLatency8Us);

  // 7. Targets.
  std::printf("#\n# targets (issue 3, \"Speed\"; cross-device ops '%s'):\n", options.algo.c_str());
  const Row* at_target = nullptr;
  for (const Row& row : rows2) {
    if (row.bytes == kTargetBytes) at_target = &row;
  }
  if (at_target != nullptr) {
    std::printf("#   memory efficiency, 64 MiB float32, 2 replicas: %.3f  (target >= %.1f)  %s\n",
                at_target->memeff, kTargetMemEff, Verdict(at_target->memeff >= kTargetMemEff));
  } else {
    std::printf(
        "#   memory efficiency, 64 MiB float32, 2 replicas: not measured (--max-bytes < "
        "64 MiB)  (target >= %.1f)\n",
        kTargetMemEff);
  }
  std::printf("#   empty run step, 2 replicas, median: %.2f us  (target < %.0f us)  %s\n",
              empty2.median, kTargetEmptyRunUs, Verdict(empty2.median < kTargetEmptyRunUs));
  std::printf("#   8-byte all-reduce, 2 replicas, median: %.2f us  (target < %.0f us)  %s\n",
              small.us.median, kTargetLatency8Us, Verdict(small.us.median < kTargetLatency8Us));
  (void)rows4;

  // 8. Input pipeline.
  if (!options.no_input) dist_bench::RunInputBench(options.quick);
  return 0;
}
