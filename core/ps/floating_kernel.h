// Running an element-wise optimizer step on the state of an update call in the variable's
// floating-point dtype: float32 and float64 in place, float16 and bfloat16 widened to
// float32 for the arithmetic and rounded back once at the end (as TF's CPU kernels for
// half types compute). The kernel is a generic callable
//   kernel(T* const* state, const T* const* arguments, size_t count)
// where state[0] is the variable, state[1..] its slots and arguments the call's tensors.
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

namespace internal {

template <typename T, typename Kernel>
void RunInPlace(const UpdateCall& call, size_t count, Kernel& kernel) {
  std::vector<T*> state;
  for (const Tensor& t : call.variables) state.push_back(static_cast<T*>(t.data()));
  std::vector<const T*> arguments;
  for (const Tensor& t : call.arguments) arguments.push_back(static_cast<const T*>(t.data()));
  kernel(state.data(), arguments.data(), count);
}

template <typename Kernel>
void RunWidened(const UpdateCall& call, DType dtype, size_t count, Kernel& kernel) {
  std::vector<std::vector<float>> state(call.variables.size(), std::vector<float>(count));
  std::vector<std::vector<float>> arguments(call.arguments.size(), std::vector<float>(count));
  std::vector<float*> state_data;
  std::vector<const float*> argument_data;
  for (size_t i = 0; i < state.size(); ++i) {
    WidenToFloat(dtype, call.variables[i].data(), state[i].data(), count);
    state_data.push_back(state[i].data());
  }
  for (size_t i = 0; i < arguments.size(); ++i) {
    WidenToFloat(dtype, call.arguments[i].data(), arguments[i].data(), count);
    argument_data.push_back(arguments[i].data());
  }
  kernel(state_data.data(), argument_data.data(), count);
  for (size_t i = 0; i < state.size(); ++i) {
    NarrowFromFloat(dtype, state[i].data(), call.variables[i].data(), count);
  }
}

}  // namespace internal

// InvalidArgument, changing nothing, when the variable is not of a FloatingDTypes() dtype.
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
