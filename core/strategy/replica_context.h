// The replica context (tf.distribute.ReplicaContext): what a replica function can do
// together with the other replicas of its strategy.
#ifndef DISTRIBUTE_CORE_STRATEGY_REPLICA_CONTEXT_H_
#define DISTRIBUTE_CORE_STRATEGY_REPLICA_CONTEXT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "core/kernels/reduce_op.h"
#include "core/tensor/tensor.h"
#include "core/util/deadline.h"
#include "core/values/value.h"

namespace distribute {

class Strategy;

class ReplicaContext {
 public:
  // What merge_call's function receives (argument i gathered from every replica) and
  // returns (a value each replica gets its part of, or nothing).
  using MergeFn = absl::FunctionRef<absl::StatusOr<std::optional<Value>>(
      std::span<const Value> gathered)>;

  ReplicaContext(Strategy& strategy, int32_t replica_id, bool joined);

  // The default strategy's replica context (replica 0 of 1).
  static ReplicaContext& DefaultContext();

  Strategy& strategy() const { return strategy_; }
  std::shared_ptr<Strategy> strategy_ref() const;
  // This replica among the process's replicas (its thread, device and slot).
  int32_t replica_id() const { return replica_id_; }
  int32_t num_replicas() const;
  // This replica among all the job's replicas (tf's replica_id_in_sync_group and
  // num_replicas_in_sync): the same as the above in a single process.
  int32_t replica_id_in_sync_group() const;
  int32_t num_replicas_in_sync() const;
  const DeviceSpec& device() const;
  const std::string& device_name() const;
  bool joined() const { return joined_; }

  // This replica's deadline for its next wait: its own timeout if set, else the
  // strategy's, from now.
  Deadline NewDeadline() const;
  // A per-replica override of the strategy's timeout (0 restores the strategy's).
  absl::Status SetTimeoutMs(int64_t timeout_ms);

  absl::StatusOr<Tensor> AllReduce(ReduceOp op, const Tensor& value);
  absl::StatusOr<std::vector<Tensor>> BatchAllReduce(ReduceOp op, std::span<const Tensor> values);
  // AllReduce's result written into `out` (AllReduce's dtype, value's shape, any device; it
  // may be `value`): in this replica's memory the collective writes it directly, with no
  // allocation; elsewhere the result is copied in. A wrong `out` fails the call on every
  // replica, with this replica's reason, before anything is written.
  absl::Status AllReduceInto(ReduceOp op, const Tensor& value, const Tensor& out);
  // `axis` may be negative (counted from the end).
  absl::StatusOr<Tensor> AllGather(const Tensor& value, int32_t axis);
  absl::StatusOr<Tensor> Broadcast(const Tensor& value, int32_t source_replica);
  absl::StatusOr<std::optional<Value>> MergeCall(std::span<const Value> args, MergeFn fn);

  // A rendezvous of all replicas (after writes others will read).
  absl::Status Sync();

 private:
  Strategy& strategy_;
  const int32_t replica_id_;
  const bool joined_;
  int64_t timeout_ms_ = 0;  // 0: the strategy's
};

// Argument i of every replica, regrouped as merge_call and run present it: the same
// variable from all replicas is that variable; tensors become a PerReplica value (the
// tensor itself for one replica).
// `always_wrap`: a lone tensor becomes a PerReplica value of one component too (a
// multi-worker strategy's replica has peers on other workers).
absl::StatusOr<Value> Regroup(std::span<const Value> per_replica, absl::string_view what,
                              bool always_wrap = false);

// A replica's part of a value produced in cross-replica context: its component of a
// PerReplica or Mirrored value, otherwise the value itself.
absl::StatusOr<Value> PartForReplica(const Value& value, int32_t replica, int32_t num_replicas);

// The arguments of `run` as each replica sees them: PerReplica and Mirrored values
// become the replica's component; tensors and variables are passed as they are.
absl::StatusOr<std::vector<std::vector<Value>>> UnwrapForReplicas(std::span<const Value> args,
                                                                  int32_t num_replicas);

// Result slot `slot` of every replica merged: nothing when no replica filled it, else
// Regroup of the replicas' values (every replica must have filled it).
absl::StatusOr<std::optional<Value>> MergeResults(std::span<std::optional<Value>> per_replica,
                                                  int32_t slot, bool always_wrap = false);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_REPLICA_CONTEXT_H_
