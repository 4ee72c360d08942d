// dist-bench: the competing busy process (see busy_competitor.h).
#include "busy_competitor.h"

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace dist_bench {

BusyCompetitor::BusyCompetitor() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &allowed)) {
        cpu_ = c;
        break;
      }
    }
  }
  const pid_t parent = getpid();
  std::fflush(nullptr);  // the child never returns to stdio, but do not duplicate buffers
  child_ = fork();
  if (child_ < 0) {
    std::fprintf(stderr, "dist-bench: fork of the busy competitor failed: %s\n",
                 std::strerror(errno));
    std::exit(1);
  }
  if (child_ == 0) {
    // Only async-signal-safe calls here: the parent has threads.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);  // the parent died before the line above
    if (cpu_ >= 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu_, &one);
      sched_setaffinity(0, sizeof one, &one);
    }
    for (;;) asm volatile("");  // spin; the asm keeps the loop from being removed
  }
  // Let the child reach its loop before anything is timed.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

double BusyCompetitor::Stop() {
  if (child_ <= 0) return 0;
  kill(child_, SIGKILL);
  int status = 0;
  struct rusage usage {};
  while (wait4(child_, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  child_ = -1;
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

}  // namespace dist_bench
