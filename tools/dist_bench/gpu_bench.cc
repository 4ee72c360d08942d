// dist-bench-gpu, which `dist-bench --gpu` runs: nccl-tests-style tables for the GPU
// replicas of one process, each next to a baseline measured in the same run.
//
//   1. all-reduce (float32 SUM) of MirroredStrategy over every GPU (NcclAllReduce through
//      the library: rendezvous, agreement check, NCCL, the wait) next to a raw
//      ncclAllReduce loop on the same GPUs (ncclCommInitAll, one group call per
//      iteration, stream synchronisation): time, algbw, busbw, and ours/raw of busbw.
//      Target: at least 0.9x raw NCCL's bus bandwidth from 1 MiB up.
//   2. the reduction kernels of ReductionToOneDevice and HierarchicalCopy next to a
//      device-to-device copy on GPU 0 (cudaMemcpyAsync), the bandwidth ceiling.
//      Target: at least 0.85 of the copy's bandwidth.
//   3. the fixed cost of one call at 8 bytes, split into its parts: the library's
//      all-reduce on the GPUs and on CPU:0 (the core alone), raw NCCL, a copy, the plugin's
//      allocate-and-release of an output, and a stream query. Where the library's calls
//      lose to the baselines at small sizes, this says where the microseconds go.
//
// It links the CUDA runtime and NCCL itself (libdistribute never does) and is built only
// with the CUDA toolkit. It is a report: it exits 0 whatever the timings, and says why a
// baseline is missing (no driver, no GPU) instead of failing. With the fake GPU plugin
// (DIST_CUDA_PLUGIN=libdist_fake_gpu.so) the library's rows run on CPU and the raw rows
// report no driver: a smoke test of this program, not a measurement.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "distribute/distribute.h"
#include "tools/dist_bench/bench_stats.h"

namespace {

using dist_bench::Clock;
using dist_bench::Seconds;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

#define CHECK_DIST(expr)                                                                  \
  do {                                                                                    \
    const dist_status_t check_status_ = (expr);                                           \
    if (check_status_ != DIST_OK) {                                                       \
      std::fprintf(stderr, "dist-bench-gpu: %s failed: %s\n", #expr, dist_last_error_message()); \
      std::exit(1);                                                                       \
    }                                                                                     \
  } while (0)

struct Options {
  bool quick = false;
  int64_t max_bytes = 256 * kMiB;
};

Options ParseArgs(int argc, char** argv) {
  Options options;
  bool max_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--max-bytes" && i + 1 < argc) {
      options.max_bytes = std::strtoll(argv[++i], nullptr, 10);
      max_given = true;
      if (options.max_bytes < 8) {
        std::fprintf(stderr, "dist-bench-gpu: --max-bytes must be at least 8\n");
        std::exit(2);
      }
    } else {
      std::fprintf(stderr, "usage: %s [--quick] [--max-bytes N]\n", argv[0]);
      std::exit(2);
    }
  }
  if (options.quick && !max_given) options.max_bytes = kMiB;
  return options;
}

std::vector<int64_t> Sizes(const Options& options) {
  std::vector<int64_t> sizes;
  for (int64_t bytes = 8; bytes <= options.max_bytes; bytes *= (options.quick ? 16 : 4)) sizes.push_back(bytes);
  return sizes;
}

int64_t Iterations(const Options& options, int64_t bytes) {
  if (options.quick) return 3;
  return std::clamp<int64_t>((4 * 1024 * kMiB) / bytes, 10, 200);
}

double BusFactor(int32_t n) { return n > 1 ? 2.0 * (n - 1) / n : 1.0; }

// ---- The library: Mirrored over every GPU ----

struct LibraryJob {
  std::vector<dist_value_t*> inputs;  // replica r's tensor on GPU r, every element r + 1
  int64_t iterations = 0;
  int64_t count = 0;
  bool into = false;   // dist_context_all_reduce_into one output made before the loop
  double seconds = 0;  // replica 0's timed loop, after one untimed call
  std::string problem;
};

dist_status_t LibraryReplica(dist_context_t* context, const dist_value_t* const*, int32_t,
                             dist_value_t**, int32_t, void* user_data) {
  auto* job = static_cast<LibraryJob*>(user_data);
  int32_t replica = 0;
  int32_t n = 0;
  dist_status_t status = dist_context_replica_id(context, &replica);
  if (status == DIST_OK) status = dist_context_num_replicas_in_sync(context, &n);
  if (status != DIST_OK) return status;
  const dist_value_t* input = job->inputs[static_cast<size_t>(replica)];
  dist_value_t* out = nullptr;
  if (job->into) {
    const char* device = nullptr;
    status = dist_context_device(context, &device);
    std::vector<float> zeros(static_cast<size_t>(job->count), 0.0f);
    const int64_t dims[1] = {job->count};
    if (status == DIST_OK) {
      status = dist_tensor_create(DIST_FLOAT32, dims, 1, zeros.data(), zeros.size() * sizeof(float), device, &out);
    }
    if (status != DIST_OK) return status;
  }
  auto start = Clock::now();
  for (int64_t i = -1; i < job->iterations; ++i) {
    if (i == 0) start = Clock::now();  // iteration -1 warms up (allocations, NCCL's setup)
    if (job->into) {
      status = dist_context_all_reduce_into(context, DIST_REDUCE_SUM, input, out);
    } else {
      dist_value_destroy(out);
      out = nullptr;
      status = dist_context_all_reduce(context, DIST_REDUCE_SUM, input, &out);
    }
    if (status != DIST_OK) {
      dist_value_destroy(out);
      return status;
    }
  }
  if (replica == 0) job->seconds = Seconds(Clock::now() - start);
  // Replica r contributed r + 1 everywhere: the sum is n (n + 1) / 2, exact in float32.
  dist_value_t* host = nullptr;
  status = dist_tensor_copy_to_device(out, "CPU:0", &host);
  if (status == DIST_OK) {
    void* data = nullptr;
    status = dist_tensor_data(host, &data);
    const float expected = static_cast<float>(n * (n + 1) / 2);
    const float* f = static_cast<const float*>(data);
    if (status == DIST_OK && replica == 0 && (f[0] != expected || f[job->count - 1] != expected)) {
      job->problem = "wrong sum: " + std::to_string(f[0]) + ", expected " + std::to_string(expected);
    }
  }
  dist_value_destroy(host);
  dist_value_destroy(out);
  return status;
}

dist_strategy_t* MirroredOverGpus(const char* algo) {
  dist_cross_device_ops_t* ops = nullptr;
  if (std::strcmp(algo, "nccl") == 0) CHECK_DIST(dist_cross_device_ops_create_nccl_all_reduce(1, &ops));
  if (std::strcmp(algo, "one") == 0) CHECK_DIST(dist_cross_device_ops_create_reduction_to_one_device(nullptr, &ops));
  if (std::strcmp(algo, "hier") == 0) CHECK_DIST(dist_cross_device_ops_create_hierarchical_copy(1, &ops));
  dist_strategy_t* strategy = nullptr;
  CHECK_DIST(dist_strategy_create_mirrored(nullptr, 0, ops, &strategy));
  dist_cross_device_ops_destroy(ops);
  return strategy;
}

// Seconds per all-reduce of `bytes` through `strategy`, or a negative value with a message.
// `into`: through dist_context_all_reduce_into, no output allocated per call.
double TimeLibrary(dist_strategy_t* strategy, int64_t bytes, int64_t iterations, std::string& problem,
                   bool into = false) {
  int32_t n = 0;
  CHECK_DIST(dist_strategy_num_replicas_in_sync(strategy, &n));
  LibraryJob job;
  job.iterations = iterations;
  job.count = bytes / 4;
  job.into = into;
  for (int32_t r = 0; r < n; ++r) {
    const char* device = nullptr;
    CHECK_DIST(dist_strategy_worker_device(strategy, r, &device));
    std::vector<float> values(static_cast<size_t>(job.count), static_cast<float>(r + 1));
    const int64_t dims[1] = {job.count};
    dist_value_t* t = nullptr;
    CHECK_DIST(dist_tensor_create(DIST_FLOAT32, dims, 1, values.data(), static_cast<size_t>(bytes), device, &t));
    job.inputs.push_back(t);
  }
  const dist_status_t status = dist_strategy_run(strategy, LibraryReplica, &job, nullptr, 0, nullptr, 0);
  for (dist_value_t* t : job.inputs) dist_value_destroy(t);
  if (status != DIST_OK) {
    problem = dist_last_error_message();
    return -1;
  }
  if (!job.problem.empty()) {
    problem = job.problem;
    return -1;
  }
  return job.seconds / static_cast<double>(iterations);
}

// ---- Raw NCCL and the copy ceiling, on the CUDA runtime directly ----

class RawNccl {
 public:
  // Communicators and buffers on GPUs 0 ... n-1; ok() false with why() when unavailable.
  RawNccl(int32_t n, int64_t max_bytes) : n_(n) {
    int count = 0;
    cudaError_t error = cudaGetDeviceCount(&count);
    if (error != cudaSuccess) {
      Fail(std::string("cudaGetDeviceCount: ") + cudaGetErrorString(error));
      return;
    }
    if (count < n) {
      Fail("the CUDA runtime sees " + std::to_string(count) + " GPUs, the library " + std::to_string(n));
      return;
    }
    comms_.resize(static_cast<size_t>(n));
    std::vector<int> devices(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; ++i) devices[static_cast<size_t>(i)] = i;
    const ncclResult_t result = ncclCommInitAll(comms_.data(), n, devices.data());
    if (result != ncclSuccess) {
      comms_.clear();
      Fail(std::string("ncclCommInitAll: ") + ncclGetErrorString(result));
      return;
    }
    for (int32_t i = 0; i < n; ++i) {
      cudaSetDevice(i);
      cudaStream_t stream = nullptr;
      void* send = nullptr;
      void* recv = nullptr;
      if (cudaStreamCreate(&stream) != cudaSuccess || cudaMalloc(&send, static_cast<size_t>(max_bytes)) != cudaSuccess ||
          cudaMalloc(&recv, static_cast<size_t>(max_bytes)) != cudaSuccess) {
        Fail("allocating the raw NCCL buffers failed");
        return;
      }
      cudaMemset(send, 0, static_cast<size_t>(max_bytes));
      streams_.push_back(stream);
      send_.push_back(send);
      recv_.push_back(recv);
    }
    ok_ = true;
  }
  ~RawNccl() {
    for (size_t i = 0; i < send_.size(); ++i) {
      cudaSetDevice(static_cast<int>(i));
      cudaFree(send_[i]);
      cudaFree(recv_[i]);
      cudaStreamDestroy(streams_[i]);
    }
    for (ncclComm_t comm : comms_) ncclCommDestroy(comm);
  }
  bool ok() const { return ok_; }
  const std::string& why() const { return why_; }

  // Seconds per allocate-and-release as the plugin does it for every collective output:
  // cudaMallocAsync on the legacy stream, waiting for that stream, cudaFreeAsync.
  double TimePoolAllocation(int64_t iterations) {
    cudaSetDevice(0);
    auto run = [] {
      void* p = nullptr;
      cudaMallocAsync(&p, 8, cudaStreamLegacy);
      cudaStreamSynchronize(cudaStreamLegacy);
      cudaFreeAsync(p, cudaStreamLegacy);
    };
    run();
    const auto start = Clock::now();
    for (int64_t k = 0; k < iterations; ++k) run();
    return Seconds(Clock::now() - start) / static_cast<double>(iterations);
  }

  // Seconds per cudaStreamQuery of an idle stream (the library's wait polls it).
  double TimeStreamQuery(int64_t iterations) {
    cudaSetDevice(0);
    const auto start = Clock::now();
    for (int64_t k = 0; k < iterations; ++k) (void)cudaStreamQuery(streams_[0]);
    return Seconds(Clock::now() - start) / static_cast<double>(iterations);
  }

  // Seconds per ncclAllReduce of `bytes` on every GPU (one group call, then every stream).
  double TimeAllReduce(int64_t bytes, int64_t iterations) {
    auto run = [&] {
      ncclGroupStart();
      for (int32_t i = 0; i < n_; ++i) {
        ncclAllReduce(send_[static_cast<size_t>(i)], recv_[static_cast<size_t>(i)], static_cast<size_t>(bytes / 4),
                      ncclFloat32, ncclSum, comms_[static_cast<size_t>(i)], streams_[static_cast<size_t>(i)]);
      }
      ncclGroupEnd();
      for (int32_t i = 0; i < n_; ++i) {
        cudaSetDevice(i);
        cudaStreamSynchronize(streams_[static_cast<size_t>(i)]);
      }
    };
    run();  // warm-up
    const auto start = Clock::now();
    for (int64_t k = 0; k < iterations; ++k) run();
    return Seconds(Clock::now() - start) / static_cast<double>(iterations);
  }

  // Seconds per 8-byte ncclAllReduce waited for by polling, as the library must (a blocking
  // wait could hang on a lost peer): cudaStreamQuery, or cudaEventRecord then cudaEventQuery.
  double TimeAllReducePolled(bool with_event, int64_t iterations) {
    std::vector<cudaEvent_t> events(static_cast<size_t>(n_), nullptr);
    for (int32_t i = 0; i < n_; ++i) {
      cudaSetDevice(i);
      if (cudaEventCreateWithFlags(&events[static_cast<size_t>(i)], cudaEventDisableTiming) != cudaSuccess) return -1;
    }
    auto run = [&] {
      ncclGroupStart();
      for (int32_t i = 0; i < n_; ++i) {
        ncclAllReduce(send_[static_cast<size_t>(i)], recv_[static_cast<size_t>(i)], 2, ncclFloat32, ncclSum,
                      comms_[static_cast<size_t>(i)], streams_[static_cast<size_t>(i)]);
      }
      ncclGroupEnd();
      for (int32_t i = 0; i < n_; ++i) {
        const auto u = static_cast<size_t>(i);
        cudaSetDevice(i);
        if (with_event) {
          cudaEventRecord(events[u], streams_[u]);
          while (cudaEventQuery(events[u]) == cudaErrorNotReady) {
          }
        } else {
          while (cudaStreamQuery(streams_[u]) == cudaErrorNotReady) {
          }
        }
      }
    };
    run();
    const auto start = Clock::now();
    for (int64_t k = 0; k < iterations; ++k) run();
    const double seconds = Seconds(Clock::now() - start) / static_cast<double>(iterations);
    for (int32_t i = 0; i < n_; ++i) cudaEventDestroy(events[static_cast<size_t>(i)]);
    return seconds;
  }

  // Seconds per device-to-device copy of `bytes` on GPU 0 (waited for each time, like the
  // library's calls).
  double TimeCopy(int64_t bytes, int64_t iterations) {
    cudaSetDevice(0);
    auto run = [&] {
      cudaMemcpyAsync(recv_[0], send_[0], static_cast<size_t>(bytes), cudaMemcpyDeviceToDevice, streams_[0]);
      cudaStreamSynchronize(streams_[0]);
    };
    run();
    const auto start = Clock::now();
    for (int64_t k = 0; k < iterations; ++k) run();
    return Seconds(Clock::now() - start) / static_cast<double>(iterations);
  }

 private:
  void Fail(std::string why) { why_ = std::move(why); }

  const int32_t n_;
  bool ok_ = false;
  std::string why_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<void*> send_;
  std::vector<void*> recv_;
};

std::string SizeText(int64_t bytes) {
  char text[32];
  if (bytes >= kMiB) {
    std::snprintf(text, sizeof text, "%lld MiB", static_cast<long long>(bytes / kMiB));
  } else if (bytes >= kKiB) {
    std::snprintf(text, sizeof text, "%lld KiB", static_cast<long long>(bytes / kKiB));
  } else {
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  }
  return text;
}

double GBps(int64_t bytes, double seconds) { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }

void AllReduceTable(const Options& options, int32_t n, RawNccl& raw) {
  std::printf("\n# all-reduce, float32 SUM, %d GPUs of one process: MirroredStrategy (NcclAllReduce) "
              "vs a raw ncclAllReduce loop\n", n);
  if (!raw.ok()) std::printf("# raw NCCL unavailable: %s\n", raw.why().c_str());
  std::printf("# %10s %12s %10s %10s %12s %10s %10s %10s %12s %10s\n", "size", "ours us", "algbw", "busbw",
              "into us", "nccl us", "algbw", "busbw", "ours/nccl", "into/nccl");
  dist_strategy_t* strategy = MirroredOverGpus("nccl");
  bool met = true;
  bool measured = false;
  for (int64_t bytes : Sizes(options)) {
    const int64_t iterations = Iterations(options, bytes);
    std::string problem;
    const double ours = TimeLibrary(strategy, bytes, iterations, problem);
    const double into = ours < 0 ? -1 : TimeLibrary(strategy, bytes, iterations, problem, true);
    if (ours < 0 || into < 0) {
      std::printf("  %10s  library all-reduce failed: %s\n", SizeText(bytes).c_str(), problem.c_str());
      continue;
    }
    const double ours_bus = GBps(bytes, ours) * BusFactor(n);
    if (!raw.ok()) {
      std::printf("  %10s %12.2f %10.2f %10.2f %12.2f %10s %10s %10s %12s %10s\n", SizeText(bytes).c_str(),
                  ours * 1e6, GBps(bytes, ours), ours_bus, into * 1e6, "-", "-", "-", "-", "-");
      continue;
    }
    const double nccl = raw.TimeAllReduce(bytes, iterations);
    const double nccl_bus = GBps(bytes, nccl) * BusFactor(n);
    const double ratio = nccl_bus > 0 ? ours_bus / nccl_bus : 0;
    if (bytes >= kMiB) {
      measured = true;
      met = met && ratio >= 0.9;
    }
    std::printf("  %10s %12.2f %10.2f %10.2f %12.2f %10.2f %10.2f %10.2f %12.2f %10.2f\n", SizeText(bytes).c_str(),
                ours * 1e6, GBps(bytes, ours), ours_bus, into * 1e6, nccl * 1e6, GBps(bytes, nccl), nccl_bus, ratio,
                into > 0 ? nccl / into : 0);
  }
  dist_strategy_destroy(strategy);
  if (measured) std::printf("# target >= 0.9x raw NCCL busbw from 1 MiB: %s\n", met ? "met" : "NOT met");
}

void KernelTable(const Options& options, int32_t n, RawNccl& raw) {
  std::printf("\n# reduction kernels, float32 SUM, %d GPUs: ReductionToOneDevice and HierarchicalCopy "
              "vs a device-to-device copy on GPU 0 (bandwidth = bytes / time)\n", n);
  if (!raw.ok()) std::printf("# copy ceiling unavailable: %s\n", raw.why().c_str());
  std::printf("# %10s %12s %10s %12s %10s %12s %10s %8s %8s\n", "size", "one us", "GB/s", "hier us",
              "GB/s", "copy us", "GB/s", "one/copy", "hier/copy");
  dist_strategy_t* one = MirroredOverGpus("one");
  dist_strategy_t* hier = MirroredOverGpus("hier");
  for (int64_t bytes : Sizes(options)) {
    const int64_t iterations = Iterations(options, bytes);
    std::string problem;
    const double t_one = TimeLibrary(one, bytes, iterations, problem);
    const double t_hier = t_one < 0 ? -1 : TimeLibrary(hier, bytes, iterations, problem);
    if (t_one < 0 || t_hier < 0) {
      std::printf("  %10s  library all-reduce failed: %s\n", SizeText(bytes).c_str(), problem.c_str());
      continue;
    }
    const double copy = raw.ok() ? raw.TimeCopy(bytes, iterations) : -1;
    if (copy > 0) {
      std::printf("  %10s %12.2f %10.2f %12.2f %10.2f %12.2f %10.2f %8.2f %8.2f\n", SizeText(bytes).c_str(),
                  t_one * 1e6, GBps(bytes, t_one), t_hier * 1e6, GBps(bytes, t_hier), copy * 1e6,
                  GBps(bytes, copy), copy / t_one, copy / t_hier);
    } else {
      std::printf("  %10s %12.2f %10.2f %12.2f %10.2f %12s %10s %8s %8s\n", SizeText(bytes).c_str(),
                  t_one * 1e6, GBps(bytes, t_one), t_hier * 1e6, GBps(bytes, t_hier), "-", "-", "-", "-");
    }
  }
  dist_strategy_destroy(one);
  dist_strategy_destroy(hier);
  std::printf("# target: the kernels at >= 0.85 of the copy's bandwidth\n");
}

void OverheadTable(const Options& options, int32_t n, RawNccl& raw) {
  const int64_t iterations = options.quick ? 20 : 2000;
  std::printf("\n# the fixed cost of one call, 8 bytes, microseconds (each the mean of %lld)\n",
              static_cast<long long>(iterations));
  std::string problem;
  dist_strategy_t* gpus = MirroredOverGpus("nccl");
  const double library_gpu = TimeLibrary(gpus, 8, iterations, problem);
  const double library_gpu_into = TimeLibrary(gpus, 8, iterations, problem, true);
  dist_strategy_destroy(gpus);
  const char* cpu_device = "CPU:0";
  dist_strategy_t* cpu = nullptr;
  CHECK_DIST(dist_strategy_create_mirrored(&cpu_device, 1, nullptr, &cpu));
  const double library_cpu = TimeLibrary(cpu, 8, iterations, problem);
  dist_strategy_destroy(cpu);
  auto row = [](const char* what, double seconds) {
    if (seconds < 0) {
      std::printf("  %-62s %10s\n", what, "-");
    } else {
      std::printf("  %-62s %10.2f\n", what, seconds * 1e6);
    }
  };
  char label[96];
  std::snprintf(label, sizeof label, "library all-reduce, Mirrored over %d GPU(s), NcclAllReduce", n);
  row(label, library_gpu);
  row("the same through all_reduce_into (its output made once)", library_gpu_into);
  row("library all-reduce, Mirrored over CPU:0 (the core, no GPU)", library_cpu);
  if (!problem.empty()) std::printf("# library: %s\n", problem.c_str());
  if (!raw.ok()) {
    std::printf("# raw rows unavailable: %s\n", raw.why().c_str());
    return;
  }
  row("raw ncclAllReduce + cudaStreamSynchronize", raw.TimeAllReduce(8, iterations));
  row("raw ncclAllReduce + polling cudaStreamQuery", raw.TimeAllReducePolled(false, iterations));
  row("raw ncclAllReduce + cudaEventRecord + polling cudaEventQuery", raw.TimeAllReducePolled(true, iterations));
  row("raw cudaMemcpyAsync device-to-device + cudaStreamSynchronize", raw.TimeCopy(8, iterations));
  row("plugin allocate + release (pool, legacy-stream wait)", raw.TimePoolAllocation(iterations));
  row("cudaStreamQuery of an idle stream", raw.TimeStreamQuery(iterations));
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = ParseArgs(argc, argv);
  const char* reason = nullptr;
  CHECK_DIST(dist_gpu_unavailable_reason(&reason));
  if (reason != nullptr && reason[0] != '\0') {
    std::printf("# dist-bench --gpu: no GPU (%s): nothing to measure\n", reason);
    return 0;
  }
  dist_strategy_t* probe = MirroredOverGpus("nccl");
  int32_t n = 0;
  CHECK_DIST(dist_strategy_num_replicas_in_sync(probe, &n));
  dist_strategy_destroy(probe);
  std::printf("# dist-bench --gpu%s: %d GPU replicas, sizes 8 B to %s\n", options.quick ? " (--quick)" : "", n,
              SizeText(options.max_bytes).c_str());
  RawNccl raw(n, options.max_bytes);
  AllReduceTable(options, n, raw);
  KernelTable(options, n, raw);
  OverheadTable(options, n, raw);
  return 0;
}
