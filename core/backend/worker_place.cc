#include "core/backend/worker_place.h"

#include <sched.h>

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/shm/host_identity.h"
#include "core/util/spin.h"

namespace distribute {

static_assert(kMaxCpus == CPU_SETSIZE, "one bit per CPU of a cpu_set_t");

WorkerPlace ThisWorkerPlace() {
  WorkerPlace place{shm::HostIdentity(), {}};
  cpu_set_t set;
  CPU_ZERO(&set);
  // The calling thread's mask, not the process's: the threads the strategy starts (its
  // replicas, Gloo's loop) inherit it from the thread that creates the strategy.
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (size_t cpu = 0; cpu < kMaxCpus; ++cpu) {
      if (CPU_ISSET(cpu, &set)) place.cpus.set(cpu);
    }
  }
  return place;
}

std::string FormatCpuList(const CpuSet& cpus) {
  std::vector<std::string> ranges;
  for (size_t cpu = 0; cpu < kMaxCpus; ++cpu) {
    if (!cpus.test(cpu)) continue;
    size_t last = cpu;
    while (last + 1 < kMaxCpus && cpus.test(last + 1)) ++last;
    ranges.push_back(last == cpu ? absl::StrCat(cpu) : absl::StrCat(cpu, "-", last));
    cpu = last;
  }
  return absl::StrJoin(ranges, ",");
}

absl::StatusOr<CpuSet> ParseCpuList(absl::string_view list) {
  CpuSet cpus;
  if (list.empty()) return cpus;
  // A list from a peer: a well-formed one has at most one range per CPU, so anything
  // longer is refused before any work is done on it.
  const std::vector<absl::string_view> ranges = absl::StrSplit(list, ',');
  if (ranges.size() > kMaxCpus) {
    return absl::InvalidArgumentError(absl::StrCat("a CPU list of ", ranges.size(), " ranges: at most ", kMaxCpus));
  }
  for (absl::string_view range : ranges) {
    const std::vector<absl::string_view> ends = absl::StrSplit(range, '-');
    uint32_t first = 0;
    uint32_t last = 0;
    // Digits only (SimpleAtoi alone would take spaces and signs).
    const bool digits = !range.empty() && range.find_first_not_of("0123456789-") == absl::string_view::npos;
    const bool parsed = digits && (ends.size() == 1 || ends.size() == 2) && absl::SimpleAtoi(ends.front(), &first) &&
                        absl::SimpleAtoi(ends.back(), &last);
    if (!parsed || first > last || last >= kMaxCpus) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", range, "\" in a CPU list is not a CPU or a range of CPUs below ", kMaxCpus));
    }
    for (uint32_t cpu = first; cpu <= last; ++cpu) cpus.set(cpu);
  }
  return cpus;
}

bool BusyThreadsOutnumberCores(std::span<const WorkerPlace> places, int32_t rank, int32_t threads_per_worker) {
  if (rank < 0 || static_cast<size_t>(rank) >= places.size()) return false;
  const WorkerPlace& mine = places[static_cast<size_t>(rank)];
  const absl::string_view machine = shm::MachineOf(mine.host);
  int64_t sharing = 0;
  bool unknown = false;
  CpuSet cores;
  for (const WorkerPlace& place : places) {
    if (shm::MachineOf(place.host) != machine) continue;
    if (place.cpus.none() || mine.cpus.none() || (place.cpus & mine.cpus).any()) {
      ++sharing;
      unknown = unknown || place.cpus.none();
      cores |= place.cpus;
    }
  }
  // A worker that told no CPUs may run on any: then the cores are this process's.
  if (unknown) return Oversubscribed(static_cast<int32_t>(sharing * threads_per_worker));
  // A worker pinned to fewer cores than its own threads is crowded whoever else shares them.
  return threads_per_worker > static_cast<int64_t>(mine.cpus.count()) ||
         sharing * threads_per_worker > static_cast<int64_t>(cores.count());
}

}  // namespace distribute
