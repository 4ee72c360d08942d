// The built-in optimizer updates run through a variable store, each checked over a few
// steps against the optimizer's formula written out here in double precision (the
// textbook forms, e.g. Adam's m = beta_1 m + (1 - beta_1) g, not the kernels'
// rearrangements), for float32 and float64, and for float16 / bfloat16 within the
// rounding of those types.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/ps/builtin_updates.h"
#include "core/ps/function_registry.h"
#include "core/ps/variable_store.h"
#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"

namespace distribute::ps {
namespace {

using ::distribute::testing::FloatsOf;
using ::distribute::testing::HasError;
using ::distribute::testing::IsHalfLike;
using ::distribute::testing::IsOk;
using ::distribute::testing::LoadFloat;
using ::distribute::testing::RoundFloatTo;
using ::distribute::testing::StoreFloat;
using ::distribute::testing::ZeroTensor;

constexpr int kSteps = 3;
const std::vector<double> kInitial = {1.0, -2.0, 0.5, 0.0};

// The gradient of step s (0-based): different every step, with signs of both kinds.
std::vector<double> Gradient(int s) {
  return {0.1 * (s + 1), -0.3, 0.7 / (s + 1), 0.05 * s - 0.04};
}

Tensor Make(DType dtype, const std::vector<double>& values) {
  Tensor t = ZeroTensor(dtype, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) {
    // 16-bit types hold the nearest value they can (the reference reads it back).
    const double held = IsHalfLike(dtype) ? RoundFloatTo(dtype, static_cast<float>(values[i])) : values[i];
    StoreFloat(dtype, t.data(), i, held);
  }
  return t;
}

std::vector<double> Values(const VariableStore& store, const std::string& name) {
  absl::StatusOr<Tensor> t = store.Read(name);
  EXPECT_TRUE(IsOk(t)) << name;
  return t.ok() ? FloatsOf(*t) : std::vector<double>{};
}

// Reference state of one element: the variable and up to two slots.
struct Element {
  double var;
  double slot[2] = {0, 0};
};

using ReferenceStep = std::function<void(Element&, double g, int step)>;

struct Case {
  std::string function;
  Hyperparameters hyperparameters;  // "step" is added per step for adam
  std::vector<std::string> slots;
  std::vector<double> slot_initial;
  ReferenceStep step;
};

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double rel,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], rel * std::max(1.0, std::fabs(want[i]))) << what << " element " << i;
  }
}

void RunCase(const Case& c, DType dtype, double rel) {
  VariableStore store;
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("w", Make(dtype, kInitial))));
  std::vector<Element> ref;
  const Tensor initial = Make(dtype, kInitial);
  for (size_t i = 0; i < kInitial.size(); ++i) {
    Element e{LoadFloat(dtype, initial.data(), i)};
    for (size_t k = 0; k < c.slot_initial.size(); ++k) e.slot[k] = c.slot_initial[k];
    ref.push_back(e);
  }
  for (int s = 0; s < kSteps; ++s) {
    const Tensor g = Make(dtype, Gradient(s));
    Hyperparameters h = c.hyperparameters;
    if (c.function == kAdamUpdate) h["step"] = s + 1;
    ASSERT_TRUE(IsOk(store.ApplyUpdate("w", c.function, {&g, 1}, h))) << c.function;
    for (size_t i = 0; i < ref.size(); ++i) {
      // The reference starts from the gradient as the tensor holds it (16-bit rounding).
      c.step(ref[i], LoadFloat(dtype, g.data(), i), s + 1);
    }
    std::vector<double> want_var;
    for (const Element& e : ref) want_var.push_back(e.var);
    const std::string what = c.function + " step " + std::to_string(s + 1);
    ExpectNear(Values(store, "w"), want_var, rel, what + " var");
    for (size_t k = 0; k < c.slots.size(); ++k) {
      std::vector<double> want_slot;
      for (const Element& e : ref) want_slot.push_back(e.slot[k]);
      ExpectNear(Values(store, "w/" + c.slots[k]), want_slot, rel, what + " " + c.slots[k]);
    }
  }
  std::vector<std::string> names = {"w"};
  for (const std::string& slot : c.slots) names.push_back("w/" + slot);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(store.Names(), names);
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  cases.push_back({std::string(kSgdUpdate), {{"learning_rate", 0.1}}, {}, {},
                   [](Element& e, double g, int) { e.var -= 0.1 * g; }});
  // Keras's default learning rate for SGD, 0.01.
  cases.push_back({std::string(kSgdUpdate), {}, {}, {},
                   [](Element& e, double g, int) { e.var -= 0.01 * g; }});
  cases.push_back({std::string(kMomentumUpdate), {{"learning_rate", 0.1}, {"momentum", 0.9}},
                   {"momentum"}, {0.0},
                   [](Element& e, double g, int) {
                     e.slot[0] = 0.9 * e.slot[0] + g;
                     e.var -= 0.1 * e.slot[0];
                   }});
  cases.push_back({std::string(kNesterovMomentumUpdate),
                   {{"learning_rate", 0.1}, {"momentum", 0.9}}, {"momentum"}, {0.0},
                   [](Element& e, double g, int) {
                     e.slot[0] = 0.9 * e.slot[0] + g;
                     e.var -= 0.1 * g + 0.1 * 0.9 * e.slot[0];
                   }});
  cases.push_back({std::string(kAdagradUpdate), {{"learning_rate", 0.5}}, {"accumulator"}, {0.1},
                   [](Element& e, double g, int) {
                     e.slot[0] += g * g;
                     e.var -= 0.5 * g / (std::sqrt(e.slot[0]) + 1e-7);
                   }});
  cases.push_back({std::string(kAdagradUpdate),
                   {{"learning_rate", 0.2}, {"initial_accumulator_value", 1.5}, {"epsilon", 0.01}},
                   {"accumulator"}, {1.5},
                   [](Element& e, double g, int) {
                     e.slot[0] += g * g;
                     e.var -= 0.2 * g / (std::sqrt(e.slot[0]) + 0.01);
                   }});
  cases.push_back({std::string(kAdamUpdate), {{"learning_rate", 0.1}}, {"m", "v"}, {0.0, 0.0},
                   [](Element& e, double g, int t) {
                     const double b1 = 0.9, b2 = 0.999, eps = 1e-7;
                     e.slot[0] = b1 * e.slot[0] + (1 - b1) * g;
                     e.slot[1] = b2 * e.slot[1] + (1 - b2) * g * g;
                     const double lr_t = 0.1 * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
                     e.var -= lr_t * e.slot[0] / (std::sqrt(e.slot[1]) + eps);
                   }});
  cases.push_back({std::string(kAdamUpdate),
                   {{"learning_rate", 0.05}, {"beta_1", 0.5}, {"beta_2", 0.75}, {"epsilon", 0.1}},
                   {"m", "v"}, {0.0, 0.0},
                   [](Element& e, double g, int t) {
                     e.slot[0] = 0.5 * e.slot[0] + 0.5 * g;
                     e.slot[1] = 0.75 * e.slot[1] + 0.25 * g * g;
                     const double lr_t = 0.05 * std::sqrt(1 - std::pow(0.75, t)) / (1 - std::pow(0.5, t));
                     e.var -= lr_t * e.slot[0] / (std::sqrt(e.slot[1]) + 0.1);
                   }});
  return cases;
}

TEST(PsOptimizersTest, Float64MatchesTheFormula) {
  for (const Case& c : Cases()) RunCase(c, DType::kFloat64, 1e-12);
}

TEST(PsOptimizersTest, Float32MatchesTheFormula) {
  for (const Case& c : Cases()) RunCase(c, DType::kFloat32, 2e-6);
}

TEST(PsOptimizersTest, HalfTypesComputeInFloat32) {
  // Three steps, each rounding the state to the 16-bit type: a few units in the last place.
  for (const Case& c : Cases()) {
    RunCase(c, DType::kFloat16, 4 * std::ldexp(1.0, -10));
    RunCase(c, DType::kBFloat16, 4 * std::ldexp(1.0, -7));
  }
}

TEST(PsOptimizersTest, RefusalsCreateNoSlots) {
  VariableStore store;
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("w", Make(DType::kFloat32, {1, 2}))));
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("i", ZeroTensor(DType::kInt32, {2}))));
  const Tensor g = Make(DType::kFloat32, {1, 1});
  const Tensor gi = ZeroTensor(DType::kInt32, {2});
  for (absl::string_view f :
       {kSgdUpdate, kMomentumUpdate, kNesterovMomentumUpdate, kAdagradUpdate, kAdamUpdate}) {
    EXPECT_TRUE(HasError(store.ApplyUpdate("i", f, {&gi, 1}, {{"learning_rate", 1}}),
                         absl::StatusCode::kInvalidArgument, {"int32"}))
        << f;
  }
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", kMomentumUpdate, {&g, 1}, {{"learning_rate", 1}}),
                       absl::StatusCode::kInvalidArgument, {"needs hyperparameter momentum"}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", kAdamUpdate, {&g, 1}, {}),
                       absl::StatusCode::kInvalidArgument, {"needs hyperparameter step"}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", kAdamUpdate, {&g, 1}, {{"step", 0}}),
                       absl::StatusCode::kInvalidArgument, {"step", "at least 1"}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", kAdamUpdate, {&g, 1}, {{"step", 1.5}}),
                       absl::StatusCode::kInvalidArgument, {"whole number"}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", kAdagradUpdate, {&g, 1},
                                         {{"initial_accumulator_value", -0.1}}),
                       absl::StatusCode::kInvalidArgument, {"non-negative"}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", kSgdUpdate, {&gi, 1}, {}),
                       absl::StatusCode::kInvalidArgument, {"argument 0 is int32"}));
  EXPECT_EQ(store.Names(), (std::vector<std::string>{"i", "w"}));
  EXPECT_EQ(Values(store, "w"), (std::vector<double>{1, 2}));
}

}  // namespace
}  // namespace distribute::ps
