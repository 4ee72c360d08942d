// The update-function registry: registration rules and bounds, lookup that outlives an
// unregistration, the built-ins present in the process's registry and kept there, thread
// safety, and hyperparameter resolution.
#include "core/ps/function_registry.h"

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/ps/builtin_updates.h"
#include "core/ps/hyperparameters.h"
#include "core/ps/names.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute::ps {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

UpdateFunction Noop() {
  UpdateFunction f;
  f.apply = [](const UpdateCall&) { return absl::OkStatus(); };
  return f;
}

TEST(FunctionRegistryTest, TheGlobalRegistryHoldsTheBuiltins) {
  FunctionRegistry& global = FunctionRegistry::Global();
  for (absl::string_view name :
       {kSgdUpdate, kMomentumUpdate, kNesterovMomentumUpdate, kAdagradUpdate, kAdamUpdate}) {
    absl::StatusOr<std::shared_ptr<const UpdateFunction>> found = global.Lookup(name);
    ASSERT_TRUE(IsOk(found)) << name;
    EXPECT_EQ((*found)->num_arguments, 1) << name;
    EXPECT_TRUE(HasError(global.Unregister(name), absl::StatusCode::kFailedPrecondition,
                         {"built-in"}));
    EXPECT_TRUE(IsOk(global.Lookup(name)));
    EXPECT_TRUE(HasError(global.Register(name, Noop()), absl::StatusCode::kAlreadyExists));
  }
  EXPECT_EQ(&global, &FunctionRegistry::Global());
  // The slot names are TF2's.
  EXPECT_EQ((*global.Lookup(kAdamUpdate))->slots[0].name, "m");
  EXPECT_EQ((*global.Lookup(kAdamUpdate))->slots[1].name, "v");
  EXPECT_EQ((*global.Lookup(kAdagradUpdate))->slots[0].name, "accumulator");
  EXPECT_EQ((*global.Lookup(kMomentumUpdate))->slots[0].name, "momentum");
  EXPECT_TRUE((*global.Lookup(kSgdUpdate))->slots.empty());
}

TEST(FunctionRegistryTest, RegisterLookupUnregister) {
  FunctionRegistry registry;
  EXPECT_TRUE(HasError(registry.Lookup("mine"), absl::StatusCode::kNotFound, {"'mine'"}));
  ASSERT_TRUE(IsOk(registry.Register("mine", Noop())));
  EXPECT_TRUE(HasError(registry.Register("mine", Noop()), absl::StatusCode::kAlreadyExists,
                       {"'mine'"}));
  absl::StatusOr<std::shared_ptr<const UpdateFunction>> held = registry.Lookup("mine");
  ASSERT_TRUE(IsOk(held));
  ASSERT_TRUE(IsOk(registry.Unregister("mine")));
  EXPECT_TRUE(HasError(registry.Lookup("mine"), absl::StatusCode::kNotFound));
  EXPECT_TRUE(HasError(registry.Unregister("mine"), absl::StatusCode::kNotFound));
  // A function looked up before it was unregistered can still run.
  const Hyperparameters none;
  EXPECT_TRUE(IsOk((*held)->apply(UpdateCall{{}, {}, none})));
  ASSERT_TRUE(IsOk(registry.Register("mine", Noop())));
}

TEST(FunctionRegistryTest, BadNamesAndDeclarationsAreRefused) {
  FunctionRegistry registry;
  EXPECT_TRUE(HasError(registry.Register("", Noop()), absl::StatusCode::kInvalidArgument, {"empty"}));
  EXPECT_TRUE(HasError(registry.Register(std::string(kMaxPsNameBytes + 1, 'f'), Noop()),
                       absl::StatusCode::kInvalidArgument, {"1025 bytes"}));
  EXPECT_TRUE(HasError(registry.Register(std::string("a\0b", 3), Noop()),
                       absl::StatusCode::kInvalidArgument, {"byte 0"}));
  EXPECT_TRUE(HasError(registry.Register("no_apply", UpdateFunction{}),
                       absl::StatusCode::kInvalidArgument, {"no apply"}));
  UpdateFunction f = Noop();
  f.num_arguments = kMaxUpdateArguments + 1;
  EXPECT_TRUE(HasError(registry.Register("f", f), absl::StatusCode::kInvalidArgument, {"arguments"}));
  f = Noop();
  f.num_arguments = -1;
  EXPECT_TRUE(HasError(registry.Register("f", f), absl::StatusCode::kInvalidArgument, {"arguments"}));
  f = Noop();
  f.slots.assign(kMaxSlots + 1, SlotSpec{"s", 0.0, ""});
  EXPECT_TRUE(HasError(registry.Register("f", f), absl::StatusCode::kInvalidArgument, {"slots"}));
  f = Noop();
  f.slots = {{"acc", 0.0, "initial"}};
  EXPECT_TRUE(HasError(registry.Register("f", f), absl::StatusCode::kInvalidArgument,
                       {"initial", "does not declare"}));
  f = Noop();
  f.slots = {{"acc", std::numeric_limits<double>::quiet_NaN(), ""}};
  EXPECT_TRUE(HasError(registry.Register("f", f), absl::StatusCode::kInvalidArgument, {"finite"}));
  f = Noop();
  f.slots = {{"", 0.0, ""}};
  EXPECT_TRUE(HasError(registry.Register("f", f), absl::StatusCode::kInvalidArgument, {"slot name"}));
  EXPECT_TRUE(HasError(registry.Lookup("f"), absl::StatusCode::kNotFound));
}

TEST(FunctionRegistryTest, RepeatedNamesInfiniteDefaultsAndTooManyHyperparametersAreRefused) {
  FunctionRegistry registry;
  UpdateFunction f = Noop();
  f.slots = {{"m", 0.0, ""}, {"v", 0.0, ""}, {"m", 1.0, ""}};
  EXPECT_TRUE(HasError(registry.Register("f", f), absl::StatusCode::kInvalidArgument,
                       {"slot m", "twice"}));
  f = Noop();
  f.hyperparameters = {{"lr", 0.1}, {"lr", std::nullopt}};
  EXPECT_TRUE(HasError(registry.Register("f", f), absl::StatusCode::kInvalidArgument,
                       {"hyperparameter lr", "twice"}));
  f = Noop();
  f.hyperparameters = {{"lr", std::numeric_limits<double>::infinity()}};
  EXPECT_TRUE(HasError(registry.Register("f", f), absl::StatusCode::kInvalidArgument,
                       {"lr", "not finite"}));
  f = Noop();
  for (int i = 0; i <= kMaxHyperparameters; ++i) f.hyperparameters.push_back({"h" + std::to_string(i), 0.0});
  EXPECT_TRUE(HasError(registry.Register("f", f), absl::StatusCode::kInvalidArgument,
                       {"65 hyperparameters", "at most 64"}));
  f.hyperparameters.pop_back();
  EXPECT_TRUE(IsOk(registry.Register("f", f)));
}

TEST(FunctionRegistryTest, TheNumberOfFunctionsIsBounded) {
  FunctionRegistry registry;
  for (int i = 0; i < kMaxRegisteredFunctions; ++i) {
    ASSERT_TRUE(IsOk(registry.Register("f" + std::to_string(i), Noop())));
  }
  EXPECT_TRUE(HasError(registry.Register("one_more", Noop()), absl::StatusCode::kResourceExhausted,
                       {"'one_more'", "1024"}));
  ASSERT_TRUE(IsOk(registry.Unregister("f0")));
  EXPECT_TRUE(IsOk(registry.Register("one_more", Noop())));
}

TEST(FunctionRegistryTest, ConcurrentRegistrationsAndLookups) {
  FunctionRegistry registry;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&registry, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string name = "t" + std::to_string(t) + "_" + std::to_string(i);
        EXPECT_TRUE(IsOk(registry.Register(name, Noop())));
        EXPECT_TRUE(IsOk(registry.Lookup(name)));
        if (i % 2 == 1) {
          EXPECT_TRUE(IsOk(registry.Unregister(name)));
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) {
    for (int i = 0; i < 50; ++i) {
      const std::string name = "t" + std::to_string(t) + "_" + std::to_string(i);
      EXPECT_EQ(registry.Lookup(name).ok(), i % 2 == 0) << name;
    }
  }
}

TEST(HyperparametersTest, DefaultsRequiredAndUnknownNames) {
  const std::vector<HyperparameterSpec> specs = {{"learning_rate", 0.01}, {"step", std::nullopt}};
  absl::StatusOr<Hyperparameters> resolved = ResolveHyperparameters("f", specs, {{"step", 3}});
  ASSERT_TRUE(IsOk(resolved));
  EXPECT_EQ(*resolved, (Hyperparameters{{"learning_rate", 0.01}, {"step", 3}}));
  resolved = ResolveHyperparameters("f", specs, {{"step", 1}, {"learning_rate", 0.5}});
  ASSERT_TRUE(IsOk(resolved));
  EXPECT_EQ(resolved->at("learning_rate"), 0.5);
  EXPECT_TRUE(HasError(ResolveHyperparameters("f", specs, {}), absl::StatusCode::kInvalidArgument,
                       {"'f'", "needs hyperparameter step"}));
  EXPECT_TRUE(HasError(ResolveHyperparameters("f", specs, {{"step", 1}, {"lr", 1}}),
                       absl::StatusCode::kInvalidArgument, {"'lr'", "learning_rate, step"}));
  EXPECT_TRUE(HasError(ResolveHyperparameters("f", specs, {{"step", INFINITY}}),
                       absl::StatusCode::kInvalidArgument, {"finite"}));
  EXPECT_TRUE(HasError(ResolveHyperparameters("f", {}, {{"x", 1}}),
                       absl::StatusCode::kInvalidArgument, {"takes: none"}));
}

}  // namespace
}  // namespace distribute::ps
