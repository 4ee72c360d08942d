// A ParameterServerStrategy variable's storage: the variable (or each of its shards) on
// the ps task its placement chose. Reads fetch every shard and concatenate them; writes
// split the value by the shard layout and send each shard to its task, where each is
// applied atomically (a sharded variable is updated shard by shard, as TF's
// PartitionedVariable and ShardedVariable are: a concurrent reader may see some shards
// updated and others not yet). The shards of different tasks are sent at once (the
// servers' FanOutPool), those of one task one after another in shard order; every shard's
// call is made whatever the others return, and the error of the lowest shard that failed is
// returned (an update that fails on one task may be applied on the others).
#ifndef DISTRIBUTE_CORE_STRATEGY_PS_VARIABLE_STORAGE_H_
#define DISTRIBUTE_CORE_STRATEGY_PS_VARIABLE_STORAGE_H_

#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/ps/hyperparameters.h"
#include "core/ps/placement.h"
#include "core/backend/parameter_servers.h"
#include "core/util/deadline.h"
#include "core/values/variable.h"

namespace distribute {

class PsVariableStorage final : public VariableStorage {
 public:
  PsVariableStorage(std::shared_ptr<ParameterServers> servers, ps::VariablePlacement placement);

  // Creates every shard on its task unless it exists, from `initial` (split by the layout).
  // True when this call created all of them (the first creator); false when every shard
  // existed (then the current values stand). Shards created by a creator that died half
  // way are completed from `initial`.
  absl::StatusOr<bool> CreateIfAbsent(const Tensor& initial);

  absl::StatusOr<Tensor> Read() const override;
  absl::Status Assign(const Tensor& value) override;
  absl::Status AssignAdd(const Tensor& delta) override;
  absl::Status AssignSub(const Tensor& delta) override;
  // Runs registered `function` on every shard, with the arguments split like the variable.
  absl::Status ApplyUpdate(absl::string_view function, std::span<const Tensor> arguments,
                           const ps::Hyperparameters& hyperparameters);

  // Which slots each ps task holds, by task and then by the variable or shard they belong
  // to: listed once per task and shared by every variable a checkpoint saves, so that
  // saving n variables asks each task once rather than n times.
  using SlotListing = std::map<int32_t, std::multimap<std::string, std::string, std::less<>>>;

  // The slots every shard has (an update function's state: Adam's "m" and "v"), each
  // read as one tensor of the variable's shape, by slot name ("m"). `listing` caches the
  // tasks' lists across calls (pass the same one for every variable of a save).
  absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> ReadSlots(SlotListing& listing) const;
  // Writes slot `slot` of every shard, creating it where absent.
  absl::Status WriteSlot(absl::string_view slot, const Tensor& value);

  int32_t num_shards() const { return static_cast<int32_t>(placement_.shards.size()); }
  const ps::VariablePlacement& placement() const { return placement_; }
  const std::shared_ptr<ParameterServers>& servers() const { return servers_; }

  // For calls that cover several variables at once (ps_variable_batch.h):
  // per shard, its rows of every argument (on the host), as ApplyUpdate sends them;
  absl::StatusOr<std::vector<std::vector<Tensor>>> ShardArguments(std::span<const Tensor> arguments) const;
  // the variable's value from its shards' values, in shard order, as Read makes it.
  absl::StatusOr<Tensor> Assemble(std::vector<Tensor> shards) const;

 private:
  enum class Write { kAssign, kAdd, kSub };
  absl::Status WriteShards(const Tensor& value, Write write);
  // Calls `call(shard index)` for every shard: the tasks' groups concurrently.
  absl::Status ForEachShard(absl::FunctionRef<absl::Status(int32_t)> call) const;
  // Reads stored names[i] from shard i's task, for every shard, as one tensor.
  absl::StatusOr<Tensor> ReadShards(std::span<const std::string> names, const Deadline& deadline) const;
  // `value` on the host, cut into one tensor per shard (itself when unpartitioned).
  absl::StatusOr<std::vector<Tensor>> Split(const Tensor& value) const;
  ps::VariableHost& HostOf(const ps::ShardPlacement& shard) const;

  const std::shared_ptr<ParameterServers> servers_;
  const ps::VariablePlacement placement_;
  const std::vector<std::vector<int32_t>> shards_by_task_;  // shard indices per task
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_PS_VARIABLE_STORAGE_H_
