// dist-bench: a competing busy process, started and ended by the benchmark itself, to
// measure the replica wake path while another process wants a core (issue 16).
#ifndef DISTRIBUTE_TOOLS_DIST_BENCH_BUSY_COMPETITOR_H_
#define DISTRIBUTE_TOOLS_DIST_BENCH_BUSY_COMPETITOR_H_

#include <sys/types.h>

namespace dist_bench {

// Forks a child that spins on one core (pinned to the first CPU this process may use)
// until Stop(): a `stress`-like loop at the default priority. The child also dies with
// this process (PR_SET_PDEATHSIG), so an exit through std::exit leaves nothing behind.
class BusyCompetitor {
 public:
  // Exits the process with status 1 when fork fails.
  BusyCompetitor();
  ~BusyCompetitor() { Stop(); }
  BusyCompetitor(const BusyCompetitor&) = delete;
  BusyCompetitor& operator=(const BusyCompetitor&) = delete;

  // Kills and reaps the child; returns the CPU seconds it used (0 after the first call).
  double Stop();

  int cpu() const { return cpu_; }

 private:
  pid_t child_ = -1;
  int cpu_ = -1;  // -1: not pinned (the affinity mask could not be read)
};

}  // namespace dist_bench

#endif  // DISTRIBUTE_TOOLS_DIST_BENCH_BUSY_COMPETITOR_H_
