#include "core/strategy/ps_variable_batch.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/ps/names.h"
#include "core/ps/variable_host.h"
#include "core/backend/parameter_servers.h"
#include "core/tensor/dtype.h"
#include "core/tensor/shape.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// One shard of one variable of a batch, and what it adds to a call.
struct Item {
  size_t variable = 0;  // position in the batch
  size_t shard = 0;
  const ps::ShardPlacement* placement = nullptr;
  uint64_t tensor_bytes = 0;  // its tensors' bytes (the shard's value, or its arguments)
  size_t header_bytes = 0;    // an upper bound on its name and tensor headers on the wire
};

// Consecutive items of one task that travel in one call.
struct Call {
  int32_t task = 0;
  std::vector<size_t> items;  // indices into the batch's items, in batch order
};

// The most tensor bytes one batch call carries: past it a call's bytes, not its fixed cost,
// decide its time, and a larger call only loses (on the 2-core machine 4 variables of 2
// MiB each took 1.2x the time of one call each in one call per task, of 4 MiB 1.8x, while
// up to 512 KiB each one call took 0.3-0.7x; dist-bench --parameter-server).
constexpr uint64_t kMaxBatchCallBytes = uint64_t{1} << 20;

// What `tensors` tensor headers of `shape`'s rank and a name of `name_bytes` take in a
// message at most: a tag and a length for every field, ten bytes for every varint.
size_t HeaderBytes(size_t name_bytes, size_t tensors, const Shape& shape) {
  return name_bytes + 16 + tensors * (32 + 11 * shape.dims().size());
}

// What an update's function name and hyperparameters take in every call's first message.
size_t UpdateHeaderBytes(absl::string_view function, const ps::Hyperparameters& hyperparameters) {
  size_t bytes = function.size() + 16;
  for (const auto& [name, value] : hyperparameters) bytes += name.size() + 32;
  return bytes;
}

uint64_t ShardBytes(const ps::VariablePlacement& placement, size_t shard) {
  return DTypeSize(placement.declaration.dtype) *
         static_cast<uint64_t>(placement.shards[shard].shape.num_elements());
}

// The variables of `variables` that use each ParameterServers, in order of first use.
std::vector<std::pair<ParameterServers*, std::vector<size_t>>> ByServers(
    std::span<PsVariableStorage* const> variables) {
  std::vector<std::pair<ParameterServers*, std::vector<size_t>>> groups;
  std::map<ParameterServers*, size_t> group_of;
  for (size_t i = 0; i < variables.size(); ++i) {
    ParameterServers* servers = variables[i]->servers().get();
    const auto [it, added] = group_of.emplace(servers, groups.size());
    if (added) groups.emplace_back(servers, std::vector<size_t>());
    groups[it->second].second.push_back(i);
  }
  return groups;
}

// Each task's items, in batch order, cut into calls within its host's limits and
// kMaxBatchCallBytes (an item larger than a limit goes alone, in a call of its own, which
// the host refuses only past its own bound).
// `shared_header_bytes`: what every call's first message carries besides its items.
std::vector<Call> PlanCalls(const ParameterServers& servers, std::span<const Item> items,
                            size_t shared_header_bytes) {
  std::map<int32_t, std::vector<size_t>> by_task;
  for (size_t i = 0; i < items.size(); ++i) by_task[items[i].placement->task].push_back(i);
  std::vector<Call> calls;
  for (const auto& [task, indices] : by_task) {
    ps::VariableHost::BatchLimits limits = servers.hosts[static_cast<size_t>(task)]->batch_limits();
    limits.tensor_bytes = std::min(limits.tensor_bytes, kMaxBatchCallBytes);
    limits.header_bytes -= std::min(limits.header_bytes, shared_header_bytes);
    uint64_t bytes = 0;
    size_t header = 0;
    for (size_t index : indices) {
      const Item& item = items[index];
      const bool full = !calls.empty() && calls.back().task == task &&
                        (calls.back().items.size() >= limits.entries ||
                         item.tensor_bytes > limits.tensor_bytes - std::min(bytes, limits.tensor_bytes) ||
                         item.header_bytes > limits.header_bytes - std::min(header, limits.header_bytes));
      if (calls.empty() || calls.back().task != task || full) {
        calls.push_back(Call{task, {}});
        bytes = 0;
        header = 0;
      }
      calls.back().items.push_back(index);
      bytes += item.tensor_bytes;
      header += item.header_bytes;
    }
  }
  return calls;
}

// The calls' indices grouped by task, for FanOutPool::Run: one task's calls in turn,
// different tasks at once.
std::vector<std::vector<int32_t>> GroupByTask(std::span<const Call> calls) {
  std::vector<std::vector<int32_t>> groups;
  for (size_t c = 0; c < calls.size(); ++c) {
    if (c == 0 || calls[c].task != calls[c - 1].task) groups.emplace_back();
    groups.back().push_back(static_cast<int32_t>(c));
  }
  return groups;
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> ReadPsVariables(std::span<PsVariableStorage* const> variables) {
  std::vector<std::vector<std::optional<Tensor>>> shards(variables.size());
  for (const auto& [servers, members] : ByServers(variables)) {
    std::vector<Item> items;
    for (size_t v : members) {
      const ps::VariablePlacement& placement = variables[v]->placement();
      shards[v].resize(placement.shards.size());
      for (size_t s = 0; s < placement.shards.size(); ++s) {
        const ps::ShardPlacement& shard = placement.shards[s];
        items.push_back(Item{v, s, &shard, ShardBytes(placement, s), HeaderBytes(shard.name.size(), 1, shard.shape)});
      }
    }
    const std::vector<Call> calls = PlanCalls(*servers, items, 0);
    RETURN_IF_ERROR(servers->shard_calls.Run(GroupByTask(calls), [&](int32_t c) -> absl::Status {
      const Call& call = calls[static_cast<size_t>(c)];
      std::vector<std::string> names;
      names.reserve(call.items.size());
      for (size_t index : call.items) names.push_back(items[index].placement->name);
      ps::VariableHost& host = *servers->hosts[static_cast<size_t>(call.task)];
      // Each call its own deadline, as one call per variable would have.
      ASSIGN_OR_RETURN(std::vector<Tensor> values, host.ReadMany(names, servers->NewDeadline()));
      if (values.size() != names.size()) {
        return absl::InternalError(absl::StrCat(host.task(), " answered ", values.size(), " values for ",
                                                names.size(), " variables"));
      }
      for (size_t k = 0; k < values.size(); ++k) {
        const Item& item = items[call.items[k]];
        const ps::VariablePlacement& placement = variables[item.variable]->placement();
        // A task is trusted no further than its answers check out: what the caller gets
        // has the variable's dtype and shape.
        if (values[k].dtype() != placement.declaration.dtype || values[k].shape() != item.placement->shape) {
          return absl::InternalError(absl::StrCat(host.task(), " answered ", DTypeName(values[k].dtype()), " ",
                                                  values[k].shape().ToString(), " for ",
                                                  ps::QuotedName(item.placement->name), ", which is ",
                                                  DTypeName(placement.declaration.dtype), " ",
                                                  item.placement->shape.ToString()));
        }
        shards[item.variable][item.shard] = std::move(values[k]);
      }
      return absl::OkStatus();
    }));
  }
  std::vector<Tensor> out;
  out.reserve(variables.size());
  for (size_t v = 0; v < variables.size(); ++v) {
    std::vector<Tensor> parts;
    parts.reserve(shards[v].size());
    for (std::optional<Tensor>& part : shards[v]) parts.push_back(*std::move(part));
    ASSIGN_OR_RETURN(Tensor value, variables[v]->Assemble(std::move(parts)));
    out.push_back(std::move(value));
  }
  return out;
}

absl::Status ApplyPsUpdates(std::span<PsVariableStorage* const> variables,
                            std::span<const std::vector<Tensor>> arguments, absl::string_view function,
                            const ps::Hyperparameters& hyperparameters) {
  if (arguments.size() != variables.size()) {
    return absl::InternalError("a batch of updates with another number of argument lists than variables");
  }
  // Every variable's arguments split by its shards before anything is sent: a bad argument
  // changes nothing.
  std::vector<std::vector<std::vector<Tensor>>> per_shard(variables.size());
  for (size_t v = 0; v < variables.size(); ++v) {
    ASSIGN_OR_RETURN(per_shard[v], variables[v]->ShardArguments(arguments[v]));
  }
  // The failure of the lowest (variable, shard), over every call.
  std::optional<std::pair<std::pair<size_t, size_t>, absl::Status>> lowest;
  for (const auto& [servers, members] : ByServers(variables)) {
    std::vector<Item> items;
    for (size_t v : members) {
      const ps::VariablePlacement& placement = variables[v]->placement();
      for (size_t s = 0; s < placement.shards.size(); ++s) {
        const ps::ShardPlacement& shard = placement.shards[s];
        uint64_t bytes = 0;
        for (const Tensor& part : per_shard[v][s]) bytes += part.byte_size();
        items.push_back(Item{v, s, &shard, bytes, HeaderBytes(shard.name.size(), per_shard[v][s].size(), shard.shape)});
      }
    }
    const std::vector<Call> calls = PlanCalls(*servers, items, UpdateHeaderBytes(function, hyperparameters));
    // Per call, its first failed item and why (each call writes only its own).
    std::vector<std::optional<std::pair<size_t, absl::Status>>> failures(calls.size());
    RETURN_IF_ERROR(servers->shard_calls.Run(GroupByTask(calls), [&](int32_t c) -> absl::Status {
      const Call& call = calls[static_cast<size_t>(c)];
      std::vector<ps::VariableHost::UpdateEntry> entries;
      entries.reserve(call.items.size());
      for (size_t index : call.items) {
        const Item& item = items[index];
        entries.push_back({item.placement->name, per_shard[item.variable][item.shard]});
      }
      ps::VariableHost& host = *servers->hosts[static_cast<size_t>(call.task)];
      absl::StatusOr<ps::VariableHost::UpdatesOutcome> outcome =
          host.ApplyUpdates(entries, function, hyperparameters, servers->NewDeadline());
      auto& failure = failures[static_cast<size_t>(c)];
      if (!outcome.ok()) {
        failure.emplace(call.items.front(), outcome.status());
      } else if (outcome->failed > 0) {
        const auto first = static_cast<size_t>(outcome->first_failed);
        if (first >= call.items.size()) {
          failure.emplace(call.items.front(), absl::InternalError(absl::StrCat(
                                                  host.task(), " reported a failed update outside the batch")));
        } else {
          failure.emplace(call.items[first], outcome->first_error);
        }
      }
      return absl::OkStatus();
    }));
    for (auto& failure : failures) {
      if (!failure.has_value()) continue;
      const Item& item = items[failure->first];
      const std::pair<size_t, size_t> at{item.variable, item.shard};
      if (!lowest.has_value() || at < lowest->first) lowest.emplace(at, std::move(failure->second));
    }
  }
  if (!lowest.has_value()) return absl::OkStatus();
  const size_t v = lowest->first.first;
  return absl::Status(lowest->second.code(),
                      absl::StrCat("variables[", v, "] (", ps::QuotedName(variables[v]->placement().declaration.name),
                                   "): ", lowest->second.message()));
}

}  // namespace distribute
