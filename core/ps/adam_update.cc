// Adam (training_ops.cc ApplyAdam, as Keras's Adam drives it): with beta powers
// beta_1^t and beta_2^t of the 1-based step t,
//   alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
//   m += (grad - m) * (1 - beta_1);  v += (grad^2 - v) * (1 - beta_2)
//   var -= alpha * m / (sqrt(v) + epsilon)
// The slots are Keras's "m" and "v".
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/ps/builtin_updates.h"
#include "core/ps/floating_kernel.h"

namespace distribute::ps {

UpdateFunction AdamUpdate() {
  UpdateFunction f;
  f.num_arguments = 1;
  f.dtypes = FloatingDTypes();
  f.slots = {{"m", 0.0, ""}, {"v", 0.0, ""}};
  f.hyperparameters = {{"learning_rate", 0.001}, {"beta_1", 0.9},   {"beta_2", 0.999},
                       {"epsilon", 1e-7},        {"step", std::nullopt}};
  f.check_hyperparameters = [](const Hyperparameters& hyperparameters) {
    const double step = hyperparameters.at("step");
    // A step below 1 makes 1 - beta_1^t zero or meaningless.
    if (step >= 1 && step == std::floor(step)) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("adam: step must be a whole number of at least 1, got ", step));
  };
  f.apply = [](const UpdateCall& call) {
    const double step = call.hyperparameters.at("step");
    const double lr = call.hyperparameters.at("learning_rate");
    const double beta_1 = call.hyperparameters.at("beta_1");
    const double beta_2 = call.hyperparameters.at("beta_2");
    const double epsilon = call.hyperparameters.at("epsilon");
    return RunFloatingKernel(call, [=](auto* const* state, const auto* const* args, size_t n) {
      using T = std::remove_cvref_t<decltype(**state)>;
      T* var = state[0];
      T* m = state[1];
      T* v = state[2];
      const T* grad = args[0];
      const T b1 = static_cast<T>(beta_1);
      const T b2 = static_cast<T>(beta_2);
      const T b1_power = std::pow(b1, static_cast<T>(step));
      const T b2_power = std::pow(b2, static_cast<T>(step));
      const T alpha = static_cast<T>(lr) * std::sqrt(T(1) - b2_power) / (T(1) - b1_power);
      const T eps = static_cast<T>(epsilon);
      for (size_t i = 0; i < n; ++i) {
        m[i] += (grad[i] - m[i]) * (T(1) - b1);
        v[i] += (grad[i] * grad[i] - v[i]) * (T(1) - b2);
        var[i] -= (m[i] * alpha) / (std::sqrt(v[i]) + eps);
      }
    });
  };
  return f;
}

}  // namespace distribute::ps
