// A ParameterServerStrategy variable's storage over two in-process "ps tasks" (a store
// each): where round-robin and partitioned variables land, the bytes each task holds, reads
// that concatenate shards, writes and registered updates split by the layout, slots read
// whole, and errors that name the task. The expectations are computed here.
#include "core/strategy/ps_variable_storage.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/ps/variable_store.h"
#include "core/util/status_macros.h"
#include "gtest/gtest.h"
#include "tests/core/call_rendezvous.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::FloatsOf;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::Rendezvous;
using ::distribute::testing::StoreFloat;
using ::distribute::testing::ZeroTensor;

Tensor Floats(std::vector<double> values, std::vector<int64_t> dims) {
  Tensor t = ZeroTensor(DType::kFloat32, dims);
  for (size_t i = 0; i < values.size(); ++i) StoreFloat(DType::kFloat32, t.data(), i, values[i]);
  return t;
}

// A task's host that meets the other tasks' calls at `gate` (when set) before reading or
// writing, and refuses every write with `write_error` (when not OK): what a slow or failing
// ps task looks like to the storage.
class GatedHost final : public ps::VariableHost {
 public:
  GatedHost(std::unique_ptr<ps::VariableHost> inner, Rendezvous* gate, absl::Status write_error)
      : inner_(std::move(inner)), gate_(gate), write_error_(std::move(write_error)) {}

  const std::string& task() const override { return inner_->task(); }
  absl::Status WaitReady(const Deadline& deadline) override { return inner_->WaitReady(deadline); }
  absl::StatusOr<ps::VariableStore::Creation> CreateIfAbsent(absl::string_view name, const Tensor& initial,
                                                             const Deadline& deadline) override {
    return inner_->CreateIfAbsent(name, initial, deadline);
  }
  absl::StatusOr<Tensor> Read(absl::string_view name, const Deadline& deadline) override {
    RETURN_IF_ERROR(Meet());
    return inner_->Read(name, deadline);
  }
  absl::Status Assign(absl::string_view name, const Tensor& value, const Deadline& deadline) override {
    RETURN_IF_ERROR(Meet());
    if (!write_error_.ok()) return write_error_;
    return inner_->Assign(name, value, deadline);
  }
  absl::Status AssignAdd(absl::string_view name, const Tensor& delta, const Deadline& deadline) override {
    RETURN_IF_ERROR(Meet());
    if (!write_error_.ok()) return write_error_;
    return inner_->AssignAdd(name, delta, deadline);
  }
  absl::Status AssignSub(absl::string_view name, const Tensor& delta, const Deadline& deadline) override {
    RETURN_IF_ERROR(Meet());
    if (!write_error_.ok()) return write_error_;
    return inner_->AssignSub(name, delta, deadline);
  }
  absl::Status ApplyUpdate(absl::string_view name, absl::string_view function,
                           std::span<const Tensor> arguments, const ps::Hyperparameters& hyperparameters,
                           const Deadline& deadline) override {
    RETURN_IF_ERROR(Meet());
    if (!write_error_.ok()) return write_error_;
    return inner_->ApplyUpdate(name, function, arguments, hyperparameters, deadline);
  }
  absl::Status AssignSlot(absl::string_view name, absl::string_view slot, const Tensor& value,
                          const Deadline& deadline) override {
    RETURN_IF_ERROR(Meet());
    if (!write_error_.ok()) return write_error_;
    return inner_->AssignSlot(name, slot, value, deadline);
  }
  absl::StatusOr<std::vector<ps::StoredVariableInfo>> List(const Deadline& deadline) override {
    return inner_->List(deadline);
  }

 private:
  absl::Status Meet() { return gate_ == nullptr ? absl::OkStatus() : gate_->ArriveAndWait(); }

  std::unique_ptr<ps::VariableHost> inner_;
  Rendezvous* gate_;
  absl::Status write_error_;
};

class PsVariableStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    servers_ = std::make_shared<ParameterServers>();
    for (int i = 0; i < 2; ++i) {
      stores_.push_back(std::make_shared<ps::VariableStore>());
      servers_->hosts.push_back(ps::NewLocalVariableHost(stores_.back(), "ps:" + std::to_string(i)));
    }
    servers_->placement = *ps::Placement::Create(2, ps::PlacementPolicy::kRoundRobin);
  }

  // Replaces task i's host with a GatedHost over the same store.
  void Gate(int i, Rendezvous* gate, absl::Status write_error = absl::OkStatus()) {
    servers_->hosts[static_cast<size_t>(i)] = std::make_unique<GatedHost>(
        ps::NewLocalVariableHost(stores_[static_cast<size_t>(i)], "ps:" + std::to_string(i)), gate,
        std::move(write_error));
  }

  std::unique_ptr<PsVariableStorage> Make(const std::string& name, const Tensor& initial,
                                          std::optional<ps::Partitioner> partitioner = {}) {
    ps::VariableDeclaration declaration{name, initial.dtype(), initial.shape(), "", partitioner};
    absl::StatusOr<ps::VariablePlacement> placement = servers_->placement->Declare(declaration);
    EXPECT_TRUE(IsOk(placement.status()));
    auto storage = std::make_unique<PsVariableStorage>(servers_, *placement);
    EXPECT_TRUE(IsOk(storage->CreateIfAbsent(initial).status()));
    return storage;
  }

  std::shared_ptr<ParameterServers> servers_;
  std::vector<std::shared_ptr<ps::VariableStore>> stores_;
};

TEST_F(PsVariableStorageTest, RoundRobinPutsVariablesOnAlternateTasks) {
  auto a = Make("a", Floats({1, 2}, {2}));
  auto b = Make("b", Floats({3, 4}, {2}));
  auto c = Make("c", Floats({5}, {1}));
  EXPECT_EQ(stores_[0]->Names(), (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(stores_[1]->Names(), (std::vector<std::string>{"b"}));
  EXPECT_EQ(FloatsOf(*b->Read()), (std::vector<double>{3, 4}));
}

TEST_F(PsVariableStorageTest, ShardsSplitOverBothTasksAndReadAsOne) {
  // [5, 2] in 2 shards: rows 0-2 on task 0, rows 3-4 on task 1.
  auto w = Make("w", Floats({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {5, 2}), ps::Partitioner::FixedSize(2));
  ASSERT_EQ(w->num_shards(), 2);
  EXPECT_EQ(FloatsOf(*stores_[0]->Read("w/part_0")), (std::vector<double>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(FloatsOf(*stores_[1]->Read("w/part_1")), (std::vector<double>{6, 7, 8, 9}));
  ASSERT_TRUE(IsOk(w->AssignAdd(Floats({1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, {5, 2}))));
  EXPECT_EQ(FloatsOf(*w->Read()), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  ASSERT_TRUE(IsOk(w->AssignSub(Floats({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2}))));
  EXPECT_EQ(FloatsOf(*w->Read()), (std::vector<double>(10, 0.0)));
}

TEST_F(PsVariableStorageTest, SecondCreatorKeepsTheFirstValue) {
  auto first = Make("v", Floats({1, 2, 3, 4}, {4}), ps::Partitioner::FixedSize(2));
  ASSERT_TRUE(IsOk(first->AssignAdd(Floats({10, 10, 10, 10}, {4}))));
  // Another worker: its own placement of the same declaration, a different initial value.
  auto placement = ps::Placement::Create(2, ps::PlacementPolicy::kRoundRobin);
  ps::VariableDeclaration declaration{"v", DType::kFloat32, Floats({0, 0, 0, 0}, {4}).shape(), "", ps::Partitioner::FixedSize(2)};
  PsVariableStorage second(servers_, *(*placement)->Declare(declaration));
  absl::StatusOr<bool> created = second.CreateIfAbsent(Floats({0, 0, 0, 0}, {4}));
  ASSERT_TRUE(IsOk(created.status()));
  EXPECT_FALSE(*created);
  EXPECT_EQ(FloatsOf(*second.Read()), (std::vector<double>{11, 12, 13, 14}));
}

TEST_F(PsVariableStorageTest, MismatchedRedeclarationNamesBoth) {
  auto first = Make("v", Floats({1, 2}, {2}));
  auto placement = ps::Placement::Create(2, ps::PlacementPolicy::kRoundRobin);
  ps::VariableDeclaration declaration{"v", DType::kFloat32, Floats({0, 0, 0}, {3}).shape(), "", std::nullopt};
  PsVariableStorage other(servers_, *(*placement)->Declare(declaration));
  EXPECT_TRUE((HasError(other.CreateIfAbsent(Floats({1, 2, 3}, {3})),
                       absl::StatusCode::kInvalidArgument, {"created as float32 [3]", "exists as float32 [2]"})));
}

TEST_F(PsVariableStorageTest, RegisteredUpdateSplitsItsArgumentsAndSlotsReadWhole) {
  // momentum: accumulation = momentum * accumulation + gradient; w -= lr * accumulation.
  auto w = Make("w", Floats({1, 2, 3}, {3}), ps::Partitioner::FixedSize(2));
  const ps::Hyperparameters hyper = {{"learning_rate", 0.5}, {"momentum", 0.9}};
  const Tensor gradient = Floats({2, 4, 6}, {3});
  ASSERT_TRUE(IsOk(w->ApplyUpdate("momentum", std::span<const Tensor>(&gradient, 1), hyper)));
  ASSERT_TRUE(IsOk(w->ApplyUpdate("momentum", std::span<const Tensor>(&gradient, 1), hyper)));
  // accumulation after two steps: g, then 0.9 g + g = 1.9 g; w = w0 - 0.5 (g + 1.9 g).
  const std::vector<double> g = {2, 4, 6};
  std::vector<double> expected_w, expected_accumulation;
  for (int i = 0; i < 3; ++i) {
    expected_w.push_back((i + 1) - 0.5 * 2.9 * g[i]);
    expected_accumulation.push_back(1.9 * g[i]);
  }
  std::vector<double> got = FloatsOf(*w->Read());
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], expected_w[i], 1e-5);
  PsVariableStorage::SlotListing listing;
  absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> slots = w->ReadSlots(listing);
  ASSERT_TRUE(IsOk(slots.status()));
  ASSERT_EQ(slots->size(), 1u);
  EXPECT_EQ((*slots)[0].first, "momentum");
  got = FloatsOf((*slots)[0].second);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[i], expected_accumulation[i], 1e-5);
  // The slot shards sit beside their variable shards.
  EXPECT_TRUE(IsOk(stores_[0]->Info("w/part_0/momentum").status()));
  EXPECT_TRUE(IsOk(stores_[1]->Info("w/part_1/momentum").status()));
}

TEST_F(PsVariableStorageTest, WriteSlotCreatesItOnFreshTasks) {
  auto w = Make("w", Floats({1, 2, 3, 4}, {4}), ps::Partitioner::FixedSize(2));
  ASSERT_TRUE(IsOk(w->WriteSlot("m", Floats({5, 6, 7, 8}, {4}))));
  EXPECT_EQ(FloatsOf(*stores_[1]->Read("w/part_1/m")), (std::vector<double>{7, 8}));
  PsVariableStorage::SlotListing listing;
  absl::StatusOr<std::vector<std::pair<std::string, Tensor>>> slots = w->ReadSlots(listing);
  ASSERT_TRUE(IsOk(slots.status()));
  ASSERT_EQ(slots->size(), 1u);
  EXPECT_EQ(FloatsOf((*slots)[0].second), (std::vector<double>{5, 6, 7, 8}));
  EXPECT_TRUE((HasError(w->WriteSlot("m", Floats({1, 2, 3}, {3})),
                       absl::StatusCode::kInvalidArgument, {"[3]"})));
}

TEST_F(PsVariableStorageTest, AnExpiredDeadlineNamesTheTask) {
  auto w = Make("w", Floats({1}, {1}));
  servers_->timeout_ms.store(0);
  EXPECT_TRUE((HasError(w->Read(), absl::StatusCode::kDeadlineExceeded, {"ps:0"})));
}

TEST_F(PsVariableStorageTest, TheTasksShardsAreSentAtOnce) {
  // [4] in 4 shards: 0 and 2 on task 0, 1 and 3 on task 1. Each task's host makes its call
  // wait for the other task's: shards sent one after another would never meet.
  auto w = Make("w", Floats({1, 2, 3, 4}, {4}), ps::Partitioner::FixedSize(4));
  Rendezvous read_gate_first(2), read_gate_second(2);
  for (Rendezvous* gate : {&read_gate_first, &read_gate_second}) {
    Gate(0, gate);
    Gate(1, gate);
    if (gate == &read_gate_first) {
      absl::StatusOr<Tensor> read = w->Read();
      ASSERT_TRUE(IsOk(read.status()));
      EXPECT_EQ(FloatsOf(*read), (std::vector<double>{1, 2, 3, 4}));
    } else {
      ASSERT_TRUE(IsOk(w->AssignAdd(Floats({10, 20, 30, 40}, {4}))));
    }
  }
  Gate(0, nullptr);
  Gate(1, nullptr);
  EXPECT_EQ(FloatsOf(*w->Read()), (std::vector<double>{11, 22, 33, 44}));
}

TEST_F(PsVariableStorageTest, AFailingTaskDoesNotStopTheOthersShards) {
  auto w = Make("w", Floats({1, 2, 3, 4}, {4}), ps::Partitioner::FixedSize(2));
  Gate(0, nullptr, absl::UnavailableError("parameter server ps:0 is unavailable"));
  EXPECT_TRUE((HasError(w->AssignAdd(Floats({1, 1, 1, 1}, {4})), absl::StatusCode::kUnavailable,
                        {"ps:0"})));
  // Shard 1 (task 1) was updated; shard 0 was not.
  EXPECT_EQ(FloatsOf(*w->Read()), (std::vector<double>{1, 2, 4, 5}));
  // Both tasks failing: the lowest shard's error.
  Gate(1, nullptr, absl::InternalError("ps:1 broke"));
  EXPECT_TRUE((HasError(w->Assign(Floats({0, 0, 0, 0}, {4})), absl::StatusCode::kUnavailable,
                        {"ps:0"})));
}

}  // namespace
}  // namespace distribute
