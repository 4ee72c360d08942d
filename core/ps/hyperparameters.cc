#include "core/ps/hyperparameters.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/ps/names.h"

namespace distribute::ps {

absl::StatusOr<Hyperparameters> ResolveHyperparameters(absl::string_view function,
                                                       const std::vector<HyperparameterSpec>& specs,
                                                       const Hyperparameters& given) {
  const auto declared = [&specs](absl::string_view name) {
    for (const HyperparameterSpec& spec : specs) {
      if (spec.name == name) return true;
    }
    return false;
  };
  for (const auto& [name, value] : given) {
    if (!declared(name)) {
      std::string known;
      for (const HyperparameterSpec& spec : specs) absl::StrAppend(&known, known.empty() ? "" : ", ", spec.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "update function ", QuotedName(function), " has no hyperparameter ", QuotedName(name),
          "; it takes: ", known.empty() ? "none" : known));
    }
    if (!std::isfinite(value)) {
      return absl::InvalidArgumentError(absl::StrCat("hyperparameter ", name, " of ",
                                                     QuotedName(function), " is ", value,
                                                     "; it must be finite"));
    }
  }
  Hyperparameters resolved = given;
  for (const HyperparameterSpec& spec : specs) {
    if (resolved.contains(spec.name)) continue;
    if (!spec.default_value.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("update function ", QuotedName(function),
                                                     " needs hyperparameter ", spec.name));
    }
    resolved.emplace(spec.name, *spec.default_value);
  }
  return resolved;
}

}  // namespace distribute::ps
