#include "core/coordinator/worker_closure_host.h"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/coordinator/closure_registry.h"
#include "core/coordinator/wire_values.h"
#include "core/input/distributed_dataset.h"
#include "core/input/input_options.h"
#include "core/input/value_iterator.h"
#include "core/ps/names.h"
#include "core/strategy/strategy.h"
#include "core/util/mutex.h"
#include "core/util/status_macros.h"

namespace distribute::coordinator {
namespace {

void SetStatus(const absl::Status& status, closures::Status* out) {
  out->set_code(static_cast<int32_t>(status.code()));
  out->set_message(std::string(status.message()));
}

absl::Status CheckSession(const closures::Session& session) {
  if (session.coordinator() == 0) return absl::InvalidArgumentError("the session names no coordinator");
  if (session.replicas_per_worker() < 1 || session.replicas_per_worker() > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("replicas_per_worker is ", session.replicas_per_worker(), " (1 to 4096)"));
  }
  if (session.timeout_ms() < 1 || session.timeout_ms() > CommunicationOptions::kMaxTimeoutMs) {
    return absl::InvalidArgumentError(absl::StrCat("timeout_ms is ", session.timeout_ms()));
  }
  return absl::OkStatus();
}

absl::StatusOr<InputOptions> InputOptionsOf(const closures::DatasetSpec& spec) {
  InputOptions options;
  options.prefetch_depth = spec.prefetch_depth();
  ASSIGN_OR_RETURN(options.auto_shard_policy, AutoShardPolicyFromInt(spec.auto_shard_policy()));
  if (spec.replication_mode() != static_cast<int32_t>(InputReplicationMode::kPerWorker) &&
      spec.replication_mode() != static_cast<int32_t>(InputReplicationMode::kPerReplica)) {
    return absl::InvalidArgumentError(absl::StrCat("replication mode ", spec.replication_mode()));
  }
  options.replication_mode = static_cast<InputReplicationMode>(spec.replication_mode());
  if (spec.partial_batch_split() != static_cast<int32_t>(PartialBatchSplit::kInOrder) &&
      spec.partial_batch_split() != static_cast<int32_t>(PartialBatchSplit::kEven)) {
    return absl::InvalidArgumentError(absl::StrCat("partial batch split ", spec.partial_batch_split()));
  }
  options.partial_batch_split = static_cast<PartialBatchSplit>(spec.partial_batch_split());
  options.per_replica_batches = spec.per_replica_batches();
  RETURN_IF_ERROR(ValidateInputOptions(options));
  if (spec.num_workers() < 1 || spec.worker_index() < 0 || spec.worker_index() >= spec.num_workers()) {
    return absl::InvalidArgumentError(
        absl::StrCat("worker ", spec.worker_index(), " of ", spec.num_workers(), " input pipelines"));
  }
  return options;
}

// A worker serves one coordinator at a time: a request of another is refused while the
// session's coordinator is alive, that is until it ends its session or makes no request for
// this many of its timeouts (a coordinator that vanished without ending it).
constexpr int64_t kIdleSessionTimeouts = 10;

// A closure waits at most this share of its coordinator's timeout for the one before it
// on this worker to finish; then the worker answers Unavailable, and the coordinator puts
// the closure back and runs it elsewhere (its request deadline is the whole timeout).
constexpr int64_t kClosureGateShare = 2;

// One coordinator's state on this worker. A request holds it by shared_ptr, so a closure
// that outlives its session (handed over, or ended) still finds what it resolved.
struct Session {
  explicit Session(closures::Session given) : settings(std::move(given)) {}
  const closures::Session settings;
  std::shared_ptr<Strategy> strategy;  // made under the host's lock before any request uses it
  // The maps only: never held while a user's closure or dataset function runs.
  Mutex mu;
  std::map<std::string, std::pair<std::string, Value>> variables ABSL_GUARDED_BY(mu);  // name -> (ref bytes, variable)
  std::map<uint64_t, std::shared_ptr<const DistributedDataset>> datasets ABSL_GUARDED_BY(mu);
  std::map<uint64_t, std::shared_ptr<ValueIterator>> iterators ABSL_GUARDED_BY(mu);

  size_t num_resources() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return datasets.size() + iterators.size(); }
};

class WorkerClosureHost final : public ClosureHost {
 public:
  WorkerClosureHost(ClosureHostContext context, std::string task)
      : context_(std::move(context)), task_(std::move(task)) {}

  absl::Status RunClosure(const closures::RunClosureRequest& request,
                          closures::RunClosureResponse* response) override {
    response->set_incarnation(context_.incarnation);
    absl::StatusOr<std::shared_ptr<Session>> session = ServedSession(request.session());
    if (!session.ok()) {
      SetStatus(session.status(), response->mutable_status());
      return absl::OkStatus();
    }
    // Closures run one at a time (TF's coordinator runs one per worker; they share the
    // session's strategy), but behind a gate of their own: a hung closure never holds the
    // host's lock, so resource requests and the session's handover go on.
    std::unique_lock<std::timed_mutex> gate(closure_gate_, std::defer_lock);
    const int64_t wait_ms = request.session().timeout_ms() / kClosureGateShare;
    if (!gate.try_lock_for(std::chrono::milliseconds(wait_ms))) {
      return absl::UnavailableError(absl::StrCat(task_, " still runs an earlier closure after ", wait_ms,
                                                 " ms: it runs one closure at a time"));
    }
    SetStatus(Run(**session, request, response), response->mutable_status());
    return absl::OkStatus();
  }

  absl::Status CreateResource(const closures::CreateResourceRequest& request,
                              closures::CreateResourceResponse* response) override {
    response->set_incarnation(context_.incarnation);
    absl::StatusOr<std::shared_ptr<Session>> session = ServedSession(request.session());
    if (!session.ok()) {
      SetStatus(session.status(), response->mutable_status());
      return absl::OkStatus();
    }
    SetStatus(Create(**session, request, response), response->mutable_status());
    return absl::OkStatus();
  }

  absl::Status ReleaseResources(const closures::ReleaseResourcesRequest& request,
                                closures::ReleaseResourcesResponse* response) override {
    response->set_incarnation(context_.incarnation);
    std::shared_ptr<Session> session;
    {
      MutexLock lock(&mu_);
      if (session_ == nullptr || session_->settings.coordinator() != request.session().coordinator()) {
        return absl::OkStatus();  // nothing of that coordinator is here
      }
      if (request.end_session()) {
        session_.reset();  // its coordinator stopped: another may be served now
        return absl::OkStatus();
      }
      last_request_ = std::chrono::steady_clock::now();
      session = session_;
    }
    // Outside the host's lock: a dataset's or iterator's destructor may wait for its
    // threads.
    std::vector<std::shared_ptr<const DistributedDataset>> datasets;
    std::vector<std::shared_ptr<ValueIterator>> iterators;
    {
      MutexLock lock(&session->mu);
      for (uint64_t id : request.ids()) {
        if (auto it = session->datasets.find(id); it != session->datasets.end()) {
          datasets.push_back(std::move(it->second));
          session->datasets.erase(it);
        }
        if (auto it = session->iterators.find(id); it != session->iterators.end()) {
          iterators.push_back(std::move(it->second));
          session->iterators.erase(it);
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  // The session of `settings`'s coordinator, made (with its strategy) on its first request.
  absl::StatusOr<std::shared_ptr<Session>> ServedSession(const closures::Session& settings) {
    MutexLock lock(&mu_);
    return SessionFor(settings);
  }

  absl::StatusOr<std::shared_ptr<Session>> SessionFor(const closures::Session& settings)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RETURN_IF_ERROR(CheckSession(settings));
    const auto now = std::chrono::steady_clock::now();
    if (session_ != nullptr && session_->settings.coordinator() != settings.coordinator()) {
      const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_request_);
      const int64_t idle_limit_ms = kIdleSessionTimeouts * session_->settings.timeout_ms();
      if (idle.count() < idle_limit_ms) {
        // Two coordinators on the same workers (a mistake, or a forged request): the one
        // being served keeps its datasets and iterators.
        return absl::FailedPreconditionError(absl::StrCat(
            task_, " serves another coordinator's session (its last request came ", idle.count(),
            " ms ago): a worker serves one coordinator at a time, and takes another once the first "
            "ends (dist_coordinator_destroy) or makes no request for ", idle_limit_ms, " ms"));
      }
      session_.reset();  // its coordinator is gone: what it held goes too
    }
    if (session_ == nullptr) {
      auto session = std::make_shared<Session>(settings);
      CommunicationOptions options;
      options.replicas_per_worker = settings.replicas_per_worker();
      options.timeout_ms = settings.timeout_ms();
      options.job_token = context_.job_token;
      options.tls = context_.tls;
      ASSIGN_OR_RETURN(session->strategy,
                       Strategy::CreateParameterServer(&context_.cluster, options,
                                                       ps::PlacementPolicy::kRoundRobin, std::nullopt));
      session_ = std::move(session);
    }
    last_request_ = now;
    return session_;
  }

  // The arguments resolved on this worker; NotFound (with *missing set) for an iterator
  // this worker does not hold.
  absl::StatusOr<ClosureArguments> Resolve(Session& session, const closures::RunClosureRequest& request,
                                           bool* missing) ABSL_EXCLUSIVE_LOCKS_REQUIRED(session.mu) {
    if (request.arguments_size() > kMaxClosureArguments) {
      return absl::InvalidArgumentError(absl::StrCat("a closure takes at most ", kMaxClosureArguments,
                                                     " arguments, not ", request.arguments_size()));
    }
    ClosureArguments arguments;
    arguments.on_worker = true;
    for (int i = 0; i < request.arguments_size(); ++i) {
      const closures::Argument& wire = request.arguments(i);
      ClosureArgument argument;
      switch (wire.kind_case()) {
        case closures::Argument::kTensor: {
          argument.kind = ArgumentKind::kTensor;
          absl::StatusOr<Tensor> tensor = DecodeTensor(wire.tensor());
          if (!tensor.ok()) {
            return absl::InvalidArgumentError(absl::StrCat("argument ", i, ": ", tensor.status().message()));
          }
          argument.value = Value(*std::move(tensor));
          break;
        }
        case closures::Argument::kVariable: {
          argument.kind = ArgumentKind::kVariable;
          ASSIGN_OR_RETURN(argument.value, Variable(session, wire.variable()));
          break;
        }
        case closures::Argument::kIterator: {
          argument.kind = ArgumentKind::kIterator;
          auto it = session.iterators.find(wire.iterator());
          if (it == session.iterators.end()) {
            *missing = true;
            return absl::NotFoundError(absl::StrCat("per-worker iterator ", wire.iterator(), " is not on ",
                                                    task_));
          }
          argument.iterator = it->second;
          break;
        }
        default:
          return absl::InvalidArgumentError(absl::StrCat("argument ", i, " has no value"));
      }
      arguments.items.push_back(std::move(argument));
    }
    return arguments;
  }

  // One variable per name per session: a closure sees the same variable every time.
  absl::StatusOr<Value> Variable(Session& session, const closures::VariableRef& ref)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(session.mu) {
    const std::string bytes = ref.SerializeAsString();
    auto it = session.variables.find(ref.name());
    if (it != session.variables.end()) {
      if (it->second.first != bytes) {
        return absl::InvalidArgumentError(absl::StrCat("variable ", ps::QuotedName(ref.name()),
                                                       " was sent before with another dtype, shape or placement"));
      }
      return it->second.second;
    }
    if (session.variables.size() >= (size_t{1} << 16)) {
      return absl::ResourceExhaustedError("a session holds at most 65536 variables");
    }
    ASSIGN_OR_RETURN(Value variable, AttachVariable(*session.strategy, ref));
    session.variables.emplace(ref.name(), std::make_pair(bytes, variable));
    return variable;
  }

  absl::Status Run(Session& session, const closures::RunClosureRequest& request,
                   closures::RunClosureResponse* response) {
    ASSIGN_OR_RETURN(std::shared_ptr<const ClosureRegistry::Entry> entry,
                     Closures().Find("closure function", request.function()));
    bool missing = false;
    absl::StatusOr<ClosureArguments> arguments;
    {
      MutexLock lock(&session.mu);
      arguments = Resolve(session, request, &missing);
    }
    if (missing) response->set_missing_resource(true);
    RETURN_IF_ERROR(arguments.status());
    // The user's function runs under no lock of the library (only the closure gate).
    ASSIGN_OR_RETURN(std::optional<Tensor> result, entry->function(session.strategy, *arguments));
    if (result.has_value()) {
      absl::Status encoded = EncodeTensor(*result, kMaxClosureArgumentBytes, response->mutable_result());
      if (!encoded.ok()) {
        response->clear_result();
        return absl::InvalidArgumentError(absl::StrCat("the result of closure function ",
                                                       ps::QuotedName(request.function()), ": ", encoded.message()));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Create(Session& session, const closures::CreateResourceRequest& request,
                      closures::CreateResourceResponse* response) {
    if (request.id() == 0) return absl::InvalidArgumentError("resource id 0");
    std::shared_ptr<const DistributedDataset> source;  // an iterator's dataset
    {
      MutexLock lock(&session.mu);
      if (session.datasets.contains(request.id()) || session.iterators.contains(request.id())) {
        return absl::OkStatus();  // a resent request: it is here already
      }
      RETURN_IF_ERROR(CheckRoom(session));
      if (request.kind_case() == closures::CreateResourceRequest::kIteratorOf) {
        auto it = session.datasets.find(request.iterator_of());
        if (it == session.datasets.end()) {
          response->set_missing_resource(true);
          return absl::NotFoundError(absl::StrCat("per-worker dataset ", request.iterator_of(), " is not on ",
                                                  task_));
        }
        source = it->second;
      }
    }
    // The user's dataset function, and the iterator's start, run under no lock.
    switch (request.kind_case()) {
      case closures::CreateResourceRequest::kDataset: {
        ASSIGN_OR_RETURN(std::shared_ptr<const DistributedDataset> dataset, MakeDataset(session, request.dataset()));
        MutexLock lock(&session.mu);
        if (session.datasets.contains(request.id())) return absl::OkStatus();  // made meanwhile
        RETURN_IF_ERROR(CheckRoom(session));
        session.datasets.emplace(request.id(), std::move(dataset));
        return absl::OkStatus();
      }
      case closures::CreateResourceRequest::kIteratorOf: {
        ASSIGN_OR_RETURN(std::unique_ptr<ValueIterator> iterator, IterateDistributed(*source));
        MutexLock lock(&session.mu);
        if (session.iterators.contains(request.id())) return absl::OkStatus();
        RETURN_IF_ERROR(CheckRoom(session));
        session.iterators.emplace(request.id(), std::move(iterator));
        return absl::OkStatus();
      }
      default:
        return absl::InvalidArgumentError("the request names no resource to create");
    }
  }

  static absl::Status CheckRoom(const Session& session) ABSL_EXCLUSIVE_LOCKS_REQUIRED(session.mu) {
    if (session.num_resources() < kMaxWorkerResources) return absl::OkStatus();
    return absl::ResourceExhaustedError(
        absl::StrCat("a worker holds at most ", kMaxWorkerResources, " per-worker datasets and iterators"));
  }

  // A per-worker dataset of the session's strategy from the registered dataset function.
  static absl::StatusOr<std::shared_ptr<const DistributedDataset>> MakeDataset(Session& session,
                                                                               const closures::DatasetSpec& spec) {
    ASSIGN_OR_RETURN(const InputOptions options, InputOptionsOf(spec));
    ASSIGN_OR_RETURN(std::shared_ptr<const DatasetFunctionRegistry::Entry> entry,
                     DatasetFunctions().Find("dataset function", spec.function()));
    if (spec.from_function()) {
      return DistributedDataset::FromFunction(*session.strategy, entry->function, options, spec.num_workers(),
                                              spec.worker_index(), /*explicit_pipelines=*/true);
    }
    const InputContext context(spec.num_workers(), spec.worker_index(),
                               session.strategy->num_replicas() * spec.num_workers());
    ASSIGN_OR_RETURN(DatasetPtr plain, entry->function(context));
    if (plain == nullptr) return absl::InvalidArgumentError("the dataset function returned no dataset");
    return DistributedDataset::FromDataset(*session.strategy, std::move(plain), options, spec.num_workers(),
                                           spec.worker_index(), /*explicit_pipelines=*/true);
  }

  const ClosureHostContext context_;
  const std::string task_;  // "worker:1"
  // Which session is served, and when its coordinator last asked: held only briefly, never
  // while a user's function runs.
  Mutex mu_;
  std::shared_ptr<Session> session_ ABSL_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point last_request_ ABSL_GUARDED_BY(mu_);
  std::timed_mutex closure_gate_;  // one closure at a time
};

}  // namespace

absl::StatusOr<std::unique_ptr<ClosureHost>> NewWorkerClosureHost(const ClosureHostContext& context) {
  ASSIGN_OR_RETURN(const ClusterTask self, context.cluster.current_task());
  return std::unique_ptr<ClosureHost>(new WorkerClosureHost(context, self.name()));
}

}  // namespace distribute::coordinator
