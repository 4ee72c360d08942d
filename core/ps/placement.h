// Which ps task holds each variable, decided on every worker alike. TF's between-graph
// training placed variables with replica_device_setter: each variable op asks the ps
// strategy for a task in creation order, so every worker that declares the same variables
// in the same order computes the same placement without talking to anyone. The policies:
//
// - round-robin (device_setter._RoundRobinStrategy, the default): task 0, 1, ..., n-1, 0, ...
// - greedy by bytes (contrib's GreedyLoadBalancingStrategy with byte_size_load_fn): the task
//   with the fewest bytes placed so far, the lowest index on a tie (numpy's argmin).
//
// A partitioned variable is one declaration but several variables in TF ("w/part_0", ...):
// each shard asks the policy in turn. colocate_vars_with places a variable (every shard of
// it) on the task of a named variable or shard; like TF's colocate_with, which clears the
// device-function stack, it neither advances the round-robin nor adds to a task's load.
// Declaring a name again is TF's get_variable reuse: the same dtype, shape and partitioning
// give back the existing placement (and change nothing); anything else is InvalidArgument
// naming both declarations, since the same name must mean the same variable everywhere.
#ifndef DISTRIBUTE_CORE_PS_PLACEMENT_H_
#define DISTRIBUTE_CORE_PS_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/ps/partitioner.h"
#include "core/tensor/dtype.h"
#include "core/tensor/shape.h"
#include "core/util/mutex.h"

namespace distribute::ps {

inline constexpr int32_t kMaxPsTasks = 65536;
// Variables plus shards one placement may hold.
inline constexpr int64_t kMaxPlacedNames = int64_t{1} << 20;

enum class PlacementPolicy : int32_t { kRoundRobin = 0, kGreedyBytes = 1 };

struct VariableDeclaration {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;
  std::string colocate_with;                 // a variable or shard name; empty: none
  std::optional<Partitioner> partitioner;    // none: one variable
};

struct ShardPlacement {
  std::string name;   // the variable's name, or "<name>/part_<i>" for a shard
  int32_t task = 0;   // index of the ps task
  Shape shape;
};

struct VariablePlacement {
  VariableDeclaration declaration;
  // Set for a partitioned variable (even one the partitioner left in one shard, which is
  // still named "<name>/part_0", as in TF).
  std::optional<ShardLayout> layout;
  std::vector<ShardPlacement> shards;  // one per shard; one named as the variable when unpartitioned
  // In Declare's answer only: whether this call placed the variable (false when it gave
  // back an earlier declaration), which is what Withdraw may take back.
  bool declared_now = false;
};

// Thread-safety: safe; concurrent declarations are placed in the order they take the lock,
// so a caller that needs the same placement on every worker declares from one thread.
class Placement {
 public:
  // InvalidArgument unless 1 <= num_ps_tasks <= kMaxPsTasks and the policy is known.
  static absl::StatusOr<std::unique_ptr<Placement>> Create(int32_t num_ps_tasks,
                                                           PlacementPolicy policy);

  // Places a new variable or returns the placement of an existing one (see the top of the
  // file). InvalidArgument for a bad name, partitioner or colocation target, a name that
  // is already a shard of another variable, or a mismatched redeclaration; nothing is
  // placed then. ResourceExhausted past kMaxPlacedNames.
  absl::StatusOr<VariablePlacement> Declare(const VariableDeclaration& declaration)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Takes back the declaration of `name` that a Declare answered with declared_now, when
  // creating the variable then failed: its names are free again and its bytes no longer
  // count, and when nothing was declared after it the round-robin goes back to where it
  // was, so that the next variable lands where it would have without the failure (TF2's
  // ParameterServerStrategy counts a variable only once it is created). No-op for a name
  // not declared.
  void Withdraw(absl::string_view name) ABSL_LOCKS_EXCLUDED(mu_);

  // The placement of variable `name`; NotFound when it was never declared.
  absl::StatusOr<VariablePlacement> Find(absl::string_view name) const ABSL_LOCKS_EXCLUDED(mu_);

  // Bytes placed on each task so far (colocated variables included), for diagnostics and
  // tests.
  std::vector<uint64_t> TaskBytes() const ABSL_LOCKS_EXCLUDED(mu_);

  int32_t num_ps_tasks() const { return num_ps_tasks_; }
  PlacementPolicy policy() const { return policy_; }

 private:
  Placement(int32_t num_ps_tasks, PlacementPolicy policy);

  // The task the policy picks for a shard of `bytes` bytes, recording it.
  int32_t NextTask(uint64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<int32_t> ColocationTask(absl::string_view target) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckRedeclaration(const VariablePlacement& existing,
                                  const VariableDeclaration& again,
                                  const std::optional<ShardLayout>& layout) const;

  const int32_t num_ps_tasks_;
  const PlacementPolicy policy_;
  mutable Mutex mu_;
  int32_t next_round_robin_ ABSL_GUARDED_BY(mu_) = 0;
  // The last variable placed, and the round-robin before it (for Withdraw).
  std::string last_declared_ ABSL_GUARDED_BY(mu_);
  int32_t round_robin_before_last_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<uint64_t> bytes_ ABSL_GUARDED_BY(mu_);   // the greedy policy's load per task
  std::vector<uint64_t> placed_ ABSL_GUARDED_BY(mu_);  // every byte placed, per task
  std::map<std::string, VariablePlacement, std::less<>> variables_ ABSL_GUARDED_BY(mu_);
  // Every variable and shard name, mapped to its task (shards of a partitioned variable
  // are found here, not in variables_).
  std::map<std::string, int32_t, std::less<>> tasks_by_name_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_PLACEMENT_H_
