// The named numbers an update function takes besides tensors (learning_rate, beta_1, the
// Adam step). A function declares each one with its default, or as required; a call's
// values are checked against that declaration before anything runs, so a misspelt name
// is an error rather than a silently used default.
#ifndef DISTRIBUTE_CORE_PS_HYPERPARAMETERS_H_
#define DISTRIBUTE_CORE_PS_HYPERPARAMETERS_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distribute::ps {

using Hyperparameters = std::map<std::string, double, std::less<>>;

struct HyperparameterSpec {
  std::string name;
  std::optional<double> default_value;  // none: the caller must give it
};

// `given` completed with the defaults of `specs`. InvalidArgument, naming `function`, for
// a name `specs` does not declare, a required value that is missing, or a value that is
// not finite.
absl::StatusOr<Hyperparameters> ResolveHyperparameters(absl::string_view function,
                                                       const std::vector<HyperparameterSpec>& specs,
                                                       const Hyperparameters& given);

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_HYPERPARAMETERS_H_
