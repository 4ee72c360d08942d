// Where a worker runs: its host identity (shm::HostIdentity) and the CPUs it may use (the
// affinity mask of the thread that creates the strategy, which the threads it starts
// inherit). Every worker tells the others its place before connecting
// (transport_factory.cc), so that each can tell how many busy threads share its cores:
// workers of one machine pinned to cores of their own (taskset, a batch system's
// binding) do not compete, those that share cores (as distrun starts them) do.
#ifndef DISTRIBUTE_CORE_BACKEND_WORKER_PLACE_H_
#define DISTRIBUTE_CORE_BACKEND_WORKER_PLACE_H_

#include <bitset>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distribute {

// CPUs 0 .. kMaxCpus - 1 (glibc's CPU_SETSIZE).
inline constexpr size_t kMaxCpus = 1024;
using CpuSet = std::bitset<kMaxCpus>;

struct WorkerPlace {
  std::string host;  // shm::HostIdentity()
  CpuSet cpus;       // none: the worker could not tell (taken as sharing every core)
};

// The calling thread's place.
WorkerPlace ThisWorkerPlace();

// "0-3,8,10-11" (the kernel's cpulist form; "" for no CPU), and back: kInvalidArgument
// for anything else, a CPU of kMaxCpus or more included.
std::string FormatCpuList(const CpuSet& cpus);
absl::StatusOr<CpuSet> ParseCpuList(absl::string_view list);

// Whether the busy threads of the workers that share worker `rank`'s cores,
// `threads_per_worker` each, outnumber those cores. A worker shares them when it is on
// the same machine (shm::MachineOf) and its CPUs meet `rank`'s; the cores counted are all
// the CPUs of those workers (this process's cores where one of them told no CPUs). A
// worker with fewer CPUs than `threads_per_worker` is crowded on its own.
// False when `rank` is not among `places`.
bool BusyThreadsOutnumberCores(std::span<const WorkerPlace> places, int32_t rank, int32_t threads_per_worker);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_BACKEND_WORKER_PLACE_H_
