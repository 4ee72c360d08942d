// Adam (training_ops.cc ApplyAdam, as Keras's Adam drives it): with beta powers
// beta_1^t and beta_2^t of the 1-based step t,
//   alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
//   m += (grad - m) * (1 - beta_1);  v += (grad^2 - v) * (1 - beta_2)
//   var -= alpha * m / (sqrt(v) + epsilon)
// The slots are Keras's "m" and "v".
#include <cmath>
#include <type_traits>

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
    return RunFloatingKernel(call, [](const auto& s) {
      using T = std::remove_cvref_t<decltype(*s.var)>;
      const T b1 = s.Hyper("beta_1");
      const T b2 = s.Hyper("beta_2");
      const T step = s.Hyper("step");
      const T alpha =
          s.Hyper("learning_rate") * std::sqrt(T(1) - std::pow(b2, step)) / (T(1) - std::pow(b1, step));
      const T eps = s.Hyper("epsilon");
      T* m = s.slots[0];
      T* v = s.slots[1];
      for (size_t i = 0; i < s.count; ++i) {
        const T g = s.gradient[i];
        m[i] += (g - m[i]) * (T(1) - b1);
        v[i] += (g * g - v[i]) * (T(1) - b2);
        s.var[i] -= (m[i] * alpha) / (std::sqrt(v[i]) + eps);
      }
    });
  };
  return f;
}

}  // namespace distribute::ps
