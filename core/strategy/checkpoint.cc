#include "core/strategy/checkpoint.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/ps/function_registry.h"
#include "core/ps/names.h"
#include "core/strategy/ps_variable_batch.h"
#include "core/strategy/ps_variable_storage.h"
#include "core/strategy/thread_context.h"
#include "core/strategy/variable_ops.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"
#include "core/values/safetensors.h"
#include "core/values/variable.h"

namespace distribute {
namespace {

// Variables in name order, so files list them deterministically; one per name (under
// ParameterServer two handles created with one name are one variable).
std::vector<std::shared_ptr<Variable>> SortedVariables(Strategy& strategy) {
  std::vector<std::shared_ptr<Variable>> variables = strategy.LiveVariables();
  std::sort(variables.begin(), variables.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  variables.erase(std::unique(variables.begin(), variables.end(),
                              [](const auto& a, const auto& b) { return a->name() == b->name(); }),
                  variables.end());
  return variables;
}

}  // namespace

absl::Status SaveVariables(Strategy& strategy, const std::string& path) {
  RETURN_IF_ERROR(RequireCrossReplica(strategy, "save_variables"));
  std::vector<std::pair<std::string, Tensor>> entries;
  PsVariableStorage::SlotListing slot_listing;  // each ps task listed once per save
  const std::vector<std::shared_ptr<Variable>> variables = SortedVariables(strategy);
  // A ParameterServer's variables in one batch: each ps task is asked once, not once per
  // variable and shard.
  std::vector<PsVariableStorage*> on_ps;
  for (const std::shared_ptr<Variable>& variable : variables) {
    if (auto* storage = dynamic_cast<PsVariableStorage*>(variable->storage().get())) on_ps.push_back(storage);
  }
  std::vector<Tensor> ps_values;
  if (!on_ps.empty()) {
    ASSIGN_OR_RETURN(ps_values, ReadPsVariables(on_ps));
  }
  size_t next_ps = 0;
  for (const std::shared_ptr<Variable>& variable : variables) {
    auto* storage = dynamic_cast<PsVariableStorage*>(variable->storage().get());
    std::optional<Tensor> read;
    if (storage != nullptr) {
      read.emplace(std::move(ps_values[next_ps++]));
    } else {
      ASSIGN_OR_RETURN(read, ReadVariable(Value::OfVariable(variable)));
    }
    ASSIGN_OR_RETURN(Tensor host, read->CopyTo("CPU:0"));
    entries.emplace_back(variable->name(), std::move(host));
    // A parameter server's variable also saves its update functions' slots, under TF2's
    // slot names ("w/m"), whole however the variable is sharded.
    if (storage != nullptr) {
      ASSIGN_OR_RETURN(auto slots, storage->ReadSlots(slot_listing));
      for (auto& [slot, value] : slots) {
        entries.emplace_back(ps::SlotName(variable->name(), slot), std::move(value));
      }
    }
  }
  return WriteSafetensors(path, entries);
}

absl::Status RestoreVariables(Strategy& strategy, const std::string& path) {
  RETURN_IF_ERROR(RequireCrossReplica(strategy, "restore_variables"));
  // Only the variables' tensors are read: a file from another producer may hold others,
  // of dtypes we do not have, that no variable asks for.
  std::set<std::string> wanted;
  const std::set<std::string> slot_names = ps::FunctionRegistry::Global().SlotNames();
  for (const std::shared_ptr<Variable>& variable : strategy.LiveVariables()) {
    wanted.insert(variable->name());
    if (dynamic_cast<PsVariableStorage*>(variable->storage().get()) == nullptr) continue;
    for (const std::string& slot : slot_names) wanted.insert(ps::SlotName(variable->name(), slot));
  }
  ASSIGN_OR_RETURN(auto entries, ReadSafetensors(path, &wanted));
  std::map<std::string, Tensor> by_name;
  for (auto& [name, tensor] : entries) by_name.emplace(name, std::move(tensor));
  // Check everything first: a file that does not fit changes no variable.
  std::vector<std::pair<std::shared_ptr<Variable>, std::vector<Tensor>>> plan;
  for (const std::shared_ptr<Variable>& variable : SortedVariables(strategy)) {
    auto it = by_name.find(variable->name());
    if (it == by_name.end()) {
      return absl::NotFoundError(
          absl::StrCat(Quoted(path), ": has no tensor named ", Quoted(variable->name()),
                       " for variable ", Quoted(variable->name())));
    }
    if (absl::Status fits = variable->CheckCompatible(it->second); !fits.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(Quoted(path), ": ", fits.message()));
    }
    // TF's restore rule for SyncOnRead: a SUM variable's saved total is shared out.
    Tensor share = it->second;
    if (variable->kind() == ValueKind::kSyncOnReadVariable) {
      ASSIGN_OR_RETURN(share, SyncOnReadShare(*variable, it->second));
    }
    plan.emplace_back(variable, std::vector<Tensor>(static_cast<size_t>(variable->num_copies()), share));
  }
  // A parameter server's variable gets back the slots the file has for it (created on the
  // ps task when a fresh one has none yet); slots the file lacks are left as they are.
  std::vector<std::tuple<PsVariableStorage*, std::string, Tensor>> slot_plan;
  for (const auto& [variable, values] : plan) {
    auto* storage = dynamic_cast<PsVariableStorage*>(variable->storage().get());
    if (storage == nullptr) continue;
    for (const std::string& slot : slot_names) {
      auto it = by_name.find(ps::SlotName(variable->name(), slot));
      if (it == by_name.end()) continue;
      if (absl::Status fits = variable->CheckCompatible(it->second); !fits.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(Quoted(path), ": slot ", Quoted(it->first), ": ", fits.message()));
      }
      slot_plan.emplace_back(storage, slot, it->second);
    }
  }
  for (auto& [variable, values] : plan) RETURN_IF_ERROR(variable->AssignAll(values));
  for (auto& [storage, slot, value] : slot_plan) RETURN_IF_ERROR(storage->WriteSlot(slot, value));
  return absl::OkStatus();
}

}  // namespace distribute
