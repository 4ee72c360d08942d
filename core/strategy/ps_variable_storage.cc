#include "core/strategy/ps_variable_storage.h"

#include <utility>

#include "core/ps/host_tensors.h"
#include "core/ps/sharded_tensor.h"
#include "core/util/status_macros.h"

namespace distribute {

PsVariableStorage::PsVariableStorage(std::shared_ptr<ParameterServers> servers,
                                     ps::VariablePlacement placement)
    : servers_(std::move(servers)), placement_(std::move(placement)) {}

ps::VariableHost& PsVariableStorage::HostOf(const ps::ShardPlacement& shard) const {
  return *servers_->hosts[static_cast<size_t>(shard.task)];
}

absl::StatusOr<std::vector<Tensor>> PsVariableStorage::Split(const Tensor& value) const {
  ASSIGN_OR_RETURN(Tensor host, ps::OnHost(value));
  if (!placement_.layout.has_value()) return std::vector<Tensor>{std::move(host)};
  return ps::SplitIntoShards(host, *placement_.layout);
}

absl::StatusOr<bool> PsVariableStorage::CreateIfAbsent(const Tensor& initial) {
  ASSIGN_OR_RETURN(std::vector<Tensor> parts, Split(initial));
  const Deadline deadline = servers_->NewDeadline();
  bool created_all = true;
  for (size_t i = 0; i < parts.size(); ++i) {
    const ps::ShardPlacement& shard = placement_.shards[i];
    ASSIGN_OR_RETURN(ps::VariableStore::Creation creation,
                     HostOf(shard).CreateIfAbsent(shard.name, parts[i], deadline));
    created_all = created_all && creation.created;
  }
  return created_all;
}

absl::StatusOr<Tensor> PsVariableStorage::Read() const {
  const Deadline deadline = servers_->NewDeadline();
  std::vector<Tensor> parts;
  for (const ps::ShardPlacement& shard : placement_.shards) {
    ASSIGN_OR_RETURN(Tensor part, HostOf(shard).Read(shard.name, deadline));
    parts.push_back(std::move(part));
  }
  if (!placement_.layout.has_value()) return std::move(parts.front());
  return ps::ConcatenateShards(parts, *placement_.layout);
}

absl::Status PsVariableStorage::WriteShards(const Tensor& value, Write write) {
  ASSIGN_OR_RETURN(std::vector<Tensor> parts, Split(value));
  const Deadline deadline = servers_->NewDeadline();
  for (size_t i = 0; i < parts.size(); ++i) {
    const ps::ShardPlacement& shard = placement_.shards[i];
    ps::VariableHost& host = HostOf(shard);
    switch (write) {
      case Write::kAssign:
        RETURN_IF_ERROR(host.Assign(shard.name, parts[i], deadline));
        break;
      case Write::kAdd:
        RETURN_IF_ERROR(host.AssignAdd(shard.name, parts[i], deadline));
        break;
      case Write::kSub:
        RETURN_IF_ERROR(host.AssignSub(shard.name, parts[i], deadline));
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status PsVariableStorage::Assign(const Tensor& value) { return WriteShards(value, Write::kAssign); }
absl::Status PsVariableStorage::AssignAdd(const Tensor& delta) { return WriteShards(delta, Write::kAdd); }
absl::Status PsVariableStorage::AssignSub(const Tensor& delta) { return WriteShards(delta, Write::kSub); }

absl::Status PsVariableStorage::ApplyUpdate(absl::string_view function,
                                            std::span<const Tensor> arguments,
                                            const ps::Hyperparameters& hyperparameters) {
  // Per shard, its rows of every argument.
  std::vector<std::vector<Tensor>> per_shard(placement_.shards.size());
  for (const Tensor& argument : arguments) {
    ASSIGN_OR_RETURN(std::vector<Tensor> parts, Split(argument));
    for (size_t i = 0; i < parts.size(); ++i) per_shard[i].push_back(std::move(parts[i]));
  }
  const Deadline deadline = servers_->NewDeadline();
  for (size_t i = 0; i < placement_.shards.size(); ++i) {
    const ps::ShardPlacement& shard = placement_.shards[i];
    RETURN_IF_ERROR(HostOf(shard).ApplyUpdate(shard.name, function, per_shard[i], hyperparameters,
                                              deadline));
  }
  return absl::OkStatus();
}

}  // namespace distribute
