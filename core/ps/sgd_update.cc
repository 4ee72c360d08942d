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
    return RunFloatingKernel(call, [](const auto& s) {
      const auto rate = s.Hyper("learning_rate");
      for (size_t i = 0; i < s.count; ++i) s.var[i] -= s.gradient[i] * rate;
    });
  };
  return f;
}

}  // namespace distribute::ps
