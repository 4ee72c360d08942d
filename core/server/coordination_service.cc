#include "core/server/coordination_service.h"


#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/server/peer_failure.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// How often a wait for a remote caller checks whether the caller went away.
constexpr std::chrono::milliseconds kCancelPollInterval{100};

absl::Status ShuttingDown() {
  return absl::UnavailableError(kServiceShuttingDown);
}

// How often heartbeats are checked: often enough that a loss is seen within about a tenth
// of the timeout after it, rarely enough to cost nothing.
std::chrono::milliseconds HeartbeatCheckInterval(int64_t heartbeat_timeout_ms) {
  return std::chrono::milliseconds(std::clamp<int64_t>(heartbeat_timeout_ms / 10, 5, 1000));
}

}  // namespace

CoordinationService::CoordinationService(Options options)
    : options_(std::move(options)),
      barrier_set_(options_.barrier_tasks.begin(), options_.barrier_tasks.end()) {
  for (const std::string& task : options_.tasks) tasks_.try_emplace(task);
  monitor_ = std::thread([this] { MonitorHeartbeats(); });
}

CoordinationService::~CoordinationService() { Shutdown(); }

void CoordinationService::Shutdown() {
  std::call_once(shutdown_once_, [this] {
    {
      MutexLock lock(&mu_);
      shutting_down_ = true;
    }
    cv_.notify_all();
    monitor_.join();
  });
}

absl::StatusOr<CoordinationService::TaskState*> CoordinationService::FindTask(absl::string_view task) {
  auto it = tasks_.find(task);
  if (it == tasks_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("task ", QuotedKey(task), " is not in the cluster: its tasks are ",
                     absl::StrJoin(options_.tasks, ", ")));
  }
  return &it->second;
}

absl::Status CoordinationService::CheckConnected(absl::string_view task, const TaskState& state,
                                                 uint64_t incarnation) const {
  switch (state.phase) {
    case Phase::kLost:
      return state.failure;
    case Phase::kNotConnected:
      return absl::FailedPreconditionError(
          absl::StrCat("task ", task, " has not connected to the coordination service"));
    case Phase::kDisconnected:
      return absl::FailedPreconditionError(
          absl::StrCat("task ", task, " has disconnected from the coordination service"));
    case Phase::kConnected:
      break;
  }
  if (state.incarnation != incarnation) {
    return absl::FailedPreconditionError(
        absl::StrCat("task ", task, " is connected as another incarnation (", state.incarnation,
                     ", not ", incarnation, ")"));
  }
  return absl::OkStatus();
}

void CoordinationService::MarkLost(const std::string& task, TaskState& state, absl::string_view reason) {
  state.phase = Phase::kLost;
  state.failure = absl::UnavailableError(absl::StrCat("task ", task, " is unavailable: ", reason));
  failures_.push_back(TaskFailure{task, state.failure});
  cv_.notify_all();
}

absl::Status CoordinationService::Register(absl::string_view task, uint64_t incarnation,
                                           bool expects_heartbeats) {
  MutexLock lock(&mu_);
  if (shutting_down_) return ShuttingDown();
  ASSIGN_OR_RETURN(TaskState * state, FindTask(task));
  switch (state->phase) {
    case Phase::kLost:
      return absl::FailedPreconditionError(absl::StrCat(
          state->failure.message(), "; a lost task cannot rejoin: restart the job"));
    case Phase::kConnected:
      if (state->incarnation == incarnation) return absl::OkStatus();
      MarkLost(std::string(task), *state, "it restarted (a new incarnation registered)");
      return absl::FailedPreconditionError(
          absl::StrCat("task ", task, " registered again as a new incarnation while the old one "
                       "was connected: it is treated as lost; restart the job"));
    case Phase::kNotConnected:
    case Phase::kDisconnected:
      break;
  }
  state->phase = Phase::kConnected;
  state->incarnation = incarnation;
  state->expects_heartbeats = expects_heartbeats;
  state->last_heartbeat = Clock::now();
  cv_.notify_all();
  return absl::OkStatus();
}

absl::Status CoordinationService::Disconnect(absl::string_view task, uint64_t incarnation) {
  MutexLock lock(&mu_);
  if (shutting_down_) return ShuttingDown();
  ASSIGN_OR_RETURN(TaskState * state, FindTask(task));
  if (state->phase == Phase::kDisconnected) return absl::OkStatus();
  RETURN_IF_ERROR(CheckConnected(task, *state, incarnation));
  state->phase = Phase::kDisconnected;
  cv_.notify_all();
  return absl::OkStatus();
}

absl::Status CoordinationService::Heartbeat(absl::string_view task, uint64_t incarnation) {
  MutexLock lock(&mu_);
  if (shutting_down_) return ShuttingDown();
  ASSIGN_OR_RETURN(TaskState * state, FindTask(task));
  RETURN_IF_ERROR(CheckConnected(task, *state, incarnation));
  state->last_heartbeat = Clock::now();
  return absl::OkStatus();
}

void CoordinationService::ReportConnectionClosed(absl::string_view task, uint64_t incarnation) {
  MutexLock lock(&mu_);
  if (shutting_down_) return;
  auto it = tasks_.find(task);
  if (it == tasks_.end()) return;
  TaskState& state = it->second;
  // A task that disconnected first closes its stream as part of a clean shutdown.
  if (state.phase != Phase::kConnected || state.incarnation != incarnation) return;
  MarkLost(it->first, state, "its connection to the coordination service closed");
}

void CoordinationService::MonitorHeartbeats() {
  const auto timeout = std::chrono::milliseconds(options_.heartbeat_timeout_ms);
  const auto interval = HeartbeatCheckInterval(options_.heartbeat_timeout_ms);
  MutexLock lock(&mu_);
  while (!shutting_down_) {
    const Clock::time_point now = Clock::now();
    for (auto& [task, state] : tasks_) {
      if (state.phase == Phase::kConnected && state.expects_heartbeats &&
          now - state.last_heartbeat > timeout) {
        MarkLost(task, state, absl::StrCat(kNoHeartbeat, options_.heartbeat_timeout_ms, " ms"));
      }
    }
    cv_.wait_for(lock.native(), interval);
  }
}

void CoordinationService::WaitUntil(MutexLock& lock, const Deadline& deadline,
                                    const CancelledFn& cancelled) {
  Clock::time_point until = deadline.when;
  if (cancelled) until = std::min(until, Clock::now() + kCancelPollInterval);
  cv_.wait_until(lock.native(), until);
}

absl::Status CoordinationService::Set(absl::string_view key, absl::string_view value) {
  RETURN_IF_ERROR(CheckCoordinationKey("key", key));
  RETURN_IF_ERROR(CheckCoordinationValue(key, value.size(), options_.max_value_bytes));
  {
    MutexLock lock(&mu_);
    if (shutting_down_) return ShuttingDown();
    values_[key] = std::string(value);
  }
  cv_.notify_all();
  return absl::OkStatus();
}

absl::StatusOr<std::string> CoordinationService::Get(absl::string_view key, const Deadline& deadline,
                                                     const CancelledFn& cancelled) {
  RETURN_IF_ERROR(CheckCoordinationKey("key", key));
  MutexLock lock(&mu_);
  while (true) {
    if (shutting_down_) return ShuttingDown();
    if (auto it = values_.find(key); it != values_.end()) return it->second;
    if (deadline.Expired()) {
      return absl::DeadlineExceededError(
          absl::StrCat("key ", QuotedKey(key), " was not set within ", deadline.timeout_ms, " ms"));
    }
    if (cancelled && cancelled()) return absl::CancelledError("the caller went away");
    WaitUntil(lock, deadline, cancelled);
  }
}

std::string CoordinationService::MissingTasks(const BarrierState& barrier) const {
  std::vector<absl::string_view> missing;
  for (const std::string& task : options_.barrier_tasks) {
    if (barrier.arrived.count(task) == 0) missing.push_back(task);
  }
  return absl::StrCat(missing.size() == 1 ? "task " : "tasks ", absl::StrJoin(missing, ", "),
                      " did not arrive");
}

absl::Status CoordinationService::Barrier(absl::string_view name, absl::string_view task,
                                          const Deadline& deadline, const CancelledFn& cancelled) {
  RETURN_IF_ERROR(CheckCoordinationKey("barrier name", name));
  MutexLock lock(&mu_);
  if (shutting_down_) return ShuttingDown();
  ASSIGN_OR_RETURN(TaskState * state, FindTask(task));
  if (barrier_set_.count(std::string(task)) == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task ", task, " cannot take part in barriers: they are over the workers (",
        absl::StrJoin(options_.barrier_tasks, ", "), ")"));
  }
  // Any incarnation: the caller already proved who it is by registering.
  RETURN_IF_ERROR(CheckConnected(task, *state, state->incarnation));

  BarrierState& barrier = barriers_[name];
  const std::string quoted = QuotedKey(name);
  if (!barrier.failure.ok()) return barrier.failure;
  const uint64_t generation = barrier.generation;
  barrier.arrived.insert(std::string(task));
  while (true) {
    if (barrier.generation != generation) return absl::OkStatus();
    if (!barrier.failure.ok()) return barrier.failure;
    if (shutting_down_) return ShuttingDown();
    if (!failures_.empty()) {
      barrier.failure = absl::UnavailableError(
          absl::StrCat("barrier ", quoted, " failed: ", failures_.front().status.message()));
      cv_.notify_all();
      return barrier.failure;
    }
    if (barrier.arrived.size() == barrier_set_.size()) {
      ++barrier.generation;
      barrier.arrived.clear();
      cv_.notify_all();
      return absl::OkStatus();
    }
    if (deadline.Expired()) {
      barrier.failure = absl::DeadlineExceededError(absl::StrCat(
          "barrier ", quoted, " timed out after ", deadline.timeout_ms, " ms: ", MissingTasks(barrier)));
      cv_.notify_all();
      return barrier.failure;
    }
    if (cancelled && cancelled()) return absl::CancelledError("the caller went away");
    WaitUntil(lock, deadline, cancelled);
  }
}

absl::Status CoordinationService::PeerHealth() {
  MutexLock lock(&mu_);
  if (!failures_.empty()) return failures_.front().status;
  if (shutting_down_) return ShuttingDown();
  return absl::OkStatus();
}

absl::Status CoordinationService::WaitForPeerFailure(const Deadline& deadline) {
  MutexLock lock(&mu_);
  while (true) {
    if (!failures_.empty()) return failures_.front().status;
    if (shutting_down_) return ShuttingDown();
    if (deadline.Expired()) return absl::OkStatus();
    WaitUntil(lock, deadline, nullptr);
  }
}

absl::StatusOr<std::vector<CoordinationService::TaskFailure>> CoordinationService::WaitForFailures(
    size_t first, const Deadline& deadline) {
  MutexLock lock(&mu_);
  while (true) {
    // Failures logged before a shutdown are still handed out, so that a watcher learns
    // which task was lost even when the chief shuts down right after.
    if (failures_.size() > first) {
      return std::vector<TaskFailure>(failures_.begin() + static_cast<ptrdiff_t>(first), failures_.end());
    }
    if (shutting_down_) return ShuttingDown();
    if (deadline.Expired()) return std::vector<TaskFailure>{};
    WaitUntil(lock, deadline, nullptr);
  }
}

}  // namespace distribute
