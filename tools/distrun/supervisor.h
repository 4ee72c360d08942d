// Runs the job: starts the workers, relays their output, forwards signals and turns
// the ranks' exit statuses into distrun's.
#ifndef DISTRIBUTE_TOOLS_DISTRUN_SUPERVISOR_H_
#define DISTRIBUTE_TOOLS_DISTRUN_SUPERVISOR_H_

#include "options.h"

namespace distrun {

// Exit status of distrun for a job that ran (usage errors are handled by main).
constexpr int kExitTimeout = 124;
constexpr int kExitCannotExecute = 127;
constexpr int kExitLauncherError = 1;  // distrun itself failed (no ports, no pipes...)

// Runs the whole job and returns distrun's exit status. Every wait is bounded: once
// the job is stopping (a rank failed, a signal arrived, or the timeout passed) the
// workers get SIGTERM and, after options.grace_seconds, SIGKILL; all are reaped.
// Must be called once, from a single-threaded process (it installs signal handlers).
int RunJob(const Options& options);

}  // namespace distrun

#endif  // DISTRIBUTE_TOOLS_DISTRUN_SUPERVISOR_H_
