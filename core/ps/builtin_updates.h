// The optimizer updates every process has registered by default, so that a training loop
// against parameter servers needs no custom code. Each follows TF's training op (the
// arithmetic of tensorflow/core/kernels/training_ops.cc) with the Keras OptimizerV2
// defaults, and keeps its slots on the variable's ps task under TF2's slot names.
//
//   name               slots              arguments  hyperparameters (default)
//   sgd                -                  gradient   learning_rate (0.01)
//   momentum           momentum           gradient   learning_rate, momentum (required)
//   nesterov_momentum  momentum           gradient   learning_rate, momentum (required)
//   adagrad            accumulator        gradient   learning_rate (0.001),
//                                                    initial_accumulator_value (0.1),
//                                                    epsilon (1e-7)
//   adam               m, v               gradient   learning_rate (0.001), beta_1 (0.9),
//                                                    beta_2 (0.999), epsilon (1e-7),
//                                                    step (required: the 1-based count of
//                                                    updates, Keras's iterations + 1)
//
// All take float32, float64, float16 and bfloat16 variables (the 16-bit ones computed in
// float32).
#ifndef DISTRIBUTE_CORE_PS_BUILTIN_UPDATES_H_
#define DISTRIBUTE_CORE_PS_BUILTIN_UPDATES_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/ps/function_registry.h"

namespace distribute::ps {

inline constexpr absl::string_view kSgdUpdate = "sgd";
inline constexpr absl::string_view kMomentumUpdate = "momentum";
inline constexpr absl::string_view kNesterovMomentumUpdate = "nesterov_momentum";
inline constexpr absl::string_view kAdagradUpdate = "adagrad";
inline constexpr absl::string_view kAdamUpdate = "adam";

// GradientDescent: var -= learning_rate * gradient.
UpdateFunction SgdUpdate();

// ApplyMomentum: accum = accum * momentum + gradient; then var -= learning_rate * accum, or
// with use_nesterov var -= learning_rate * gradient + learning_rate * momentum * accum.
UpdateFunction MomentumUpdate(bool use_nesterov);

// TF2 Adagrad (ApplyAdagradV2): accum += gradient^2;
// var -= learning_rate * gradient / (sqrt(accum) + epsilon). The accumulator starts at
// initial_accumulator_value, which must not be negative.
UpdateFunction AdagradUpdate();

// ApplyAdam at step t: alpha = learning_rate * sqrt(1 - beta_2^t) / (1 - beta_1^t);
// m += (gradient - m) * (1 - beta_1); v += (gradient^2 - v) * (1 - beta_2);
// var -= alpha * m / (sqrt(v) + epsilon) (epsilon outside the square root, "epsilon hat").
UpdateFunction AdamUpdate();

// Registers the five above as built-ins (see FunctionRegistry::Global).
absl::Status RegisterBuiltinUpdates(FunctionRegistry& registry);

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_BUILTIN_UPDATES_H_
