// A small "engine" that embeds distribute: a fixed-step N-body simulation on the engine's
// own thread pool, where every pool thread joins a strategy as one replica (bring your own
// threads) and the threads combine each step's quantities with all-reduce and all-gather
// without ever leaving the engine's threads.
//
//   engine [--bodies N] [--steps S] [--threads 1,2,4,8] [--hash-every K] [--check]
//   distrun -n 2 engine --threads 2 [--steps S]        (lockstep between processes)
//
// In one process it runs the single-threaded reference (no library), then, for each thread
// count, the simulation with the library's collectives and with the engine's own exchange
// (shared arrays and a barrier), and prints the final state hashes and the time per step.
// Every hash must equal the reference's: --check makes a mismatch exit with status 1.
// Under distrun (TF_CONFIG set) every process runs its threads as replicas of one
// MultiWorkerMirroredStrategy and prints the state hash every K steps: the processes
// print the same hashes, equal to the one-process run's.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "distribute/distribute.hpp"
#include "nbody.h"
#include "thread_pool.h"

namespace engine {
namespace {

constexpr double kFrameBudgetMs = 1000.0 / 60.0;
constexpr uint64_t kSeed = 2026;

struct Options {
  int32_t bodies = 512;
  int64_t steps = 10000;
  int64_t hash_every = 1000;
  double dt = 0.001;
  std::vector<int> threads = {1, 2, 4, 8};
  bool threads_given = false;
  bool check = false;
};

using Clock = std::chrono::steady_clock;

double MillisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// What one run reports: the hash every hash_every steps (the last one at `steps`), the
// wall time per step, and replica 0's time inside the library's collectives per step.
struct RunReport {
  std::vector<std::pair<int64_t, uint64_t>> hashes;
  double ms_per_step = 0;
  double collective_ms_per_step = 0;
  dist::Status status;
};

// One replica's view of the world: a full copy of the positions (refreshed by the
// all-gather each step) and its own slice of bodies to advance.
struct Replica {
  World world;
  int32_t begin = 0;
  int32_t end = 0;
  double collective_ms = 0;
};

// One step of replica `r` with the library's collectives: kick its bodies, combine the
// energy (exact int64 SUM) and the top speed (MAX), drift, and all-gather the positions.
dist::Status LibraryStep(dist::ReplicaContext& context, Replica& r, double dt) {
  World& w = r.world;
  Kick(w.position, r.begin, r.end, dt, w.velocity);
  int64_t energy = KineticEnergyFixed(w.velocity, r.begin, r.end);
  double top_speed2 = MaxSpeedSquared(w.velocity, r.begin, r.end);

  const Clock::time_point t0 = Clock::now();
  // The engine's own scalars and arrays are wrapped, not copied in.
  dist::Result<dist::Value> energy_in = dist::wrap<int64_t>({&energy, 1}, {});
  if (!energy_in) return energy_in.status();
  dist::Result<dist::Value> total = context.all_reduce(DIST_REDUCE_SUM, *energy_in);
  if (!total) return total.status();
  dist::Result<dist::Value> speed_in = dist::wrap<double>({&top_speed2, 1}, {});
  if (!speed_in) return speed_in.status();
  dist::Result<dist::Value> top = context.all_reduce(DIST_REDUCE_MAX, *speed_in);
  if (!top) return top.status();
  dist::Result<int64_t> total_energy = total->scalar<int64_t>();
  dist::Result<double> top_speed = top->scalar<double>();
  if (!total_energy) return total_energy.status();
  if (!top_speed) return top_speed.status();
  r.collective_ms += MillisecondsSince(t0);

  Drift(ComputeControls(*total_energy, *top_speed, w.num_bodies, dt), r.begin, r.end, w.velocity, w.position);

  const Clock::time_point t1 = Clock::now();
  const int32_t count = r.end - r.begin;
  dist::Result<dist::Value> mine =
      dist::wrap<double>({&w.position[2 * static_cast<size_t>(r.begin)], 2 * static_cast<size_t>(count)},
                         {count, 2});
  if (!mine) return mine.status();
  dist::Result<dist::Value> all = context.all_gather(*mine, 0);
  if (!all) return all.status();
  dist::Result<dist::Span<double>> positions = all->data<double>();
  if (!positions) return positions.status();
  std::copy(positions->begin(), positions->end(), w.position.begin());
  r.collective_ms += MillisecondsSince(t1);
  return dist::Status();
}

// Brings every replica's velocities together (for the state hash).
dist::Status GatherVelocities(dist::ReplicaContext& context, Replica& r) {
  const int32_t count = r.end - r.begin;
  dist::Result<dist::Value> mine = dist::wrap<double>(
      {&r.world.velocity[2 * static_cast<size_t>(r.begin)], 2 * static_cast<size_t>(count)}, {count, 2});
  if (!mine) return mine.status();
  dist::Result<dist::Value> all = context.all_gather(*mine, 0);
  if (!all) return all.status();
  dist::Result<dist::Span<double>> velocities = all->data<double>();
  if (!velocities) return velocities.status();
  std::copy(velocities->begin(), velocities->end(), r.world.velocity.begin());
  return dist::Status();
}

// Runs the simulation on a pool of `threads` engine threads, each joined to `strategy`
// as local replica t. `first_replica` and `num_replicas` place this process's replicas
// among all of them (other processes hold the rest under MultiWorkerMirrored).
RunReport RunWithLibrary(dist::Strategy& strategy, int threads, const Options& o, bool print_hashes) {
  RunReport report;
  dist::Result<int32_t> total_replicas = strategy.num_replicas_in_sync();
  if (!total_replicas) {
    report.status = total_replicas.status();
    return report;
  }
  const World start = MakeWorld(o.bodies, kSeed);
  std::vector<Replica> replicas(static_cast<size_t>(threads));
  std::vector<std::optional<dist::JoinedReplica>> joined(static_cast<size_t>(threads));
  std::vector<dist::Status> errors(static_cast<size_t>(threads));
  ThreadPool pool(threads);

  // Frame 0: every engine thread joins as its replica and takes its slice of the bodies.
  auto join = [&](int t) {
    dist::Result<dist::JoinedReplica> j = strategy.join_replica(t);
    if (!j) {
      errors[t] = j.status();
      return;
    }
    joined[t].emplace(std::move(*j));
    dist::Result<int32_t> id = joined[t]->context().replica_id();
    if (!id) {
      errors[t] = id.status();
      return;
    }
    Replica& r = replicas[t];
    r.world = start;
    r.begin = static_cast<int32_t>(int64_t{o.bodies} * *id / *total_replicas);
    r.end = static_cast<int32_t>(int64_t{o.bodies} * (*id + 1) / *total_replicas);
  };
  auto first_error = [&]() -> dist::Status {
    for (dist::Status& s : errors) {
      if (!s.ok()) return s;
    }
    return dist::Status();
  };
  pool.Run(join);

  int64_t step = 0;
  auto frame = [&](int t) {
    if (!errors[t].ok()) return;
    dist::ReplicaContext context = joined[t]->context();
    errors[t] = LibraryStep(context, replicas[t], o.dt);
    if (errors[t].ok() && (step % o.hash_every == 0 || step == o.steps)) {
      errors[t] = GatherVelocities(context, replicas[t]);
    }
  };
  const Clock::time_point start_time = Clock::now();
  double hashing_ms = 0;
  for (step = 1; step <= o.steps && first_error().ok(); ++step) {
    pool.Run(frame);
    if (first_error().ok() && (step % o.hash_every == 0 || step == o.steps)) {
      const Clock::time_point h = Clock::now();
      const uint64_t hash = StateHash(replicas[0].world);
      report.hashes.emplace_back(step, hash);
      if (print_hashes) std::printf("step %" PRId64 " hash %016" PRIx64 "\n", step, hash);
      hashing_ms += MillisecondsSince(h);
    }
  }
  report.ms_per_step = (MillisecondsSince(start_time) - hashing_ms) / static_cast<double>(o.steps);
  report.collective_ms_per_step = replicas[0].collective_ms / static_cast<double>(o.steps);
  report.status = first_error();

  // The last frame: every thread leaves its replica (on the thread that joined it).
  auto leave = [&](int t) {
    if (!joined[t]) return;
    dist::Status s = joined[t]->leave();
    if (!s.ok() && errors[t].ok()) errors[t] = s;
    joined[t].reset();
  };
  pool.Run(leave);
  if (report.status.ok()) report.status = first_error();
  return report;
}

// A barrier for the engine's own exchange: spin briefly, then yield the core, as engine
// job systems do.
class SpinBarrier {
 public:
  explicit SpinBarrier(int count) : count_(count) {}
  void Wait() {
    const int generation = generation_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == count_) {
      arrived_.store(0, std::memory_order_relaxed);
      generation_.fetch_add(1, std::memory_order_release);
      return;
    }
    for (int spins = 0; generation_.load(std::memory_order_acquire) == generation; ++spins) {
      if (spins > 64) std::this_thread::yield();
    }
  }

 private:
  const int count_;
  std::atomic<int> arrived_{0};
  std::atomic<int> generation_{0};
};

// The same simulation with the engine's own exchange instead of the library: shared
// arrays, per-thread slots summed in thread order, two barriers per step. The baseline of
// the time-per-step comparison (one process only).
RunReport RunWithEngineExchange(int threads, const Options& o) {
  RunReport report;
  const World start = MakeWorld(o.bodies, kSeed);
  std::vector<Replica> replicas(static_cast<size_t>(threads));
  std::vector<double> shared_position = start.position;
  std::vector<double> shared_velocity = start.velocity;
  struct alignas(64) Slot {
    int64_t energy;
    double top_speed2;
  };
  std::vector<Slot> slots(static_cast<size_t>(threads));
  SpinBarrier barrier(threads);
  ThreadPool pool(threads);
  auto setup = [&](int t) {
    Replica& r = replicas[t];
    r.world = start;
    r.begin = static_cast<int32_t>(int64_t{o.bodies} * t / threads);
    r.end = static_cast<int32_t>(int64_t{o.bodies} * (t + 1) / threads);
  };
  pool.Run(setup);
  int64_t step = 0;
  auto frame = [&](int t) {
    Replica& r = replicas[t];
    World& w = r.world;
    Kick(w.position, r.begin, r.end, o.dt, w.velocity);
    slots[t] = {KineticEnergyFixed(w.velocity, r.begin, r.end), MaxSpeedSquared(w.velocity, r.begin, r.end)};
    barrier.Wait();
    int64_t energy = 0;
    double top = 0;
    for (const Slot& s : slots) {
      energy += s.energy;
      top = std::max(top, s.top_speed2);
    }
    Drift(ComputeControls(energy, top, w.num_bodies, o.dt), r.begin, r.end, w.velocity, w.position);
    const size_t lo = 2 * static_cast<size_t>(r.begin);
    const size_t hi = 2 * static_cast<size_t>(r.end);
    std::copy(w.position.begin() + lo, w.position.begin() + hi, shared_position.begin() + lo);
    std::copy(w.velocity.begin() + lo, w.velocity.begin() + hi, shared_velocity.begin() + lo);
    barrier.Wait();
    w.position = shared_position;
  };
  const Clock::time_point start_time = Clock::now();
  double hashing_ms = 0;
  for (step = 1; step <= o.steps; ++step) {
    pool.Run(frame);
    if (step % o.hash_every == 0 || step == o.steps) {
      const Clock::time_point h = Clock::now();
      World whole{o.bodies, shared_position, shared_velocity};
      report.hashes.emplace_back(step, StateHash(whole));
      hashing_ms += MillisecondsSince(h);
    }
  }
  report.ms_per_step = (MillisecondsSince(start_time) - hashing_ms) / static_cast<double>(o.steps);
  return report;
}

bool ParseThreads(const char* text, std::vector<int>& out) {
  out.clear();
  std::string list(text);
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t comma = std::min(list.find(',', pos), list.size());
    const std::string item = list.substr(pos, comma - pos);
    char* end = nullptr;
    const long value = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || value < 1 || value > 64) return false;
    out.push_back(static_cast<int>(value));
    pos = comma + 1;
  }
  return !out.empty();
}

bool ParseInt(const char* text, int64_t low, int64_t high, int64_t& out) {
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < low || value > high) return false;
  out = value;
  return true;
}

int Usage(const char* why) {
  std::fprintf(stderr,
               "engine: %s\nusage: engine [--bodies N (2-65536)] [--steps S (1-10000000)] "
               "[--threads T[,T...] (1-64)] [--hash-every K] [--check]\n",
               why);
  return 2;
}

bool InCluster() {
  const char* tf_config = std::getenv("TF_CONFIG");
  return tf_config != nullptr && std::strstr(tf_config, "\"cluster\"") != nullptr;
}

// Lockstep between processes: this process's threads are its replicas of one
// MultiWorkerMirroredStrategy; every process prints the same hashes.
int RunMultiWorker(const Options& o) {
  const int threads = o.threads.front();
  dist::Result<dist::CommunicationOptions> comm = dist::CommunicationOptions::create();
  if (!comm) return Usage(comm.status().to_string().c_str());
  dist::Status set = comm->set_replicas_per_worker(threads);
  if (!set.ok()) return Usage(set.to_string().c_str());
  dist::Result<dist::Strategy> strategy = dist::Strategy::multi_worker_mirrored(nullptr, &*comm);
  if (!strategy) {
    std::fprintf(stderr, "engine: %s\n", strategy.status().to_string().c_str());
    return 1;
  }
  dist::Result<int32_t> total = strategy->num_replicas_in_sync();
  if (!total) return 1;
  if (o.bodies % *total != 0) return Usage("--bodies must be a multiple of the number of replicas");
  std::printf("engine: %d bodies, %" PRId64 " steps, %d replicas in sync (%d threads here)\n", o.bodies, o.steps,
              *total, threads);
  RunReport run = RunWithLibrary(*strategy, threads, o, true);
  if (!run.status.ok()) {
    std::fprintf(stderr, "engine: %s\n", run.status.to_string().c_str());
    return 1;
  }
  std::printf("%.3f ms/step, %.3f ms/step in collectives (%.1f%% of a 60 Hz frame)\n", run.ms_per_step,
              run.collective_ms_per_step, 100.0 * run.collective_ms_per_step / kFrameBudgetMs);
  return 0;
}

int RunLocal(const Options& o) {
  World reference = MakeWorld(o.bodies, kSeed);
  std::vector<std::pair<int64_t, uint64_t>> expected;
  const Clock::time_point t0 = Clock::now();
  RunReference(reference, o.steps, o.dt, o.hash_every,
               [&](int64_t step, uint64_t hash) { expected.emplace_back(step, hash); });
  const double reference_ms = MillisecondsSince(t0) / static_cast<double>(o.steps);
  std::printf("engine: %d bodies, %" PRId64 " steps; reference (1 thread, no library) hash %016" PRIx64
              " at step %" PRId64 ", %.3f ms/step\n",
              o.bodies, o.steps, expected.back().second, expected.back().first, reference_ms);
  std::printf("%7s  %-9s  %-16s  %7s  %9s  %14s  %s\n", "threads", "exchange", "final hash", "ms/step",
              "lib ms/st", "of 60 Hz frame", "every hash = reference");
  // One logical CPU device per engine thread of the largest pool.
  dist::Status count =
      dist::set_logical_cpu_device_count(*std::max_element(o.threads.begin(), o.threads.end()));
  if (!count.ok()) {
    std::fprintf(stderr, "engine: %s\n", count.to_string().c_str());
    return 1;
  }
  bool all_agree = true;
  for (int threads : o.threads) {
    if (o.bodies % threads != 0) return Usage("--bodies must be a multiple of every thread count");
    std::vector<const char*> devices;
    std::vector<std::string> names;
    for (int i = 0; i < threads; ++i) names.push_back("CPU:" + std::to_string(i));
    for (const std::string& n : names) devices.push_back(n.c_str());
    dist::Result<dist::Strategy> strategy = dist::Strategy::mirrored(devices);
    if (!strategy) {
      std::fprintf(stderr, "engine: %s\n", strategy.status().to_string().c_str());
      return 1;
    }
    RunReport library = RunWithLibrary(*strategy, threads, o, false);
    if (!library.status.ok()) {
      std::fprintf(stderr, "engine: %d threads: %s\n", threads, library.status.to_string().c_str());
      return 1;
    }
    RunReport own = RunWithEngineExchange(threads, o);
    const bool library_agrees = library.hashes == expected;
    const bool own_agrees = own.hashes == expected;
    all_agree = all_agree && library_agrees && own_agrees;
    std::printf("%7d  %-9s  %016" PRIx64 "  %7.3f  %9.3f  %13.2f%%  %s\n", threads, "library",
                library.hashes.back().second, library.ms_per_step, library.collective_ms_per_step,
                100.0 * library.collective_ms_per_step / kFrameBudgetMs, library_agrees ? "yes" : "NO");
    std::printf("%7d  %-9s  %016" PRIx64 "  %7.3f  %9s  %14s  %s\n", threads, "engine", own.hashes.back().second,
                own.ms_per_step, "-", "-", own_agrees ? "yes" : "NO");
  }
  std::printf("%s\n", all_agree ? "all hashes agree with the reference"
                                 : "MISMATCH: a run's hashes differ from the reference");
  return (o.check && !all_agree) ? 1 : 0;
}

}  // namespace
}  // namespace engine

int main(int argc, char** argv) {
  engine::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    int64_t value = 0;
    if (arg == "--check") {
      o.check = true;
    } else if (arg == "--bodies" && has_value) {
      if (!engine::ParseInt(argv[++i], 2, 65536, value)) return engine::Usage("bad --bodies");
      o.bodies = static_cast<int32_t>(value);
    } else if (arg == "--steps" && has_value) {
      if (!engine::ParseInt(argv[++i], 1, 10000000, value)) return engine::Usage("bad --steps");
      o.steps = value;
    } else if (arg == "--hash-every" && has_value) {
      if (!engine::ParseInt(argv[++i], 1, 10000000, value)) return engine::Usage("bad --hash-every");
      o.hash_every = value;
    } else if (arg == "--threads" && has_value) {
      if (!engine::ParseThreads(argv[++i], o.threads)) return engine::Usage("bad --threads");
      o.threads_given = true;
    } else {
      return engine::Usage(("unknown or incomplete argument '" + arg + "'").c_str());
    }
  }
  if (engine::InCluster()) {
    if (!o.threads_given) o.threads = {1};
    if (o.threads.size() != 1) return engine::Usage("under distrun, --threads takes one count");
    return engine::RunMultiWorker(o);
  }
  return engine::RunLocal(o);
}
