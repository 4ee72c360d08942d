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

absl::Status RegistrationsClosed() {
  return absl::UnavailableError(absl::StrCat(kServiceShuttingDown, ": it registers no more tasks"));
}

// Counts a remote caller's wait among the pending ones from Start until destruction, which
// must happen with the service's lock held (declare it after the MutexLock).
class PendingWaitCount {
 public:
  explicit PendingWaitCount(size_t* pending) : pending_(pending) {}
  ~PendingWaitCount() {
    if (counted_) --*pending_;
  }
  PendingWaitCount(const PendingWaitCount&) = delete;
  PendingWaitCount& operator=(const PendingWaitCount&) = delete;

  bool counted() const { return counted_; }
  void Start() {
    ++*pending_;
    counted_ = true;
  }

 private:
  size_t* const pending_;
  bool counted_ = false;
};

bool Cancelled(const CoordinationService::RemoteCaller* remote) {
  return remote != nullptr && remote->cancelled && remote->cancelled();
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
  for (const std::string& task : options_.recoverable_tasks) {
    auto it = tasks_.find(task);
    if (it != tasks_.end()) it->second.recoverable = true;
  }
  monitor_ = std::thread([this] { MonitorHeartbeats(); });
}

CoordinationService::~CoordinationService() { Shutdown(); }

void CoordinationService::CloseRegistrations() {
  MutexLock lock(&mu_);
  registrations_closed_ = true;
}

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
  // The connected incarnation is never named: knowing it is what lets a caller act for
  // the task (Heartbeat, Disconnect, Watch).
  if (state.incarnation != incarnation) {
    return absl::FailedPreconditionError(
        absl::StrCat("task ", task, " is connected as another incarnation than the request's"));
  }
  return absl::OkStatus();
}

void CoordinationService::MarkLost(const std::string& task, TaskState& state, absl::string_view reason) {
  state.phase = Phase::kLost;
  state.failure = absl::UnavailableError(absl::StrCat("task ", task, " is unavailable: ", reason));
  // A recoverable task's loss is its own (waits naming it fail), not the job's.
  if (!state.recoverable) failures_.push_back(TaskFailure{task, state.failure});
  cv_.notify_all();
}

bool CoordinationService::Silent(const TaskState& state, Clock::time_point now) const {
  return state.expects_heartbeats &&
         now - state.last_heartbeat > std::chrono::milliseconds(options_.heartbeat_timeout_ms);
}

absl::Status CoordinationService::Register(absl::string_view task, uint64_t incarnation,
                                           bool expects_heartbeats) {
  MutexLock lock(&mu_);
  if (shutting_down_) return ShuttingDown();
  if (registrations_closed_) return RegistrationsClosed();
  ASSIGN_OR_RETURN(TaskState * state, FindTask(task));
  const auto cannot_rejoin = [&] {
    return absl::FailedPreconditionError(
        absl::StrCat(state->failure.message(), "; a lost task cannot rejoin: restart the job"));
  };
  switch (state->phase) {
    case Phase::kLost:
      if (!state->recoverable) return cannot_rejoin();
      break;  // a restarted worker of a parameter-server job comes back
    case Phase::kConnected:
      if (state->incarnation == incarnation) return absl::OkStatus();
      if (!state->proven) {
        // It never opened its watch: briefly it may be a real task about to, after that it
        // holds nothing.
        if (Clock::now() - state->registered_at < std::chrono::milliseconds(kUnprovenHoldMs)) {
          return absl::UnavailableError(absl::StrCat(
              "task ", task, " was registered ", kUnprovenHoldMs, " ms ago or less by another process that "
              "has not opened its watch stream (an impostor, or the task started twice): retry; an "
              "unproven registration holds the task's place for at most ", kUnprovenHoldMs, " ms"));
        }
        break;
      }
      // A live task keeps its place: the caller may be an impostor with the token, and a
      // restarted process fails the job anyway once its old incarnation is found dead.
      if (!Silent(*state, Clock::now())) {
        return absl::AlreadyExistsError(absl::StrCat(
            "task ", task, " is already registered by a live incarnation (its heartbeats are current): "
            "a second registration is refused and changes nothing; if the task restarted, its old "
            "incarnation is declared lost when its connection closes or after ",
            options_.heartbeat_timeout_ms, " ms without heartbeats, and the job must be restarted"));
      }
      MarkLost(std::string(task), *state, absl::StrCat(kNoHeartbeat, options_.heartbeat_timeout_ms, " ms"));
      if (!state->recoverable) return cannot_rejoin();
      break;
    case Phase::kNotConnected:
    case Phase::kDisconnected:
      break;
  }
  state->phase = Phase::kConnected;
  state->incarnation = incarnation;
  state->expects_heartbeats = expects_heartbeats;
  state->watching = false;
  state->proven = !expects_heartbeats;  // the chief lives in the service's process
  state->registered_at = Clock::now();
  state->last_heartbeat = state->registered_at;
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

absl::Status CoordinationService::OpenWatch(absl::string_view task, uint64_t incarnation) {
  MutexLock lock(&mu_);
  if (shutting_down_) return ShuttingDown();
  ASSIGN_OR_RETURN(TaskState * state, FindTask(task));
  RETURN_IF_ERROR(CheckConnected(task, *state, incarnation));
  // One stream per task is all a task opens; more would hold more of the server's threads
  // than ServerThreadLimit leaves for them.
  if (state->watching) {
    return absl::AlreadyExistsError(
        absl::StrCat("task ", task, " already has its watch stream open: a task watches once"));
  }
  state->watching = true;
  state->proven = true;
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
  state.watching = false;
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
        if (!state.proven) {
          state.phase = Phase::kNotConnected;  // it never was the task: nobody's failure
          cv_.notify_all();
          continue;
        }
        MarkLost(task, state, absl::StrCat(kNoHeartbeat, options_.heartbeat_timeout_ms, " ms"));
      }
    }
    cv_.wait_for(lock.native(), interval);
  }
}

void CoordinationService::WaitUntil(MutexLock& lock, const Deadline& deadline, const RemoteCaller* remote) {
  Clock::time_point until = deadline.when;
  if (remote != nullptr) until = std::min(until, Clock::now() + kCancelPollInterval);
  cv_.wait_until(lock.native(), until);
}

absl::Status CoordinationService::CheckStoreRoom(absl::string_view what, size_t added_bytes,
                                                 bool new_key) const {
  if (new_key && values_.size() >= options_.max_store_keys) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the coordination service's key-value store holds ", values_.size(), " keys, its cap (max_store_keys): ",
        what, " cannot be added; nothing was stored"));
  }
  // store_bytes_ never exceeds the cap, so the subtraction cannot wrap.
  if (added_bytes > options_.max_store_bytes - store_bytes_) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the coordination service's key-value store holds ", store_bytes_,
        " bytes of keys and values: ", what, " would add ", added_bytes,
        " more, past its cap of ", options_.max_store_bytes, " bytes (max_store_bytes); nothing was stored"));
  }
  return absl::OkStatus();
}

absl::Status CoordinationService::CheckWaitRoom(absl::string_view what, const RemoteCaller* remote) const {
  if (remote == nullptr || pending_waits_ < options_.max_pending_waits) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the coordination service already has ", pending_waits_,
      " waits of other tasks pending (Get and Barrier calls), its cap (max_pending_waits): ", what,
      " is refused; nothing changed"));
}

absl::Status CoordinationService::Set(absl::string_view key, absl::string_view value) {
  RETURN_IF_ERROR(CheckCoordinationKey("key", key));
  RETURN_IF_ERROR(CheckCoordinationValue(key, value.size(), options_.max_value_bytes));
  {
    MutexLock lock(&mu_);
    if (shutting_down_) return ShuttingDown();
    auto it = values_.find(key);
    const bool new_key = it == values_.end();
    const size_t old_bytes = new_key ? 0 : key.size() + it->second.size();
    const size_t new_bytes = key.size() + value.size();
    if (new_bytes > old_bytes || new_key) {
      RETURN_IF_ERROR(CheckStoreRoom(absl::StrCat("key ", QuotedKey(key), " (", new_bytes, " bytes with its key)"),
                                     new_bytes > old_bytes ? new_bytes - old_bytes : 0, new_key));
    }
    store_bytes_ = store_bytes_ - old_bytes + new_bytes;
    if (new_key) {
      values_.emplace(std::string(key), std::string(value));
    } else {
      it->second.assign(value.data(), value.size());
    }
  }
  cv_.notify_all();
  return absl::OkStatus();
}

absl::StatusOr<std::string> CoordinationService::Get(absl::string_view key, const Deadline& deadline,
                                                     const RemoteCaller* remote) {
  RETURN_IF_ERROR(CheckCoordinationKey("key", key));
  MutexLock lock(&mu_);
  PendingWaitCount waiting(&pending_waits_);
  while (true) {
    if (shutting_down_) return ShuttingDown();
    if (auto it = values_.find(key); it != values_.end()) return it->second;
    if (deadline.Expired()) {
      return absl::DeadlineExceededError(
          absl::StrCat("key ", QuotedKey(key), " was not set within ", deadline.timeout_ms, " ms"));
    }
    if (remote != nullptr && !waiting.counted()) {
      RETURN_IF_ERROR(CheckWaitRoom(absl::StrCat("a Get of key ", QuotedKey(key)), remote));
      waiting.Start();
    }
    if (Cancelled(remote)) return absl::CancelledError("the caller went away");
    WaitUntil(lock, deadline, remote);
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
                                          const Deadline& deadline, const RemoteCaller* remote) {
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

  const std::string quoted = QuotedKey(name);
  auto found = barriers_.find(name);
  if (found != barriers_.end() && !found->second.failure.ok()) return found->second.failure;
  // Whether this arrival completes the barrier, so that the caller need not wait.
  const size_t others = found == barriers_.end() ? 0 : found->second.arrived.size();
  const bool here = found != barriers_.end() && found->second.arrived.count(std::string(task)) > 0;
  const bool completes = others + (here ? 0 : 1) == barrier_set_.size();
  PendingWaitCount waiting(&pending_waits_);
  if (remote != nullptr && !completes) {
    RETURN_IF_ERROR(CheckWaitRoom(absl::StrCat("task ", task, "'s arrival at barrier ", quoted), remote));
    waiting.Start();
  }
  if (found == barriers_.end()) {
    if (barriers_.size() >= options_.max_barriers) {
      return absl::ResourceExhaustedError(absl::StrCat("the coordination service holds ", barriers_.size(),
                                                       " barriers, its cap (max_barriers): barrier ", quoted,
                                                       " cannot be added; nothing changed"));
    }
    found = barriers_.try_emplace(name).first;
  }
  BarrierState& barrier = found->second;
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
    if (Cancelled(remote)) return absl::CancelledError("the caller went away");
    WaitUntil(lock, deadline, remote);
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
