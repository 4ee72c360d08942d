// Creating a ParameterServerStrategy's variables on two in-process "ps tasks" (a store
// each, shared with what another worker created before): a creation the ps task refuses
// changes nothing on this worker, so the name can then be created as it is on the task and
// the next variable lands where round-robin puts it when the refused one never existed.
#include "core/strategy/ps_variables.h"

#include <memory>
#include <string>
#include <vector>

#include "core/ps/variable_store.h"
#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::FloatTensor;
using ::distribute::testing::HasError;
using ::distribute::testing::IntTensor;
using ::distribute::testing::IsOk;

class PsVariablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::shared_ptr<Strategy>> strategy = Strategy::CreateParameterServer(
        nullptr, CommunicationOptions{}, ps::PlacementPolicy::kRoundRobin, std::nullopt);
    ASSERT_TRUE(IsOk(strategy.status()));
    strategy_ = *strategy;
    // Local mode has one store; this worker gets two tasks instead, whose stores the test
    // keeps, as another worker would share them.
    ParameterServers& servers = *strategy_->parameter_servers();
    servers.hosts.clear();
    servers.devices.clear();
    for (int i = 0; i < 2; ++i) {
      stores_.push_back(std::make_shared<ps::VariableStore>());
      servers.hosts.push_back(ps::NewLocalVariableHost(stores_.back(), "ps:" + std::to_string(i)));
      servers.devices.push_back(DeviceSpec{}.WithDefaults());
    }
    servers.placement = *ps::Placement::Create(2, ps::PlacementPolicy::kRoundRobin);
  }

  absl::StatusOr<Value> Create(const Tensor& initial, const std::string& name) {
    return CreatePsVariable(*strategy_, initial, VariableSync::kOnWrite, VariableAggregation::kSum,
                            name, "");
  }

  static int32_t TaskOf(const Value& variable) {
    absl::StatusOr<PsVariableStorage*> storage = PsStorageOf(variable);
    EXPECT_TRUE(IsOk(storage.status()));
    return storage.ok() ? (*storage)->placement().shards.front().task : -1;
  }

  std::shared_ptr<Strategy> strategy_;
  std::vector<std::shared_ptr<ps::VariableStore>> stores_;
};

TEST_F(PsVariablesTest, ACreationTheTaskRefusesChangesNothing) {
  // Another worker created "w" as int32 [2] on task 0, the first variable's task.
  ASSERT_TRUE(IsOk(stores_[0]->CreateIfAbsent("w", IntTensor(DType::kInt32, {7, 8})).status()));
  EXPECT_TRUE(HasError(Create(FloatTensor(DType::kFloat32, {1, 2}), "w"),
                       absl::StatusCode::kInvalidArgument, {"'w'", "int32"}));
  // Created as it is on the task, it is that variable, with the other worker's value.
  absl::StatusOr<Value> w = Create(IntTensor(DType::kInt32, {0, 0}), "w");
  ASSERT_TRUE(IsOk(w.status()));
  EXPECT_EQ(TaskOf(*w), 0);
  absl::StatusOr<Tensor> value = w->variable()->Snapshot(0);
  ASSERT_TRUE(IsOk(value.status()));
  EXPECT_EQ(testing::IntsOf(*value), (std::vector<int64_t>{7, 8}));
  // The next variable goes to task 1, as on the worker whose creations all succeeded.
  absl::StatusOr<Value> b = Create(FloatTensor(DType::kFloat32, {3}), "b");
  ASSERT_TRUE(IsOk(b.status()));
  EXPECT_EQ(TaskOf(*b), 1);
}

TEST_F(PsVariablesTest, ARefusedNewNameDoesNotAdvanceTheRoundRobin) {
  // "taken/m" is a slot on task 0 (of "taken", after an update), not a variable of its
  // own: the task refuses it, and the next variable lands on task 0, as if it never was.
  ASSERT_TRUE(IsOk(stores_[0]->CreateIfAbsent("taken", FloatTensor(DType::kFloat32, {1})).status()));
  ASSERT_TRUE(IsOk(stores_[0]->AssignSlot("taken", "m", FloatTensor(DType::kFloat32, {0}))));
  EXPECT_TRUE(HasError(Create(FloatTensor(DType::kFloat32, {1}), "taken/m"),
                       absl::StatusCode::kInvalidArgument, {"slot"}));
  absl::StatusOr<Value> a = Create(FloatTensor(DType::kFloat32, {1}), "a");
  ASSERT_TRUE(IsOk(a.status()));
  EXPECT_EQ(TaskOf(*a), 0);
}

}  // namespace
}  // namespace distribute
