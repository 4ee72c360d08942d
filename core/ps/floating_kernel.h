// Running an element-wise optimizer step on the state of an update call in the variable's
// floating-point dtype: float32 and float64 in place, float16 and bfloat16 widened to
// float32 for the arithmetic and rounded back once at the end (as TF's CPU kernels for
// half types compute). The kernel is a generic callable taking a FloatingState<T>: the
// variable, its slots (in the function's slot order), the gradient (the call's one
// argument) and the call's hyperparameters in the compute type (Hyper("learning_rate")).
#ifndef DISTRIBUTE_CORE_PS_FLOATING_KERNEL_H_
#define DISTRIBUTE_CORE_PS_FLOATING_KERNEL_H_

#include <cstddef>
#include <set>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/ps/function_registry.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"

namespace distribute::ps {

// The dtypes RunFloatingKernel accepts: an UpdateFunction's `dtypes` for the optimizers.
std::set<DType> FloatingDTypes();

// float16 / bfloat16 elements to float32 and back (round to nearest even).
void WidenToFloat(DType dtype, const void* source, float* out, size_t count);
void NarrowFromFloat(DType dtype, const float* source, void* out, size_t count);

// Sets every element of a host tensor of any dtype to `value` (integers clamped to their range and
// truncated, 16-bit floats rounded to nearest even for the 16-bit floats): how a slot gets its initial value.
void FillTensor(const Tensor& tensor, double value);

template <typename T>
struct FloatingState {
  T* var;
  std::vector<T*> slots;
  const T* gradient;
  size_t count;  // elements of each
  const Hyperparameters* hyperparameters;  // resolved: every declared name is present

  // Hyperparameter `name` in the compute type.
  T Hyper(absl::string_view name) const { return static_cast<T>(hyperparameters->find(name)->second); }
};

namespace internal {

template <typename T, typename Kernel>
void RunInPlace(const UpdateCall& call, size_t count, Kernel& kernel) {
  FloatingState<T> state{static_cast<T*>(call.variables[0].data()), {},
                         static_cast<const T*>(call.arguments[0].data()), count,
                         &call.hyperparameters};
  for (const Tensor& slot : call.variables.subspan(1)) state.slots.push_back(static_cast<T*>(slot.data()));
  kernel(state);
}

template <typename Kernel>
void RunWidened(const UpdateCall& call, DType dtype, size_t count, Kernel& kernel) {
  // widened[0] is the variable, then the slots, then the gradient.
  std::vector<std::vector<float>> widened(call.variables.size() + 1, std::vector<float>(count));
  for (size_t i = 0; i < call.variables.size(); ++i) {
    WidenToFloat(dtype, call.variables[i].data(), widened[i].data(), count);
  }
  WidenToFloat(dtype, call.arguments[0].data(), widened.back().data(), count);
  FloatingState<float> state{widened[0].data(), {}, widened.back().data(), count,
                             &call.hyperparameters};
  for (size_t i = 1; i < call.variables.size(); ++i) state.slots.push_back(widened[i].data());
  kernel(state);
  for (size_t i = 0; i < call.variables.size(); ++i) {
    NarrowFromFloat(dtype, widened[i].data(), call.variables[i].data(), count);
  }
}

}  // namespace internal

// The call must have one argument (checked by the store against the function's
// declaration). InvalidArgument, changing nothing, when the variable is not of a
// FloatingDTypes() dtype.
template <typename Kernel>
absl::Status RunFloatingKernel(const UpdateCall& call, Kernel kernel) {
  const DType dtype = call.variables[0].dtype();
  const size_t count = static_cast<size_t>(call.variables[0].shape().num_elements());
  switch (dtype) {
    case DType::kFloat32:
      internal::RunInPlace<float>(call, count, kernel);
      return absl::OkStatus();
    case DType::kFloat64:
      internal::RunInPlace<double>(call, count, kernel);
      return absl::OkStatus();
    case DType::kFloat16:
    case DType::kBFloat16:
      internal::RunWidened(call, dtype, count, kernel);
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("an optimizer update needs a floating-point variable, not ",
                       DTypeName(dtype)));
  }
}

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_FLOATING_KERNEL_H_
