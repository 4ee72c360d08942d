#include "core/ps/function_registry.h"

#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/ps/builtin_updates.h"
#include "core/ps/names.h"
#include "core/util/status_macros.h"

namespace distribute::ps {
namespace {

absl::Status CheckDeclaration(absl::string_view name, const UpdateFunction& function) {
  const auto refuse = [name](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("update function ", QuotedName(name), ": ", why));
  };
  if (!function.apply) return refuse("it has no apply function");
  if (function.num_arguments < 0 || function.num_arguments > kMaxUpdateArguments) {
    return refuse(absl::StrCat("it takes ", function.num_arguments, " arguments; 0 to ",
                               kMaxUpdateArguments, " are allowed"));
  }
  if (function.slots.size() > static_cast<size_t>(kMaxSlots)) {
    return refuse(absl::StrCat("it has ", function.slots.size(), " slots; at most ", kMaxSlots,
                               " are allowed"));
  }
  for (const SlotSpec& slot : function.slots) {
    RETURN_IF_ERROR(CheckPsName("slot name", slot.name));
    if (!std::isfinite(slot.initial_value)) return refuse(absl::StrCat("slot ", slot.name, " starts from a value that is not finite"));
    if (slot.initial_value_hyperparameter.empty()) continue;
    bool declared = false;
    for (const HyperparameterSpec& spec : function.hyperparameters) {
      declared = declared || spec.name == slot.initial_value_hyperparameter;
    }
    if (!declared) {
      return refuse(absl::StrCat("slot ", slot.name, " starts from hyperparameter ",
                                 slot.initial_value_hyperparameter, ", which it does not declare"));
    }
  }
  if (function.hyperparameters.size() > static_cast<size_t>(kMaxHyperparameters)) {
    return refuse(absl::StrCat("it has ", function.hyperparameters.size(),
                               " hyperparameters; at most ", kMaxHyperparameters, " are allowed"));
  }
  // A repeated name would make two slots share one stored variable, or one hyperparameter
  // value answer for two declarations.
  std::set<absl::string_view> slot_names;
  for (const SlotSpec& slot : function.slots) {
    if (!slot_names.insert(slot.name).second) return refuse(absl::StrCat("slot ", slot.name, " is declared twice"));
  }
  std::set<absl::string_view> hyperparameter_names;
  for (const HyperparameterSpec& spec : function.hyperparameters) {
    RETURN_IF_ERROR(CheckPsName("hyperparameter name", spec.name));
    if (!hyperparameter_names.insert(spec.name).second) {
      return refuse(absl::StrCat("hyperparameter ", spec.name, " is declared twice"));
    }
    if (spec.default_value.has_value() && !std::isfinite(*spec.default_value)) {
      return refuse(absl::StrCat("hyperparameter ", spec.name, " has a default that is not finite"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

FunctionRegistry& FunctionRegistry::Global() {
  static FunctionRegistry* const global = WithBuiltins().release();
  return *global;
}

std::unique_ptr<FunctionRegistry> FunctionRegistry::WithBuiltins() {
  auto registry = std::make_unique<FunctionRegistry>();
  // The built-ins are well formed; a failure here is a bug that the tests catch.
  const absl::Status status = RegisterBuiltinUpdates(*registry);
  (void)status;
  return registry;
}

absl::Status FunctionRegistry::Register(absl::string_view name, UpdateFunction function) {
  RETURN_IF_ERROR(CheckPsName("function name", name));
  RETURN_IF_ERROR(CheckDeclaration(name, function));
  auto shared = std::make_shared<const UpdateFunction>(std::move(function));
  MutexLock lock(&mu_);
  if (functions_.contains(name)) {
    return absl::AlreadyExistsError(
        absl::StrCat("an update function named ", QuotedName(name), " is already registered"));
  }
  if (functions_.size() >= static_cast<size_t>(kMaxRegisteredFunctions)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "cannot register ", QuotedName(name), ": ", kMaxRegisteredFunctions,
        " update functions are registered, the most allowed"));
  }
  functions_.emplace(std::string(name), std::move(shared));
  return absl::OkStatus();
}

absl::Status FunctionRegistry::RegisterBuiltin(absl::string_view name, UpdateFunction function) {
  RETURN_IF_ERROR(Register(name, std::move(function)));
  MutexLock lock(&mu_);
  builtins_.emplace(name);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const UpdateFunction>> FunctionRegistry::Lookup(
    absl::string_view name) const {
  MutexLock lock(&mu_);
  const auto it = functions_.find(name);
  if (it == functions_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no update function named ", QuotedName(name), " is registered"));
  }
  return it->second;
}

std::set<std::string> FunctionRegistry::SlotNames() const {
  MutexLock lock(&mu_);
  std::set<std::string> names;
  for (const auto& [name, function] : functions_) {
    for (const SlotSpec& slot : function->slots) names.insert(slot.name);
  }
  return names;
}

absl::Status FunctionRegistry::Unregister(absl::string_view name) {
  MutexLock lock(&mu_);
  const auto it = functions_.find(name);
  if (it == functions_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no update function named ", QuotedName(name), " is registered"));
  }
  if (builtins_.contains(name)) {
    return absl::FailedPreconditionError(absl::StrCat(
        QuotedName(name), " is a built-in update function: it stays registered"));
  }
  functions_.erase(it);
  return absl::OkStatus();
}

}  // namespace distribute::ps
