// The closure queue's rules (coordinator.h): resolving remote values, the first error
// cancelling what is queued, closures put back when their worker is lost.
#include "core/coordinator/coordinator_state.h"

#include <utility>

#include "absl/strings/str_join.h"
#include "core/ps/names.h"
#include "core/util/status_macros.h"

namespace distribute::coordinator {

closures::Session CoordinatorState::Session() const {
  closures::Session session;
  session.set_coordinator(coordinator_id);
  session.set_replicas_per_worker(strategy->num_replicas());
  session.set_timeout_ms(timeout_ms());
  return session;
}

void CoordinatorState::Resolve(const std::shared_ptr<Closure>& closure, absl::Status status,
                               std::optional<Tensor> result) {
  RemoteValue& value = *closure->value;
  if (value.done_) return;
  value.done_ = true;
  value.status_ = std::move(status);
  value.result_ = std::move(result);
}

void CoordinatorState::CancelQueued() {
  for (const std::shared_ptr<Closure>& closure : queue) {
    Resolve(closure, absl::CancelledError(absl::StrCat(
                         "closure ", closure->id, " (", ps::QuotedName(closure->function),
                         ") was cancelled: an earlier closure failed or the coordinator stopped; schedule it again")),
            std::nullopt);
  }
  queue.clear();
}

void CoordinatorState::Finish(const std::shared_ptr<Closure>& closure, absl::Status status,
                              std::optional<Tensor> result) {
  std::lock_guard<std::mutex> lock(mu);
  --in_flight;
  last_progress = Clock::now();
  if (!status.ok() && !error.has_value() && !shutdown) {
    error = status;
    CancelQueued();
  }
  Resolve(closure, std::move(status), std::move(result));
  cv.notify_all();
}

void CoordinatorState::PutBack(const std::shared_ptr<Closure>& closure) {
  std::lock_guard<std::mutex> lock(mu);
  --in_flight;
  // Progress for join's and fetch's windows: the closure's request waited the whole
  // timeout on the lost worker, and a healthy worker now gets its own timeout to run it
  // (a window counted from the last completion alone could end first).
  last_progress = Clock::now();
  if (shutdown || error.has_value()) {
    queue.push_front(closure);
    CancelQueued();
  } else {
    queue.push_front(closure);
  }
  cv.notify_all();
}

absl::Status CoordinatorState::TakeError() {
  absl::Status taken = std::move(*error);
  error.reset();
  return taken;
}

std::string CoordinatorState::LostWorkers() const {
  std::vector<std::string> lost;
  for (const std::unique_ptr<WorkerSlot>& worker : workers) {
    if (worker->lost) lost.push_back(absl::StrCat(worker->task, " (", worker->lost_why, ")"));
  }
  return lost.empty() ? "no worker is lost" : absl::StrCat("lost workers: ", absl::StrJoin(lost, "; "));
}

void CoordinatorState::MarkLost(WorkerSlot& worker, const absl::Status& why) {
  std::lock_guard<std::mutex> lock(mu);
  worker.lost = true;
  worker.lost_why = std::string(why.message());
}

bool RemoteValue::ready() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return done_;
}

absl::StatusOr<std::optional<Tensor>> RemoteValue::Fetch() {
  std::unique_lock<std::mutex> lock(state_->mu);
  RETURN_IF_ERROR(state_->WaitProgress(lock, "fetching a remote value", [this] { return done_; }));
  if (!status_.ok()) return status_;
  return result_;
}

PerWorkerResource::~PerWorkerResource() {
  std::lock_guard<std::mutex> lock(state_->released_mu);
  state_->released.insert(id_);
}

}  // namespace distribute::coordinator
