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
    return RunFloatingKernel(call, [use_nesterov](const auto& s) {
      const auto rate = s.Hyper("learning_rate");
      const auto mu = s.Hyper("momentum");
      auto* accum = s.slots[0];
      for (size_t i = 0; i < s.count; ++i) {
        accum[i] = accum[i] * mu + s.gradient[i];
        if (use_nesterov) {
          s.var[i] -= s.gradient[i] * rate + accum[i] * mu * rate;
        } else {
          s.var[i] -= accum[i] * rate;
        }
      }
    });
  };
  return f;
}

}  // namespace distribute::ps
