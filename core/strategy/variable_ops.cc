#include "core/strategy/variable_ops.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/kernels/reduce_kernels.h"
#include "core/strategy/ps_variables.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/strategy.h"
#include "core/strategy/thread_context.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"
#include "core/values/safetensors.h"

namespace distribute {
namespace {

absl::Status ApplyToCopy(Variable& variable, int32_t copy, const Tensor& value, AssignKind kind) {
  switch (kind) {
    case AssignKind::kAssign:
      return variable.Assign(copy, value);
    case AssignKind::kAdd:
      return variable.AssignAdd(copy, value);
    case AssignKind::kSub:
      return variable.AssignSub(copy, value);
  }
  return absl::InternalError("unknown assignment");
}

absl::string_view AssignName(AssignKind kind) {
  switch (kind) {
    case AssignKind::kAssign:
      return "assign";
    case AssignKind::kAdd:
      return "assign_add";
    case AssignKind::kSub:
      return "assign_sub";
  }
  return "assign";
}

// The variable's strategy when it is this thread's and spans several workers (whose
// copies on the other workers count too); null otherwise.
std::shared_ptr<Strategy> MultiWorkerStrategyOf(const Variable& variable) {
  std::shared_ptr<Strategy> strategy = ThreadContext::Current().strategy();
  if (strategy == nullptr || strategy->id() != variable.strategy_id() ||
      strategy->num_workers() == 1) {
    return nullptr;
  }
  return strategy;
}

// The copy of the job's first replica: this process's first copy, or under
// MultiWorkerMirrored the chief's, sent to every worker (each worker's own first copy
// would make the workers read different values).
absl::StatusOr<Tensor> ReadFirstReplicaCopy(const Variable& variable) {
  const std::shared_ptr<Strategy> multi_worker = MultiWorkerStrategyOf(variable);
  if (multi_worker == nullptr) return variable.Snapshot(0);
  ASSIGN_OR_RETURN(Tensor first, variable.Snapshot(0));
  ASSIGN_OR_RETURN(first, first.OnHost());
  RETURN_IF_ERROR(multi_worker->workers().Broadcast(
      first.byte_size() > 0 ? first.data() : nullptr, first.byte_size(), 0,
      absl::StrCat("read of SyncOnReadVariable ", Quoted(variable.name())), multi_worker->NewDeadline()));
  return first;
}

absl::StatusOr<const Tensor*> RequireTensor(const Value& value, absl::string_view why) {
  absl::StatusOr<const Tensor*> tensor = value.AsTensor();
  if (!tensor.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(tensor.status().message(), ": ", why));
  }
  return tensor;
}

// Replica context: aggregate the replicas' values with the variable's aggregation (a
// collective), then write the copies this replica owns.
absl::Status AssignInReplicaContext(ReplicaContext& context, Variable& variable,
                                    const Tensor& value, AssignKind kind) {
  if (variable.kind() == ValueKind::kSyncOnReadVariable) {
    return ApplyToCopy(variable, context.replica_id(), value, kind);
  }
  // One replica in the whole job: nothing to aggregate. The job's count, not this
  // worker's: a multi-worker replica alone on its worker still has peers elsewhere.
  if (context.num_replicas_in_sync() == 1) return ApplyToCopy(variable, 0, value, kind);
  RETURN_IF_ERROR(variable.CheckCompatible(value));
  ASSIGN_OR_RETURN(const std::vector<Tensor> aggregated,
                   AggregateAcrossReplicas(context, variable, std::span<const Tensor>(&value, 1),
                                           absl::StrCat(AssignName(kind), " a distributed variable")));
  if (variable.num_copies() == context.num_replicas()) {
    return ApplyToCopy(variable, context.replica_id(), aggregated.front(), kind);
  }
  return WriteFromFirstReplica(context, [&] { return ApplyToCopy(variable, 0, aggregated.front(), kind); });
}

absl::Status AssignInCrossReplicaContext(Variable& variable, const Value& value, AssignKind kind) {
  const int32_t copies = variable.num_copies();
  if (variable.kind() == ValueKind::kSyncOnReadVariable) {
    ASSIGN_OR_RETURN(const Tensor* tensor,
                     RequireTensor(value, "a SyncOnReadVariable accepts only a single value "
                                          "in cross-replica context"));
    RETURN_IF_ERROR(variable.CheckCompatible(*tensor));
    if (kind != AssignKind::kAssign && variable.aggregation() == VariableAggregation::kSum) {
      return absl::InvalidArgumentError(absl::StrCat(
          "SyncOnReadVariable ", Quoted(variable.name()), " does not support ", AssignName(kind),
          " in cross-replica context when its aggregation is SUM"));
    }
    Tensor share = *tensor;
    if (kind == AssignKind::kAssign) {
      ASSIGN_OR_RETURN(share, SyncOnReadShare(variable, *tensor));
    }
    for (int32_t i = 0; i < copies; ++i) RETURN_IF_ERROR(ApplyToCopy(variable, i, share, kind));
    return absl::OkStatus();
  }
  // MirroredVariable or a plain variable: one value for all copies, or a mirrored one.
  std::vector<Tensor> parts;
  if (value.kind() == ValueKind::kTensor) {
    parts.assign(static_cast<size_t>(copies), value.components().front());
  } else if (value.kind() == ValueKind::kMirrored || value.kind() == ValueKind::kMirroredVariable) {
    std::vector<Tensor> components;
    if (value.is_variable()) {
      ASSIGN_OR_RETURN(components, value.variable()->SnapshotAll());
    } else {
      components.assign(value.components().begin(), value.components().end());
    }
    if (copies == 1) {
      parts.push_back(components.front());
    } else if (static_cast<int32_t>(components.size()) == copies) {
      parts = std::move(components);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "the ", ValueKindName(value.kind()), " has ", components.size(),
          " components but variable ", Quoted(variable.name()), " has ", copies, " copies"));
    }
  } else if (value.kind() == ValueKind::kVariable) {
    ASSIGN_OR_RETURN(Tensor snapshot, ReadVariable(value));
    parts.assign(static_cast<size_t>(copies), snapshot);
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot ", AssignName(kind), " a ", ValueKindName(value.kind()), " to ",
        ValueKindName(variable.kind()), " ", Quoted(variable.name()),
        " in cross-replica context: only a single value or a Mirrored value can be assigned"));
  }
  for (const Tensor& part : parts) RETURN_IF_ERROR(variable.CheckCompatible(part));
  if (kind == AssignKind::kAssign) return variable.AssignAll(parts);
  for (int32_t i = 0; i < copies; ++i) RETURN_IF_ERROR(ApplyToCopy(variable, i, parts[i], kind));
  return absl::OkStatus();
}

// The variable's copies on the strategy's parameter devices (or the colocation's), from
// the chief's initial value when the strategy spans several workers.
absl::StatusOr<Value> CreateVariableOnDevices(Strategy& strategy, const ThreadContext& thread,
                                              const Tensor& initial_value, VariableSync sync,
                                              VariableAggregation aggregation,
                                              const std::string& unique_name) {
  ValueKind kind = ValueKind::kVariable;
  std::vector<DeviceSpec> devices = strategy.parameter_devices();
  if (strategy.mirrors_variables()) {
    if (sync == VariableSync::kNone) {
      return absl::InvalidArgumentError(
          "synchronization NONE is not supported with a MirroredStrategy: use ON_WRITE or "
          "ON_READ");
    }
    kind = sync == VariableSync::kOnRead ? ValueKind::kSyncOnReadVariable
                                         : ValueKind::kMirroredVariable;
  }
  if (std::vector<DeviceSpec> colocated = thread.colocation(); !colocated.empty()) {
    devices = std::move(colocated);
    if (devices.size() == 1) kind = ValueKind::kVariable;
  }
  Tensor initial = initial_value;
  if (strategy.num_workers() > 1) {
    // Every worker starts from the chief's value, as TF's MultiWorkerMirroredStrategy does.
    ASSIGN_OR_RETURN(initial, initial_value.CopyTo("CPU:0"));
    RETURN_IF_ERROR(strategy.workers().Broadcast(
        initial.byte_size() > 0 ? initial.data() : nullptr, initial.byte_size(), 0,
        absl::StrCat("initial value of variable ", Quoted(unique_name), " ", DTypeName(initial.dtype()),
                     "[", absl::StrJoin(initial.shape().dims(), ", "), "]"),
        strategy.NewDeadline()));
  }
  std::vector<Tensor> copies;
  for (const DeviceSpec& device : devices) {
    ASSIGN_OR_RETURN(Tensor copy, initial.CopyTo(device.ToString()));
    copies.push_back(std::move(copy));
  }
  auto variable = std::make_shared<Variable>(unique_name, kind, sync,
                                             aggregation, std::move(copies), strategy.id());
  strategy.RegisterVariable(variable);
  return Value::OfVariable(std::move(variable));
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> AggregateAcrossReplicas(ReplicaContext& context,
                                                            const Variable& variable,
                                                            std::span<const Tensor> values,
                                                            absl::string_view action) {
  std::vector<Tensor> aggregated(values.begin(), values.end());
  switch (variable.aggregation()) {
    case VariableAggregation::kNone:
      return absl::InvalidArgumentError(absl::StrCat(
          "variable ", Quoted(variable.name()), " has aggregation NONE: an aggregation must be "
          "specified (SUM, MEAN or ONLY_FIRST_REPLICA) to ", action, " in replica context"));
    case VariableAggregation::kSum:
    case VariableAggregation::kMean: {
      const ReduceOp op =
          variable.aggregation() == VariableAggregation::kSum ? ReduceOp::kSum : ReduceOp::kMean;
      if (aggregated.size() == 1) {
        ASSIGN_OR_RETURN(aggregated.front(), context.AllReduce(op, aggregated.front()));
      } else if (!aggregated.empty()) {
        ASSIGN_OR_RETURN(aggregated, context.BatchAllReduce(op, aggregated));
      }
      return aggregated;
    }
    case VariableAggregation::kOnlyFirstReplica:
      for (Tensor& value : aggregated) {
        ASSIGN_OR_RETURN(value, context.Broadcast(value, 0));
      }
      return aggregated;
  }
  return absl::InternalError("unknown aggregation");
}

absl::Status WriteFromFirstReplica(ReplicaContext& context, absl::FunctionRef<absl::Status()> write) {
  absl::Status written = context.replica_id() == 0 ? write() : absl::OkStatus();
  if (!written.ok()) {
    context.strategy().collective().Abort(absl::AbortedError(written.message()));
    return written;
  }
  return context.Sync();
}

absl::StatusOr<Tensor> SyncOnReadShare(const Variable& variable, const Tensor& value) {
  // Every replica of the job holds a share: the other workers' copies too.
  const std::shared_ptr<Strategy> multi_worker = MultiWorkerStrategyOf(variable);
  const int32_t replicas =
      multi_worker != nullptr ? multi_worker->num_replicas_in_sync() : variable.num_copies();
  if (variable.aggregation() != VariableAggregation::kSum || replicas <= 1) return value;
  // Divided on the host (a GPU value comes over and its share goes back).
  ASSIGN_OR_RETURN(Tensor share, value.in_host_memory() ? value.CopyTo(value.device_name()) : value.OnHost());
  DivideInPlace(share.dtype(), share.data(), static_cast<size_t>(share.shape().num_elements()),
                replicas);
  if (!value.in_host_memory()) return share.CopyTo(value.device_name());
  return share;
}

absl::StatusOr<Value> CreateVariable(const Tensor& initial_value, VariableSync sync,
                                     VariableAggregation aggregation, absl::string_view name) {
  ThreadContext& thread = ThreadContext::Current();
  if (thread.top_kind() == FrameKind::kReplica) {
    return absl::FailedPreconditionError(
        "variables must be created in cross-replica context (in the strategy's scope or with "
        "no scope), not inside a replica function");
  }
  // Variables are saved under their names: a name no checkpoint can hold would make every
  // later save fail, so it is refused here, where the caller can still choose another.
  if (!name.empty()) {
    if (absl::Status savable = CheckTensorName(name); !savable.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable name ", savable.message(),
          " (variables are saved under their names by dist_strategy_save_variables)"));
    }
  }
  if (aggregation == VariableAggregation::kMean && IsInteger(initial_value.dtype())) {
    // TF refuses these at creation: the mean of integer updates is not an integer, so an
    // update would have to truncate.
    return absl::InvalidArgumentError(absl::StrCat(
        "variable ", Quoted(name.empty() ? absl::string_view("Variable") : name), " is ", DTypeName(initial_value.dtype()),
        " with aggregation MEAN: MEAN aggregation needs a floating-point variable (as in TF); "
        "use SUM, ONLY_FIRST_REPLICA or NONE, or a float dtype"));
  }
  const std::shared_ptr<Strategy> strategy = thread.strategy();
  if (sync == VariableSync::kAuto) sync = VariableSync::kOnWrite;
  const bool on_parameter_servers = strategy->parameter_servers() != nullptr;
  // Under ParameterServer a name given is the variable's identity across workers (the
  // same name is the same variable, created again or not); a NULL name is numbered in
  // this process, as every name is for the other strategies.
  const Strategy::VariableNameClaim claim = on_parameter_servers && !name.empty()
                                                ? strategy->ReserveVariableName(name)
                                                : strategy->UniqueVariableName(name);
  absl::StatusOr<Value> created =
      on_parameter_servers
          // One copy on a ps task, whatever the synchronization (TF's parameter-server
          // strategies place every variable there).
          ? CreatePsVariable(*strategy, initial_value, sync, aggregation, claim.name,
                             thread.colocation_variable())
          : CreateVariableOnDevices(*strategy, thread, initial_value, sync, aggregation, claim.name);
  strategy->SettleVariableName(claim, created.ok());
  return created;
}

absl::StatusOr<Tensor> ReadVariable(const Value& value) {
  if (!value.is_variable()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the value is a ", ValueKindName(value.kind()), ", not a variable"));
  }
  const Variable& variable = *value.variable();
  if (value.component_index() >= 0) return variable.Snapshot(value.component_index());
  // A SyncOnRead variable's cross-replica value follows its aggregation whatever its copy
  // count: with one copy NONE is still refused, and other workers' copies still count.
  const bool sync_on_read = variable.kind() == ValueKind::kSyncOnReadVariable;
  if (variable.num_copies() == 1 && !sync_on_read) return variable.Snapshot(0);
  ThreadContext& thread = ThreadContext::Current();
  if (ReplicaContext* context = thread.replica_context();
      context != nullptr && context->strategy().id() == variable.strategy_id() &&
      context->replica_id() < variable.num_copies()) {
    return variable.Snapshot(context->replica_id());
  }
  if (!sync_on_read) return variable.Snapshot(0);
  switch (variable.aggregation()) {
    case VariableAggregation::kOnlyFirstReplica:
      return ReadFirstReplicaCopy(variable);
    case VariableAggregation::kNone:
      return absl::InvalidArgumentError(absl::StrCat(
          "SyncOnReadVariable ", Quoted(variable.name()),
          " has aggregation NONE, so it has no cross-replica value: create it with SUM, MEAN "
          "or ONLY_FIRST_REPLICA, or read it in replica context"));
    case VariableAggregation::kSum:
    case VariableAggregation::kMean:
      break;
  }
  ASSIGN_OR_RETURN(std::vector<Tensor> copies, variable.SnapshotAll());
  // Aggregated on the host: GPU copies come over (snapshots, ours to overwrite).
  for (Tensor& copy : copies) {
    ASSIGN_OR_RETURN(copy, copy.OnHost());
  }
  const Tensor& first = copies.front();
  std::vector<const void*> inputs;
  for (const Tensor& copy : copies) inputs.push_back(copy.data());
  void* output = first.data();  // the snapshot is ours to overwrite
  const ReduceOp op =
      variable.aggregation() == VariableAggregation::kSum ? ReduceOp::kSum : ReduceOp::kMean;
  const size_t count = static_cast<size_t>(first.shape().num_elements());
  if (const std::shared_ptr<Strategy> multi_worker = MultiWorkerStrategyOf(variable)) {
    // Aggregated over every worker's copies, as in one process with all the replicas.
    RETURN_IF_ERROR(multi_worker->workers().AllReduceLocal(
        op, first.dtype(), inputs.data(), static_cast<int32_t>(inputs.size()), count, output,
        multi_worker->num_replicas_in_sync(),
        absl::StrCat("read of SyncOnReadVariable ", Quoted(variable.name())), multi_worker->NewDeadline()));
    return first;
  }
  ReduceRange(first.dtype(), op, inputs.data(), static_cast<int32_t>(inputs.size()), &output, 1, 0,
              count, static_cast<int64_t>(inputs.size()));
  return first;
}

absl::Status AssignVariable(const Value& target, const Value& value, AssignKind kind) {
  if (!target.is_variable()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the target is a ", ValueKindName(target.kind()), ", not a variable"));
  }
  Variable& variable = *target.variable();
  if (target.component_index() >= 0) {
    ASSIGN_OR_RETURN(const Tensor* tensor,
                     RequireTensor(value, "a variable's copy on one device takes a tensor"));
    return ApplyToCopy(variable, target.component_index(), *tensor, kind);
  }
  ThreadContext& thread = ThreadContext::Current();
  ReplicaContext* context = thread.top_kind() == FrameKind::kReplica ? thread.replica_context() : nullptr;
  if (context != nullptr) {
    if (context->strategy().id() != variable.strategy_id()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "variable ", Quoted(variable.name()), " belongs to another strategy than the replica "
          "function assigning it"));
    }
    ASSIGN_OR_RETURN(const Tensor* tensor,
                     RequireTensor(value, "in replica context a variable takes this replica's tensor"));
    return AssignInReplicaContext(*context, variable, *tensor, kind);
  }
  return AssignInCrossReplicaContext(variable, value, kind);
}

absl::StatusOr<const Tensor*> CollectiveInput(const Value& value, std::optional<Tensor>* read) {
  if (!value.is_variable()) return value.AsTensor();
  ASSIGN_OR_RETURN(Tensor tensor, ReadVariable(value));
  return &read->emplace(std::move(tensor));
}

}  // namespace distribute
