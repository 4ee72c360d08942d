// tf.Variable under a strategy: creation in the current scope, reads and assignments
// with TF's replica-context and cross-replica rules (see include_c/distribute/variable.h).
#ifndef DISTRIBUTE_CORE_STRATEGY_VARIABLE_OPS_H_
#define DISTRIBUTE_CORE_STRATEGY_VARIABLE_OPS_H_

#include <optional>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/tensor/tensor.h"
#include "core/values/value.h"
#include "core/values/variable.h"

namespace distribute {

class ReplicaContext;

absl::StatusOr<Value> CreateVariable(const Tensor& initial_value, VariableSync sync,
                                     VariableAggregation aggregation, absl::string_view name);

absl::StatusOr<Tensor> ReadVariable(const Value& variable);

// What a replica contributes to a collective: a tensor as it is (no copy of the tensor
// object: the hot path of a small all-reduce), a variable's value as this replica reads it
// (into `*read`, which the result then points to); InvalidArgument naming the kind for
// other distributed values.
absl::StatusOr<const Tensor*> CollectiveInput(const Value& value, std::optional<Tensor>* read);

enum class AssignKind { kAssign, kAdd, kSub };
absl::Status AssignVariable(const Value& variable, const Value& value, AssignKind kind);

// The replicas' `values` (each replica's own) combined by `variable`'s aggregation, as TF
// does before an update in replica context: SUM and MEAN all-reduce them,
// ONLY_FIRST_REPLICA gives every replica replica 0's. NONE is InvalidArgument saying that
// an aggregation is needed to `action` ("assign_add a distributed variable").
absl::StatusOr<std::vector<Tensor>> AggregateAcrossReplicas(ReplicaContext& context,
                                                            const Variable& variable,
                                                            std::span<const Tensor> values,
                                                            absl::string_view action);

// A variable with one copy (CentralStorage, a ParameterServer variable) is written once per
// step: replica 0 runs `write`, and every replica returns once it is done, so that reads
// after the update see it. A failure aborts the group, releasing the waiting replicas.
absl::Status WriteFromFirstReplica(ReplicaContext& context, absl::FunctionRef<absl::Status()> write);

// The value a SyncOnRead variable's copies get when one value is written to all of them
// in cross-replica context (assignment, restore): value / copies for SUM, else the value.
absl::StatusOr<Tensor> SyncOnReadShare(const Variable& variable, const Tensor& value);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_VARIABLE_OPS_H_
