#include "options.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace distrun {
namespace {

// The job holds 2 pipes per worker open at once; far below any sane fd limit.
constexpr long kMaxWorkers = 4096;
constexpr long kMaxPsTasks = 4096;
constexpr long kMaxRestarts = 1000;
constexpr long kMaxReplicasPerWorker = 1 << 16;
// Keeps deadline arithmetic in int64 nanoseconds far from overflow (about 11 days).
constexpr double kMaxSeconds = 1e6;

bool ParseInt(const char* text, long min, long max, int* out) {
  if (text == nullptr || *text == '\0') return false;
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < min || value > max) return false;
  *out = static_cast<int>(value);
  return true;
}

bool ParseSeconds(const char* text, bool allow_zero, double* out) {
  if (text == nullptr || *text == '\0') return false;
  errno = 0;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  if (errno != 0 || *end != '\0' || !std::isfinite(value)) return false;
  if (value < 0 || (!allow_zero && value == 0) || value > kMaxSeconds) return false;
  *out = value;
  return true;
}

ParseResult UsageError(std::string message) {
  ParseResult result;
  result.outcome = ParseOutcome::kUsageError;
  result.error = std::move(message);
  return result;
}

}  // namespace

std::string ShortUsageText() {
  return "usage: distrun -n N [--ps P] [--replicas-per-worker K] [--timeout SECONDS]\n"
         "               [--grace SECONDS] [--coordinator [--max-restarts R]] [--] prog [args...]\n"
         "Try 'distrun --help' for more information.\n";
}

std::string UsageText() {
  return "usage: distrun -n N [--ps P] [--replicas-per-worker K] [--timeout SECONDS]\n"
         "               [--grace SECONDS] [--coordinator [--max-restarts R]] [--] prog [args...]\n"
         "\n"
         "Starts N local worker processes of `prog args...` with TF_CONFIG describing a\n"
         "cluster of N workers on free 127.0.0.1 ports, and DIST_RANK, DIST_WORLD_SIZE,\n"
         "DIST_REPLICAS_PER_WORKER set. Each output line is prefixed with \"[rank] \".\n"
         "The rest of the environment is passed on: DIST_TLS_CERT, DIST_TLS_KEY and\n"
         "DIST_TLS_CA run the job over mutual TLS with those PEM files.\n"
         "\n"
         "With --ps P, P parameter-server tasks of the same program join the cluster as\n"
         "job \"ps\" (TF_CONFIG task type \"ps\", no DIST_RANK; output prefixed \"[ps:i] \").\n"
         "The job ends when every worker has exited; the ps tasks are then sent SIGTERM\n"
         "(SIGKILL after the grace period) and their exit status never counts.\n"
         "\n"
         "With --coordinator, rank 0 runs a ClusterCoordinator and ranks 1..N-1 only serve\n"
         "it (TF 2's parameter-server training): the job ends when rank 0 exits, with its\n"
         "status; the serving workers and ps tasks are then stopped like ps tasks. A serving\n"
         "worker that fails (a non-zero status or a signal) while rank 0 runs is reported\n"
         "and the job goes on (the coordinator runs its closures elsewhere); it is started\n"
         "again, with the same TF_CONFIG, up to --max-restarts times.\n"
         "\n"
         "  -n N                     number of workers (N >= 1)\n"
         "  --ps P                   number of parameter-server tasks (default 0)\n"
         "  --replicas-per-worker K  value of DIST_REPLICAS_PER_WORKER (default 1)\n"
         "  --timeout SECONDS        stop everything after SECONDS and exit 124\n"
         "  --grace SECONDS          SIGTERM-to-SIGKILL delay when stopping (default 5)\n"
         "  --coordinator            rank 0 coordinates; the other workers only serve it\n"
         "  --max-restarts R         with --coordinator: restart each failed serving worker\n"
         "                           up to R times (default 0)\n"
         "  -h, --help               print this help and exit 0\n"
         "\n"
         "Exit status: 0 when every worker exits 0; otherwise the first failing worker's\n"
         "status (128+signal when killed; with --coordinator, rank 0's status); 124 on\n"
         "timeout; 127 when prog cannot be\n"
         "executed; 128+signal when distrun itself was interrupted; 2 on bad usage.\n";
}

ParseResult ParseOptions(int argc, char** argv) {
  ParseResult result;
  Options& options = result.options;
  bool have_n = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.empty() || arg[0] != '-' || arg == "-") break;  // the program starts here

    // Accepts "--flag value", "--flag=value" and, for -n, "-nVALUE".
    std::string name = arg;
    const char* value = nullptr;
    bool inline_value = false;
    if (arg.rfind("--", 0) == 0) {
      size_t eq = arg.find('=');
      if (eq != std::string::npos) {
        name = arg.substr(0, eq);
        value = argv[i] + eq + 1;
        inline_value = true;
      }
    } else if (arg.size() > 2 && arg.rfind("-n", 0) == 0) {
      name = "-n";
      value = argv[i] + 2;
      inline_value = true;
    }

    if (name == "-h" || name == "--help") {
      if (inline_value) return UsageError("option " + name + " takes no value");
      result.outcome = ParseOutcome::kHelp;
      return result;
    }
    if (name == "--coordinator") {
      if (inline_value) return UsageError("option " + name + " takes no value");
      options.coordinator = true;
      continue;
    }
    bool known = name == "-n" || name == "--ps" || name == "--replicas-per-worker" || name == "--timeout" ||
                 name == "--grace" || name == "--max-restarts";
    if (!known) return UsageError("unknown option '" + arg + "'");
    if (!inline_value) {
      if (i + 1 >= argc) return UsageError("option " + name + " needs a value");
      value = argv[++i];
    }

    if (name == "-n") {
      if (!ParseInt(value, 1, kMaxWorkers, &options.num_workers)) {
        return UsageError("-n expects a worker count from 1 to " + std::to_string(kMaxWorkers) +
                          ", got '" + value + "'");
      }
      have_n = true;
    } else if (name == "--ps") {
      if (!ParseInt(value, 0, kMaxPsTasks, &options.num_ps)) {
        return UsageError("--ps expects a ps task count from 0 to " + std::to_string(kMaxPsTasks) +
                          ", got '" + value + "'");
      }
    } else if (name == "--replicas-per-worker") {
      if (!ParseInt(value, 1, kMaxReplicasPerWorker, &options.replicas_per_worker)) {
        return UsageError("--replicas-per-worker expects a positive integer, got '" +
                          std::string(value) + "'");
      }
    } else if (name == "--timeout") {
      if (!ParseSeconds(value, /*allow_zero=*/false, &options.timeout_seconds)) {
        return UsageError("--timeout expects a positive number of seconds, got '" +
                          std::string(value) + "'");
      }
    } else if (name == "--max-restarts") {
      if (!ParseInt(value, 0, kMaxRestarts, &options.max_restarts)) {
        return UsageError("--max-restarts expects a restart count from 0 to " + std::to_string(kMaxRestarts) +
                          ", got '" + value + "'");
      }
    } else {  // --grace
      if (!ParseSeconds(value, /*allow_zero=*/true, &options.grace_seconds)) {
        return UsageError("--grace expects a non-negative number of seconds, got '" +
                          std::string(value) + "'");
      }
    }
  }

  if (!have_n) return UsageError("missing -n N (the number of workers)");
  if (options.max_restarts > 0 && !options.coordinator) {
    return UsageError("--max-restarts restarts serving workers: it needs --coordinator");
  }
  for (; i < argc; ++i) options.program.emplace_back(argv[i]);
  if (options.program.empty()) return UsageError("missing the program to run");
  result.outcome = ParseOutcome::kRun;
  return result;
}

}  // namespace distrun
