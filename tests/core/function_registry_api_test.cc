// A C update function registered with dist_function_register and run by a VariableStore
// over the process's registry, without a strategy: the callback sees the variable, its
// slot, the argument and the resolved hyperparameters in declaration order; its in-place
// writes land in the store; its failure comes back with its message; user_data is
// released when the last holder of the function lets go. The shim sources are compiled
// into this test (CMakeLists.txt), so that it shares the store's FunctionRegistry.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "core/ps/function_registry.h"
#include "core/ps/variable_store.h"
#include "distribute/parameter_server.h"
#include "distribute/tensor.h"
#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"

namespace distribute::ps {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::ZeroTensor;

// What the callback saw, and what it was told to do.
struct Seen {
  int calls = 0;
  int frees = 0;
  std::vector<std::vector<float>> variables;
  std::vector<std::vector<float>> args;
  std::vector<std::string> hyperparameter_names;
  std::vector<double> hyperparameter_values;
  bool fail = false;
};

std::vector<float> FloatsOf(const dist_value_t* tensor) {
  void* data = nullptr;
  int64_t count = 0;
  if (dist_tensor_data(tensor, &data) != DIST_OK) return {};
  if (dist_tensor_num_elements(tensor, &count) != DIST_OK) return {};
  const float* floats = static_cast<const float*>(data);
  return std::vector<float>(floats, floats + count);
}

// variable += scale * arg + offset; accumulator += arg.
dist_status_t ScaledAdd(dist_value_t* const* variables, int32_t num_variables,
                        const dist_value_t* const* args, int32_t num_args,
                        const char* const* names, const double* values, int32_t num_hyperparameters,
                        void* user_data) {
  Seen& seen = *static_cast<Seen*>(user_data);
  ++seen.calls;
  if (seen.fail) {
    void* unused = nullptr;
    // Leaves this thread's error message naming dist_tensor_data, as a failing call would.
    return dist_tensor_data(nullptr, &unused);
  }
  for (int32_t i = 0; i < num_variables; ++i) seen.variables.push_back(FloatsOf(variables[i]));
  for (int32_t i = 0; i < num_args; ++i) seen.args.push_back(FloatsOf(args[i]));
  for (int32_t i = 0; i < num_hyperparameters; ++i) {
    seen.hyperparameter_names.push_back(names[i]);
    seen.hyperparameter_values.push_back(values[i]);
  }
  void* variable = nullptr;
  void* accumulator = nullptr;
  if (dist_tensor_data(variables[0], &variable) != DIST_OK) return DIST_INTERNAL;
  if (dist_tensor_data(variables[1], &accumulator) != DIST_OK) return DIST_INTERNAL;
  const std::vector<float> gradient = FloatsOf(args[0]);
  for (size_t i = 0; i < gradient.size(); ++i) {
    static_cast<float*>(variable)[i] += static_cast<float>(values[0]) * gradient[i] + static_cast<float>(values[1]);
    static_cast<float*>(accumulator)[i] += gradient[i];
  }
  return DIST_OK;
}

void CountFree(void* user_data) { ++static_cast<Seen*>(user_data)->frees; }

dist_status_t RegisterScaledAdd(const char* name, Seen* seen) {
  const char* slot_names[] = {"acc"};
  const double slot_initial_values[] = {0.25};
  // "offset" has no default (NaN): every call must give it.
  const char* hyperparameter_names[] = {"scale", "offset"};
  const double defaults[] = {2.0, std::numeric_limits<double>::quiet_NaN()};
  return dist_function_register(name, ScaledAdd, seen, CountFree, 1, slot_names,
                                slot_initial_values, 1, hyperparameter_names, defaults, 2);
}

Tensor Floats(std::vector<float> values) {
  Tensor tensor = ZeroTensor(DType::kFloat32, {static_cast<int64_t>(values.size())});
  std::memcpy(tensor.data(), values.data(), values.size() * sizeof(float));
  return tensor;
}

std::vector<double> Read(const VariableStore& store, absl::string_view name) {
  absl::StatusOr<Tensor> value = store.Read(name);
  if (!value.ok()) return {};
  return ::distribute::testing::FloatsOf(*value);
}

absl::Status Apply(VariableStore& store, absl::string_view function, std::vector<float> argument,
                   const Hyperparameters& hyperparameters) {
  const std::vector<Tensor> arguments = {Floats(std::move(argument))};
  return store.ApplyUpdate("w", function, arguments, hyperparameters);
}

TEST(FunctionRegistryApiTest, TheCallbackSeesTheCallAndItsWritesLand) {
  Seen seen;
  ASSERT_EQ(RegisterScaledAdd("scaled_add", &seen), DIST_OK) << dist_last_error_message();
  VariableStore store;
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("w", Floats({1, 2}))));

  ASSERT_TRUE(IsOk(Apply(store, "scaled_add", {2, 4}, {{"offset", 0.5}})));
  EXPECT_EQ(seen.calls, 1);
  // The variable, then its slot at its initial value; the argument; the default scale and
  // the given offset, in the declared order.
  EXPECT_EQ(seen.variables, (std::vector<std::vector<float>>{{1, 2}, {0.25, 0.25}}));
  EXPECT_EQ(seen.args, (std::vector<std::vector<float>>{{2, 4}}));
  EXPECT_EQ(seen.hyperparameter_names, (std::vector<std::string>{"scale", "offset"}));
  EXPECT_EQ(seen.hyperparameter_values, (std::vector<double>{2.0, 0.5}));
  // 1 + 2*2 + 0.5, 2 + 2*4 + 0.5; 0.25 + 2, 0.25 + 4.
  EXPECT_EQ(Read(store, "w"), (std::vector<double>{5.5, 10.5}));
  EXPECT_EQ(Read(store, "w/acc"), (std::vector<double>{2.25, 4.25}));

  // An overridden default; the slot keeps its value between calls.
  seen.hyperparameter_values.clear();
  ASSERT_TRUE(IsOk(Apply(store, "scaled_add", {1, 1},
                         {{"offset", 0.0}, {"scale", -1.0}})));
  EXPECT_EQ(seen.hyperparameter_values, (std::vector<double>{-1.0, 0.0}));
  EXPECT_EQ(Read(store, "w"), (std::vector<double>{4.5, 9.5}));
  EXPECT_EQ(Read(store, "w/acc"), (std::vector<double>{3.25, 5.25}));

  // The required hyperparameter missing: refused before the callback runs.
  EXPECT_TRUE(HasError(Apply(store, "scaled_add", {1, 1}, {}),
                       absl::StatusCode::kInvalidArgument, {"offset"}));
  EXPECT_EQ(seen.calls, 2);

  ASSERT_EQ(dist_function_unregister("scaled_add"), DIST_OK);
  EXPECT_EQ(seen.frees, 1);
  EXPECT_TRUE(HasError(Apply(store, "scaled_add", {1, 1}, {{"offset", 0.0}}),
                       absl::StatusCode::kNotFound, {"scaled_add"}));
}

TEST(FunctionRegistryApiTest, AFailingCallbackReportsItsMessageAndWritesNothing) {
  Seen seen;
  seen.fail = true;
  ASSERT_EQ(RegisterScaledAdd("failing_add", &seen), DIST_OK) << dist_last_error_message();
  VariableStore store;
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("w", Floats({1, 2}))));
  EXPECT_TRUE(HasError(Apply(store, "failing_add", {2, 4}, {{"offset", 0.5}}),
                       absl::StatusCode::kInvalidArgument,
                       {"update function 'failing_add'", "dist_tensor_data"}));
  EXPECT_EQ(seen.calls, 1);
  EXPECT_EQ(Read(store, "w"), (std::vector<double>{1, 2}));
  ASSERT_EQ(dist_function_unregister("failing_add"), DIST_OK);
  EXPECT_EQ(seen.frees, 1);
}

TEST(FunctionRegistryApiTest, UserDataOutlivesAFunctionLookedUpBeforeItsUnregistration) {
  Seen seen;
  ASSERT_EQ(RegisterScaledAdd("held_add", &seen), DIST_OK) << dist_last_error_message();
  absl::StatusOr<std::shared_ptr<const UpdateFunction>> held =
      FunctionRegistry::Global().Lookup("held_add");
  ASSERT_TRUE(IsOk(held));
  ASSERT_EQ(dist_function_unregister("held_add"), DIST_OK);
  EXPECT_EQ(seen.frees, 0);  // a call that looked it up may still be running
  held->reset();
  EXPECT_EQ(seen.frees, 1);
}

}  // namespace
}  // namespace distribute::ps
