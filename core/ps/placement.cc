#include "core/ps/placement.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/ps/names.h"
#include "core/util/status_macros.h"

namespace distribute::ps {
namespace {

uint64_t ByteSize(DType dtype, const Shape& shape) {
  return static_cast<uint64_t>(shape.num_elements()) * DTypeSize(dtype);
}

// "float32 [4, 3] split 2 ways along axis 0" or "float32 [4, 3]", for messages.
std::string Describe(const VariableDeclaration& d, const std::optional<ShardLayout>& layout) {
  std::string out = absl::StrCat(DTypeName(d.dtype), " ", d.shape.ToString());
  if (layout.has_value()) {
    absl::StrAppend(&out, " in ", layout->num_shards(), " shards along axis ", layout->axis);
  }
  return out;
}

}  // namespace

Placement::Placement(int32_t num_ps_tasks, PlacementPolicy policy)
    : num_ps_tasks_(num_ps_tasks),
      policy_(policy),
      bytes_(static_cast<size_t>(num_ps_tasks), 0),
      placed_(static_cast<size_t>(num_ps_tasks), 0) {}

absl::StatusOr<std::unique_ptr<Placement>> Placement::Create(int32_t num_ps_tasks,
                                                             PlacementPolicy policy) {
  if (num_ps_tasks < 1 || num_ps_tasks > kMaxPsTasks) {
    return absl::InvalidArgumentError(absl::StrCat("the number of ps tasks is ", num_ps_tasks,
                                                   "; it must be 1 to ", kMaxPsTasks));
  }
  if (policy != PlacementPolicy::kRoundRobin && policy != PlacementPolicy::kGreedyBytes) {
    return absl::InvalidArgumentError(absl::StrCat("unknown placement policy ",
                                                   static_cast<int32_t>(policy)));
  }
  return std::unique_ptr<Placement>(new Placement(num_ps_tasks, policy));
}

int32_t Placement::NextTask(uint64_t bytes) {
  int32_t task = 0;
  if (policy_ == PlacementPolicy::kRoundRobin) {
    task = next_round_robin_;
    next_round_robin_ = (next_round_robin_ + 1) % num_ps_tasks_;
  } else {
    for (int32_t t = 1; t < num_ps_tasks_; ++t) {
      if (bytes_[static_cast<size_t>(t)] < bytes_[static_cast<size_t>(task)]) task = t;
    }
    bytes_[static_cast<size_t>(task)] += bytes;
  }
  return task;
}

absl::StatusOr<int32_t> Placement::ColocationTask(absl::string_view target) const {
  if (const auto it = tasks_by_name_.find(target); it != tasks_by_name_.end()) return it->second;
  if (const auto it = variables_.find(target); it != variables_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "colocate_vars_with names ", QuotedName(target), ", which is split into ",
        it->second.shards.size(), " shards on different tasks: name one shard, such as ",
        QuotedName(it->second.shards.front().name)));
  }
  return absl::InvalidArgumentError(absl::StrCat("colocate_vars_with names ", QuotedName(target),
                                                 ", which is not a declared variable or shard"));
}

absl::Status Placement::CheckRedeclaration(const VariablePlacement& existing,
                                           const VariableDeclaration& again,
                                           const std::optional<ShardLayout>& layout) const {
  const VariableDeclaration& first = existing.declaration;
  const bool same_layout =
      layout.has_value() == existing.layout.has_value() &&
      (!layout.has_value() ||
       (layout->axis == existing.layout->axis && layout->sizes == existing.layout->sizes));
  if (first.dtype == again.dtype && first.shape == again.shape && same_layout) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "variable ", QuotedName(again.name), " is declared as ", Describe(again, layout),
      " but was declared before as ", Describe(first, existing.layout),
      ": the same name means the same variable"));
}

absl::StatusOr<VariablePlacement> Placement::Declare(const VariableDeclaration& declaration) {
  RETURN_IF_ERROR(CheckPsName("variable name", declaration.name));
  std::optional<ShardLayout> layout;
  if (declaration.partitioner.has_value()) {
    ASSIGN_OR_RETURN(layout, Partition(*declaration.partitioner, declaration.dtype,
                                       declaration.shape));
    RETURN_IF_ERROR(CheckPsName("shard name", ShardName(declaration.name, layout->num_shards() - 1)));
  }
  MutexLock lock(&mu_);
  if (const auto it = variables_.find(declaration.name); it != variables_.end()) {
    RETURN_IF_ERROR(CheckRedeclaration(it->second, declaration, layout));
    return it->second;
  }
  VariablePlacement placement;
  placement.declaration = declaration;
  placement.layout = layout;
  if (layout.has_value()) {
    for (int64_t s = 0; s < layout->num_shards(); ++s) {
      placement.shards.push_back({ShardName(declaration.name, s), 0, layout->ShardShape(s)});
    }
  } else {
    placement.shards.push_back({declaration.name, 0, declaration.shape});
  }
  for (const ShardPlacement& shard : placement.shards) {
    if (tasks_by_name_.contains(shard.name) || variables_.contains(shard.name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable ", QuotedName(declaration.name), " needs the name ", QuotedName(shard.name),
          ", which another variable or shard already has"));
    }
  }
  if (static_cast<int64_t>(tasks_by_name_.size() + placement.shards.size()) > kMaxPlacedNames) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot place variable ", QuotedName(declaration.name), ": at most ", kMaxPlacedNames,
        " variables and shards may be placed"));
  }
  std::optional<int32_t> colocated;
  if (!declaration.colocate_with.empty()) {
    ASSIGN_OR_RETURN(colocated, ColocationTask(declaration.colocate_with));
  }
  // Every check is done: from here on the placement is recorded.
  last_declared_ = declaration.name;
  round_robin_before_last_ = next_round_robin_;
  for (ShardPlacement& shard : placement.shards) {
    const uint64_t bytes = ByteSize(declaration.dtype, shard.shape);
    shard.task = colocated.has_value() ? *colocated : NextTask(bytes);
    placed_[static_cast<size_t>(shard.task)] += bytes;
    tasks_by_name_.emplace(shard.name, shard.task);
  }
  variables_.emplace(declaration.name, placement);
  placement.declared_now = true;
  return placement;
}

void Placement::Withdraw(absl::string_view name) {
  MutexLock lock(&mu_);
  const auto it = variables_.find(name);
  if (it == variables_.end()) return;
  const VariablePlacement& placement = it->second;
  const bool colocated = !placement.declaration.colocate_with.empty();
  for (const ShardPlacement& shard : placement.shards) {
    const uint64_t bytes = ByteSize(placement.declaration.dtype, shard.shape);
    const size_t task = static_cast<size_t>(shard.task);
    placed_[task] -= bytes;
    // Colocated shards never added to the greedy policy's load (NextTask was not asked).
    if (!colocated && policy_ == PlacementPolicy::kGreedyBytes) bytes_[task] -= bytes;
    tasks_by_name_.erase(shard.name);
  }
  if (last_declared_ == name) {
    next_round_robin_ = round_robin_before_last_;
    last_declared_.clear();
  }
  variables_.erase(it);
}

absl::StatusOr<VariablePlacement> Placement::Find(absl::string_view name) const {
  MutexLock lock(&mu_);
  const auto it = variables_.find(name);
  if (it == variables_.end()) {
    return absl::NotFoundError(absl::StrCat("no variable ", QuotedName(name), " was declared"));
  }
  return it->second;
}

std::vector<uint64_t> Placement::TaskBytes() const {
  MutexLock lock(&mu_);
  return placed_;
}

}  // namespace distribute::ps
