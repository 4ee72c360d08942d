// dist-bench --multi-worker: MultiWorkerMirroredStrategy's all-reduce (dist_context_all_reduce
// under dist_strategy_run, float32 SUM) against raw Gloo's ring all-reduce (gloo::allreduce,
// the options API) between the same processes, on the same sizes, in the same run.
//
// The strategy runs twice, over Gloo's TCP transport and (when the workers share a host)
// over the shared-memory transport. Every side is timed per call on worker 0 (median of
// many calls after a warm-up); the raw side reduces in place with no header exchange, no
// agreement check and no local replicas, so the difference is what the library adds.
// Targets (issue 16): over TCP at or below raw Gloo from 256 KiB; over shared memory 8
// bytes in 2 us and, from 1 MiB, 1.5x the bus bandwidth of Open MPI's vader
// (tools/mpi_bench/run_vader.sh, whose buffers are made once: the "into" column, which
// reduces into one output, is its like). The "wrap" column reduces into one output too, but
// with both tensors over the caller's own memory (dist_tensor_wrap): a peer cannot map
// that, so the bytes go through the transport's rings instead of being read in place.
// A second table times broadcasts (from worker 0) and all-gathers over shared memory the
// same two ways: inputs the library allocated (copied out of their owners' memory from
// 64 KiB) and inputs over the caller's memory (through the rings); the MPI reference is
// run_vader.sh --collective bcast / allgather.
//
// Every side rewrites its input before each timed call (outside the timing), as a training
// step writes its gradients: a peer that reads an input in place then finds it in its
// owner's cache alone, not shared from the call before (an input written once made the
// in-place all-gather look three times faster than it is). mpi-allreduce-bench does the same.
#include "multi_worker_bench.h"

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <signal.h>

#include "distribute/distribute.h"
#include "gloo/allreduce.h"
#include "gloo/barrier.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/file_store.h"
#include "gloo/transport/tcp/device.h"

namespace dist_bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

struct Failure {};

void Check(dist_status_t status, const char* what) {
  if (status == DIST_OK) return;
  std::fprintf(stderr, "dist-bench: %s failed: %s: %s\n", what, dist_status_name(status),
               dist_last_error_message());
  throw Failure{};
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 == 1 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

int Iterations(int64_t bytes, bool quick) {
  const int64_t budget = (quick ? 8 : 64) * kMiB;  // bytes reduced per size, roughly
  return static_cast<int>(std::clamp<int64_t>(budget / bytes, quick ? 5 : 10, quick ? 200 : 1000));
}
constexpr int kWarmup = 5;

std::string FormatBytes(int64_t bytes) {
  char buf[32];
  if (bytes >= kMiB) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " MiB", bytes / kMiB);
  } else if (bytes >= kKiB) {
    std::snprintf(buf, sizeof buf, "%" PRId64 " KiB", bytes / kKiB);
  } else {
    std::snprintf(buf, sizeof buf, "%" PRId64 " B", bytes);
  }
  return buf;
}

// ---- ours ----

// How the timed loop gets its tensors.
enum class Buffers {
  kNewOutput,    // dist_context_all_reduce: a new output each call
  kInto,         // dist_context_all_reduce_into one output made before the loop
  kWrappedInto,  // the same, input and output over the caller's memory (dist_tensor_wrap)
  kWrappedInput,  // a new output each call, the input over the caller's memory
};

// Which collective the timed loop calls.
enum class Call {
  kAllReduce,  // dist_context_all_reduce(_into), SUM
  kBroadcast,  // dist_context_broadcast from replica 0 (a new output each call)
  kAllGather,  // dist_context_all_gather along axis 0 (a new output each call)
};

struct OursArgs {
  int64_t bytes;
  int iterations;
  std::vector<double>* us;
  Buffers buffers;
  Call call = Call::kAllReduce;
};

void ReleaseWrapped(void* data, void*) { std::free(data); }

dist_value_t* MakeTensor(const int64_t* shape, int64_t bytes, bool wrapped) {
  dist_value_t* tensor = nullptr;
  if (!wrapped) {
    Check(dist_tensor_create(DIST_FLOAT32, shape, 1, nullptr, 0, "CPU:0", &tensor), "dist_tensor_create");
    return tensor;
  }
  void* data = std::calloc(static_cast<size_t>(bytes), 1);
  if (data == nullptr) throw Failure();
  Check(dist_tensor_wrap(DIST_FLOAT32, shape, 1, data, static_cast<size_t>(bytes), "CPU:0", ReleaseWrapped,
                         nullptr, &tensor), "dist_tensor_wrap");
  return tensor;
}

dist_status_t TimeCollective(dist_context_t* context, const dist_value_t* const*, int32_t,
                             dist_value_t**, int32_t, void* user_data) {
  auto* args = static_cast<OursArgs*>(user_data);
  int32_t replica = 0;
  Check(dist_context_replica_id(context, &replica), "dist_context_replica_id");
  const int64_t shape[1] = {args->bytes / 4};
  const bool wrapped = args->buffers == Buffers::kWrappedInto || args->buffers == Buffers::kWrappedInput;
  const bool into = args->buffers == Buffers::kInto || args->buffers == Buffers::kWrappedInto;
  dist_value_t* tensor = MakeTensor(shape, args->bytes, wrapped);
  dist_value_t* output = into ? MakeTensor(shape, args->bytes, wrapped) : nullptr;
  void* input = nullptr;
  Check(dist_tensor_data(tensor, &input), "dist_tensor_data");
  for (int i = 0; i < kWarmup + args->iterations; ++i) {
    dist_value_t* out = nullptr;
    std::memset(input, 1 + i % 7, static_cast<size_t>(args->bytes));  // finite floats, never denormal
    const auto t0 = Clock::now();
    if (args->call == Call::kBroadcast) {
      Check(dist_context_broadcast(context, tensor, 0, &out), "dist_context_broadcast");
    } else if (args->call == Call::kAllGather) {
      Check(dist_context_all_gather(context, tensor, 0, &out), "dist_context_all_gather");
    } else if (into) {
      Check(dist_context_all_reduce_into(context, DIST_REDUCE_SUM, tensor, output), "dist_context_all_reduce_into");
    } else {
      Check(dist_context_all_reduce(context, DIST_REDUCE_SUM, tensor, &out), "dist_context_all_reduce");
    }
    const auto t1 = Clock::now();
    dist_value_destroy(out);
    if (replica == 0 && i >= kWarmup) {
      args->us->push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
  }
  dist_value_destroy(output);
  dist_value_destroy(tensor);
  return DIST_OK;
}

// ---- raw Gloo ----

// A directory for Gloo's file rendezvous, the same on every worker: the chief draws a
// nonce, and a variable created in the strategy's scope carries it to every worker.
std::string AgreeOnDirectory() {
  struct Nonce {
    uint64_t value;
  } nonce{std::random_device{}() * 2654435761ull ^ static_cast<uint64_t>(Clock::now().time_since_epoch().count())};
  const int64_t shape[1] = {1};
  dist_value_t* proposal = nullptr;
  Check(dist_tensor_create(DIST_INT64, shape, 1, &nonce.value, sizeof nonce.value, "CPU:0", &proposal),
        "dist_tensor_create");
  // A variable starts from the chief's value on every worker.
  dist_value_t* variable = nullptr;
  Check(dist_variable_create(proposal, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_ONLY_FIRST_REPLICA, "bench_nonce",
                             &variable),
        "dist_variable_create");
  dist_value_t* agreed = nullptr;
  Check(dist_variable_read(variable, &agreed), "dist_variable_read");
  void* data = nullptr;
  Check(dist_tensor_data(agreed, &data), "dist_tensor_data");
  std::memcpy(&nonce.value, data, sizeof nonce.value);
  dist_value_destroy(agreed);
  dist_value_destroy(variable);
  dist_value_destroy(proposal);
  return (std::filesystem::temp_directory_path() / ("dist-bench-gloo-" + std::to_string(nonce.value))).string();
}

std::vector<double> TimeRawGloo(const std::shared_ptr<gloo::Context>& context, int64_t bytes,
                                int iterations, uint32_t* tag) {
  std::vector<float> buffer(static_cast<size_t>(bytes / 4), 1.0f);
  std::vector<double> us;
  for (int i = 0; i < kWarmup + iterations; ++i) {
    std::memset(buffer.data(), 1 + i % 7, buffer.size() * sizeof(float));
    gloo::AllreduceOptions options(context);
    options.setInput(buffer.data(), buffer.size());
    options.setOutput(buffer.data(), buffer.size());
    options.setReduceFunction(
        static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
    options.setTag((*tag)++);
    const auto t0 = Clock::now();
    gloo::allreduce(options);
    const auto t1 = Clock::now();
    if (i >= kWarmup) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  return us;
}

// A MultiWorkerMirroredStrategy over `shared_memory` (the replicas per worker from
// DIST_REPLICAS_PER_WORKER, default 1); null when the workers cannot share memory (on
// several hosts: every worker is refused alike).
dist_strategy_t* CreateStrategy(dist_shared_memory_t shared_memory) {
  dist_communication_options_t* options = nullptr;
  Check(dist_communication_options_create(&options), "dist_communication_options_create");
  Check(dist_communication_options_set_shared_memory(options, shared_memory),
        "dist_communication_options_set_shared_memory");
  dist_strategy_t* strategy = nullptr;
  const dist_status_t status = dist_strategy_create_multi_worker_mirrored(nullptr, options, &strategy);
  dist_communication_options_destroy(options);
  if (status == DIST_FAILED_PRECONDITION && shared_memory == DIST_SHARED_MEMORY_ON) return nullptr;
  Check(status, "dist_strategy_create_multi_worker_mirrored (run under distrun)");
  return strategy;
}

std::vector<int64_t> Sizes(int64_t max_bytes) {
  std::vector<int64_t> sizes;
  for (int64_t bytes = 8; bytes <= max_bytes; bytes *= (bytes < kKiB ? 128 : 4)) sizes.push_back(bytes);
  return sizes;
}

// Worker 0's median time per size of the strategy's all-reduce (or `call`).
std::vector<double> TimeStrategy(dist_strategy_t* strategy, const std::vector<int64_t>& sizes, bool quick,
                                 Buffers buffers = Buffers::kNewOutput, Call call = Call::kAllReduce) {
  std::vector<double> medians;
  for (const int64_t bytes : sizes) {
    std::vector<double> us;
    OursArgs args{bytes, Iterations(bytes, quick), &us, buffers, call};
    Check(dist_strategy_run(strategy, TimeCollective, &args, nullptr, 0, nullptr, 0), "dist_strategy_run");
    medians.push_back(us.empty() ? 0.0 : Median(us));
  }
  return medians;
}

// nccl-tests' bus bandwidth of an all-reduce of `bytes` in `us` across `workers` (of a
// broadcast: bytes / time; of an all-gather of `bytes` per worker: n bytes / time (n-1)/n).
double BusBandwidthGBs(int64_t bytes, double us, int32_t workers, Call call = Call::kAllReduce) {
  const double factor = call == Call::kAllReduce   ? 2.0 * (workers - 1) / workers
                        : call == Call::kBroadcast ? 1.0
                                                   : static_cast<double>(workers - 1);
  return static_cast<double>(bytes) / (us * 1e-6) * factor / 1e9;
}

// Worker 0's medians of broadcasts and all-gathers over shared memory, alternated per size.
struct CopyRows {
  std::vector<double> bcast, bcast_wrapped, gather, gather_wrapped;
};

CopyRows TimeCopies(dist_strategy_t* shared, const std::vector<int64_t>& sizes, bool quick) {
  CopyRows rows;
  for (const int64_t bytes : sizes) {
    rows.bcast.push_back(TimeStrategy(shared, {bytes}, quick, Buffers::kNewOutput, Call::kBroadcast)[0]);
    rows.bcast_wrapped.push_back(TimeStrategy(shared, {bytes}, quick, Buffers::kWrappedInput, Call::kBroadcast)[0]);
    rows.gather.push_back(TimeStrategy(shared, {bytes}, quick, Buffers::kNewOutput, Call::kAllGather)[0]);
    rows.gather_wrapped.push_back(TimeStrategy(shared, {bytes}, quick, Buffers::kWrappedInput, Call::kAllGather)[0]);
  }
  return rows;
}

void PrintCopies(const CopyRows& rows, const std::vector<int64_t>& sizes, int32_t workers, bool quick) {
  std::printf("#\n# broadcast (from worker 0) and all-gather (axis 0, the size is each worker's block) over the "
              "shared-memory transport, a new output each call;\n# lib: inputs the library allocated (from 64 KiB "
              "copied straight out of their owners' memory); wrap: inputs over the caller's memory\n# "
              "(dist_tensor_wrap, through the rings). busbw as nccl-tests; MPI's reference: run_vader.sh "
              "--collective bcast / allgather\n");
  std::printf("#%10s %8s %12s %12s %9s %12s %12s %9s %10s %10s %10s %10s\n", "size", "iters", "bcast lib(us)",
              "bcast wrap", "wrap/lib", "gather lib", "gather wrap", "wrap/lib", "bc lib GB/s", "bc wrap",
              "ag lib GB/s", "ag wrap");
  for (size_t i = 0; i < sizes.size(); ++i) {
    const Call b = Call::kBroadcast, g = Call::kAllGather;
    std::printf(" %10s %8d %12.1f %12.1f %9.3f %12.1f %12.1f %9.3f %10.2f %10.2f %10.2f %10.2f\n",
                FormatBytes(sizes[i]).c_str(), Iterations(sizes[i], quick), rows.bcast[i], rows.bcast_wrapped[i],
                rows.bcast_wrapped[i] / rows.bcast[i], rows.gather[i], rows.gather_wrapped[i],
                rows.gather_wrapped[i] / rows.gather[i], BusBandwidthGBs(sizes[i], rows.bcast[i], workers, b),
                BusBandwidthGBs(sizes[i], rows.bcast_wrapped[i], workers, b),
                BusBandwidthGBs(sizes[i], rows.gather[i], workers, g),
                BusBandwidthGBs(sizes[i], rows.gather_wrapped[i], workers, g));
  }
}

}  // namespace

int RunMultiWorkerBench(int64_t max_bytes, bool quick) {
  // A dead peer must not kill this process through SIGPIPE while raw Gloo writes.
  signal(SIGPIPE, SIG_IGN);
  try {
    // Phase 1: the strategy over TCP (Gloo's transport), next to raw Gloo.
    dist_strategy_t* strategy = CreateStrategy(DIST_SHARED_MEMORY_OFF);
    dist_cluster_t* cluster = nullptr;
    Check(dist_cluster_from_tf_config(nullptr, &cluster), "dist_cluster_from_tf_config");
    int32_t workers = 0, rank = 0, in_sync = 0;
    Check(dist_cluster_num_workers(cluster, &workers), "dist_cluster_num_workers");
    Check(dist_cluster_task_index(cluster, &rank), "dist_cluster_task_index");
    // Raw Gloo listens on this task's own host, as the strategy's transport does (a
    // loopback address under distrun, the host's address across hosts).
    const char* task_type = nullptr;
    const char* address = nullptr;
    Check(dist_cluster_task_type(cluster, &task_type), "dist_cluster_task_type");
    Check(dist_cluster_task_address(cluster, task_type, rank, &address), "dist_cluster_task_address");
    std::string host(address, std::strrchr(address, ':'));
    if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
    if (host == "localhost") host = "127.0.0.1";
    Check(dist_strategy_num_replicas_in_sync(strategy, &in_sync), "dist_strategy_num_replicas_in_sync");
    dist_cluster_destroy(cluster);
    Check(dist_strategy_scope_enter(strategy), "dist_strategy_scope_enter");
    const std::string directory = AgreeOnDirectory();
    Check(dist_strategy_scope_exit(strategy), "dist_strategy_scope_exit");
    std::filesystem::create_directories(directory);
    gloo::transport::tcp::attr attr;
    attr.hostname = host;
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, workers);
    gloo::rendezvous::FileStore store(directory);
    context->connectFullMesh(store, device);
    uint32_t tag = 0;

    const std::vector<int64_t> sizes = Sizes(max_bytes);
    std::vector<double> tcp, gloo;
    for (const int64_t bytes : sizes) {
      tcp.push_back(TimeStrategy(strategy, {bytes}, quick)[0]);
      const std::vector<double> raw = TimeRawGloo(context, bytes, Iterations(bytes, quick), &tag);
      gloo.push_back(Median(raw));
    }
    dist_strategy_destroy(strategy);
    // Phase 2: the strategy over shared memory, when the workers share a host.
    std::vector<double> shm, shm_into, shm_wrapped;
    CopyRows copies;
    if (dist_strategy_t* shared = CreateStrategy(DIST_SHARED_MEMORY_ON); shared != nullptr) {
      // A strategy made right after another one runs slow for its first ~50 ms (the first
      // one's server is still winding down): one untimed row of small all-reduces first.
      (void)TimeStrategy(shared, {8}, quick);
      for (const int64_t bytes : sizes) {  // alternated, so that both see the same machine
        shm.push_back(TimeStrategy(shared, {bytes}, quick)[0]);
        shm_into.push_back(TimeStrategy(shared, {bytes}, quick, Buffers::kInto)[0]);
        shm_wrapped.push_back(TimeStrategy(shared, {bytes}, quick, Buffers::kWrappedInto)[0]);
      }
      copies = TimeCopies(shared, sizes, quick);
      dist_strategy_destroy(shared);
    }

    gloo::BarrierOptions barrier(context);
    barrier.setTag(tag++);
    gloo::barrier(barrier);
    context.reset();
    if (rank != 0) return 0;
    std::filesystem::remove_all(directory);
    std::printf("# dist-bench --multi-worker (distribute %s): all-reduce across %d workers x %d "
                "replica(s), float32 SUM\n", DIST_VERSION_STRING, workers, in_sync / workers);
    std::printf("# shm / tcp: dist_context_all_reduce in dist_strategy_run over the shared-memory "
                "transport / over Gloo's TCP transport;\n# shm into: dist_context_all_reduce_into an "
                "output made once (as an MPI benchmark reuses its buffers): from 64 KiB reduced in place out of\n# the "
                "peers' tensors; wrap: the same over the caller's memory (dist_tensor_wrap), which goes through "
                "the rings;\n# gloo: raw gloo::allreduce "
                "(ring, in place), same processes and sizes; medians of worker 0's calls; every input rewritten before each call\n# (outside the timing). MPI's "
                "shared-memory reference (Open MPI vader): tools/mpi_bench/run_vader.sh (busbw column "
                "alike)\n");
    std::printf("#%10s %8s %12s %12s %9s %12s %12s %9s %9s %9s %9s %9s\n", "size", "iters", "shm med(us)",
                "shm into(us)", "wrap(us)", "tcp med(us)", "gloo med(us)", "shm/gloo", "tcp/gloo", "shm GB/s",
                "into GB/s", "wrap GB/s");
    double worst_tcp_ratio = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      const bool have_shm = !shm.empty();
      char shm_us[16] = "-", into_us[16] = "-", shm_ratio[16] = "-", shm_bw[16] = "-", into_bw[16] = "-";
      char wrap_us[16] = "-", wrap_bw[16] = "-";
      if (have_shm) {
        std::snprintf(wrap_us, sizeof wrap_us, "%.1f", shm_wrapped[i]);
        std::snprintf(wrap_bw, sizeof wrap_bw, "%.2f", BusBandwidthGBs(sizes[i], shm_wrapped[i], workers));
        std::snprintf(shm_us, sizeof shm_us, "%.1f", shm[i]);
        std::snprintf(into_us, sizeof into_us, "%.1f", shm_into[i]);
        std::snprintf(shm_ratio, sizeof shm_ratio, "%.3f", shm[i] / gloo[i]);
        std::snprintf(shm_bw, sizeof shm_bw, "%.2f", BusBandwidthGBs(sizes[i], shm[i], workers));
        std::snprintf(into_bw, sizeof into_bw, "%.2f", BusBandwidthGBs(sizes[i], shm_into[i], workers));
      }
      std::printf(" %10s %8d %12s %12s %9s %12.1f %12.1f %9s %9.3f %9s %9s %9s\n", FormatBytes(sizes[i]).c_str(),
                  Iterations(sizes[i], quick), shm_us, into_us, wrap_us, tcp[i], gloo[i], shm_ratio,
                  tcp[i] / gloo[i], shm_bw, into_bw, wrap_bw);
      if (sizes[i] >= 256 * kKiB) worst_tcp_ratio = std::max(worst_tcp_ratio, tcp[i] / gloo[i]);
    }
    if (!shm.empty()) PrintCopies(copies, sizes, workers, quick);
    std::printf("#\n# targets (issue 16):\n");
    if (!shm.empty()) {
      std::printf("#   shm 8 B: %.1f us with a new value, %.1f us into  (target <= 2 us)  %s with a new "
                  "value, %s into\n", shm[0], shm_into[0], shm[0] <= 2.0 ? "met" : "NOT met",
                  shm_into[0] <= 2.0 ? "met" : "NOT met");
      std::printf("#   shm >= 1 MiB: bus bandwidth >= 1.5x Open MPI vader's (compare the into GB/s column "
                  "with run_vader.sh's busbw)\n");
    } else {
      std::printf("#   shm: the workers are on several hosts (no shared-memory rows)\n");
    }
    if (max_bytes >= 256 * kKiB) {
      std::printf("#   tcp >= 256 KiB: worst tcp/gloo = %.3f  (target <= 1.0)  %s\n", worst_tcp_ratio,
                  worst_tcp_ratio <= 1.0 ? "met" : "NOT met");
    }
    std::fflush(stdout);
    return 0;
  } catch (const Failure&) {
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dist-bench: raw Gloo failed: %s\n", e.what());
    return 1;
  }
}

}  // namespace dist_bench
