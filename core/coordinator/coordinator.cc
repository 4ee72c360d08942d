#include "core/coordinator/coordinator.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/coordinator/wire_values.h"
#include "core/ps/names.h"
#include "core/server/remote_closure_client.h"
#include "core/strategy/parameter_servers.h"
#include "core/util/deadline.h"
#include "core/util/status_macros.h"
#include "core/values/variable.h"

namespace distribute::coordinator {
namespace {

constexpr std::chrono::milliseconds kFirstProbeDelay{50};
constexpr std::chrono::milliseconds kMaxProbeDelay{1000};
// How many times one closure is sent again to a worker that says a resource is missing
// before the closure fails (a worker that loses its resources on every call).
constexpr int kMaxResourceRetries = 4;

// One coordinator per strategy, as TF allows.
std::mutex coordinated_mu;
std::set<uint64_t>& CoordinatedStrategies() {
  static auto* ids = new std::set<uint64_t>();
  return *ids;
}

uint64_t NewCoordinatorId() {
  std::random_device device;
  uint64_t id = 0;
  while (id == 0) id = (uint64_t{device()} << 32) ^ device();
  return id;
}

}  // namespace

struct Closure {
  uint64_t id = 0;
  std::string function;
  std::vector<closures::Argument> arguments;  // iterators hold their resource id
  std::vector<std::shared_ptr<PerWorkerResource>> iterators;  // what the worker must hold first
  std::shared_ptr<RemoteValue> value;
};

struct WorkerSlot {
  std::string task;
  int32_t index = 0;  // its place among the coordinator's workers: its input pipeline
  std::unique_ptr<ClosureClient> client;
  uint64_t incarnation = 0;  // the last one it answered with; 0: none yet
  bool lost = false;
  std::string lost_why;
  std::map<uint64_t, uint64_t> created;  // resource id -> the incarnation it was made in
  std::thread thread;
};

struct CoordinatorState : std::enable_shared_from_this<CoordinatorState> {
  std::mutex mu;
  std::condition_variable cv;
  std::shared_ptr<Strategy> strategy;
  uint64_t coordinator_id = 0;
  std::deque<std::shared_ptr<Closure>> queue;
  int64_t in_flight = 0;
  std::optional<absl::Status> error;  // the first closure error not reported yet
  bool shutdown = false;
  uint64_t next_closure = 1;
  uint64_t next_resource = 1;
  Clock::time_point last_progress = Clock::now();
  std::vector<std::unique_ptr<WorkerSlot>> workers;
  // Resources whose last handle went away: each worker drops those it holds. A mutex of
  // its own (taken after `mu` when both are), since a resource may die while `mu` is held
  // (a cancelled closure was its last owner).
  std::mutex released_mu;
  std::set<uint64_t> released;

  int64_t timeout_ms() const { return strategy->timeout_ms(); }

  closures::Session Session() const {
    closures::Session session;
    session.set_coordinator(coordinator_id);
    session.set_replicas_per_worker(strategy->num_replicas());
    session.set_timeout_ms(timeout_ms());
    return session;
  }

  // Resolves `closure` (mu held), once.
  void Resolve(const std::shared_ptr<Closure>& closure, absl::Status status, std::optional<Tensor> result) {
    RemoteValue& value = *closure->value;
    if (value.done_) return;
    value.done_ = true;
    value.status_ = std::move(status);
    value.result_ = std::move(result);
  }

  void CancelQueued() {
    for (const std::shared_ptr<Closure>& closure : queue) {
      Resolve(closure, absl::CancelledError(absl::StrCat(
                           "closure ", closure->id, " (", ps::QuotedName(closure->function),
                           ") was cancelled: an earlier closure failed or the coordinator stopped; schedule it again")),
              std::nullopt);
    }
    queue.clear();
  }

  // A closure that ran (or failed) on a worker: its value resolves, and a failure becomes
  // the queue's error.
  void Finish(const std::shared_ptr<Closure>& closure, absl::Status status, std::optional<Tensor> result) {
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

  void PutBack(const std::shared_ptr<Closure>& closure) {
    std::lock_guard<std::mutex> lock(mu);
    --in_flight;
    if (shutdown || error.has_value()) {
      queue.push_front(closure);
      CancelQueued();
    } else {
      queue.push_front(closure);
    }
    cv.notify_all();
  }

  // The queue's error, reported once (mu held).
  absl::Status TakeError() {
    absl::Status taken = std::move(*error);
    error.reset();
    return taken;
  }

  std::string LostWorkers() const {
    std::vector<std::string> lost;
    for (const std::unique_ptr<WorkerSlot>& worker : workers) {
      if (worker->lost) lost.push_back(absl::StrCat(worker->task, " (", worker->lost_why, ")"));
    }
    return lost.empty() ? "no worker is lost" : absl::StrCat("lost workers: ", absl::StrJoin(lost, "; "));
  }

  // Waits (lock held) until `done()`, failing when no closure finished for the timeout.
  template <typename Done>
  absl::Status WaitProgress(std::unique_lock<std::mutex>& lock, absl::string_view what, Done done) {
    const Clock::time_point start = Clock::now();
    while (!done()) {
      const auto timeout = std::chrono::milliseconds(timeout_ms());
      const Clock::time_point limit = std::max(last_progress, start) + timeout;
      if (Clock::now() >= limit) {
        return absl::DeadlineExceededError(absl::StrCat(
            what, ": no closure finished for ", timeout_ms(), " ms (", queue.size(), " queued, ", in_flight,
            " running; ", LostWorkers(), ")"));
      }
      cv.wait_until(lock, limit);
    }
    return absl::OkStatus();
  }

  void Run(WorkerSlot& worker);
  void Process(WorkerSlot& worker, const std::shared_ptr<Closure>& closure);
  bool Probe(WorkerSlot& worker);
  absl::Status EnsureResource(WorkerSlot& worker, const std::shared_ptr<PerWorkerResource>& resource,
                              bool* lost);
  void FlushReleases(WorkerSlot& worker);
  void MarkLost(WorkerSlot& worker, const absl::Status& why) {
    std::lock_guard<std::mutex> lock(mu);
    worker.lost = true;
    worker.lost_why = std::string(why.message());
  }
};

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

void CoordinatorState::FlushReleases(WorkerSlot& worker) {
  closures::ReleaseResourcesRequest request;
  {
    std::lock_guard<std::mutex> lock(mu);
    std::lock_guard<std::mutex> released_lock(released_mu);
    for (uint64_t id : released) {
      if (worker.created.erase(id) > 0) request.add_ids(id);
    }
    if (request.ids_size() == 0) return;
    *request.mutable_session() = Session();
  }
  closures::ReleaseResourcesResponse response;
  // Best effort: a worker that does not answer loses them anyway when it restarts.
  (void)worker.client->ReleaseResources(request, &response, Deadline::AfterMs(timeout_ms()));
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
  absl::Status sent = worker.client->CreateResource(request, &response, Deadline::AfterMs(timeout_ms()));
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
    FlushReleases(worker);
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
    absl::Status sent = worker.client->RunClosure(request, &response, Deadline::AfterMs(timeout_ms()));
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

Coordinator::Coordinator(std::shared_ptr<Strategy> strategy, std::shared_ptr<CoordinatorState> state)
    : strategy_(std::move(strategy)), state_(std::move(state)) {}

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(std::shared_ptr<Strategy> strategy,
                                                                 ClientFactory factory) {
  if (strategy == nullptr) return absl::InvalidArgumentError("strategy is null");
  const std::shared_ptr<ParameterServers>& servers = strategy->parameter_servers();
  if (strategy->kind() != StrategyKind::kParameterServer || servers == nullptr) {
    return absl::InvalidArgumentError("a coordinator runs over a ParameterServerStrategy");
  }
  if (!servers->cluster.has_value()) {
    return absl::InvalidArgumentError(
        "the ParameterServerStrategy runs in local mode (no cluster): a coordinator needs worker tasks to "
        "schedule on");
  }
  const ClusterSpec& cluster = *servers->cluster;
  // The chief is the coordinator: the "chief" task, or worker 0 of a cluster without one
  // (as distrun makes them); the other worker tasks run the closures.
  ASSIGN_OR_RETURN(const ClusterTask self, cluster.current_task());
  ASSIGN_OR_RETURN(const ClusterTask chief, cluster.chief());
  if (self.job != chief.job || self.index != chief.index) {
    return absl::InvalidArgumentError(absl::StrCat("this process is ", self.name(),
                                                   ": the coordinator runs on the chief, ", chief.name()));
  }
  std::vector<ClusterTask> worker_tasks;
  for (const ClusterTask& task : cluster.tasks(Job::kWorker)) {
    if (task.job != chief.job || task.index != chief.index) worker_tasks.push_back(task);
  }
  if (worker_tasks.empty()) {
    return absl::InvalidArgumentError("the cluster has no worker task besides the chief to schedule on");
  }
  if (!factory) {
    RemoteClosureClientOptions options;
    options.job_token = servers->job_token;
    options.tls = servers->tls;
    factory = [options](const std::string& task, const std::string& address) {
      return NewRemoteClosureClient(task, address, options);
    };
  }
  auto state = std::make_shared<CoordinatorState>();
  state->strategy = strategy;
  state->coordinator_id = NewCoordinatorId();
  for (const ClusterTask& task : worker_tasks) {
    auto worker = std::make_unique<WorkerSlot>();
    worker->task = task.name();
    worker->index = static_cast<int32_t>(state->workers.size());  // its input pipeline
    ASSIGN_OR_RETURN(worker->client, factory(task.name(), task.address));
    state->workers.push_back(std::move(worker));
  }
  {
    std::lock_guard<std::mutex> lock(coordinated_mu);
    if (!CoordinatedStrategies().insert(strategy->id()).second) {
      return absl::AlreadyExistsError("the strategy has a coordinator already (TF allows one per strategy)");
    }
  }
  for (const std::unique_ptr<WorkerSlot>& worker : state->workers) {
    WorkerSlot* slot = worker.get();
    worker->thread = std::thread([state, slot] { state->Run(*slot); });
  }
  return std::unique_ptr<Coordinator>(new Coordinator(std::move(strategy), std::move(state)));
}

Coordinator::~Coordinator() { Shutdown(); }

void Coordinator::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    if (state_->shutdown) return;
    state_->shutdown = true;
    state_->CancelQueued();
    state_->cv.notify_all();
  }
  for (const std::unique_ptr<WorkerSlot>& worker : state_->workers) worker->client->Cancel();
  for (const std::unique_ptr<WorkerSlot>& worker : state_->workers) {
    if (worker->thread.joinable()) worker->thread.join();
  }
  std::lock_guard<std::mutex> lock(coordinated_mu);
  CoordinatedStrategies().erase(strategy_->id());
}

int32_t Coordinator::num_workers() const { return static_cast<int32_t>(state_->workers.size()); }

absl::StatusOr<std::shared_ptr<RemoteValue>> Coordinator::Schedule(absl::string_view function,
                                                                   const ClosureArguments& arguments) {
  RETURN_IF_ERROR(ps::CheckPsName("closure function name", function));
  if (arguments.on_worker) {
    return absl::InvalidArgumentError("these arguments were lent to a closure function on a worker");
  }
  if (arguments.items.size() > static_cast<size_t>(kMaxClosureArguments)) {
    return absl::InvalidArgumentError(absl::StrCat("a closure takes at most ", kMaxClosureArguments, " arguments"));
  }
  auto closure = std::make_shared<Closure>();
  closure->function = std::string(function);
  uint64_t bytes = 0;
  for (size_t i = 0; i < arguments.items.size(); ++i) {
    const ClosureArgument& item = arguments.items[i];
    closures::Argument wire;
    const std::string where = absl::StrCat("argument ", i, ": ");
    switch (item.kind) {
      case ArgumentKind::kTensor: {
        ASSIGN_OR_RETURN(const Tensor* tensor, item.value->AsTensor());
        if (absl::Status encoded = EncodeTensor(*tensor, kMaxClosureArgumentBytes - bytes, wire.mutable_tensor());
            !encoded.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(where, encoded.message()));
        }
        bytes += tensor->byte_size();
        break;
      }
      case ArgumentKind::kVariable: {
        if (item.value->variable()->strategy_id() != strategy_->id()) {
          return absl::InvalidArgumentError(absl::StrCat(where, "the variable belongs to another strategy than the coordinator's"));
        }
        if (absl::Status encoded = EncodeVariable(*item.value, wire.mutable_variable()); !encoded.ok()) {
          return absl::InvalidArgumentError(absl::StrCat(where, encoded.message()));
        }
        break;
      }
      case ArgumentKind::kIterator: {
        if (item.per_worker == nullptr || item.per_worker->state() != state_ || !item.per_worker->is_iterator()) {
          return absl::InvalidArgumentError(absl::StrCat(where, "not a per-worker iterator of this coordinator"));
        }
        wire.set_iterator(item.per_worker->id());
        closure->iterators.push_back(item.per_worker);
        break;
      }
    }
    closure->arguments.push_back(std::move(wire));
  }
  closure->value = std::make_shared<RemoteValue>(state_);
  std::unique_lock<std::mutex> lock(state_->mu);
  if (state_->shutdown) return absl::CancelledError("the coordinator is stopping");
  RETURN_IF_ERROR(state_->WaitProgress(lock, "scheduling a closure (the queue is full)", [this] {
    return state_->error.has_value() || state_->queue.size() < kMaxQueuedClosures;
  }));
  if (state_->error.has_value()) {
    state_->CancelQueued();
    return state_->TakeError();
  }
  closure->id = state_->next_closure++;
  state_->queue.push_back(closure);
  state_->cv.notify_all();
  return closure->value;
}

absl::Status Coordinator::Join() {
  std::unique_lock<std::mutex> lock(state_->mu);
  RETURN_IF_ERROR(state_->WaitProgress(lock, "join", [this] {
    return state_->error.has_value() || (state_->queue.empty() && state_->in_flight == 0);
  }));
  if (state_->error.has_value()) return state_->TakeError();
  return absl::OkStatus();
}

absl::StatusOr<bool> Coordinator::Done() {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->error.has_value()) return state_->TakeError();
  return state_->queue.empty() && state_->in_flight == 0;
}

absl::StatusOr<std::shared_ptr<PerWorkerResource>> Coordinator::CreatePerWorkerDataset(
    absl::string_view function, const InputOptions& options, bool from_function) {
  RETURN_IF_ERROR(ps::CheckPsName("dataset function name", function));
  RETURN_IF_ERROR(ValidateInputOptions(options));
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    id = state_->next_resource++;
  }
  std::shared_ptr<PerWorkerResource> resource(new PerWorkerResource(state_, id));
  closures::DatasetSpec& spec = resource->spec_;
  spec.set_function(std::string(function));
  spec.set_from_function(from_function);
  spec.set_auto_shard_policy(static_cast<int32_t>(options.auto_shard_policy));
  spec.set_replication_mode(static_cast<int32_t>(options.replication_mode));
  spec.set_prefetch_depth(static_cast<int32_t>(options.prefetch_depth));
  spec.set_partial_batch_split(static_cast<int32_t>(options.partial_batch_split));
  spec.set_per_replica_batches(options.per_replica_batches);
  return resource;
}

absl::StatusOr<std::shared_ptr<PerWorkerResource>> PerWorkerResource::MakeIterator(
    const std::shared_ptr<PerWorkerResource>& dataset) {
  if (dataset == nullptr) return absl::InvalidArgumentError("dataset is null");
  if (dataset->is_iterator()) {
    return absl::InvalidArgumentError("the per-worker value is an iterator: make iterators of a per-worker dataset");
  }
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(dataset->state_->mu);
    id = dataset->state_->next_resource++;
  }
  std::shared_ptr<PerWorkerResource> iterator(new PerWorkerResource(dataset->state_, id));
  iterator->dataset_ = dataset;
  return iterator;
}

}  // namespace distribute::coordinator
