// A worker task's thread in the coordinator (coordinator.h): it takes closures from the
// queue, makes the per-worker resources a closure needs on its worker first, sends the
// closure, and puts it back when the worker is lost, pinging the worker until it answers.
#include <algorithm>
#include <chrono>
#include <utility>

#include "core/coordinator/coordinator_state.h"
#include "core/coordinator/wire_values.h"
#include "core/util/status_macros.h"

namespace distribute::coordinator {
namespace {

constexpr std::chrono::milliseconds kFirstProbeDelay{50};
constexpr std::chrono::milliseconds kMaxProbeDelay{1000};
// How many times one closure is sent again to a worker that says a resource is missing
// before the closure fails (a worker that loses its resources on every call).
constexpr int kMaxResourceRetries = 4;

}  // namespace

Deadline CoordinatorState::RequestDeadline() {
  const Deadline deadline = Deadline::AfterMs(timeout_ms());
  std::lock_guard<std::mutex> lock(mu);
  latest_request_deadline = std::max(latest_request_deadline, deadline.when);
  return deadline;
}

absl::Status CoordinatorState::FlushReleases(WorkerSlot& worker) {
  closures::ReleaseResourcesRequest request;
  {
    std::lock_guard<std::mutex> lock(mu);
    std::lock_guard<std::mutex> released_lock(released_mu);
    for (uint64_t id : released) {
      if (worker.created.erase(id) > 0) request.add_ids(id);
    }
    if (request.ids_size() == 0) return absl::OkStatus();
    *request.mutable_session() = Session();
  }
  closures::ReleaseResourcesResponse response;
  // A worker that does not answer loses them anyway when it restarts; but it is lost.
  const absl::Status released = worker.client->ReleaseResources(request, &response, RequestDeadline());
  return absl::IsUnauthenticated(released) ? absl::OkStatus() : released;
}

// Pings a lost worker until it answers (true) or the coordinator stops (false).
bool CoordinatorState::Probe(WorkerSlot& worker) {
  auto delay = kFirstProbeDelay;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu);
      if (cv.wait_for(lock, delay, [this] { return shutdown; })) return false;
    }
    closures::PingResponse response;
    if (worker.client->Ping(&response, Deadline::AfterMs(std::min<int64_t>(timeout_ms(), 5000))).ok()) {
      std::lock_guard<std::mutex> lock(mu);
      worker.lost = false;
      worker.lost_why.clear();
      worker.incarnation = response.incarnation();
      cv.notify_all();
      return true;
    }
    delay = std::min(delay * 2, kMaxProbeDelay);
  }
}

// Makes sure `worker` holds `resource` (an iterator's dataset first) in its current
// incarnation. A transport failure sets *lost.
absl::Status CoordinatorState::EnsureResource(WorkerSlot& worker, const std::shared_ptr<PerWorkerResource>& resource,
                                              bool* lost) {
  if (resource->dataset_ != nullptr) RETURN_IF_ERROR(EnsureResource(worker, resource->dataset_, lost));
  closures::CreateResourceRequest request;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = worker.created.find(resource->id_);
    if (it != worker.created.end() && it->second == worker.incarnation && worker.incarnation != 0) {
      return absl::OkStatus();
    }
    *request.mutable_session() = Session();
  }
  request.set_id(resource->id_);
  if (resource->dataset_ != nullptr) {
    request.set_iterator_of(resource->dataset_->id_);
  } else {
    closures::DatasetSpec* spec = request.mutable_dataset();
    *spec = resource->spec_;
    spec->set_num_workers(static_cast<int32_t>(workers.size()));
    spec->set_worker_index(worker.index);
  }
  closures::CreateResourceResponse response;
  absl::Status sent = worker.client->CreateResource(request, &response, RequestDeadline());
  if (!sent.ok() && !absl::IsUnauthenticated(sent)) {
    *lost = true;
    return sent;
  }
  RETURN_IF_ERROR(sent);
  std::lock_guard<std::mutex> lock(mu);
  if (response.incarnation() != worker.incarnation) {
    // Restarted since we last heard from it: whatever it held is gone.
    worker.created.clear();
    worker.incarnation = response.incarnation();
  }
  const absl::Status status(static_cast<absl::StatusCode>(response.status().code()), response.status().message());
  if (response.missing_resource() && resource->dataset_ != nullptr) {
    worker.created.erase(resource->dataset_->id_);
  }
  if (!status.ok()) return status;
  worker.created[resource->id_] = worker.incarnation;
  return absl::OkStatus();
}

void CoordinatorState::Process(WorkerSlot& worker, const std::shared_ptr<Closure>& closure) {
  for (int attempt = 0;; ++attempt) {
    if (const absl::Status released = FlushReleases(worker); !released.ok()) {
      MarkLost(worker, released);
      PutBack(closure);
      return;
    }
    bool lost = false;
    absl::Status ready;
    for (const std::shared_ptr<PerWorkerResource>& resource : closure->iterators) {
      ready = EnsureResource(worker, resource, &lost);
      if (!ready.ok()) break;
    }
    if (lost) {
      MarkLost(worker, ready);
      PutBack(closure);
      return;
    }
    if (!ready.ok()) {
      if (absl::IsNotFound(ready) && attempt < kMaxResourceRetries) continue;  // a dataset went missing
      Finish(closure, ready, std::nullopt);
      return;
    }
    closures::RunClosureRequest request;
    {
      std::lock_guard<std::mutex> lock(mu);
      *request.mutable_session() = Session();
    }
    request.set_function(closure->function);
    request.set_closure_id(closure->id);
    *request.mutable_arguments() = {closure->arguments.begin(), closure->arguments.end()};
    closures::RunClosureResponse response;
    absl::Status sent = worker.client->RunClosure(request, &response, RequestDeadline());
    if (!sent.ok() && !absl::IsUnauthenticated(sent)) {
      bool stopping;
      {
        std::lock_guard<std::mutex> lock(mu);
        stopping = shutdown;
      }
      if (stopping) {
        Finish(closure,
               absl::CancelledError(absl::StrCat("closure ", closure->id, " was cancelled: the coordinator stopped while it ran")),
               std::nullopt);
        return;
      }
      MarkLost(worker, sent);
      PutBack(closure);
      return;
    }
    if (!sent.ok()) {
      Finish(closure, sent, std::nullopt);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      if (response.incarnation() != worker.incarnation) {
        worker.created.clear();
        worker.incarnation = response.incarnation();
      }
    }
    if (response.missing_resource()) {
      {
        std::lock_guard<std::mutex> lock(mu);
        worker.created.clear();
      }
      if (attempt < kMaxResourceRetries) continue;
    }
    absl::Status status(static_cast<absl::StatusCode>(response.status().code()), response.status().message());
    if (!status.ok()) {
      Finish(closure, status, std::nullopt);
      return;
    }
    std::optional<Tensor> result;
    if (response.has_result()) {
      absl::StatusOr<Tensor> decoded = DecodeTensor(response.result());
      if (!decoded.ok()) {
        Finish(closure,
               absl::DataLossError(absl::StrCat("the result from ", worker.task, ": ", decoded.status().message())),
               std::nullopt);
        return;
      }
      result = *std::move(decoded);
    }
    Finish(closure, absl::OkStatus(), std::move(result));
    return;
  }
}

void CoordinatorState::Run(WorkerSlot& worker) {
  while (true) {
    bool lost;
    {
      std::lock_guard<std::mutex> lock(mu);
      lost = worker.lost;
    }
    if (lost && !Probe(worker)) return;
    std::shared_ptr<Closure> closure;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [this] { return shutdown || !queue.empty(); });
      if (shutdown) return;
      closure = queue.front();
      queue.pop_front();
      ++in_flight;
    }
    Process(worker, closure);
  }
}

}  // namespace distribute::coordinator
