// A distribution strategy: its replicas (one per compute device, each with a persistent
// thread), where its variables live, and the collective backend its replicas communicate through.
#ifndef DISTRIBUTE_CORE_STRATEGY_STRATEGY_H_
#define DISTRIBUTE_CORE_STRATEGY_STRATEGY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "core/backend/collective_backend.h"
#include "core/collective/cross_device_ops.h"
#include "core/cluster/cluster_spec.h"
#include "core/collective/communication_options.h"
#include "core/device/device_spec.h"
#include "core/ps/partitioner.h"
#include "core/ps/placement.h"
#include "core/backend/parameter_servers.h"
#include "core/strategy/replica_pool.h"
#include "core/util/deadline.h"
#include "core/util/mutex.h"
#include "core/values/value.h"

namespace distribute {

class ReplicaContext;
class Variable;

enum class StrategyKind : int32_t {
  kDefault = 1,
  kOneDevice = 2,
  kMirrored = 3,
  kCentralStorage = 4,
  kMultiWorkerMirrored = 5,
  kParameterServer = 6,
};

absl::string_view StrategyKindName(StrategyKind kind);

class Strategy : public std::enable_shared_from_this<Strategy> {
 public:
  static constexpr int64_t kDefaultTimeoutMs = 60'000;

  static absl::StatusOr<std::shared_ptr<Strategy>> CreateOneDevice(absl::string_view device);
  // Empty `devices`: every logical CPU device. No ops: the shared-memory all-reduce.
  static absl::StatusOr<std::shared_ptr<Strategy>> CreateMirrored(
      const std::vector<std::string>& devices, std::optional<CrossDeviceOps> ops);
  static absl::StatusOr<std::shared_ptr<Strategy>> CreateCentralStorage(
      const std::vector<std::string>& compute_devices, absl::string_view parameter_device);
  // One replica per logical CPU device of this process, synchronised with the same
  // strategy on every other worker of `cluster` (whose current task is this process). A
  // null cluster is one local worker without a server (TF without TF_CONFIG).
  static absl::StatusOr<std::shared_ptr<Strategy>> CreateMultiWorkerMirrored(
      const ClusterSpec* cluster, const CommunicationOptions& options);
  // Replicas on this worker's logical CPU devices (as MultiWorkerMirrored's), variables
  // on the ps tasks of `cluster`, placed by `policy` and split by `partitioner`
  // (parameter_servers.h). A null cluster is local mode: the variables in this process.
  static absl::StatusOr<std::shared_ptr<Strategy>> CreateParameterServer(
      const ClusterSpec* cluster, const CommunicationOptions& options, ps::PlacementPolicy policy,
      std::optional<ps::Partitioner> partitioner);
  // The process-wide default strategy (one replica on CPU:0).
  static const std::shared_ptr<Strategy>& Default();

  ~Strategy();

  StrategyKind kind() const { return kind_; }
  uint64_t id() const { return id_; }
  // The replicas of this process (each has a thread and a device here).
  int32_t num_replicas() const { return static_cast<int32_t>(worker_devices_.size()); }
  // The replicas of the whole job (all workers'), and the id in that group of this
  // process's first replica: replica r here is replica first_replica_in_sync() + r.
  int32_t num_replicas_in_sync() const { return num_replicas() * num_workers_; }
  int32_t first_replica_in_sync() const { return num_replicas() * worker_index_; }
  int32_t num_workers() const { return num_workers_; }
  int32_t worker_index() const { return worker_index_; }
  // How many workers read input, and which one this is: the collective workers, except
  // under ParameterServer, whose workers shard their input by rank (as TF's does) but run
  // no collective together (their updates meet on the ps tasks).
  int32_t num_input_workers() const { return input_workers_; }
  int32_t input_worker_index() const { return input_worker_index_; }
  // The job's workers, for cross-replica calls (one worker in a single process).
  Workers& workers() const { return backend_->workers(); }
  const std::vector<DeviceSpec>& worker_devices() const { return worker_devices_; }
  const std::vector<std::string>& worker_names() const { return worker_names_; }
  const std::vector<DeviceSpec>& parameter_devices() const { return parameter_devices_; }
  const std::vector<std::string>& parameter_names() const { return parameter_names_; }
  // Where a ParameterServerStrategy's variables live; null for the other kinds.
  const std::shared_ptr<ParameterServers>& parameter_servers() const { return parameter_servers_; }
  // Whether variables get one copy per replica (Mirrored) or one on the parameter device.
  bool mirrors_variables() const {
    return kind_ == StrategyKind::kMirrored || kind_ == StrategyKind::kMultiWorkerMirrored;
  }

  int64_t timeout_ms() const { return timeout_ms_.load(std::memory_order_relaxed); }
  absl::Status SetTimeoutMs(int64_t timeout_ms);
  Deadline NewDeadline() const { return Deadline::AfterMs(timeout_ms()); }

  // The replica-context collectives of this process's replicas.
  Collective& collective() const { return backend_->collective(); }

  // Runs `fn(context)` once per replica concurrently (replica 0 on this thread), each in
  // replica context. Returns the first error; a failing replica aborts the group so that
  // replicas waiting in collectives are released. The group is reset afterwards.
  using ReplicaFn = absl::FunctionRef<absl::Status(ReplicaContext& context)>;
  absl::Status Run(ReplicaFn fn);

  // Bring your own threads: the calling thread becomes replica `replica`.
  absl::StatusOr<std::unique_ptr<ReplicaContext>> JoinReplica(int32_t replica);
  // Ends a JoinReplica on this thread: FailedPrecondition (changing nothing) for a context
  // a run handed out, or when the joined replica's frame is not this thread's innermost
  // (another thread, or a scope entered since and not exited). The caller then destroys
  // `context`; the strategy may be gone by then, as the frame held a reference to it.
  absl::Status LeaveReplica(const ReplicaContext& context);

  // Variables created in this strategy's scope, for checkpoints and naming. A creation
  // claims its name first (so that concurrent creations get distinct names), then settles
  // the claim: kept when the variable was created, given back when the creation failed.
  struct VariableNameClaim {
    std::string name;
    std::string base;    // the name requested ("Variable" for none)
    int64_t suffix = 0;  // name is "<base>_<suffix>"; 0: name is base
  };
  // The requested name (or "Variable") unless taken, else TF's next "<base>_<n>".
  VariableNameClaim UniqueVariableName(absl::string_view requested);
  // `name` itself, taken (so that UniqueVariableName skips it) but never suffixed: under
  // ParameterServer the same name means the same variable, as TF's get_variable.
  VariableNameClaim ReserveVariableName(absl::string_view name);
  // Keeps the claim's name for good when `created`; otherwise the name is free again
  // (unless another creation holds it) and unnamed variables are numbered as if the
  // failed creation had never been made: a failed call changes nothing.
  void SettleVariableName(const VariableNameClaim& claim, bool created);
  void RegisterVariable(const std::shared_ptr<Variable>& variable);
  std::vector<std::shared_ptr<Variable>> LiveVariables();

 private:
  Strategy(StrategyKind kind, std::vector<DeviceSpec> workers, std::vector<DeviceSpec> parameters,
           std::unique_ptr<CollectiveBackend> backend);
  // A strategy over `workers` whose backend is built from `request` (its devices filled in).
  static absl::StatusOr<std::shared_ptr<Strategy>> Make(StrategyKind kind,
                                                        std::vector<DeviceSpec> workers,
                                                        std::vector<DeviceSpec> parameters,
                                                        BackendRequest request);

  const StrategyKind kind_;
  const uint64_t id_;
  const std::vector<DeviceSpec> worker_devices_;
  const std::vector<std::string> worker_names_;
  const std::vector<DeviceSpec> parameter_devices_;
  const std::vector<std::string> parameter_names_;
  std::atomic<int64_t> timeout_ms_{kDefaultTimeoutMs};
  const std::unique_ptr<CollectiveBackend> backend_;
  const int32_t num_workers_;
  const int32_t worker_index_;
  int32_t input_workers_;
  int32_t input_worker_index_;
  std::shared_ptr<ParameterServers> parameter_servers_;
  std::unique_ptr<ReplicaPool> pool_;
  // One run (or set of joined replicas) at a time.
  Mutex run_mu_;
  Mutex state_mu_;
  std::vector<bool> joined_ ABSL_GUARDED_BY(state_mu_);
  int32_t joined_count_ ABSL_GUARDED_BY(state_mu_) = 0;
  bool running_ ABSL_GUARDED_BY(state_mu_) = false;
  Mutex variables_mu_;
  std::vector<std::weak_ptr<Variable>> variables_ ABSL_GUARDED_BY(variables_mu_);
  // Every name of a created variable, the names claimed by creations still running (with
  // how many hold each), and per requested name the next suffix to try: naming n
  // variables alike costs O(n), not a scan of every name per candidate suffix.
  bool VariableNameTaken(const std::string& name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(variables_mu_);
  absl::flat_hash_set<std::string> variable_names_ ABSL_GUARDED_BY(variables_mu_);
  absl::flat_hash_map<std::string, int32_t> claimed_names_ ABSL_GUARDED_BY(variables_mu_);
  absl::flat_hash_map<std::string, int64_t> next_name_suffix_ ABSL_GUARDED_BY(variables_mu_);
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_STRATEGY_H_
