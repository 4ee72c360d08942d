#include "core/strategy/ps_variables.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/kernels/reduce_op.h"
#include "core/strategy/ps_variable_batch.h"
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

// The variable of `value` and its registered update's `arguments`, checked as
// ApplyRegisteredUpdate checks them; `what` names the variable in messages ("variables[2]").
absl::StatusOr<PsVariableStorage*> CheckUpdate(const Value& value, std::span<const Tensor> arguments,
                                               absl::string_view what) {
  absl::StatusOr<PsVariableStorage*> storage = PsStorageOf(value);
  if (!storage.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", storage.status().message()));
  const Variable& variable = *value.variable();
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (absl::Status fits = variable.CheckCompatible(arguments[i]); !fits.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": args[", i, "]: ", fits.message()));
    }
  }
  return *storage;
}

// Replica context, many variables: each replica's arguments combined by their variables'
// aggregations, every SUM variable's in one batch all-reduce and every MEAN one's in
// another (NONE refused before any collective), ONLY_FIRST_REPLICA's broadcast.
absl::StatusOr<std::vector<std::vector<Tensor>>> AggregateBatch(ReplicaContext& context,
                                                                std::span<const Value* const> variables,
                                                                std::span<const std::vector<Tensor>> arguments,
                                                                absl::string_view function) {
  for (const Value* value : variables) {
    const Variable& variable = *value->variable();
    if (variable.aggregation() == VariableAggregation::kNone) {
      return context.strategy().collective().FailTogether(
          context.replica_id(),
          absl::InvalidArgumentError(absl::StrCat("variable ", Quoted(variable.name()),
                                                  " has aggregation NONE: an aggregation must be specified (SUM, "
                                                  "MEAN or ONLY_FIRST_REPLICA) to apply update ",
                                                  Quoted(function), " in replica context")),
          context.NewDeadline());
    }
  }
  std::vector<std::vector<Tensor>> aggregated(arguments.begin(), arguments.end());
  for (const auto& [aggregation, op] : {std::pair{VariableAggregation::kSum, ReduceOp::kSum},
                                       std::pair{VariableAggregation::kMean, ReduceOp::kMean}}) {
    std::vector<Tensor> batch;
    for (size_t v = 0; v < variables.size(); ++v) {
      if (variables[v]->variable()->aggregation() != aggregation) continue;
      batch.insert(batch.end(), arguments[v].begin(), arguments[v].end());
    }
    if (batch.empty()) continue;
    ASSIGN_OR_RETURN(std::vector<Tensor> reduced, context.BatchAllReduce(op, batch));
    size_t next = 0;
    for (size_t v = 0; v < variables.size(); ++v) {
      if (variables[v]->variable()->aggregation() != aggregation) continue;
      for (Tensor& argument : aggregated[v]) argument = std::move(reduced[next++]);
    }
  }
  for (size_t v = 0; v < variables.size(); ++v) {
    if (variables[v]->variable()->aggregation() != VariableAggregation::kOnlyFirstReplica) continue;
    for (Tensor& argument : aggregated[v]) {
      ASSIGN_OR_RETURN(argument, context.Broadcast(argument, 0));
    }
  }
  return aggregated;
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

absl::StatusOr<std::vector<Tensor>> ReadVariables(std::span<const Value* const> variables) {
  // Where each value comes from: a batch read of PS storages, or a read of its own.
  std::vector<PsVariableStorage*> batch;
  std::vector<int64_t> batch_index(variables.size(), -1);
  for (size_t i = 0; i < variables.size(); ++i) {
    const Value& value = *variables[i];
    if (!value.is_variable() || value.variable()->num_copies() != 1) continue;
    if (auto* storage = dynamic_cast<PsVariableStorage*>(value.variable()->storage().get())) {
      batch_index[i] = static_cast<int64_t>(batch.size());
      batch.push_back(storage);
    }
  }
  std::vector<Tensor> batched;
  if (!batch.empty()) {
    ASSIGN_OR_RETURN(batched, ReadPsVariables(batch));
  }
  std::vector<Tensor> out;
  out.reserve(variables.size());
  for (size_t i = 0; i < variables.size(); ++i) {
    if (batch_index[i] >= 0) {
      out.push_back(std::move(batched[static_cast<size_t>(batch_index[i])]));
      continue;
    }
    absl::StatusOr<Tensor> value = ReadVariable(*variables[i]);
    if (!value.ok()) {
      return absl::Status(value.status().code(), absl::StrCat("variables[", i, "]: ", value.status().message()));
    }
    out.push_back(*std::move(value));
  }
  return out;
}

absl::Status ApplyRegisteredUpdates(std::span<const Value* const> variables,
                                    std::span<const std::vector<Tensor>> arguments,
                                    absl::string_view function, const ps::Hyperparameters& hyperparameters) {
  if (arguments.size() != variables.size()) {
    return absl::InternalError("a batch of updates with another number of argument lists than variables");
  }
  ThreadContext& thread = ThreadContext::Current();
  ReplicaContext* context =
      thread.top_kind() == FrameKind::kReplica ? thread.replica_context() : nullptr;
  // A replica whose batch fails a local check still meets the others' collectives, so that
  // they fail at once with its error instead of waiting for it until the deadline.
  const auto refuse = [&](const absl::Status& error) -> absl::Status {
    if (context == nullptr || context->num_replicas() == 1) return error;
    return context->strategy().collective().FailTogether(context->replica_id(), error, context->NewDeadline());
  };
  std::vector<PsVariableStorage*> storages;
  storages.reserve(variables.size());
  for (size_t v = 0; v < variables.size(); ++v) {
    absl::StatusOr<PsVariableStorage*> storage =
        CheckUpdate(*variables[v], arguments[v], absl::StrCat("variables[", v, "]"));
    if (!storage.ok()) return refuse(storage.status());
    storages.push_back(*storage);
  }
  if (context == nullptr) return ApplyPsUpdates(storages, arguments, function, hyperparameters);
  for (const Value* value : variables) {
    if (value->variable()->strategy_id() != context->strategy().id()) {
      return refuse(absl::FailedPreconditionError(absl::StrCat("variable ", Quoted(value->variable()->name()),
                                                               " belongs to another strategy than the replica "
                                                               "function updating it")));
    }
  }
  if (context->num_replicas() == 1) return ApplyPsUpdates(storages, arguments, function, hyperparameters);
  absl::StatusOr<std::vector<std::vector<Tensor>>> aggregated =
      AggregateBatch(*context, variables, arguments, function);
  if (!aggregated.ok()) return aggregated.status();
  return WriteFromFirstReplica(
      *context, [&] { return ApplyPsUpdates(storages, *aggregated, function, hyperparameters); });
}

}  // namespace distribute
