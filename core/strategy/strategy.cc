#include "core/strategy/strategy.h"

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "core/device/gpu_runtime.h"
#include "core/device/local_devices.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/thread_context.h"
#include "core/util/status_macros.h"
#include "core/values/variable.h"

namespace distribute {
namespace {

std::atomic<uint64_t> next_strategy_id{1};

std::vector<std::string> NamesOf(const std::vector<DeviceSpec>& devices) {
  std::vector<std::string> names;
  for (const DeviceSpec& d : devices) names.push_back(d.ToString());
  return names;
}

// A device name resolved to a local device. GPU replicas need the CUDA plugin's streams and
// NCCL collectives, which the runtime checks for here, at creation.
absl::StatusOr<DeviceSpec> ResolveStrategyDevice(absl::string_view name) {
  ASSIGN_OR_RETURN(DeviceSpec spec, DeviceSpec::Parse(name));
  ASSIGN_OR_RETURN(DeviceSpec resolved, ResolveLocalDevice(spec));
  if (resolved.type == DeviceType::kGpu) {
    RETURN_IF_ERROR(GpuRuntime::Get().CheckReplicaSupport());
  }
  return resolved;
}

// The first `count` local devices of `type` (every one when count < 0; TF's "GPU:*").
std::vector<DeviceSpec> EveryLocalDevice(DeviceType type, int32_t count = -1) {
  const int32_t available =
      type == DeviceType::kGpu ? GpuRuntime::Get().device_count() : LogicalCpuDeviceCount();
  if (count < 0 || count > available) count = available;
  std::vector<DeviceSpec> devices;
  for (int32_t i = 0; i < count; ++i) {
    DeviceSpec spec;
    spec.type = type;
    spec.index = i;
    devices.push_back(spec);
  }
  return devices;
}

// A worker's replicas. With the NCCL implementation: its GPUs (every one, or the first
// replicas_per_worker when that is set). Otherwise its logical CPU devices CPU:0 ...
// CPU:n-1, n from the options: the process gets at least n logical CPU devices (never fewer
// than it had), so the replicas' devices resolve like any other local device. (TF's AUTO
// picks NCCL on a machine with GPUs; here GPU workers ask for NCCL, so that workers that
// share a host's GPU, as local test jobs do, keep working on CPU replicas.)
absl::StatusOr<std::vector<DeviceSpec>> MultiWorkerDevices(const CommunicationOptions& options) {
  if (options.implementation == CommunicationImplementation::kNccl) {
    if (absl::Status gpus = GpuRuntime::Get().CheckReplicaSupport(); !gpus.ok()) {
      return absl::Status(gpus.code(), absl::StrCat("communication implementation NCCL needs GPU replicas: ",
                                                    gpus.message()));
    }
    std::vector<DeviceSpec> gpus = EveryLocalDevice(DeviceType::kGpu);
    if (options.replicas_per_worker > 0) {
      if (options.replicas_per_worker > static_cast<int32_t>(gpus.size())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "replicas_per_worker is ", options.replicas_per_worker, " but this worker has ",
            gpus.size(), " GPU(s) for NCCL"));
      }
      gpus.resize(static_cast<size_t>(options.replicas_per_worker));
    }
    return gpus;
  }
  ASSIGN_OR_RETURN(const int32_t count, options.ResolveReplicasPerWorker());
  if (LogicalCpuDeviceCount() < count) RETURN_IF_ERROR(SetLogicalCpuDeviceCount(count));
  return EveryLocalDevice(DeviceType::kCpu, count);
}

absl::StatusOr<std::vector<DeviceSpec>> ResolveDeviceList(const std::vector<std::string>& names) {
  std::vector<DeviceSpec> devices;
  if (names.empty()) {
    // As TF's MirroredStrategy(): every GPU, or the CPU when there is none (usable GPUs
    // only: a plugin without GPU-replica support counts as none).
    if (GpuRuntime::Get().CheckReplicaSupport().ok()) return EveryLocalDevice(DeviceType::kGpu);
    return EveryLocalDevice(DeviceType::kCpu);
  }
  std::vector<std::string> expanded;
  bool wildcard = false;
  for (size_t i = 0; i < names.size(); ++i) {
    // "GPU:*" (or "CPU:*") stands for every local device of its type.
    if (absl::EndsWith(names[i], ":*")) {
      ASSIGN_OR_RETURN(DeviceSpec spec, DeviceSpec::Parse(names[i]));
      if (spec.type == DeviceType::kGpu) {
        absl::Status usable = GpuRuntime::Get().CheckReplicaSupport();
        if (!usable.ok()) {
          return absl::Status(usable.code(), absl::StrCat("devices[", i, "] ", names[i], ": ", usable.message()));
        }
      }
      const DeviceType type = spec.type == DeviceType::kGpu ? DeviceType::kGpu : DeviceType::kCpu;
      for (const DeviceSpec& d : EveryLocalDevice(type)) {
        expanded.push_back(d.ToString());
      }
      wildcard = true;
      continue;
    }
    expanded.push_back(names[i]);
  }
  if (wildcard) return ResolveDeviceList(expanded);
  for (size_t i = 0; i < names.size(); ++i) {
    absl::StatusOr<DeviceSpec> device = ResolveStrategyDevice(names[i]);
    if (!device.ok()) {
      return absl::Status(device.status().code(),
                          absl::StrCat("devices[", i, "]: ", device.status().message()));
    }
    for (size_t j = 0; j < devices.size(); ++j) {
      if (devices[j] == *device) {
        return absl::InvalidArgumentError(absl::StrCat("devices[", i, "] and devices[", j,
                                                       "] are the same device ",
                                                       device->ToString(),
                                                       ": devices must be distinct"));
      }
    }
    devices.push_back(*device);
  }
  return devices;
}

}  // namespace

absl::string_view StrategyKindName(StrategyKind kind) {
  switch (kind) {
    case StrategyKind::kDefault:
      return "default";
    case StrategyKind::kOneDevice:
      return "OneDevice";
    case StrategyKind::kMirrored:
      return "Mirrored";
    case StrategyKind::kCentralStorage:
      return "CentralStorage";
    case StrategyKind::kMultiWorkerMirrored:
      return "MultiWorkerMirrored";
    case StrategyKind::kParameterServer:
      return "ParameterServer";
  }
  return "unknown";
}

Strategy::Strategy(StrategyKind kind, std::vector<DeviceSpec> workers,
                   std::vector<DeviceSpec> parameters, std::unique_ptr<CollectiveBackend> backend)
    : kind_(kind),
      id_(next_strategy_id.fetch_add(1)),
      worker_devices_(std::move(workers)),
      worker_names_(NamesOf(worker_devices_)),
      parameter_devices_(std::move(parameters)),
      parameter_names_(NamesOf(parameter_devices_)),
      backend_(std::move(backend)),
      num_workers_(backend_->num_workers()),
      worker_index_(backend_->worker_index()),
      input_workers_(num_workers_),
      input_worker_index_(worker_index_),
      joined_(worker_devices_.size(), false) {
  pool_ = std::make_unique<ReplicaPool>(num_replicas());
}

absl::StatusOr<std::shared_ptr<Strategy>> Strategy::Make(StrategyKind kind,
                                                         std::vector<DeviceSpec> workers,
                                                         std::vector<DeviceSpec> parameters,
                                                         BackendRequest request) {
  request.devices = workers;
  ASSIGN_OR_RETURN(std::unique_ptr<CollectiveBackend> backend, CreateCollectiveBackend(request));
  return std::shared_ptr<Strategy>(
      new Strategy(kind, std::move(workers), std::move(parameters), std::move(backend)));
}

Strategy::~Strategy() = default;

absl::StatusOr<std::shared_ptr<Strategy>> Strategy::CreateOneDevice(absl::string_view device) {
  ASSIGN_OR_RETURN(DeviceSpec resolved, ResolveStrategyDevice(device));
  return Make(StrategyKind::kOneDevice, {resolved}, {resolved}, BackendRequest{});
}

absl::StatusOr<std::shared_ptr<Strategy>> Strategy::CreateMirrored(
    const std::vector<std::string>& devices, std::optional<CrossDeviceOps> ops) {
  ASSIGN_OR_RETURN(std::vector<DeviceSpec> workers, ResolveDeviceList(devices));
  BackendRequest request;
  request.ops = ops.value_or(CrossDeviceOps{});
  std::vector<DeviceSpec> parameters = workers;
  return Make(StrategyKind::kMirrored, std::move(workers), std::move(parameters), std::move(request));
}

absl::StatusOr<std::shared_ptr<Strategy>> Strategy::CreateMultiWorkerMirrored(
    const ClusterSpec* cluster, const CommunicationOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(std::vector<DeviceSpec> workers, MultiWorkerDevices(options));
  BackendRequest request;
  request.cluster = cluster;
  request.communication = options;
  request.timeout_ms = options.TimeoutMsOr(kDefaultTimeoutMs);
  const int64_t timeout_ms = request.timeout_ms;
  std::vector<DeviceSpec> parameters = workers;
  ASSIGN_OR_RETURN(std::shared_ptr<Strategy> strategy,
                   Make(StrategyKind::kMultiWorkerMirrored, std::move(workers), std::move(parameters),
                        std::move(request)));
  strategy->timeout_ms_.store(timeout_ms);
  return strategy;
}

absl::StatusOr<std::shared_ptr<Strategy>> Strategy::CreateParameterServer(
    const ClusterSpec* cluster, const CommunicationOptions& options, ps::PlacementPolicy policy,
    std::optional<ps::Partitioner> partitioner) {
  RETURN_IF_ERROR(options.Validate());
  if (partitioner.has_value()) RETURN_IF_ERROR(ps::CheckPartitioner(*partitioner));
  ASSIGN_OR_RETURN(std::vector<DeviceSpec> workers, MultiWorkerDevices(options));
  const int64_t timeout_ms = options.TimeoutMsOr(kDefaultTimeoutMs);
  std::shared_ptr<ParameterServers> servers;
  if (cluster == nullptr) {
    ASSIGN_OR_RETURN(servers, LocalParameterServers(policy));
  } else {
    ASSIGN_OR_RETURN(servers, ConnectParameterServers(*cluster, options, policy, timeout_ms));
  }
  servers->partitioner = std::move(partitioner);
  servers->timeout_ms.store(timeout_ms);
  // Within a worker the replicas synchronise in process; between workers nothing is
  // collective (updates meet on the ps tasks), so the backend is the local one.
  ASSIGN_OR_RETURN(std::shared_ptr<Strategy> strategy,
                   Make(StrategyKind::kParameterServer, std::move(workers), servers->devices,
                        BackendRequest{}));
  strategy->timeout_ms_.store(timeout_ms);
  if (cluster != nullptr) {
    strategy->input_workers_ = static_cast<int32_t>(cluster->workers().size());
    ASSIGN_OR_RETURN(strategy->input_worker_index_, cluster->worker_rank("ParameterServerStrategy"));
  }
  strategy->parameter_servers_ = std::move(servers);
  return strategy;
}

absl::StatusOr<std::shared_ptr<Strategy>> Strategy::CreateCentralStorage(
    const std::vector<std::string>& compute_devices, absl::string_view parameter_device) {
  ASSIGN_OR_RETURN(std::vector<DeviceSpec> workers, ResolveDeviceList(compute_devices));
  DeviceSpec parameter;
  if (!parameter_device.empty()) {
    absl::StatusOr<DeviceSpec> resolved = ResolveStrategyDevice(parameter_device);
    if (!resolved.ok()) {
      return absl::Status(resolved.status().code(),
                          absl::StrCat("parameter_device: ", resolved.status().message()));
    }
    parameter = *resolved;
  } else {
    // TF: the single compute device, or the CPU when computing on several.
    parameter = workers.size() == 1 ? workers.front() : DeviceSpec{}.WithDefaults();
  }
  return Make(StrategyKind::kCentralStorage, std::move(workers), {parameter}, BackendRequest{});
}

const std::shared_ptr<Strategy>& Strategy::Default() {
  // One replica on the host: its backend cannot fail to build.
  static const auto* strategy = new std::shared_ptr<Strategy>(
      *Make(StrategyKind::kDefault, {DeviceSpec{}.WithDefaults()}, {DeviceSpec{}.WithDefaults()},
            BackendRequest{}));
  return *strategy;
}

absl::Status Strategy::SetTimeoutMs(int64_t timeout_ms) {
  if (timeout_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("timeout_ms is ", timeout_ms, ": expected a positive number of milliseconds"));
  }
  timeout_ms_.store(timeout_ms, std::memory_order_relaxed);
  if (parameter_servers_ != nullptr) parameter_servers_->timeout_ms.store(timeout_ms, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status Strategy::Run(ReplicaFn fn) {
  const FrameKind top = ThreadContext::Current().top_kind();
  if (top == FrameKind::kReplica || top == FrameKind::kMerge) {
    return absl::FailedPreconditionError(
        "run must be called in cross-replica context, not from a replica function or "
        "merge_call's function");
  }
  MutexLock run_lock(&run_mu_);
  {
    MutexLock lock(&state_mu_);
    if (joined_count_ > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          joined_count_, " replica(s) joined with join_replica are active: leave them before run"));
    }
    running_ = true;
  }
  std::shared_ptr<Strategy> self = shared_from_this();
  Mutex error_mu;
  absl::Status first_error;
  pool_->Run([&](int32_t replica) {
    ReplicaContext context(*this, replica, false);
    ScopedFrame frame(Frame{FrameKind::kReplica, self, &context});
    absl::Status status;
    try {
      status = fn(context);
    } catch (const std::exception& e) {
      status = absl::InternalError(absl::StrCat("replica ", replica, " threw: ", e.what()));
    } catch (...) {
      status = absl::InternalError(absl::StrCat("replica ", replica, " threw an exception"));
    }
    if (status.ok()) return;
    {
      MutexLock lock(&error_mu);
      // Replicas released by the failure report ABORTED; the failure itself wins.
      if (first_error.ok() || (absl::IsAborted(first_error) && !absl::IsAborted(status))) {
        first_error = status;
      }
    }
    collective().Abort(absl::AbortedError(
        absl::StrCat("replica ", replica, " failed: ", status.message())));
  });
  collective().Reset();
  {
    MutexLock lock(&state_mu_);
    running_ = false;
  }
  return first_error;
}

absl::StatusOr<std::unique_ptr<ReplicaContext>> Strategy::JoinReplica(int32_t replica) {
  if (replica < 0 || replica >= num_replicas()) {
    return absl::InvalidArgumentError(absl::StrCat("replica_id ", replica,
                                                   " is out of range: the strategy has ",
                                                   num_replicas(), " replicas"));
  }
  if (ThreadContext::Current().top_kind() == FrameKind::kReplica) {
    return absl::FailedPreconditionError("this thread is already acting as a replica");
  }
  MutexLock lock(&state_mu_);
  if (running_) {
    return absl::FailedPreconditionError("cannot join a replica while run is active");
  }
  if (joined_[static_cast<size_t>(replica)]) {
    return absl::AlreadyExistsError(
        absl::StrCat("replica ", replica, " is already joined by another thread"));
  }
  joined_[static_cast<size_t>(replica)] = true;
  ++joined_count_;
  auto context = std::make_unique<ReplicaContext>(*this, replica, true);
  ThreadContext::Current().Push(Frame{FrameKind::kReplica, shared_from_this(), context.get()});
  return context;
}

absl::Status Strategy::LeaveReplica(const ReplicaContext& context) {
  if (!context.joined()) {
    return absl::FailedPreconditionError(
        "the context was handed to a replica function by run; only contexts from "
        "join_replica are left");
  }
  ThreadContext& thread = ThreadContext::Current();
  const Frame* top = thread.top();
  if (top == nullptr || top->kind != FrameKind::kReplica || top->reentered || top->replica != &context) {
    return absl::FailedPreconditionError(
        "a joined replica must be left on the thread that joined it, after every scope it "
        "entered since has been exited");
  }
  // The frame may hold the last reference to this strategy: keep it alive to the end.
  std::shared_ptr<Strategy> self = shared_from_this();
  thread.Truncate(thread.depth() - 1);
  MutexLock lock(&state_mu_);
  joined_[static_cast<size_t>(context.replica_id())] = false;
  // When the last joined replica leaves, a failure among them no longer matters.
  if (--joined_count_ == 0) collective().Reset();
  return absl::OkStatus();
}

bool Strategy::VariableNameTaken(const std::string& name) const {
  return variable_names_.contains(name) || claimed_names_.contains(name);
}

Strategy::VariableNameClaim Strategy::UniqueVariableName(absl::string_view requested) {
  VariableNameClaim claim;
  claim.base = requested.empty() ? "Variable" : std::string(requested);
  MutexLock lock(&variables_mu_);
  // TF's unique names: base, then base_1, base_2, ... skipping names already taken (also
  // ones a user gave explicitly). Only a failed creation gives a name back, so the next
  // suffix to try only grows except when that happens.
  claim.name = claim.base;
  if (VariableNameTaken(claim.name)) {
    int64_t& suffix = next_name_suffix_.try_emplace(claim.base, 1).first->second;
    do {
      claim.suffix = suffix++;
      claim.name = absl::StrCat(claim.base, "_", claim.suffix);
    } while (VariableNameTaken(claim.name));
  }
  ++claimed_names_[claim.name];
  return claim;
}

Strategy::VariableNameClaim Strategy::ReserveVariableName(absl::string_view name) {
  VariableNameClaim claim;
  claim.name = claim.base = std::string(name);
  MutexLock lock(&variables_mu_);
  ++claimed_names_[claim.name];
  return claim;
}

void Strategy::SettleVariableName(const VariableNameClaim& claim, bool created) {
  MutexLock lock(&variables_mu_);
  if (auto it = claimed_names_.find(claim.name); it != claimed_names_.end() && --it->second == 0) {
    claimed_names_.erase(it);
  }
  if (created) {
    variable_names_.insert(claim.name);
    return;
  }
  // The search for the next "<base>_<n>" may start at the suffix given back: names below
  // it that are taken are skipped again, so starting lower never repeats a name.
  if (claim.suffix > 0) {
    if (auto it = next_name_suffix_.find(claim.base); it != next_name_suffix_.end()) {
      it->second = std::min(it->second, claim.suffix);
    }
  }
}

void Strategy::RegisterVariable(const std::shared_ptr<Variable>& variable) {
  MutexLock lock(&variables_mu_);
  variables_.erase(std::remove_if(variables_.begin(), variables_.end(),
                                  [](const std::weak_ptr<Variable>& v) { return v.expired(); }),
                   variables_.end());
  variables_.push_back(variable);
}

std::vector<std::shared_ptr<Variable>> Strategy::LiveVariables() {
  MutexLock lock(&variables_mu_);
  std::vector<std::shared_ptr<Variable>> live;
  for (const auto& weak : variables_) {
    if (auto variable = weak.lock()) live.push_back(std::move(variable));
  }
  return live;
}

}  // namespace distribute
