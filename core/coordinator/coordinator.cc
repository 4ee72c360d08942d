#include "core/coordinator/coordinator.h"

#include <mutex>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/coordinator/coordinator_state.h"
#include "core/coordinator/wire_values.h"
#include "core/ps/names.h"
#include "core/server/remote_closure_client.h"
#include "core/backend/parameter_servers.h"
#include "core/util/status_macros.h"
#include "core/values/variable.h"

namespace distribute::coordinator {
namespace {

// How long a stopping coordinator waits for each worker to take the end of its session.
constexpr int64_t kEndSessionDeadlineMs = 1000;

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
  // Each worker is told the session ended (best effort, at once, in parallel: a worker
  // still running a closure answers after it, past the deadline), so that it serves the
  // next coordinator instead of refusing it until this one's session goes idle.
  closures::ReleaseResourcesRequest end;
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    *end.mutable_session() = state_->Session();
  }
  end.set_end_session(true);
  std::vector<std::thread> enders;
  for (const std::unique_ptr<WorkerSlot>& worker : state_->workers) {
    ClosureClient* client = worker->client.get();
    enders.emplace_back([client, &end] {
      closures::ReleaseResourcesResponse response;
      (void)client->ReleaseResources(end, &response, Deadline::AfterMs(kEndSessionDeadlineMs));
    });
  }
  for (std::thread& ender : enders) ender.join();
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
