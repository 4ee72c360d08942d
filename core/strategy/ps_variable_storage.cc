#include "core/strategy/ps_variable_storage.h"

#include <map>
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

absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> PsVariableStorage::ReadSlots(
    SlotListing& listing) const {
  const Deadline deadline = servers_->NewDeadline();
  // Per slot name, the stored name of that slot of each shard (in shard order).
  std::map<std::string, std::vector<std::string>> slots;
  for (size_t i = 0; i < placement_.shards.size(); ++i) {
    const ps::ShardPlacement& shard = placement_.shards[i];
    auto it = listing.find(shard.task);
    if (it == listing.end()) {
      ASSIGN_OR_RETURN(std::vector<ps::StoredVariableInfo> infos, HostOf(shard).List(deadline));
      it = listing.emplace(shard.task, SlotListing::mapped_type()).first;
      for (ps::StoredVariableInfo& info : infos) {
        if (!info.slot_of.empty()) it->second.emplace(std::move(info.slot_of), std::move(info.name));
      }
    }
    const auto [first, last] = it->second.equal_range(shard.name);
    for (auto slot = first; slot != last; ++slot) {
      std::vector<std::string>& names = slots[slot->second.substr(shard.name.size() + 1)];
      if (names.size() == i) names.push_back(slot->second);
    }
  }
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [slot, names] : slots) {
    // A slot only some shards have (an update that failed on a later shard) is not whole.
    if (names.size() != placement_.shards.size()) continue;
    std::vector<Tensor> parts;
    for (size_t i = 0; i < names.size(); ++i) {
      ASSIGN_OR_RETURN(Tensor part, HostOf(placement_.shards[i]).Read(names[i], deadline));
      parts.push_back(std::move(part));
    }
    if (placement_.layout.has_value()) {
      ASSIGN_OR_RETURN(Tensor whole, ps::ConcatenateShards(parts, *placement_.layout));
      out.emplace_back(slot, std::move(whole));
    } else {
      out.emplace_back(slot, std::move(parts.front()));
    }
  }
  return out;
}

absl::Status PsVariableStorage::WriteSlot(absl::string_view slot, const Tensor& value) {
  ASSIGN_OR_RETURN(std::vector<Tensor> parts, Split(value));
  const Deadline deadline = servers_->NewDeadline();
  for (size_t i = 0; i < parts.size(); ++i) {
    const ps::ShardPlacement& shard = placement_.shards[i];
    RETURN_IF_ERROR(HostOf(shard).AssignSlot(shard.name, slot, parts[i], deadline));
  }
  return absl::OkStatus();
}

}  // namespace distribute
