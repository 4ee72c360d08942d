#include "supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster_env.h"
#include "line_relay.h"

extern char** environ;

namespace distrun {
namespace {

using Clock = std::chrono::steady_clock;

// Once every rank has exited, how long to keep reading output that a rank's
// leftover background processes still hold open, before giving up on it.
constexpr auto kDrainAfterExit = std::chrono::milliseconds(1000);
// Upper bound of one poll, so a lost wake-up could never stall the loop for long.
constexpr int kMaxPollMs = 1000;
constexpr size_t kReadChunk = 64 * 1024;

// The write end of the self-pipe: signal handlers only write the signal number there
// and the main loop acts on it, so no real work runs in a handler.
int g_signal_pipe_write = -1;
// The last stop signal (SIGINT/SIGTERM/SIGHUP) seen; checked between two spawns.
volatile sig_atomic_t g_stop_signal = 0;

void OnSignal(int sig) {
  int saved_errno = errno;
  if (sig != SIGCHLD) g_stop_signal = sig;
  unsigned char byte = static_cast<unsigned char>(sig);
  ssize_t ignored = write(g_signal_pipe_write, &byte, 1);  // full pipe: a wake-up is pending
  (void)ignored;
  errno = saved_errno;
}

constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP};

std::string SignalName(int sig) {
  switch (sig) {
    case SIGHUP: return "SIGHUP";
    case SIGINT: return "SIGINT";
    case SIGQUIT: return "SIGQUIT";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGKILL: return "SIGKILL";
    case SIGUSR1: return "SIGUSR1";
    case SIGSEGV: return "SIGSEGV";
    case SIGUSR2: return "SIGUSR2";
    case SIGPIPE: return "SIGPIPE";
    case SIGALRM: return "SIGALRM";
    case SIGTERM: return "SIGTERM";
    case SIGXCPU: return "SIGXCPU";
    case SIGXFSZ: return "SIGXFSZ";
    default: return "signal " + std::to_string(sig);
  }
}

void Report(const std::string& message) {
  std::string line = "distrun: " + message + "\n";
  WriteAll(2, line.data(), line.size());
}

// Makes sure fds 0-2 are open, so no pipe created later can land on them and be
// clobbered when a child's stdin/stdout/stderr are set up.
void OccupyStandardFds() {
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
    int opened = open("/dev/null", O_RDWR);
    if (opened >= 0 && opened != fd) close(opened);  // cannot happen: lowest fd is taken
  }
}

struct Stream {
  int fd = -1;
  std::unique_ptr<LineRelay> relay;
};

// One task of the job: a worker ("rank i") or a ps task ("ps:i").
struct Rank {
  TaskId task;
  pid_t pid = -1;  // also its process group id
  bool running = false;
  int restarts = 0;  // --coordinator: times this serving worker was started again
  Stream out;
  Stream err;
};

enum class StopReason { kNone, kRankFailed, kSignal, kTimeout, kLaunchFailed };

class Job {
 public:
  explicit Job(const Options& options);
  ~Job();

  int Run();

 private:
  bool Setup();
  // Starts rank `index`; false if it could not be started (launch_status_ is set).
  bool Spawn(int index);
  void Supervise();
  void HandlePendingSignals();
  void OnSignalReceived(int sig);
  void ReapExited();
  void OnRankExited(int index, int wait_status);
  void CheckDeadlines(Clock::time_point now);
  int PollTimeoutMs(Clock::time_point now) const;
  void ReadStream(Stream* stream);
  void CloseStream(Stream* stream);
  void BeginStop(StopReason reason);
  void StopServersOnceWorkersAreDone(Clock::time_point now);
  // ps tasks, and under --coordinator the workers other than rank 0: they serve the ranks
  // the job waits for, and their exit statuses never count.
  bool Serves(const Rank& rank) const { return rank.task.ps || (options_.coordinator && rank.task.index > 0); }
  // --coordinator: a serving worker that exited while the job runs (reported, and started
  // again while it has restarts left).
  void OnServingWorkerExited(int index, int status, const std::string& description);
  void SignalRunning(int sig);
  void KillRunning();
  int ExitStatus() const;

  const Options& options_;
  std::vector<Rank> ranks_;  // the workers by rank, then the ps tasks
  ClusterPorts ports_;
  std::string job_token_;  // one secret per job, for every rank
  int signal_pipe_read_ = -1;
  int devnull_ = -1;
  int running_count_ = 0;
  int workers_running_ = 0;  // the ranks the job waits for (Serves() is false)
  // Set once every such rank has exited and the serving ones were told to stop: from then
  // on their exits are expected.
  bool stopping_ps_ = false;
  int open_streams_ = 0;

  StopReason stop_reason_ = StopReason::kNone;
  int launch_status_ = 0;
  std::optional<int> first_failure_status_;
  int received_signal_ = 0;
  int sigint_count_ = 0;
  std::optional<Clock::time_point> timeout_deadline_;
  std::optional<Clock::time_point> kill_deadline_;
  bool killed_ = false;
  std::optional<Clock::time_point> drain_deadline_;
};

std::string TaskName(TaskId task) {
  return (task.ps ? "ps:" : "rank ") + std::to_string(task.index);
}

Job::Job(const Options& options)
    : options_(options), ranks_(options.num_workers + options.num_ps) {
  for (int i = 0; i < options.num_workers; ++i) ranks_[i].task = TaskId{false, i};
  for (int i = 0; i < options.num_ps; ++i) ranks_[options.num_workers + i].task = TaskId{true, i};
}

Job::~Job() {
  for (Rank& rank : ranks_) {
    CloseStream(&rank.out);
    CloseStream(&rank.err);
  }
  if (signal_pipe_read_ >= 0) close(signal_pipe_read_);
  if (g_signal_pipe_write >= 0) close(g_signal_pipe_write);
  g_signal_pipe_write = -1;
  if (devnull_ >= 0) close(devnull_);
}

bool Job::Setup() {
  OccupyStandardFds();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    Report(std::string("pipe: ") + std::strerror(errno));
    return false;
  }
  signal_pipe_read_ = fds[0];
  g_signal_pipe_write = fds[1];
  devnull_ = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (devnull_ < 0) {
    Report(std::string("/dev/null: ") + std::strerror(errno));
    return false;
  }

  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int sig : kForwardedSignals) sigaction(sig, &action, nullptr);
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  sigaction(SIGCHLD, &action, nullptr);
  // A closed stdout must not kill distrun while its workers still need reaping.
  signal(SIGPIPE, SIG_IGN);

  std::string error;
  std::vector<uint16_t> ports;
  if (!FindFreeLoopbackPorts(options_.num_workers + options_.num_ps, &ports, &error) ||
      !JobToken(environ, &job_token_, &error)) {
    Report(error);
    return false;
  }
  ports_.workers.assign(ports.begin(), ports.begin() + options_.num_workers);
  ports_.ps.assign(ports.begin() + options_.num_workers, ports.end());
  return true;
}

bool Job::Spawn(int index) {
  const std::string& program = options_.program[0];
  int out[2], err[2], exec_error[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    Report(std::string("pipe: ") + std::strerror(errno));
    launch_status_ = kExitLauncherError;
    return false;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    Report(std::string("pipe: ") + std::strerror(errno));
    close(out[0]); close(out[1]);
    launch_status_ = kExitLauncherError;
    return false;
  }
  if (pipe2(exec_error, O_CLOEXEC) != 0) {
    Report(std::string("pipe: ") + std::strerror(errno));
    close(out[0]); close(out[1]); close(err[0]); close(err[1]);
    launch_status_ = kExitLauncherError;
    return false;
  }

  // Everything the child needs is built before fork: after it, only async-signal-safe
  // calls are made.
  std::vector<std::string> env = TaskEnvironment(environ, ports_, ranks_[index].task,
                                                 options_.replicas_per_worker, job_token_);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = options_.program;
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);

  // Blocked across fork so the child never runs distrun's handlers.
  sigset_t all, previous;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &previous);
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // its own group: signals reach the rank's whole process tree
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    for (int sig : kForwardedSignals) sigaction(sig, &default_action, nullptr);
    sigaction(SIGCHLD, &default_action, nullptr);
    sigaction(SIGPIPE, &default_action, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // fds 0-2 are occupied in distrun, so none of these is already the target fd.
    if (dup2(devnull_, 0) >= 0 && dup2(out[1], 1) >= 0 && dup2(err[1], 2) >= 0) {
      environ = envp.data();
      execvp(argv[0], argv.data());
    }
    int child_errno = errno;
    ssize_t ignored = write(exec_error[1], &child_errno, sizeof(child_errno));
    (void)ignored;
    _exit(kExitCannotExecute);
  }
  int fork_errno = errno;
  if (pid > 0) setpgid(pid, pid);  // also here, so the group exists before we signal it
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  close(out[1]);
  close(err[1]);
  close(exec_error[1]);
  if (pid < 0) {
    close(out[0]); close(err[0]); close(exec_error[0]);
    Report(std::string("fork: ") + std::strerror(fork_errno));
    launch_status_ = kExitLauncherError;
    return false;
  }

  Rank& rank = ranks_[index];
  rank.pid = pid;
  rank.running = true;
  ++running_count_;
  if (!Serves(rank)) ++workers_running_;
  // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "[" + string&&.
  std::string prefix = "[";
  if (rank.task.ps) prefix += "ps:";
  prefix += std::to_string(rank.task.index);
  prefix += "] ";
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  fcntl(err[0], F_SETFL, fcntl(err[0], F_GETFL) | O_NONBLOCK);
  rank.out = Stream{out[0], std::make_unique<LineRelay>(prefix, 1)};
  rank.err = Stream{err[0], std::make_unique<LineRelay>(prefix, 2)};
  open_streams_ += 2;

  // The pipe closes at a successful exec (close-on-exec) or carries the child's errno.
  // Bounded: the child either execs or exits right away.
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(exec_error[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  close(exec_error[0]);
  if (n == static_cast<ssize_t>(sizeof(child_errno))) {
    Report("cannot execute '" + program + "': " + std::strerror(child_errno));
    launch_status_ = kExitCannotExecute;
    return false;
  }
  return true;
}

void Job::SignalRunning(int sig) {
  for (Rank& rank : ranks_) {
    if (!rank.running) continue;
    if (kill(-rank.pid, sig) != 0) kill(rank.pid, sig);
    // A stopped (SIGSTOP) rank must wake up to act on the signal.
    if (sig != SIGKILL && sig != SIGCONT) {
      if (kill(-rank.pid, SIGCONT) != 0) kill(rank.pid, SIGCONT);
    }
  }
}

void Job::KillRunning() {
  SignalRunning(SIGKILL);
  killed_ = true;
}

void Job::BeginStop(StopReason reason) {
  if (stop_reason_ == StopReason::kNone) stop_reason_ = reason;
  SignalRunning(SIGTERM);
  if (!kill_deadline_) {
    kill_deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(options_.grace_seconds));
  }
}

// ps tasks (and a coordinator's serving workers) serve until told to stop: once every rank
// the job waits for is gone, nothing needs them.
void Job::StopServersOnceWorkersAreDone(Clock::time_point now) {
  if (stopping_ps_ || workers_running_ > 0 || running_count_ == 0) return;
  stopping_ps_ = true;
  if (stop_reason_ != StopReason::kNone) return;  // already being stopped
  SignalRunning(SIGTERM);
  if (!kill_deadline_) {
    kill_deadline_ = now + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(options_.grace_seconds));
  }
}

void Job::OnSignalReceived(int sig) {
  if (sig == SIGINT && ++sigint_count_ >= 2) {
    Report("second SIGINT: killing all ranks");
    KillRunning();
    return;
  }
  Report("received " + SignalName(sig) + ", forwarding it to all ranks");
  SignalRunning(sig);
  if (stop_reason_ == StopReason::kNone) {
    stop_reason_ = StopReason::kSignal;
    received_signal_ = sig;
  }
  if (!kill_deadline_) {
    kill_deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(options_.grace_seconds));
  }
}

void Job::HandlePendingSignals() {
  unsigned char buffer[64];
  for (;;) {
    ssize_t n = read(signal_pipe_read_, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    for (ssize_t i = 0; i < n; ++i) {
      if (buffer[i] != SIGCHLD) OnSignalReceived(buffer[i]);
    }
  }
}

void Job::OnRankExited(int index, int wait_status) {
  Rank& rank = ranks_[index];
  rank.running = false;
  --running_count_;
  if (!Serves(rank)) --workers_running_;
  int status = 0;
  std::string description;
  if (WIFEXITED(wait_status)) {
    status = WEXITSTATUS(wait_status);
    description = "exited with status " + std::to_string(status);
  } else {
    int sig = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : SIGKILL;
    status = 128 + sig;
    description = "killed by signal " + SignalName(sig);
  }
  bool counts = stop_reason_ == StopReason::kNone || stop_reason_ == StopReason::kSignal;
  if (Serves(rank) && !rank.task.ps) {
    OnServingWorkerExited(index, status, description);
    return;
  }
  if (rank.task.ps) {
    // A ps task's status never counts: the workers that need it fail on their own (and
    // fail the job) when it is gone; workers that no longer need it may still succeed.
    if (!stopping_ps_ && stop_reason_ == StopReason::kNone) {
      Report(TaskName(rank.task) + " " + description + " while the workers run");
    }
  } else if (status != 0 && counts && !first_failure_status_) {
    first_failure_status_ = status;
    Report(TaskName(rank.task) + " " + description);
    if (stop_reason_ == StopReason::kNone) BeginStop(StopReason::kRankFailed);
  }
  // The rank's own leftover processes (its process group) go with it once the job is
  // failing (or the ps tasks are being stopped), so they cannot keep its output pipes open.
  if (status != 0 || stop_reason_ != StopReason::kNone || stopping_ps_) kill(-rank.pid, SIGKILL);
}

void Job::OnServingWorkerExited(int index, int status, const std::string& description) {
  Rank& rank = ranks_[index];
  kill(-rank.pid, SIGKILL);  // its leftovers, which could hold its output open
  if (stopping_ps_ || stop_reason_ != StopReason::kNone) return;  // the job is ending anyway
  // A serving worker that exits 0 was told to stop (its coordinator is finishing): normal.
  if (status == 0) return;
  std::string report = TaskName(rank.task) + " " + description + "; it serves rank 0's coordinator, which goes on";
  if (rank.restarts >= options_.max_restarts) {
    if (options_.max_restarts > 0) report += " (no restart left)";
    Report(report);
    return;
  }
  ++rank.restarts;
  Report(report + "; starting it again (restart " + std::to_string(rank.restarts) + " of " +
         std::to_string(options_.max_restarts) + ")");
  // What the dead process wrote is forwarded before its pipes make way for the new one's.
  char buffer[kReadChunk];
  for (Stream* stream : {&rank.out, &rank.err}) {
    while (stream->fd >= 0) {
      const ssize_t n = read(stream->fd, buffer, sizeof(buffer));
      if (n > 0) {
        stream->relay->Append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        break;  // the end, or nothing more for now (non-blocking): the rest is dropped
      }
    }
    CloseStream(stream);
  }
  if (!Spawn(index)) BeginStop(StopReason::kLaunchFailed);
}

void Job::ReapExited() {
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (!ranks_[i].running) continue;
    int wait_status = 0;
    pid_t r = waitpid(ranks_[i].pid, &wait_status, WNOHANG);
    if (r == ranks_[i].pid) {
      OnRankExited(static_cast<int>(i), wait_status);
    } else if (r < 0 && errno == ECHILD) {  // not ours any more; cannot happen
      ranks_[i].running = false;
      --running_count_;
      if (!Serves(ranks_[i])) --workers_running_;
    }
  }
}

void Job::CheckDeadlines(Clock::time_point now) {
  if (timeout_deadline_ && stop_reason_ == StopReason::kNone && now >= *timeout_deadline_) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", options_.timeout_seconds);
    Report(std::string("timeout of ") + seconds + " s reached, stopping all ranks");
    BeginStop(StopReason::kTimeout);
  }
  if (kill_deadline_ && !killed_ && now >= *kill_deadline_) {
    if (running_count_ > 0) Report("tasks still running after the grace period, sending SIGKILL");
    KillRunning();
  }
}

int Job::PollTimeoutMs(Clock::time_point now) const {
  Clock::duration wait = std::chrono::milliseconds(kMaxPollMs);
  auto consider = [&](const std::optional<Clock::time_point>& deadline) {
    if (deadline) wait = std::min(wait, std::max(Clock::duration::zero(), *deadline - now));
  };
  if (stop_reason_ == StopReason::kNone) consider(timeout_deadline_);
  if (!killed_) consider(kill_deadline_);
  consider(drain_deadline_);
  // Rounded up, so the loop never spins just before a deadline.
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(wait).count();
  return static_cast<int>(ms);
}

void Job::CloseStream(Stream* stream) {
  if (stream->fd < 0) return;
  if (stream->relay) stream->relay->Flush();
  close(stream->fd);
  stream->fd = -1;
  --open_streams_;
}

void Job::ReadStream(Stream* stream) {
  char buffer[kReadChunk];
  ssize_t n = read(stream->fd, buffer, sizeof(buffer));
  if (n > 0) {
    stream->relay->Append(buffer, static_cast<size_t>(n));
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
    CloseStream(stream);
  }
}

void Job::Supervise() {
  std::vector<pollfd> fds;
  std::vector<Stream*> streams;
  for (;;) {
    HandlePendingSignals();
    ReapExited();
    Clock::time_point now = Clock::now();
    StopServersOnceWorkersAreDone(now);
    CheckDeadlines(now);
    if (running_count_ == 0) {
      if (open_streams_ == 0) return;
      if (!drain_deadline_) drain_deadline_ = now + kDrainAfterExit;
      if (now >= *drain_deadline_) return;
    }

    fds.clear();
    streams.clear();
    fds.push_back(pollfd{signal_pipe_read_, POLLIN, 0});
    for (Rank& rank : ranks_) {
      for (Stream* stream : {&rank.out, &rank.err}) {
        if (stream->fd < 0) continue;
        fds.push_back(pollfd{stream->fd, POLLIN, 0});
        streams.push_back(stream);
      }
    }
    int ready = poll(fds.data(), fds.size(), PollTimeoutMs(now));
    if (ready < 0) {
      if (errno == EINTR) continue;
      Report(std::string("poll: ") + std::strerror(errno) + "; killing all ranks");
      if (stop_reason_ == StopReason::kNone) {
        stop_reason_ = StopReason::kLaunchFailed;
        launch_status_ = kExitLauncherError;
      }
      KillRunning();
      for (Rank& rank : ranks_) {  // bounded: SIGKILL was sent to each
        if (!rank.running) continue;
        int wait_status;
        while (waitpid(rank.pid, &wait_status, 0) < 0 && errno == EINTR) {
        }
        rank.running = false;
        --running_count_;
        if (!Serves(rank)) --workers_running_;
      }
      return;
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) ReadStream(streams[i - 1]);
    }
  }
}

int Job::ExitStatus() const {
  switch (stop_reason_) {
    case StopReason::kTimeout: return kExitTimeout;
    case StopReason::kLaunchFailed: return launch_status_;
    case StopReason::kRankFailed: return first_failure_status_.value_or(kExitLauncherError);
    case StopReason::kSignal: return first_failure_status_.value_or(128 + received_signal_);
    case StopReason::kNone: return first_failure_status_.value_or(0);
  }
  return kExitLauncherError;
}

int Job::Run() {
  if (!Setup()) return kExitLauncherError;
  if (options_.timeout_seconds > 0) {
    timeout_deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(options_.timeout_seconds));
  }
  // The ps tasks first: the workers' strategies wait for them to answer.
  std::vector<int> spawn_order;
  for (int i = 0; i < options_.num_ps; ++i) spawn_order.push_back(options_.num_workers + i);
  for (int i = 0; i < options_.num_workers; ++i) spawn_order.push_back(i);
  for (int index : spawn_order) {
    if (g_stop_signal != 0) break;  // the loop forwards it to the ranks already started
    if (!Spawn(index)) {
      BeginStop(StopReason::kLaunchFailed);
      break;
    }
  }
  Supervise();
  // What is still buffered after the drain period is flushed and the pipes closed.
  for (Rank& rank : ranks_) {
    for (Stream* stream : {&rank.out, &rank.err}) {
      if (stream->fd >= 0) ReadStream(stream);
      CloseStream(stream);
    }
  }
  return ExitStatus();
}

}  // namespace

int RunJob(const Options& options) {
  Job job(options);
  return job.Run();
}

}  // namespace distrun
