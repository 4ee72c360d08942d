// GradientDescent (training_ops.cc ApplyGradientDescent): var -= lr * grad.
#include "core/ps/builtin_updates.h"
#include "core/ps/floating_kernel.h"

namespace distribute::ps {

UpdateFunction SgdUpdate() {
  UpdateFunction f;
  f.num_arguments = 1;
  f.dtypes = FloatingDTypes();
  f.hyperparameters = {{"learning_rate", 0.01}};
  f.apply = [](const UpdateCall& call) {
    const double lr = call.hyperparameters.at("learning_rate");
    return RunFloatingKernel(call, [lr](auto* const* state, const auto* const* args, size_t n) {
      using T = std::remove_cvref_t<decltype(**state)>;
      T* var = state[0];
      const T* grad = args[0];
      const T rate = static_cast<T>(lr);
      for (size_t i = 0; i < n; ++i) var[i] -= grad[i] * rate;
    });
  };
  return f;
}

}  // namespace distribute::ps
