// TF2 Adagrad (keras Adagrad -> training_ops.cc ApplyAdagradV2): accum += grad^2,
// var -= lr * grad / (sqrt(accum) + epsilon). The slot is Keras's "accumulator", which
// starts at initial_accumulator_value (Keras refuses a negative one).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/ps/builtin_updates.h"
#include "core/ps/floating_kernel.h"

namespace distribute::ps {

UpdateFunction AdagradUpdate() {
  UpdateFunction f;
  f.num_arguments = 1;
  f.dtypes = FloatingDTypes();
  f.slots = {{"accumulator", 0.1, "initial_accumulator_value"}};
  f.hyperparameters = {
      {"learning_rate", 0.001}, {"initial_accumulator_value", 0.1}, {"epsilon", 1e-7}};
  f.check_hyperparameters = [](const Hyperparameters& hyperparameters) {
    const double initial = hyperparameters.at("initial_accumulator_value");
    if (initial >= 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "adagrad: initial_accumulator_value must be non-negative, got ", initial));
  };
  f.apply = [](const UpdateCall& call) {
    return RunFloatingKernel(call, [](const auto& s) {
      const auto rate = s.Hyper("learning_rate");
      const auto eps = s.Hyper("epsilon");
      auto* accum = s.slots[0];
      for (size_t i = 0; i < s.count; ++i) {
        const auto g = s.gradient[i];
        accum[i] += g * g;
        s.var[i] -= g * rate / (std::sqrt(accum[i]) + eps);
      }
    });
  };
  return f;
}

}  // namespace distribute::ps
