// The ps-side variable store: create-if-absent, reads that copy, assign / assign_add /
// assign_sub with expectations computed here, refusals that change nothing, the store's
// bounds, registered updates with slot variables, and concurrent updates that lose nothing
// (exact final values) and are served in arrival order.
#include "core/ps/variable_store.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "core/ps/arrival_order_mutex.h"
#include "core/ps/function_registry.h"
#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"

namespace distribute::ps {
namespace {

using ::distribute::testing::FloatsOf;
using ::distribute::testing::FloatTensor;
using ::distribute::testing::HasError;
using ::distribute::testing::IntsOf;
using ::distribute::testing::IntTensor;
using ::distribute::testing::IsOk;
using ::distribute::testing::StoreFloat;

Tensor Floats(std::vector<double> values, DType dtype = DType::kFloat32,
              std::vector<int64_t> dims = {}) {
  return FloatTensor(dtype, values, std::move(dims));
}

Tensor Ints(DType dtype, std::vector<int64_t> values) { return IntTensor(dtype, values); }

std::vector<double> ReadFloats(const VariableStore& store, const std::string& name) {
  absl::StatusOr<Tensor> value = store.Read(name);
  EXPECT_TRUE(IsOk(value)) << name;
  return value.ok() ? FloatsOf(*value) : std::vector<double>{};
}

TEST(VariableStoreTest, TheFirstCreatorInitializes) {
  VariableStore store;
  Tensor initial = Floats({1, 2, 3});
  absl::StatusOr<VariableStore::Creation> first = store.CreateIfAbsent("w", initial);
  ASSERT_TRUE(IsOk(first));
  EXPECT_TRUE(first->created);
  EXPECT_EQ(FloatsOf(first->value), (std::vector<double>{1, 2, 3}));
  // The store keeps a copy: the creator's tensor can change afterwards.
  StoreFloat(DType::kFloat32, initial.data(), 0, 100);
  ASSERT_TRUE(IsOk(store.AssignAdd("w", Floats({1, 1, 1}))));

  absl::StatusOr<VariableStore::Creation> later = store.CreateIfAbsent("w", Floats({9, 9, 9}));
  ASSERT_TRUE(IsOk(later));
  EXPECT_FALSE(later->created);
  EXPECT_EQ(FloatsOf(later->value), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(ReadFloats(store, "w"), (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(store.size(), 1);
  EXPECT_EQ(store.bytes(), 12u);
}

TEST(VariableStoreTest, TheSameNameMeansTheSameVariable) {
  VariableStore store;
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("w", Floats({1, 2}))));
  EXPECT_TRUE(HasError(store.CreateIfAbsent("w", Floats({1, 2}, DType::kFloat64)),
                       absl::StatusCode::kInvalidArgument, {"'w'", "float64 [2]", "float32 [2]"}));
  EXPECT_TRUE(HasError(store.CreateIfAbsent("w", Floats({1, 2, 3})),
                       absl::StatusCode::kInvalidArgument, {"float32 [3]", "float32 [2]"}));
  EXPECT_EQ(ReadFloats(store, "w"), (std::vector<double>{1, 2}));
  EXPECT_TRUE(HasError(store.CreateIfAbsent("", Floats({1})), absl::StatusCode::kInvalidArgument,
                       {"empty"}));
  EXPECT_TRUE(HasError(store.CreateIfAbsent(std::string(2000, 'n'), Floats({1})),
                       absl::StatusCode::kInvalidArgument, {"2000 bytes"}));
}

TEST(VariableStoreTest, ReadsAreCopies) {
  VariableStore store;
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("w", Floats({5}))));
  absl::StatusOr<Tensor> read = store.Read("w");
  ASSERT_TRUE(IsOk(read));
  StoreFloat(DType::kFloat32, read->data(), 0, -1);
  EXPECT_EQ(ReadFloats(store, "w"), (std::vector<double>{5}));
  EXPECT_TRUE(HasError(store.Read("nope"), absl::StatusCode::kNotFound, {"'nope'"}));
}

TEST(VariableStoreTest, AssignAddSub) {
  VariableStore store;
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("f", Floats({1.5, -2}))));
  ASSERT_TRUE(IsOk(store.Assign("f", Floats({4, 8}))));
  EXPECT_EQ(ReadFloats(store, "f"), (std::vector<double>{4, 8}));
  ASSERT_TRUE(IsOk(store.AssignAdd("f", Floats({0.5, -1}))));
  EXPECT_EQ(ReadFloats(store, "f"), (std::vector<double>{4.5, 7}));
  ASSERT_TRUE(IsOk(store.AssignSub("f", Floats({2, 10}))));
  EXPECT_EQ(ReadFloats(store, "f"), (std::vector<double>{2.5, -3}));

  // Integers wrap: int8 127 + 1 = -128, -128 - 1 = 127.
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("i", Ints(DType::kInt8, {127, -128}))));
  ASSERT_TRUE(IsOk(store.AssignAdd("i", Ints(DType::kInt8, {1, 0}))));
  ASSERT_TRUE(IsOk(store.AssignSub("i", Ints(DType::kInt8, {0, 1}))));
  EXPECT_EQ(IntsOf(*store.Read("i")), (std::vector<int64_t>{-128, 127}));
}

TEST(VariableStoreTest, RefusalsChangeNothing) {
  VariableStore store;
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("f", Floats({1, 2}))));
  EXPECT_TRUE(HasError(store.Assign("f", Floats({1, 2, 3})), absl::StatusCode::kInvalidArgument,
                       {"'f'", "float32 [2]", "value is float32 [3]"}));
  EXPECT_TRUE(HasError(store.AssignAdd("f", Floats({1, 2}, DType::kFloat64)),
                       absl::StatusCode::kInvalidArgument, {"delta is float64 [2]"}));
  EXPECT_TRUE(HasError(store.AssignSub("f", Ints(DType::kInt32, {1, 2})),
                       absl::StatusCode::kInvalidArgument, {"int32"}));
  EXPECT_TRUE(HasError(store.AssignAdd("g", Floats({1, 2})), absl::StatusCode::kNotFound, {"'g'"}));
  EXPECT_EQ(ReadFloats(store, "f"), (std::vector<double>{1, 2}));

  ASSERT_TRUE(IsOk(store.CreateIfAbsent("b", Ints(DType::kBool, {1, 0}))));
  EXPECT_TRUE(HasError(store.AssignAdd("b", Ints(DType::kBool, {1, 1})),
                       absl::StatusCode::kInvalidArgument, {"bool", "added to"}));
  EXPECT_TRUE(HasError(store.AssignSub("b", Ints(DType::kBool, {1, 1})),
                       absl::StatusCode::kInvalidArgument, {"subtracted from"}));
  ASSERT_TRUE(IsOk(store.Assign("b", Ints(DType::kBool, {0, 1}))));
  EXPECT_EQ(IntsOf(*store.Read("b")), (std::vector<int64_t>{0, 1}));
}

TEST(VariableStoreTest, BoundsAreResourceExhausted) {
  VariableStore by_count(VariableStoreLimits{1000, 2});
  ASSERT_TRUE(IsOk(by_count.CreateIfAbsent("a", Floats({1}))));
  ASSERT_TRUE(IsOk(by_count.CreateIfAbsent("b", Floats({1}))));
  EXPECT_TRUE(HasError(by_count.CreateIfAbsent("c", Floats({1})),
                       absl::StatusCode::kResourceExhausted, {"'c'", "at most 2"}));
  // An existing variable is still found at the bound.
  EXPECT_TRUE(IsOk(by_count.CreateIfAbsent("a", Floats({7}))));
  EXPECT_EQ(by_count.size(), 2);

  VariableStore by_bytes(VariableStoreLimits{100, 100});
  ASSERT_TRUE(IsOk(by_bytes.CreateIfAbsent("a", Floats(std::vector<double>(16, 0)))));  // 64
  EXPECT_TRUE(HasError(by_bytes.CreateIfAbsent("b", Floats(std::vector<double>(10, 0))),
                       absl::StatusCode::kResourceExhausted, {"40 bytes", "64", "at most 100"}));
  ASSERT_TRUE(IsOk(by_bytes.CreateIfAbsent("c", Floats(std::vector<double>(9, 0)))));  // 36
  EXPECT_EQ(by_bytes.bytes(), 100u);
  EXPECT_EQ(by_bytes.Names(), (std::vector<std::string>{"a", "c"}));
}

// var += scale * argument; count += 1 (a slot starting at `start`).
UpdateFunction ScaledAdd() {
  UpdateFunction f;
  f.num_arguments = 1;
  f.dtypes = {DType::kFloat64};
  f.slots = {{"count", 0.0, "start"}};
  f.hyperparameters = {{"scale", 1.0}, {"start", 0.0}};
  f.apply = [](const UpdateCall& call) {
    const double scale = call.hyperparameters.at("scale");
    double* var = static_cast<double*>(call.variables[0].data());
    double* count = static_cast<double*>(call.variables[1].data());
    const double* arg = static_cast<const double*>(call.arguments[0].data());
    for (int64_t i = 0; i < call.variables[0].shape().num_elements(); ++i) {
      var[i] += scale * arg[i];
      count[i] += 1;
    }
    return absl::OkStatus();
  };
  return f;
}

TEST(VariableStoreTest, RegisteredUpdatesKeepSlotsBesideTheVariable) {
  FunctionRegistry registry;
  ASSERT_TRUE(IsOk(registry.Register("scaled_add", ScaledAdd())));
  VariableStore store({}, &registry);
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("w", Floats({1, 2}, DType::kFloat64))));
  const Tensor arg = Floats({10, 20}, DType::kFloat64);
  ASSERT_TRUE(IsOk(store.ApplyUpdate("w", "scaled_add", {&arg, 1}, {{"scale", 0.5}, {"start", 3}})));
  EXPECT_EQ(ReadFloats(store, "w"), (std::vector<double>{6, 12}));
  EXPECT_EQ(ReadFloats(store, "w/count"), (std::vector<double>{4, 4}));  // started at 3
  ASSERT_TRUE(IsOk(store.ApplyUpdate("w", "scaled_add", {&arg, 1}, {})));
  EXPECT_EQ(ReadFloats(store, "w"), (std::vector<double>{16, 32}));
  EXPECT_EQ(ReadFloats(store, "w/count"), (std::vector<double>{5, 5}));  // the slot is kept
  absl::StatusOr<StoredVariableInfo> info = store.Info("w/count");
  ASSERT_TRUE(IsOk(info));
  EXPECT_EQ(info->slot_of, "w");
  EXPECT_EQ(store.bytes(), 32u);
  EXPECT_EQ(store.Names(), (std::vector<std::string>{"w", "w/count"}));

  // A slot is not a variable of its own.
  EXPECT_TRUE(HasError(store.CreateIfAbsent("w/count", Floats({0, 0}, DType::kFloat64)),
                       absl::StatusCode::kInvalidArgument, {"slot of variable 'w'"}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("w/count", "scaled_add", {&arg, 1}, {}),
                       absl::StatusCode::kInvalidArgument, {"slot of variable 'w'"}));
}

TEST(VariableStoreTest, BadUpdatesChangeNothing) {
  FunctionRegistry registry;
  ASSERT_TRUE(IsOk(registry.Register("scaled_add", ScaledAdd())));
  UpdateFunction failing = ScaledAdd();
  failing.apply = [](const UpdateCall&) { return absl::FailedPreconditionError("refused by the function"); };
  ASSERT_TRUE(IsOk(registry.Register("failing", failing)));
  VariableStore store({}, &registry);
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("w", Floats({1, 2}, DType::kFloat64))));
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("f", Floats({1, 2}, DType::kFloat32))));
  const Tensor arg = Floats({1, 1}, DType::kFloat64);
  const Tensor wrong_shape = Floats({1, 1, 1}, DType::kFloat64);
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", "nope", {&arg, 1}, {}),
                       absl::StatusCode::kNotFound, {"'nope'"}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("x", "scaled_add", {&arg, 1}, {}),
                       absl::StatusCode::kNotFound, {"'x'"}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", "scaled_add", {}, {}),
                       absl::StatusCode::kInvalidArgument, {"takes 1 arguments but 0"}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", "scaled_add", {&wrong_shape, 1}, {}),
                       absl::StatusCode::kInvalidArgument, {"argument 0 is float64 [3]"}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", "scaled_add", {&arg, 1}, {{"scal", 1}}),
                       absl::StatusCode::kInvalidArgument, {"'scal'", "scale, start"}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("f", "scaled_add", {&arg, 1}, {}),
                       absl::StatusCode::kInvalidArgument, {"float32"}));
  EXPECT_EQ(store.Names(), (std::vector<std::string>{"f", "w"}));  // no slot was made
  EXPECT_EQ(ReadFloats(store, "w"), (std::vector<double>{1, 2}));
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", "failing", {&arg, 1}, {}),
                       absl::StatusCode::kFailedPrecondition, {"refused by the function"}));
  ASSERT_TRUE(IsOk(store.AssignAdd("w", arg)));  // the failed update released its locks
  EXPECT_EQ(ReadFloats(store, "w"), (std::vector<double>{2, 3}));

  // A variable of its own under the slot's name is never taken for the slot.
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("v", Floats({0}, DType::kFloat64))));
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("v/count", Floats({0}, DType::kFloat64))));
  const Tensor one = Floats({1}, DType::kFloat64);
  EXPECT_TRUE(HasError(store.ApplyUpdate("v", "scaled_add", {&one, 1}, {}),
                       absl::StatusCode::kInvalidArgument, {"'v/count'", "variable of its own"}));
  EXPECT_EQ(ReadFloats(store, "v"), (std::vector<double>{0}));
}

TEST(VariableStoreTest, SlotsThatDoNotFitAreNotMade) {
  FunctionRegistry registry;
  UpdateFunction two_slots = ScaledAdd();
  two_slots.slots = {{"a", 0.0, ""}, {"b", 0.0, ""}};
  ASSERT_TRUE(IsOk(registry.Register("two_slots", two_slots)));
  VariableStore store(VariableStoreLimits{32, 10}, &registry);  // room for the variable and one slot
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("w", Floats({1, 2}, DType::kFloat64))));
  const Tensor arg = Floats({1, 1}, DType::kFloat64);
  EXPECT_TRUE(HasError(store.ApplyUpdate("w", "two_slots", {&arg, 1}, {}),
                       absl::StatusCode::kResourceExhausted, {"at most 32"}));
  EXPECT_EQ(store.Names(), (std::vector<std::string>{"w"}));
  EXPECT_EQ(store.bytes(), 16u);
}

TEST(VariableStoreTest, ConcurrentAssignAddLosesNoUpdate) {
  VariableStore store;
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("i64", Ints(DType::kInt64, {0, 5}))));
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("f64", Floats({0, 0.5}, DType::kFloat64))));
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("f32", Floats({0, 0}))));
  constexpr int kThreads = 8;
  constexpr int kSteps = 300;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&store, t] {
      const Tensor ints = Ints(DType::kInt64, {1, t});
      const Tensor doubles = Floats({1, 0.25}, DType::kFloat64);
      const Tensor floats = Floats({1, -1});
      for (int s = 0; s < kSteps; ++s) {
        EXPECT_TRUE(IsOk(store.AssignAdd("i64", ints)));
        EXPECT_TRUE(IsOk(store.AssignAdd("f64", doubles)));
        EXPECT_TRUE(IsOk(store.AssignSub("f32", floats)));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  // Every sum is exact in its dtype: 2400 ones; 5 + 300 * (0 + 1 + ... + 7); 0.5 + 2400 / 4.
  EXPECT_EQ(IntsOf(*store.Read("i64")), (std::vector<int64_t>{2400, 5 + 300 * 28}));
  EXPECT_EQ(ReadFloats(store, "f64"), (std::vector<double>{2400, 600.5}));
  EXPECT_EQ(ReadFloats(store, "f32"), (std::vector<double>{-2400, 2400}));
}

TEST(VariableStoreTest, ConcurrentRegisteredUpdatesLoseNothing) {
  FunctionRegistry registry;
  ASSERT_TRUE(IsOk(registry.Register("scaled_add", ScaledAdd())));
  VariableStore store({}, &registry);
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("w", Floats({0}, DType::kFloat64))));
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&store] {
      const Tensor arg = Floats({2}, DType::kFloat64);
      for (int s = 0; s < 200; ++s) {
        EXPECT_TRUE(IsOk(store.ApplyUpdate("w", "scaled_add", {&arg, 1}, {})));
        // Interleaved plain updates of the same variable take the same lock.
        EXPECT_TRUE(IsOk(store.AssignAdd("w", Floats({1}, DType::kFloat64))));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(ReadFloats(store, "w"), (std::vector<double>{1200 * 2 + 1200}));
  EXPECT_EQ(ReadFloats(store, "w/count"), (std::vector<double>{1200}));
}

TEST(VariableStoreTest, UpdatesOfOtherVariablesDoNotWait) {
  // "blocking" holds variable a's lock until the main thread has updated b, created c and
  // read both. If those waited on a's update, the flag would never be set in time and the
  // update would fail (after a bound generous enough for a loaded machine).
  std::mutex mu;
  std::condition_variable cv;
  bool inside = false;
  bool others_done = false;
  UpdateFunction blocking;
  blocking.apply = [&](const UpdateCall&) {
    std::unique_lock<std::mutex> lock(mu);
    inside = true;
    cv.notify_all();
    if (!cv.wait_for(lock, std::chrono::seconds(60), [&] { return others_done; })) {
      return absl::DeadlineExceededError("the other variables waited for this update");
    }
    return absl::OkStatus();
  };
  FunctionRegistry registry;
  ASSERT_TRUE(IsOk(registry.Register("blocking", blocking)));
  VariableStore store({}, &registry);
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("a", Floats({0}))));
  ASSERT_TRUE(IsOk(store.CreateIfAbsent("b", Floats({0}))));
  absl::Status update_status;
  std::thread updater([&] { update_status = store.ApplyUpdate("a", "blocking", {}, {}); });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return inside; });
  }
  EXPECT_TRUE(IsOk(store.AssignAdd("b", Floats({1}))));
  EXPECT_TRUE(IsOk(store.CreateIfAbsent("c", Floats({2}))));
  EXPECT_EQ(ReadFloats(store, "b"), (std::vector<double>{1}));
  EXPECT_EQ(store.Names(), (std::vector<std::string>{"a", "b", "c"}));
  {
    std::lock_guard<std::mutex> lock(mu);
    others_done = true;
  }
  cv.notify_all();
  updater.join();
  EXPECT_TRUE(IsOk(update_status));
}

TEST(ArrivalOrderMutexTest, ServesLockersInArrivalOrder) {
  ArrivalOrderMutex mu;
  std::vector<int> order;  // written only by the lock holder
  std::vector<std::thread> threads;
  mu.Lock();
  for (int i = 0; i < 5; ++i) {
    threads.emplace_back([&mu, &order, i] {
      ArrivalOrderLock lock(&mu);
      order.push_back(i);
    });
    // Thread i has taken its ticket before thread i + 1 starts.
    while (mu.Waiting() < static_cast<uint64_t>(i + 1)) std::this_thread::yield();
  }
  mu.Unlock();
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(mu.Waiting(), 0u);
}

}  // namespace
}  // namespace distribute::ps
