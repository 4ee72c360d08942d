// Command-line options of distrun.
#ifndef DISTRIBUTE_TOOLS_DISTRUN_OPTIONS_H_
#define DISTRIBUTE_TOOLS_DISTRUN_OPTIONS_H_

#include <string>
#include <vector>

namespace distrun {

struct Options {
  int num_workers = 0;          // -n N, required, N >= 1
  int num_ps = 0;               // --ps N: parameter-server tasks beside the workers
  int replicas_per_worker = 1;  // --replicas-per-worker K, K >= 1
  double timeout_seconds = 0;   // --timeout S; 0 means no timeout
  double grace_seconds = 5;     // --grace S: SIGTERM -> SIGKILL delay when stopping
  // --coordinator: rank 0 runs a ClusterCoordinator and the other workers only serve it
  // (TF 2's parameter-server training): the job is rank 0's, a serving worker's exit is
  // reported and does not end it.
  bool coordinator = false;
  int max_restarts = 0;         // --max-restarts R: restarts of each failed serving worker
  std::vector<std::string> program;  // the worker's argv, non-empty
};

enum class ParseOutcome { kRun, kHelp, kUsageError };

struct ParseResult {
  ParseOutcome outcome = ParseOutcome::kUsageError;
  Options options;
  std::string error;  // set for kUsageError: what was wrong
};

// Parses argv. Options come first; the first argument that is not an option (or
// everything after "--") is the program and its arguments, passed through untouched.
ParseResult ParseOptions(int argc, char** argv);

// The full help (--help), and the two-line synopsis printed after a usage error.
std::string UsageText();
std::string ShortUsageText();

}  // namespace distrun

#endif  // DISTRIBUTE_TOOLS_DISTRUN_OPTIONS_H_
