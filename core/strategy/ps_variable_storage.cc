#include "core/strategy/ps_variable_storage.h"

#include <map>
#include <optional>
#include <utility>

#include "core/ps/host_tensors.h"
#include "core/ps/sharded_tensor.h"
#include "core/util/status_macros.h"

namespace distribute {

namespace {

// The shard indices of each ps task that holds any, in shard order; tasks by first shard.
std::vector<std::vector<int32_t>> ShardsByTask(const ps::VariablePlacement& placement) {
  std::vector<std::vector<int32_t>> groups;
  std::map<int32_t, size_t> group_of_task;
  for (size_t i = 0; i < placement.shards.size(); ++i) {
    const auto [it, added] = group_of_task.emplace(placement.shards[i].task, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(static_cast<int32_t>(i));
  }
  return groups;
}

}  // namespace

PsVariableStorage::PsVariableStorage(std::shared_ptr<ParameterServers> servers,
                                     ps::VariablePlacement placement)
    : servers_(std::move(servers)),
      placement_(std::move(placement)),
      shards_by_task_(ShardsByTask(placement_)) {}

absl::Status PsVariableStorage::ForEachShard(absl::FunctionRef<absl::Status(int32_t)> call) const {
  // One task's shards run on this thread alone (the pool hands off only a second group).
  return servers_->shard_calls.Run(shards_by_task_, call);
}

ps::VariableHost& PsVariableStorage::HostOf(const ps::ShardPlacement& shard) const {
  return *servers_->hosts[static_cast<size_t>(shard.task)];
}

absl::StatusOr<std::vector<Tensor>> PsVariableStorage::Split(const Tensor& value) const {
  ASSIGN_OR_RETURN(Tensor host, ps::OnHost(value));
  if (!placement_.layout.has_value()) return std::vector<Tensor>{std::move(host)};
  return ps::SplitIntoShards(host, *placement_.layout);
}

absl::StatusOr<Tensor> PsVariableStorage::ReadShards(std::span<const std::string> names,
                                                     const Deadline& deadline) const {
  std::vector<std::optional<Tensor>> read(names.size());
  RETURN_IF_ERROR(ForEachShard([&](int32_t i) -> absl::Status {
    const auto at = static_cast<size_t>(i);
    ASSIGN_OR_RETURN(read[at], HostOf(placement_.shards[at]).Read(names[at], deadline));
    return absl::OkStatus();
  }));
  std::vector<Tensor> parts;
  parts.reserve(read.size());
  for (std::optional<Tensor>& part : read) parts.push_back(std::move(*part));
  return Assemble(std::move(parts));
}

absl::StatusOr<Tensor> PsVariableStorage::Assemble(std::vector<Tensor> shards) const {
  if (shards.size() != placement_.shards.size()) {
    return absl::InternalError("a variable's value assembled from another number of shards than it has");
  }
  if (!placement_.layout.has_value()) return std::move(shards.front());
  return ps::ConcatenateShards(shards, *placement_.layout);
}

absl::StatusOr<bool> PsVariableStorage::CreateIfAbsent(const Tensor& initial) {
  ASSIGN_OR_RETURN(std::vector<Tensor> parts, Split(initial));
  const Deadline deadline = servers_->NewDeadline();
  std::vector<char> created(parts.size(), 0);
  RETURN_IF_ERROR(ForEachShard([&](int32_t i) -> absl::Status {
    const ps::ShardPlacement& shard = placement_.shards[static_cast<size_t>(i)];
    ASSIGN_OR_RETURN(ps::VariableStore::Creation creation,
                     HostOf(shard).CreateIfAbsent(shard.name, parts[static_cast<size_t>(i)], deadline));
    created[static_cast<size_t>(i)] = creation.created ? 1 : 0;
    return absl::OkStatus();
  }));
  for (char c : created) {
    if (c == 0) return false;
  }
  return true;
}

absl::StatusOr<Tensor> PsVariableStorage::Read() const {
  const Deadline deadline = servers_->NewDeadline();
  std::vector<std::string> names;
  names.reserve(placement_.shards.size());
  for (const ps::ShardPlacement& shard : placement_.shards) names.push_back(shard.name);
  return ReadShards(names, deadline);
}

absl::Status PsVariableStorage::WriteShards(const Tensor& value, Write write) {
  ASSIGN_OR_RETURN(std::vector<Tensor> parts, Split(value));
  const Deadline deadline = servers_->NewDeadline();
  return ForEachShard([&](int32_t i) -> absl::Status {
    const ps::ShardPlacement& shard = placement_.shards[static_cast<size_t>(i)];
    const Tensor& part = parts[static_cast<size_t>(i)];
    ps::VariableHost& host = HostOf(shard);
    switch (write) {
      case Write::kAssign:
        return host.Assign(shard.name, part, deadline);
      case Write::kAdd:
        return host.AssignAdd(shard.name, part, deadline);
      case Write::kSub:
        return host.AssignSub(shard.name, part, deadline);
    }
    return absl::InternalError("unknown write");
  });
}

absl::Status PsVariableStorage::Assign(const Tensor& value) { return WriteShards(value, Write::kAssign); }
absl::Status PsVariableStorage::AssignAdd(const Tensor& delta) { return WriteShards(delta, Write::kAdd); }
absl::Status PsVariableStorage::AssignSub(const Tensor& delta) { return WriteShards(delta, Write::kSub); }

absl::Status PsVariableStorage::ApplyUpdate(absl::string_view function,
                                            std::span<const Tensor> arguments,
                                            const ps::Hyperparameters& hyperparameters) {
  ASSIGN_OR_RETURN(const std::vector<std::vector<Tensor>> per_shard, ShardArguments(arguments));
  const Deadline deadline = servers_->NewDeadline();
  return ForEachShard([&](int32_t i) {
    const ps::ShardPlacement& shard = placement_.shards[static_cast<size_t>(i)];
    return HostOf(shard).ApplyUpdate(shard.name, function, per_shard[static_cast<size_t>(i)],
                                     hyperparameters, deadline);
  });
}

absl::StatusOr<std::vector<std::vector<Tensor>>> PsVariableStorage::ShardArguments(
    std::span<const Tensor> arguments) const {
  std::vector<std::vector<Tensor>> per_shard(placement_.shards.size());
  for (const Tensor& argument : arguments) {
    ASSIGN_OR_RETURN(std::vector<Tensor> parts, Split(argument));
    for (size_t i = 0; i < parts.size(); ++i) per_shard[i].push_back(std::move(parts[i]));
  }
  return per_shard;
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
    // A slot only some shards have (an update that failed on some of the tasks) is not whole.
    if (names.size() != placement_.shards.size()) continue;
    ASSIGN_OR_RETURN(Tensor whole, ReadShards(names, deadline));
    out.emplace_back(slot, std::move(whole));
  }
  return out;
}

absl::Status PsVariableStorage::WriteSlot(absl::string_view slot, const Tensor& value) {
  ASSIGN_OR_RETURN(std::vector<Tensor> parts, Split(value));
  const Deadline deadline = servers_->NewDeadline();
  return ForEachShard([&](int32_t i) {
    const ps::ShardPlacement& shard = placement_.shards[static_cast<size_t>(i)];
    return HostOf(shard).AssignSlot(shard.name, slot, parts[static_cast<size_t>(i)], deadline);
  });
}

}  // namespace distribute
