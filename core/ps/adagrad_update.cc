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
    const double lr = call.hyperparameters.at("learning_rate");
    const double epsilon = call.hyperparameters.at("epsilon");
    return RunFloatingKernel(call, [=](auto* const* state, const auto* const* args, size_t n) {
      using T = std::remove_cvref_t<decltype(**state)>;
      T* var = state[0];
      T* accum = state[1];
      const T* grad = args[0];
      const T rate = static_cast<T>(lr);
      const T eps = static_cast<T>(epsilon);
      for (size_t i = 0; i < n; ++i) {
        accum[i] += grad[i] * grad[i];
        var[i] -= grad[i] * rate / (std::sqrt(accum[i]) + eps);
      }
    });
  };
  return f;
}

}  // namespace distribute::ps
