// The batch calls' defaults: one call per entry, for hosts that have no cheaper way (the
// in-process host, where a call costs no round trip).
#include "core/ps/variable_host.h"

#include <utility>

#include "core/util/status_macros.h"

namespace distribute::ps {

absl::StatusOr<std::vector<Tensor>> VariableHost::ReadMany(std::span<const std::string> names,
                                                           const Deadline& deadline) {
  std::vector<Tensor> values;
  values.reserve(names.size());
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(Tensor value, Read(name, deadline));
    values.push_back(std::move(value));
  }
  return values;
}

absl::StatusOr<VariableHost::UpdatesOutcome> VariableHost::ApplyUpdates(std::span<const UpdateEntry> entries,
                                                                        absl::string_view function,
                                                                        const Hyperparameters& hyperparameters,
                                                                        const Deadline& deadline) {
  UpdatesOutcome outcome;
  for (size_t i = 0; i < entries.size(); ++i) {
    absl::Status applied = ApplyUpdate(entries[i].name, function, entries[i].arguments, hyperparameters, deadline);
    if (applied.ok()) continue;
    if (outcome.failed++ == 0) {
      outcome.first_failed = static_cast<int32_t>(i);
      outcome.first_error = std::move(applied);
    }
  }
  return outcome;
}

}  // namespace distribute::ps
