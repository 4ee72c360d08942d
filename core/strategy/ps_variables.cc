#include "core/strategy/ps_variables.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/collective/reduce_op.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/thread_context.h"
#include "core/strategy/variable_ops.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// Replica context: every replica of this worker calls; replica 0 sends the aggregate.
absl::Status ApplyInReplicaContext(ReplicaContext& context, const Variable& variable,
                                   PsVariableStorage& storage, absl::string_view function,
                                   std::span<const Tensor> arguments,
                                   const ps::Hyperparameters& hyperparameters) {
  if (context.num_replicas() == 1) return storage.ApplyUpdate(function, arguments, hyperparameters);
  ASSIGN_OR_RETURN(const std::vector<Tensor> aggregated,
                   AggregateAcrossReplicas(context, variable, arguments,
                                           absl::StrCat("apply update ", Quoted(function))));
  return WriteFromFirstReplica(
      context, [&] { return storage.ApplyUpdate(function, aggregated, hyperparameters); });
}

}  // namespace

absl::StatusOr<Value> CreatePsVariable(Strategy& strategy, const Tensor& initial, VariableSync sync,
                                       VariableAggregation aggregation, const std::string& name,
                                       const std::string& colocate_with) {
  const std::shared_ptr<ParameterServers>& servers = strategy.parameter_servers();
  ps::VariableDeclaration declaration;
  declaration.name = name;
  declaration.dtype = initial.dtype();
  declaration.shape = initial.shape();
  declaration.colocate_with = colocate_with;
  declaration.partitioner = servers->partitioner;
  ASSIGN_OR_RETURN(ps::VariablePlacement placement, servers->placement->Declare(declaration));
  const DeviceSpec device = servers->devices[static_cast<size_t>(placement.shards.front().task)];
  const bool declared_now = placement.declared_now;
  auto storage = std::make_shared<PsVariableStorage>(servers, std::move(placement));
  if (absl::Status created = storage->CreateIfAbsent(initial).status(); !created.ok()) {
    // A failed creation changes nothing here: the name may be created again as it is on
    // the ps tasks, and the next variable lands where it would have (as in TF2, whose
    // round-robin counts created variables only).
    if (declared_now) servers->placement->Withdraw(name);
    return created;
  }
  auto variable = std::make_shared<Variable>(name, sync, aggregation, initial.dtype(),
                                             initial.shape(), device, std::move(storage),
                                             strategy.id());
  strategy.RegisterVariable(variable);
  return Value::OfVariable(std::move(variable));
}

absl::StatusOr<PsVariableStorage*> PsStorageOf(const Value& value) {
  if (!value.is_variable()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the value is a ", ValueKindName(value.kind()),
        ", not a variable of a ParameterServerStrategy"));
  }
  auto* storage = dynamic_cast<PsVariableStorage*>(value.variable()->storage().get());
  if (storage == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable ", Quoted(value.variable()->name()),
        " is not a variable of a ParameterServerStrategy: registered updates run on parameter "
        "servers (use dist_strategy_update for the other strategies)"));
  }
  return storage;
}

absl::Status ApplyRegisteredUpdate(const Value& value, absl::string_view function,
                                   std::span<const Tensor> arguments,
                                   const ps::Hyperparameters& hyperparameters) {
  ASSIGN_OR_RETURN(PsVariableStorage * storage, PsStorageOf(value));
  const Variable& variable = *value.variable();
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (absl::Status fits = variable.CheckCompatible(arguments[i]); !fits.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("args[", i, "]: ", fits.message()));
    }
  }
  ThreadContext& thread = ThreadContext::Current();
  ReplicaContext* context =
      thread.top_kind() == FrameKind::kReplica ? thread.replica_context() : nullptr;
  if (context == nullptr) return storage->ApplyUpdate(function, arguments, hyperparameters);
  if (context->strategy().id() != variable.strategy_id()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "variable ", Quoted(variable.name()),
        " belongs to another strategy than the replica function updating it"));
  }
  return ApplyInReplicaContext(*context, variable, *storage, function, arguments, hyperparameters);
}

}  // namespace distribute
