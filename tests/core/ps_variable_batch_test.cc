// Batches of ParameterServerStrategy variables (ps_variable_batch.h) over two in-process
// "ps tasks" whose hosts record every call: one ReadMany / ApplyUpdates per task, names in
// batch order, cut by the hosts' limits, the tasks at once (their calls meet at a
// rendezvous that calls made in turn never reach), and the error of the lowest failing
// (variable, shard) with the others applied. Expectations are computed here.
#include "core/strategy/ps_variable_batch.h"

#include <memory>
#include <mutex>
#include <set>
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

// A task's host over a local store that records the names of every batch call, answers
// with `limits`, meets the other task at `gate` (when set) and fails updates of the names
// in `failing` (or the whole call with `call_error`, when not OK).
class RecordingHost final : public ps::VariableHost {
 public:
  RecordingHost(std::shared_ptr<ps::VariableStore> store, std::string task)
      : inner_(ps::NewLocalVariableHost(std::move(store), task)) {}

  const std::string& task() const override { return inner_->task(); }
  absl::Status WaitReady(const Deadline& deadline) override { return inner_->WaitReady(deadline); }
  absl::StatusOr<ps::VariableStore::Creation> CreateIfAbsent(absl::string_view name, const Tensor& initial,
                                                             const Deadline& deadline) override {
    return inner_->CreateIfAbsent(name, initial, deadline);
  }
  absl::StatusOr<Tensor> Read(absl::string_view name, const Deadline& deadline) override {
    return inner_->Read(name, deadline);
  }
  absl::Status Assign(absl::string_view name, const Tensor& value, const Deadline& deadline) override {
    return inner_->Assign(name, value, deadline);
  }
  absl::Status AssignAdd(absl::string_view name, const Tensor& delta, const Deadline& deadline) override {
    return inner_->AssignAdd(name, delta, deadline);
  }
  absl::Status AssignSub(absl::string_view name, const Tensor& delta, const Deadline& deadline) override {
    return inner_->AssignSub(name, delta, deadline);
  }
  absl::Status ApplyUpdate(absl::string_view name, absl::string_view function,
                           std::span<const Tensor> arguments, const ps::Hyperparameters& hyperparameters,
                           const Deadline& deadline) override {
    if (failing.count(std::string(name)) > 0) {
      return absl::FailedPreconditionError(absl::StrCat("refused ", name));
    }
    return inner_->ApplyUpdate(name, function, arguments, hyperparameters, deadline);
  }
  absl::Status AssignSlot(absl::string_view name, absl::string_view slot, const Tensor& value,
                          const Deadline& deadline) override {
    return inner_->AssignSlot(name, slot, value, deadline);
  }
  absl::StatusOr<std::vector<ps::StoredVariableInfo>> List(const Deadline& deadline) override {
    return inner_->List(deadline);
  }

  absl::StatusOr<std::vector<Tensor>> ReadMany(std::span<const std::string> names,
                                               const Deadline& deadline) override {
    Record(names);
    if (gate != nullptr) RETURN_IF_ERROR(gate->ArriveAndWait());
    ASSIGN_OR_RETURN(std::vector<Tensor> values, VariableHost::ReadMany(names, deadline));
    if (answer_wrong_shape) values.front() = ZeroTensor(DType::kFloat32, {1});
    if (answer_wrong_dtype) values.front() = ZeroTensor(DType::kFloat64, std::vector<int64_t>(values.front().shape().dims().begin(), values.front().shape().dims().end()));
    return values;
  }
  absl::StatusOr<UpdatesOutcome> ApplyUpdates(std::span<const UpdateEntry> entries, absl::string_view function,
                                              const ps::Hyperparameters& hyperparameters,
                                              const Deadline& deadline) override {
    std::vector<std::string> names;
    for (const UpdateEntry& entry : entries) names.push_back(entry.name);
    Record(names);
    if (gate != nullptr) RETURN_IF_ERROR(gate->ArriveAndWait());
    if (!call_error.ok()) return call_error;
    return VariableHost::ApplyUpdates(entries, function, hyperparameters, deadline);
  }
  BatchLimits batch_limits() const override { return limits; }

  std::vector<std::vector<std::string>> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  BatchLimits limits;
  bool answer_wrong_shape = false;  // the first value of every ReadMany answer
  bool answer_wrong_dtype = false;
  Rendezvous* gate = nullptr;
  std::set<std::string> failing;
  absl::Status call_error;

 private:
  void Record(std::span<const std::string> names) {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.emplace_back(names.begin(), names.end());
  }

  std::unique_ptr<ps::VariableHost> inner_;
  std::mutex mu_;
  std::vector<std::vector<std::string>> calls_;
};

using Names = std::vector<std::vector<std::string>>;

class PsVariableBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    servers_ = std::make_shared<ParameterServers>();
    for (int i = 0; i < 2; ++i) {
      auto host = std::make_unique<RecordingHost>(std::make_shared<ps::VariableStore>(), "ps:" + std::to_string(i));
      hosts_.push_back(host.get());
      servers_->hosts.push_back(std::move(host));
    }
    servers_->placement = *ps::Placement::Create(2, ps::PlacementPolicy::kRoundRobin);
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
  std::vector<RecordingHost*> hosts_;
};

TEST_F(PsVariableBatchTest, EachTaskIsAskedOnceForEveryShardItHolds) {
  // w: [4] in 2 shards (part_0 on task 0, part_1 on task 1); then a on task 0, b on task 1
  // (round-robin after w's two shards), c on task 0.
  auto w = Make("w", Floats({1, 2, 3, 4}, {4}), ps::Partitioner::FixedSize(2));
  auto a = Make("a", Floats({5}, {1}));
  auto b = Make("b", Floats({6, 7}, {2}));
  auto c = Make("c", Floats({8}, {1}));
  Rendezvous gate(2);  // the two tasks' calls must be in flight together
  hosts_[0]->gate = &gate;
  hosts_[1]->gate = &gate;
  std::vector<PsVariableStorage*> batch = {b.get(), w.get(), a.get(), c.get(), w.get()};
  absl::StatusOr<std::vector<Tensor>> read = ReadPsVariables(batch);
  ASSERT_TRUE(IsOk(read));
  ASSERT_EQ(read->size(), 5u);
  EXPECT_EQ(FloatsOf((*read)[0]), (std::vector<double>{6, 7}));
  EXPECT_EQ(FloatsOf((*read)[1]), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(FloatsOf((*read)[2]), (std::vector<double>{5}));
  EXPECT_EQ(FloatsOf((*read)[3]), (std::vector<double>{8}));
  EXPECT_EQ(FloatsOf((*read)[4]), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(hosts_[0]->calls(), (Names{{"w/part_0", "a", "c", "w/part_0"}}));
  EXPECT_EQ(hosts_[1]->calls(), (Names{{"b", "w/part_1", "w/part_1"}}));
}

TEST_F(PsVariableBatchTest, AnswersOfAnotherShapeOrDtypeAreRefused) {
  auto w = Make("w", Floats({1, 2, 3, 4}, {4}), ps::Partitioner::FixedSize(2));
  auto a = Make("a", Floats({5, 6}, {2}));  // task 0
  std::vector<PsVariableStorage*> batch = {a.get(), w.get()};
  hosts_[0]->answer_wrong_shape = true;
  EXPECT_TRUE(HasError(ReadPsVariables(batch), absl::StatusCode::kInternal,
                       {"ps:0 answered float32 [1] for 'a', which is float32 [2]"}));
  hosts_[0]->answer_wrong_shape = false;
  hosts_[1]->answer_wrong_dtype = true;
  EXPECT_TRUE(HasError(ReadPsVariables(batch), absl::StatusCode::kInternal,
                       {"ps:1 answered float64 [2] for 'w/part_1', which is float32 [2]"}));
}

TEST_F(PsVariableBatchTest, ABatchIsCutByTheHostsLimits) {
  auto a = Make("a", Floats({1, 2}, {2}));  // task 0
  auto x = Make("x", Floats({0}, {1}));     // task 1
  auto b = Make("b", Floats({3, 4}, {2}));  // task 0
  auto y = Make("y", Floats({0}, {1}));     // task 1
  auto c = Make("c", Floats({5, 6}, {2}));  // task 0
  hosts_[0]->limits.entries = 2;
  std::vector<PsVariableStorage*> batch = {a.get(), b.get(), c.get()};
  ASSERT_TRUE(IsOk(ReadPsVariables(batch)));
  EXPECT_EQ(hosts_[0]->calls(), (Names{{"a", "b"}, {"c"}}));
  // 8 bytes per variable, 16 per call.
  hosts_[0]->limits = {};
  hosts_[0]->limits.tensor_bytes = 16;
  ASSERT_TRUE(IsOk(ReadPsVariables(batch)));
  EXPECT_EQ(hosts_[0]->calls().back(), (std::vector<std::string>{"c"}));
  EXPECT_EQ(hosts_[0]->calls().size(), 4u);
  // An entry alone past the bound still goes, in a call of its own.
  hosts_[0]->limits.tensor_bytes = 4;
  absl::StatusOr<std::vector<Tensor>> read = ReadPsVariables(batch);
  ASSERT_TRUE(IsOk(read));
  EXPECT_EQ(FloatsOf((*read)[2]), (std::vector<double>{5, 6}));
  EXPECT_EQ(hosts_[0]->calls().size(), 7u);
  // Names and headers: each entry's bound is its name, its header and a margin.
  hosts_[0]->limits = {};
  hosts_[0]->limits.header_bytes = 130;
  ASSERT_TRUE(IsOk(ReadPsVariables(batch)));
  EXPECT_EQ(hosts_[0]->calls().size(), 9u);
  EXPECT_EQ(hosts_[0]->calls()[7], (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(hosts_[1]->calls().empty());
  // An update's function name and hyperparameters come out of every call's header room:
  // 3 entries of 60 bytes fit 200 bytes alone, 2 beside "sgd" and "learning_rate".
  hosts_[0]->limits.header_bytes = 200;
  ASSERT_TRUE(IsOk(ReadPsVariables(batch)));
  EXPECT_EQ(hosts_[0]->calls().back(), (std::vector<std::string>{"a", "b", "c"}));
  const std::vector<std::vector<Tensor>> gradients(3, std::vector<Tensor>{Floats({0, 0}, {2})});
  ASSERT_TRUE(IsOk(ApplyPsUpdates(batch, gradients, "sgd", {{"learning_rate", 1.0}})));
  const Names calls = hosts_[0]->calls();
  EXPECT_EQ(Names(calls.end() - 2, calls.end()), (Names{{"a", "b"}, {"c"}}));
  (void)x, (void)y;
}

TEST_F(PsVariableBatchTest, UpdatesReportTheLowestFailureAndApplyTheRest) {
  auto w = Make("w", Floats({1, 2, 3, 4}, {4}), ps::Partitioner::FixedSize(2));  // part_0: task 0, part_1: task 1
  auto a = Make("a", Floats({10}, {1}));                                         // task 0
  auto b = Make("b", Floats({20}, {1}));                                         // task 1
  const ps::Hyperparameters lr = {{"learning_rate", 1.0}};
  std::vector<PsVariableStorage*> batch = {a.get(), w.get(), b.get()};
  std::vector<std::vector<Tensor>> gradients = {
      {Floats({1}, {1})}, {Floats({1, 1, 1, 1}, {4})}, {Floats({2}, {1})}};
  ASSERT_TRUE(IsOk(ApplyPsUpdates(batch, gradients, "sgd", lr)));
  EXPECT_EQ(FloatsOf(*a->Read()), (std::vector<double>{9}));
  EXPECT_EQ(FloatsOf(*w->Read()), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(FloatsOf(*b->Read()), (std::vector<double>{18}));
  EXPECT_EQ(hosts_[0]->calls(), (Names{{"a", "w/part_0"}}));
  EXPECT_EQ(hosts_[1]->calls(), (Names{{"w/part_1", "b"}}));

  // Task 1 refuses w's second shard and b, task 0 nothing: the error is w's (variables[1]),
  // and every other shard is applied.
  hosts_[1]->failing = {"w/part_1", "b"};
  EXPECT_TRUE(HasError(ApplyPsUpdates(batch, gradients, "sgd", lr), absl::StatusCode::kFailedPrecondition,
                       {"variables[1] ('w'): refused w/part_1"}));
  EXPECT_EQ(FloatsOf(*a->Read()), (std::vector<double>{8}));
  EXPECT_EQ(FloatsOf(*w->Read()), (std::vector<double>{-1, 0, 2, 3}));
  EXPECT_EQ(FloatsOf(*b->Read()), (std::vector<double>{18}));

  // A call that fails as a whole (the task unreachable) counts as its first entry's
  // failure; the lower failure of the other task still wins.
  hosts_[1]->failing.clear();
  hosts_[1]->call_error = absl::UnavailableError("ps:1 is gone");
  hosts_[0]->failing = {"a"};
  EXPECT_TRUE(HasError(ApplyPsUpdates(batch, gradients, "sgd", lr), absl::StatusCode::kFailedPrecondition,
                       {"variables[0] ('a'): refused a"}));
  hosts_[0]->failing.clear();
  EXPECT_TRUE(HasError(ApplyPsUpdates(batch, gradients, "sgd", lr), absl::StatusCode::kUnavailable,
                       {"variables[1] ('w'): ps:1 is gone"}));
  EXPECT_EQ(FloatsOf(*w->Read()), (std::vector<double>{-3, -2, 2, 3}));

  // An argument the shard layout cannot split changes nothing and sends nothing (the C
  // API checks every argument's shape before this).
  hosts_[1]->call_error = absl::OkStatus();
  const size_t calls_before = hosts_[0]->calls().size();
  gradients[1] = {Floats({1, 2, 3}, {3})};
  EXPECT_FALSE(ApplyPsUpdates(batch, gradients, "sgd", lr).ok());
  EXPECT_EQ(hosts_[0]->calls().size(), calls_before);
  EXPECT_EQ(FloatsOf(*a->Read()), (std::vector<double>{7}));
}

}  // namespace
}  // namespace distribute
