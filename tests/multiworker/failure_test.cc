// Multi-worker failure tests (issue 5): real worker processes (mw_failure_worker) on
// loopback, started here rather than by distrun (which stops every rank at the first
// failure, where these tests need the survivors to observe it). Each test picks free
// ports, gives every rank its TF_CONFIG, waits for the workers' READY lines, injects a
// fault and checks the lines the survivors print:
//
//   - a worker killed (SIGKILL) mid-all-reduce: every survivor fails with UNAVAILABLE
//     naming the lost task within the timeout + 2 s of the kill, and the next call fails at
//     once with the same cause (20 runs with the chief killed, 20 with a non-chief);
//   - a worker stopped (SIGSTOP): DEADLINE_EXCEEDED, not before the timeout, within
//     the timeout + 2 s;
//   - a worker never started: creation fails naming it, within the timeout + 2 s;
//   - workers that disagree on an all-reduce's shape, dtype or op: INVALID_ARGUMENT naming
//     the tasks, on every worker.
//
// Every child is SIGKILLed and reaped when a test ends, whatever happened (Job's
// destructor); a failing test prints every line its workers wrote.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/common/free_ports.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Generous: creation and a first all-reduce of 3 processes on a loaded 2-core machine.
constexpr milliseconds kReadyWait{30'000};
// How long to keep reading for a line that should come much sooner, so that a late line is
// still seen (and its lateness reported) instead of a bare "missing".
constexpr milliseconds kLongWait{30'000};
// A call on a failed communicator fails "at once".
constexpr double kStickyMs = 200;
// The bound beyond the configured timeout.
constexpr milliseconds kSlack{2'000};
// Clock slack for "not before the timeout" (the worker's and the library's clocks are
// read at slightly different moments).
constexpr double kEarlyMs = 5;

double MsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

using ::distribute::testing::FreePorts;

// A worker's "<TAG> <status name> <ms> <message>" line.
struct Report {
  std::string status;
  double ms = 0;
  std::string message;
  Clock::time_point at;  // when this process read the line
};

// What a failure report says after the C function's name: the cause, which a later call
// on the failed communicator must repeat.
std::string Cause(const std::string& message) {
  const std::string function = "dist_context_all_reduce: ";
  const size_t at = message.find(function);
  return at == std::string::npos ? message : message.substr(at + function.size());
}

std::string Describe(const Report& report) {
  std::ostringstream out;
  out << report.status << " after " << report.ms << " ms: " << report.message;
  return out.str();
}

// The worker processes of one cluster of `size` workers on loopback.
class Job {
 public:
  explicit Job(int size) : ports_(FreePorts(size)), workers_(static_cast<size_t>(size)) {}

  ~Job() {
    for (Worker& worker : workers_) {
      if (worker.pid > 0 && !worker.reaped) {
        kill(worker.pid, SIGKILL);  // also ends a stopped process
        waitpid(worker.pid, nullptr, 0);
      }
      if (worker.fd >= 0) close(worker.fd);
    }
    if (::testing::Test::HasFailure()) std::cout << Transcript();
  }
  Job(const Job&) = delete;
  Job& operator=(const Job&) = delete;

  static std::string Task(int rank) { return "worker:" + std::to_string(rank); }

  // Starts rank `rank` as mw_failure_worker `args`, its stdout and stderr on one pipe.
  void Start(int rank, const std::vector<std::string>& args) {
    Worker& worker = workers_[static_cast<size_t>(rank)];
    int out[2];
    ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);

    std::vector<std::string> argv_storage = {MW_FAILURE_WORKER};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<std::string> env_storage;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry = *e;
      if (entry.rfind("TF_CONFIG=", 0) != 0 && entry.rfind("DIST_RANK=", 0) != 0) {
        env_storage.push_back(entry);
      }
    }
    env_storage.push_back("TF_CONFIG=" + TfConfig(rank));
    env_storage.push_back("DIST_RANK=" + std::to_string(rank));
    std::vector<char*> argv;
    for (std::string& arg : argv_storage) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (std::string& entry : env_storage) envp.push_back(entry.data());
    envp.push_back(nullptr);

    const int rc = posix_spawn(&worker.pid, MW_FAILURE_WORKER, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    worker.fd = out[0];
    ASSERT_EQ(rc, 0) << "cannot start " << MW_FAILURE_WORKER << ": " << std::strerror(rc);
  }

  void Signal(int rank, int signal) { ASSERT_EQ(kill(workers_[static_cast<size_t>(rank)].pid, signal), 0); }

  // Reads the workers' output until `done()` or `until`; whether `done()`.
  template <typename Done>
  bool PumpUntil(Clock::time_point until, Done done) {
    while (!done()) {
      const auto now = Clock::now();
      if (now >= until) return false;
      std::vector<pollfd> fds;
      for (const Worker& worker : workers_) {
        if (worker.fd >= 0) fds.push_back(pollfd{worker.fd, POLLIN, 0});
      }
      const int wait = static_cast<int>(std::min<int64_t>(
          50, std::chrono::ceil<milliseconds>(until - now).count()));
      if (fds.empty()) {
        usleep(static_cast<useconds_t>(wait) * 1000);
      } else if (poll(fds.data(), fds.size(), wait) < 0 && errno != EINTR) {
        ADD_FAILURE() << "poll: " << std::strerror(errno);
        return false;
      }
      for (Worker& worker : workers_) Read(worker);
      for (Worker& worker : workers_) Reap(worker);
    }
    return true;
  }

  // Keeps reading for `duration` (the workers run meanwhile).
  void Pump(milliseconds duration) {
    PumpUntil(Clock::now() + duration, [] { return false; });
  }

  // Rank `rank`'s first line starting with "TAG ", parsed, or nothing.
  std::optional<Report> Find(int rank, const std::string& tag) const {
    for (const auto& [text, at] : workers_[static_cast<size_t>(rank)].lines) {
      if (text.rfind(tag + " ", 0) != 0) continue;
      std::istringstream in(text.substr(tag.size() + 1));
      Report report;
      report.at = at;
      in >> report.status >> report.ms;
      std::getline(in >> std::ws, report.message);
      return report;
    }
    return std::nullopt;
  }
  bool Has(int rank, const std::string& line) const {
    for (const auto& entry : workers_[static_cast<size_t>(rank)].lines) {
      if (entry.first == line || entry.first.rfind(line + " ", 0) == 0) return true;
    }
    return false;
  }

  // Waits until every rank in `ranks` wrote a line starting with `tag`.
  bool WaitForAll(const std::vector<int>& ranks, const std::string& tag, milliseconds wait) {
    return PumpUntil(Clock::now() + wait, [&] {
      return std::all_of(ranks.begin(), ranks.end(), [&](int r) { return Has(r, tag); });
    });
  }

  // Waits until `rank` exits; its wait status, or nothing after `wait`.
  std::optional<int> WaitForExit(int rank, milliseconds wait) {
    Worker& worker = workers_[static_cast<size_t>(rank)];
    if (!PumpUntil(Clock::now() + wait, [&] { return worker.reaped; })) return std::nullopt;
    return worker.status;
  }

  // Every line every worker wrote, for a failing test's log.
  std::string Transcript() const {
    std::ostringstream out;
    for (size_t r = 0; r < workers_.size(); ++r) {
      for (const auto& [text, at] : workers_[r].lines) out << "[" << r << "] " << text << "\n";
      if (workers_[r].reaped) out << "[" << r << "] exit status " << workers_[r].status << "\n";
    }
    return out.str();
  }

 private:
  struct Worker {
    pid_t pid = -1;
    int fd = -1;
    std::string partial;
    std::vector<std::pair<std::string, Clock::time_point>> lines;
    bool reaped = false;
    int status = 0;
  };

  std::string TfConfig(int rank) const {
    std::string workers;
    for (size_t i = 0; i < ports_.size(); ++i) {
      workers += (i == 0 ? "\"127.0.0.1:" : ", \"127.0.0.1:") + std::to_string(ports_[i]) + "\"";
    }
    return "{\"cluster\": {\"worker\": [" + workers + "]}, \"task\": {\"type\": \"worker\", \"index\": " +
           std::to_string(rank) + "}}";
  }

  static void Read(Worker& worker) {
    if (worker.fd < 0) return;
    pollfd fd{worker.fd, POLLIN, 0};
    while (poll(&fd, 1, 0) > 0) {
      char buffer[4096];
      const ssize_t n = read(worker.fd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (!worker.partial.empty()) worker.lines.emplace_back(worker.partial, Clock::now());
        worker.partial.clear();
        close(worker.fd);
        worker.fd = -1;
        return;
      }
      const auto now = Clock::now();
      worker.partial.append(buffer, static_cast<size_t>(n));
      size_t newline;
      while ((newline = worker.partial.find('\n')) != std::string::npos) {
        worker.lines.emplace_back(worker.partial.substr(0, newline), now);
        worker.partial.erase(0, newline + 1);
      }
    }
  }

  static void Reap(Worker& worker) {
    if (worker.pid <= 0 || worker.reaped) return;
    if (waitpid(worker.pid, &worker.status, WNOHANG) == worker.pid) worker.reaped = true;
  }

  const std::vector<int> ports_;
  std::vector<Worker> workers_;
};

std::vector<int> AllRanks(int size) {
  std::vector<int> ranks(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) ranks[static_cast<size_t>(r)] = r;
  return ranks;
}

// All-reduces of 2 MiB: the workers of one host reduce them in place, out of each other's
// tensors in the shared host arena (the worker's default, just under 64 KiB, goes through
// the rings).
constexpr int64_t kInPlaceElements = int64_t{1} << 19;

std::vector<std::string> LoopArgs(int timeout_seconds, int64_t elements = 0) {
  std::vector<std::string> args = {"--mode", "loop", "--timeout-ms", std::to_string(timeout_seconds * 1000)};
  if (elements > 0) args.insert(args.end(), {"--elements", std::to_string(elements)});
  return args;
}

// A survivor's process must end by itself, normally, after reporting: no hang while it
// tears the strategy down, no death by SIGPIPE.
void ExpectCleanExit(Job& job, int rank) {
  const std::optional<int> status = job.WaitForExit(rank, kLongWait);
  ASSERT_TRUE(status.has_value()) << Job::Task(rank) << " did not exit after reporting";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0)
      << Job::Task(rank) << " ended with wait status " << *status
      << (WIFSIGNALED(*status) ? std::string(" (signal ") + strsignal(WTERMSIG(*status)) + ")" : "");
}

// The shared-memory transport's segments (/dev/shm/dist-*) are unlinked once every worker
// has mapped them, so a kill leaves none behind. A test running beside this one may hold
// one for the moment of its start-up: only names that stay for seconds are leaks.
void ExpectNoSegmentsLeft() {
  auto segments = [] {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", error)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("dist-", 0) == 0) names.push_back(name);
    }
    return names;
  };
  std::vector<std::string> left = segments();
  for (int i = 0; i < 30 && !left.empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    std::vector<std::string> now = segments(), both;
    for (const std::string& name : now) {
      if (std::find(left.begin(), left.end(), name) != left.end()) both.push_back(name);
    }
    left = both;
  }
  EXPECT_TRUE(left.empty()) << "left in /dev/shm: " << left.front();
}

// ---- A killed worker ----

constexpr int kKillWorkers = 3;
constexpr int kKillTimeoutS = 5;

// One run: 3 workers in the all-reduce loop, `victim` SIGKILLed. Appends, for every
// survivor, how long after the kill its failure report arrived.
void KillOneRun(int victim, std::vector<double>& learned_ms, bool print, int64_t elements = 0) {
  Job job(kKillWorkers);
  for (int r = 0; r < kKillWorkers; ++r) {
    ASSERT_NO_FATAL_FAILURE(job.Start(r, LoopArgs(kKillTimeoutS, elements)));
  }
  ASSERT_TRUE(job.WaitForAll(AllRanks(kKillWorkers), "READY", kReadyWait)) << "workers not ready";
  job.Pump(milliseconds(20));  // let the all-reduce loops run: the kill lands mid-call
  const auto killed = Clock::now();
  ASSERT_NO_FATAL_FAILURE(job.Signal(victim, SIGKILL));

  std::vector<int> survivors;
  for (int r = 0; r < kKillWorkers; ++r) {
    if (r != victim) survivors.push_back(r);
  }
  job.WaitForAll(survivors, "AGAIN", kLongWait);
  const std::string lost = Job::Task(victim);
  const double bound_ms = std::chrono::duration<double, std::milli>(std::chrono::seconds(kKillTimeoutS) + kSlack).count();
  for (int r : survivors) {
    SCOPED_TRACE(Job::Task(r) + " after " + lost + " was killed");
    const std::optional<Report> failed = job.Find(r, "FAILED");
    ASSERT_TRUE(failed.has_value()) << "no failure reported";
    const double after_kill = MsBetween(killed, failed->at);
    learned_ms.push_back(after_kill);
    EXPECT_EQ(failed->status, "UNAVAILABLE") << Describe(*failed);
    EXPECT_NE(failed->message.find(lost), std::string::npos) << "the lost task is not named: " << Describe(*failed);
    EXPECT_LT(after_kill, bound_ms) << Describe(*failed);
    if (print) std::cout << Job::Task(r) << ": " << Describe(*failed) << "\n";

    const std::optional<Report> again = job.Find(r, "AGAIN");
    ASSERT_TRUE(again.has_value()) << "no second call reported";
    EXPECT_EQ(again->status, failed->status) << Describe(*again);
    EXPECT_LT(again->ms, kStickyMs) << "the failure is not sticky: " << Describe(*again);
    EXPECT_NE(again->message.find(Cause(failed->message)), std::string::npos)
        << "the original cause is lost: " << Describe(*again) << " after " << Describe(*failed);
  }
  for (int r : survivors) ExpectCleanExit(job, r);
  ExpectNoSegmentsLeft();
}

void PrintTimes(const std::string& what, std::vector<double> ms) {
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  std::cout << what << ": survivors reported the loss " << ms.front() << " / " << ms[ms.size() / 2] << " / "
            << ms.back() << " ms (min / median / max over " << ms.size() << " reports) after the kill\n";
}

constexpr int kRuns = 20;

TEST(MultiWorkerFailureTest, KilledChiefIsReportedByEverySurvivor) {
  std::vector<double> learned;
  for (int run = 0; run < kRuns && !::testing::Test::HasFailure(); ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    KillOneRun(0, learned, run == 0);
  }
  PrintTimes("chief killed", learned);
}

TEST(MultiWorkerFailureTest, KilledWorkerIsReportedByEverySurvivor) {
  std::vector<double> learned;
  for (int run = 0; run < kRuns && !::testing::Test::HasFailure(); ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    KillOneRun(1 + run % 2, learned, run < 2);
  }
  PrintTimes("non-chief killed", learned);
}

TEST(MultiWorkerFailureTest, KilledWorkerInAnInPlaceAllReduceIsReported) {
  // The survivors may be reading the victim's tensors when it dies: their mappings keep
  // its arena alive, and they fail with UNAVAILABLE naming it, as through the rings.
  std::vector<double> learned;
  for (int run = 0; run < 6 && !::testing::Test::HasFailure(); ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    KillOneRun(run % 3, learned, run == 0, kInPlaceElements);
  }
  PrintTimes("killed in place", learned);
}

// ---- A stopped worker ----

constexpr int kStopTimeoutS = 2;

void StopOneWorker(int victim, int64_t elements = 0) {
  constexpr int kWorkers = 3;
  Job job(kWorkers);
  for (int r = 0; r < kWorkers; ++r) ASSERT_NO_FATAL_FAILURE(job.Start(r, LoopArgs(kStopTimeoutS, elements)));
  ASSERT_TRUE(job.WaitForAll(AllRanks(kWorkers), "READY", kReadyWait)) << "workers not ready";
  job.Pump(milliseconds(20));
  const auto stopped = Clock::now();
  ASSERT_NO_FATAL_FAILURE(job.Signal(victim, SIGSTOP));

  std::vector<int> survivors;
  for (int r = 0; r < kWorkers; ++r) {
    if (r != victim) survivors.push_back(r);
  }
  job.WaitForAll(survivors, "AGAIN", kLongWait);
  const double timeout_ms = kStopTimeoutS * 1000.0;
  const double bound_ms = timeout_ms + std::chrono::duration<double, std::milli>(kSlack).count();
  for (int r : survivors) {
    SCOPED_TRACE(Job::Task(r) + " after " + Job::Task(victim) + " was stopped");
    const std::optional<Report> failed = job.Find(r, "FAILED");
    ASSERT_TRUE(failed.has_value()) << "no failure reported";
    EXPECT_EQ(failed->status, "DEADLINE_EXCEEDED") << Describe(*failed);
    EXPECT_GE(failed->ms, timeout_ms - kEarlyMs) << "failed before the timeout: " << Describe(*failed);
    EXPECT_LT(failed->ms, bound_ms) << Describe(*failed);
    EXPECT_LT(MsBetween(stopped, failed->at), bound_ms) << Describe(*failed);
    std::cout << Job::Task(r) << ": " << Describe(*failed) << "\n";

    const std::optional<Report> again = job.Find(r, "AGAIN");
    ASSERT_TRUE(again.has_value()) << "no second call reported";
    EXPECT_EQ(again->status, failed->status) << Describe(*again);
    EXPECT_LT(again->ms, kStickyMs) << "the failure is not sticky: " << Describe(*again);
    EXPECT_NE(again->message.find(Cause(failed->message)), std::string::npos)
        << "the original cause is lost: " << Describe(*again) << " after " << Describe(*failed);
  }
  for (int r : survivors) ExpectCleanExit(job, r);
  // Woken up, the stopped worker finds its call failed too; it must not hang.
  ASSERT_NO_FATAL_FAILURE(job.Signal(victim, SIGCONT));
  EXPECT_TRUE(job.WaitForAll({victim}, "AGAIN", kLongWait)) << "the resumed worker hangs";
  const std::optional<Report> resumed = job.Find(victim, "FAILED");
  if (resumed) std::cout << Job::Task(victim) << " resumed: " << Describe(*resumed) << "\n";
}

TEST(MultiWorkerFailureTest, StoppedWorkerGivesDeadlineExceededAfterTheTimeout) { StopOneWorker(2); }

TEST(MultiWorkerFailureTest, StoppedChiefGivesDeadlineExceededAfterTheTimeout) { StopOneWorker(0); }

TEST(MultiWorkerFailureTest, StoppedWorkerInAnInPlaceAllReduceGivesDeadlineExceeded) {
  StopOneWorker(1, kInPlaceElements);
}

// ---- A worker never started ----

void NeverStarted(int started, int missing) {
  constexpr int kTimeoutS = 2;
  Job job(2);
  const auto begin = Clock::now();
  ASSERT_NO_FATAL_FAILURE(
      job.Start(started, {"--mode", "start", "--timeout-ms", std::to_string(kTimeoutS * 1000)}));
  job.WaitForAll({started}, "CREATED", kLongWait);
  const std::optional<Report> created = job.Find(started, "CREATED");
  ASSERT_TRUE(created.has_value()) << "creation did not end";
  EXPECT_TRUE(created->status == "DEADLINE_EXCEEDED" || created->status == "UNAVAILABLE") << Describe(*created);
  EXPECT_NE(created->message.find(Job::Task(missing)), std::string::npos)
      << "the missing task is not named: " << Describe(*created);
  const double bound_ms = kTimeoutS * 1000.0 + std::chrono::duration<double, std::milli>(kSlack).count();
  EXPECT_LT(created->ms, bound_ms) << Describe(*created);
  std::cout << "without " << Job::Task(missing) << ", " << Job::Task(started) << " gave up after "
            << created->ms << " ms (" << MsBetween(begin, created->at) << " ms from its start): "
            << Describe(*created) << "\n";
  ExpectCleanExit(job, started);
}

TEST(MultiWorkerFailureTest, WorkerNeverStartedIsNamedAtStartUp) { NeverStarted(0, 1); }

TEST(MultiWorkerFailureTest, ChiefNeverStartedIsNamedAtStartUp) { NeverStarted(1, 0); }

// ---- Workers that disagree ----

void Mismatch(const std::string& what) {
  constexpr int kWorkers = 2;
  Job job(kWorkers);
  for (int r = 0; r < kWorkers; ++r) {
    ASSERT_NO_FATAL_FAILURE(job.Start(r, {"--mode", "mismatch", "--mismatch", what, "--timeout-ms", "20000"}));
  }
  ASSERT_TRUE(job.WaitForAll(AllRanks(kWorkers), "READY", kReadyWait)) << "workers not ready";
  // The disagreement is found before any data moves: well before the 20 s timeout.
  job.WaitForAll(AllRanks(kWorkers), "RESULT", kLongWait);
  for (int r = 0; r < kWorkers; ++r) {
    SCOPED_TRACE(Job::Task(r) + " with a different " + what + " on worker:1");
    const std::optional<Report> result = job.Find(r, "RESULT");
    ASSERT_TRUE(result.has_value()) << "no result reported";
    EXPECT_EQ(result->status, "INVALID_ARGUMENT") << Describe(*result);
    EXPECT_NE(result->message.find("worker:0"), std::string::npos) << Describe(*result);
    EXPECT_NE(result->message.find("worker:1"), std::string::npos) << Describe(*result);
    EXPECT_LT(result->ms, 10'000.0) << Describe(*result);
    std::cout << Job::Task(r) << ": " << Describe(*result) << "\n";
  }
  for (int r = 0; r < kWorkers; ++r) ExpectCleanExit(job, r);
}

TEST(MultiWorkerFailureTest, ShapeMismatchNamesTheTasks) { Mismatch("shape"); }

TEST(MultiWorkerFailureTest, DtypeMismatchNamesTheTasks) { Mismatch("dtype"); }

TEST(MultiWorkerFailureTest, OpMismatchNamesTheTasks) { Mismatch("op"); }

}  // namespace
