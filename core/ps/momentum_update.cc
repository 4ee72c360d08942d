// Momentum (training_ops.cc ApplyMomentum, the op of TF1's MomentumOptimizer):
// accum = accum * momentum + grad, then var -= accum * lr, or with use_nesterov
// var -= grad * lr + accum * momentum * lr. The slot is TF's "momentum".
#include "core/ps/builtin_updates.h"
#include "core/ps/floating_kernel.h"

namespace distribute::ps {

UpdateFunction MomentumUpdate(bool use_nesterov) {
  UpdateFunction f;
  f.num_arguments = 1;
  f.dtypes = FloatingDTypes();
  f.slots = {{"momentum", 0.0, ""}};
  f.hyperparameters = {{"learning_rate", std::nullopt}, {"momentum", std::nullopt}};
  f.apply = [use_nesterov](const UpdateCall& call) {
    const double lr = call.hyperparameters.at("learning_rate");
    const double momentum = call.hyperparameters.at("momentum");
    return RunFloatingKernel(call, [=](auto* const* state, const auto* const* args, size_t n) {
      using T = std::remove_cvref_t<decltype(**state)>;
      T* var = state[0];
      T* accum = state[1];
      const T* grad = args[0];
      const T rate = static_cast<T>(lr);
      const T mu = static_cast<T>(momentum);
      for (size_t i = 0; i < n; ++i) {
        accum[i] = accum[i] * mu + grad[i];
        if (use_nesterov) {
          var[i] -= grad[i] * rate + accum[i] * mu * rate;
        } else {
          var[i] -= accum[i] * rate;
        }
      }
    });
  };
  return f;
}

}  // namespace distribute::ps
