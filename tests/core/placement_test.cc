// Placement of variables on ps tasks, against the rules of TF's replica_device_setter
// worked by hand here: round-robin by creation order, greedy by bytes (least loaded task,
// lowest index on a tie), shards placed one by one, colocation that neither advances the
// round-robin nor loads a task for the greedy policy, and reuse by name.
#include "core/ps/placement.h"

#include <string>
#include <thread>
#include <vector>

#include "core/ps/function_registry.h"
#include "core/ps/names.h"
#include "core/ps/slot_declarations.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute::ps {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

VariableDeclaration Var(std::string name, std::vector<int64_t> dims = {},
                        DType dtype = DType::kFloat32) {
  VariableDeclaration d;
  d.name = std::move(name);
  d.dtype = dtype;
  d.shape = *Shape::Make(dims);
  return d;
}

VariableDeclaration Colocated(std::string name, std::vector<int64_t> dims, std::string with) {
  VariableDeclaration d = Var(std::move(name), std::move(dims));
  d.colocate_with = std::move(with);
  return d;
}

VariableDeclaration Partitioned(std::string name, std::vector<int64_t> dims, Partitioner p) {
  VariableDeclaration d = Var(std::move(name), std::move(dims));
  d.partitioner = p;
  return d;
}

std::unique_ptr<Placement> Make(int32_t tasks, PlacementPolicy policy) {
  absl::StatusOr<std::unique_ptr<Placement>> placement = Placement::Create(tasks, policy);
  EXPECT_TRUE(IsOk(placement));
  return *std::move(placement);
}

// The task of an unpartitioned variable.
int32_t TaskOf(Placement& placement, const VariableDeclaration& d) {
  absl::StatusOr<VariablePlacement> placed = placement.Declare(d);
  EXPECT_TRUE(IsOk(placed)) << d.name;
  if (!placed.ok()) return -1;
  EXPECT_EQ(placed->shards.size(), 1u);
  EXPECT_EQ(placed->shards[0].name, d.name);
  return placed->shards[0].task;
}

std::vector<int32_t> ShardTasks(const VariablePlacement& placed) {
  std::vector<int32_t> tasks;
  for (const ShardPlacement& shard : placed.shards) tasks.push_back(shard.task);
  return tasks;
}

TEST(PlacementTest, RoundRobinByCreationOrder) {
  auto placement = Make(3, PlacementPolicy::kRoundRobin);
  std::vector<int32_t> tasks;
  for (const char* name : {"a", "b", "c", "d", "e"}) tasks.push_back(TaskOf(*placement, Var(name, {1000})));
  EXPECT_EQ(tasks, (std::vector<int32_t>{0, 1, 2, 0, 1}));
}

TEST(PlacementTest, GreedyPicksTheLeastLoadedTask) {
  auto placement = Make(3, PlacementPolicy::kGreedyBytes);
  // float32 bytes: a 400, b 40, c 200, d 4, e 800, f 100, g 4.
  EXPECT_EQ(TaskOf(*placement, Var("a", {100})), 0);  // loads 0 0 0: lowest index
  EXPECT_EQ(TaskOf(*placement, Var("b", {10})), 1);   // 400 0 0
  EXPECT_EQ(TaskOf(*placement, Var("c", {50})), 2);   // 400 40 0
  EXPECT_EQ(TaskOf(*placement, Var("d", {1})), 1);    // 400 40 200
  EXPECT_EQ(TaskOf(*placement, Var("e", {200})), 1);  // 400 44 200
  EXPECT_EQ(TaskOf(*placement, Var("f", {25})), 2);   // 400 844 200
  EXPECT_EQ(TaskOf(*placement, Var("g", {})), 2);     // 400 844 300
  EXPECT_EQ(placement->TaskBytes(), (std::vector<uint64_t>{400, 844, 304}));
}

TEST(PlacementTest, WithdrawingTheLastDeclarationRewindsTheRoundRobin) {
  // TF2's ParameterServerStrategy counts a variable once it is created: one whose creation
  // failed leaves the next variable where it would have gone.
  auto placement = Make(3, PlacementPolicy::kRoundRobin);
  EXPECT_EQ(TaskOf(*placement, Var("a", {10})), 0);
  absl::StatusOr<VariablePlacement> failed = placement->Declare(Partitioned("w", {4}, Partitioner::FixedSize(2, 0)));
  ASSERT_TRUE(IsOk(failed.status()));
  EXPECT_TRUE(failed->declared_now);
  EXPECT_EQ(ShardTasks(*failed), (std::vector<int32_t>{1, 2}));
  placement->Withdraw("w");
  EXPECT_TRUE(HasError(placement->Find("w"), absl::StatusCode::kNotFound));
  EXPECT_EQ(placement->TaskBytes(), (std::vector<uint64_t>{40, 0, 0}));
  // The name is free for another declaration, and the round-robin is back at task 1.
  EXPECT_EQ(TaskOf(*placement, Var("w", {3}, DType::kInt32)), 1);
  EXPECT_EQ(TaskOf(*placement, Var("w/part_0", {1})), 2);
  placement->Withdraw("never_declared");  // no-op
  EXPECT_EQ(placement->TaskBytes(), (std::vector<uint64_t>{40, 12, 4}));
}

TEST(PlacementTest, WithdrawingAnEarlierDeclarationKeepsLaterPlacements) {
  auto placement = Make(2, PlacementPolicy::kGreedyBytes);
  EXPECT_EQ(TaskOf(*placement, Var("a", {10})), 0);  // 40 0
  EXPECT_EQ(TaskOf(*placement, Var("b", {2})), 1);   // 40 8
  placement->Withdraw("a");                          // 0 8: its load is gone
  EXPECT_EQ(placement->TaskBytes(), (std::vector<uint64_t>{0, 8}));
  EXPECT_EQ(TaskOf(*placement, Var("c", {1})), 0);
  // Giving back an existing declaration is not "declared now".
  absl::StatusOr<VariablePlacement> again = placement->Declare(Var("b", {2}));
  ASSERT_TRUE(IsOk(again.status()));
  EXPECT_FALSE(again->declared_now);
}

TEST(PlacementTest, GreedyTieGoesToTheLowestIndex) {
  auto placement = Make(2, PlacementPolicy::kGreedyBytes);
  EXPECT_EQ(TaskOf(*placement, Var("a", {2})), 0);
  EXPECT_EQ(TaskOf(*placement, Var("b", {2})), 1);
  EXPECT_EQ(TaskOf(*placement, Var("c", {1})), 0);  // 8 8: tie
  EXPECT_EQ(TaskOf(*placement, Var("d", {4}, DType::kFloat64)), 1);  // 12 8
}

TEST(PlacementTest, ShardsArePlacedOneByOne) {
  auto round_robin = Make(2, PlacementPolicy::kRoundRobin);
  EXPECT_EQ(TaskOf(*round_robin, Var("x")), 0);
  absl::StatusOr<VariablePlacement> w =
      round_robin->Declare(Partitioned("w", {10, 3}, Partitioner::FixedSize(3)));
  ASSERT_TRUE(IsOk(w));
  EXPECT_EQ(ShardTasks(*w), (std::vector<int32_t>{1, 0, 1}));
  ASSERT_TRUE(w->layout.has_value());
  EXPECT_EQ(w->shards[0].name, "w/part_0");
  EXPECT_EQ(w->shards[2].name, "w/part_2");
  EXPECT_EQ(w->shards[0].shape.dims(), (distribute::Dims{4, 3}));
  EXPECT_EQ(w->shards[1].shape.dims(), (distribute::Dims{3, 3}));
  EXPECT_EQ(TaskOf(*round_robin, Var("y")), 0);

  // Greedy: a is 40 bytes on task 0; w's shards are 4, 3, 3 rows of 8 bytes.
  auto greedy = Make(2, PlacementPolicy::kGreedyBytes);
  EXPECT_EQ(TaskOf(*greedy, Var("a", {10})), 0);
  w = greedy->Declare(Partitioned("w", {10, 2}, Partitioner::FixedSize(3)));
  ASSERT_TRUE(IsOk(w));
  EXPECT_EQ(ShardTasks(*w), (std::vector<int32_t>{1, 1, 0}));  // 40 0 -> 40 32 -> 40 56
  EXPECT_EQ(greedy->TaskBytes(), (std::vector<uint64_t>{64, 56}));
}

TEST(PlacementTest, OneShardPartitioningStillNamesThePart) {
  auto placement = Make(2, PlacementPolicy::kRoundRobin);
  absl::StatusOr<VariablePlacement> w =
      placement->Declare(Partitioned("w", {5}, Partitioner::MinMax(4)));
  ASSERT_TRUE(IsOk(w));
  ASSERT_EQ(w->shards.size(), 1u);
  EXPECT_EQ(w->shards[0].name, "w/part_0");
}

TEST(PlacementTest, ColocationNeitherAdvancesNorLoads) {
  auto round_robin = Make(3, PlacementPolicy::kRoundRobin);
  EXPECT_EQ(TaskOf(*round_robin, Var("a")), 0);
  EXPECT_EQ(TaskOf(*round_robin, Var("b")), 1);
  EXPECT_EQ(TaskOf(*round_robin, Colocated("a/m", {}, "a")), 0);
  EXPECT_EQ(TaskOf(*round_robin, Var("c")), 2);  // the colocation did not take a turn

  auto greedy = Make(2, PlacementPolicy::kGreedyBytes);
  EXPECT_EQ(TaskOf(*greedy, Var("a", {100})), 0);             // 400 0
  EXPECT_EQ(TaskOf(*greedy, Var("b", {75})), 1);              // 400 300
  EXPECT_EQ(TaskOf(*greedy, Colocated("b/m", {75}, "b")), 1);  // no load: still 400 300
  EXPECT_EQ(TaskOf(*greedy, Var("c", {2})), 1);               // counted, it would go to 0
  EXPECT_EQ(greedy->TaskBytes(), (std::vector<uint64_t>{400, 608}));
}

TEST(PlacementTest, ColocationWithShards) {
  auto placement = Make(3, PlacementPolicy::kRoundRobin);
  absl::StatusOr<VariablePlacement> w =
      placement->Declare(Partitioned("w", {6}, Partitioner::FixedSize(3)));
  ASSERT_TRUE(IsOk(w));
  EXPECT_EQ(TaskOf(*placement, Colocated("w/part_1/m", {2}, "w/part_1")), w->shards[1].task);
  // Every shard of a colocated partitioned variable goes to the target's task.
  EXPECT_EQ(TaskOf(*placement, Var("z")), 0);
  VariableDeclaration v = Partitioned("v", {4}, Partitioner::FixedSize(2));
  v.colocate_with = "z";
  absl::StatusOr<VariablePlacement> placed = placement->Declare(v);
  ASSERT_TRUE(IsOk(placed));
  EXPECT_EQ(ShardTasks(*placed), (std::vector<int32_t>{0, 0}));

  EXPECT_TRUE(HasError(placement->Declare(Colocated("q", {}, "w")),
                       absl::StatusCode::kInvalidArgument, {"'w'", "3 shards", "'w/part_0'"}));
  EXPECT_TRUE(HasError(placement->Declare(Colocated("q", {}, "nope")),
                       absl::StatusCode::kInvalidArgument, {"'nope'", "not a declared"}));
  EXPECT_TRUE(HasError(placement->Declare(Colocated("q", {}, "q")),
                       absl::StatusCode::kInvalidArgument, {"'q'"}));
  EXPECT_TRUE(HasError(placement->Find("q"), absl::StatusCode::kNotFound));
  EXPECT_EQ(TaskOf(*placement, Var("after")), 1);  // the refusals took no turn
}

TEST(PlacementTest, TheSameNameIsTheSameVariable) {
  auto placement = Make(3, PlacementPolicy::kRoundRobin);
  EXPECT_EQ(TaskOf(*placement, Var("a", {2})), 0);
  EXPECT_EQ(TaskOf(*placement, Var("a", {2})), 0);
  EXPECT_EQ(TaskOf(*placement, Var("b", {2})), 1);  // the reuse took no turn

  EXPECT_TRUE(HasError(placement->Declare(Var("a", {2}, DType::kInt32)),
                       absl::StatusCode::kInvalidArgument,
                       {"'a'", "int32 [2]", "float32 [2]", "same name means the same variable"}));
  EXPECT_TRUE(HasError(placement->Declare(Var("a", {3})), absl::StatusCode::kInvalidArgument,
                       {"float32 [3]", "float32 [2]"}));

  ASSERT_TRUE(IsOk(placement->Declare(Partitioned("w", {6}, Partitioner::FixedSize(2)))));
  // Another partitioner with the same partitions is the same variable; other partitions are not.
  absl::StatusOr<VariablePlacement> again =
      placement->Declare(Partitioned("w", {6}, Partitioner::MinMax(2, 0, 4)));
  ASSERT_TRUE(IsOk(again));
  EXPECT_EQ(ShardTasks(*again), (std::vector<int32_t>{2, 0}));
  EXPECT_TRUE(HasError(placement->Declare(Partitioned("w", {6}, Partitioner::FixedSize(3))),
                       absl::StatusCode::kInvalidArgument, {"3 shards", "2 shards"}));
  EXPECT_TRUE(HasError(placement->Declare(Var("w", {6})), absl::StatusCode::kInvalidArgument,
                       {"float32 [6] but", "2 shards"}));
  EXPECT_EQ(TaskOf(*placement, Var("c")), 1);  // no refusal took a turn
}

TEST(PlacementTest, ShardNamesCannotBeTaken) {
  auto placement = Make(2, PlacementPolicy::kRoundRobin);
  ASSERT_TRUE(IsOk(placement->Declare(Partitioned("w", {4}, Partitioner::FixedSize(2)))));
  EXPECT_TRUE(HasError(placement->Declare(Var("w/part_1")), absl::StatusCode::kInvalidArgument,
                       {"'w/part_1'"}));
  ASSERT_TRUE(IsOk(placement->Declare(Var("v/part_0"))));
  EXPECT_TRUE(HasError(placement->Declare(Partitioned("v", {4}, Partitioner::FixedSize(2))),
                       absl::StatusCode::kInvalidArgument, {"'v'", "'v/part_0'"}));
}

TEST(PlacementTest, BadArguments) {
  EXPECT_TRUE(HasError(Placement::Create(0, PlacementPolicy::kRoundRobin),
                       absl::StatusCode::kInvalidArgument, {"0"}));
  EXPECT_TRUE(HasError(Placement::Create(kMaxPsTasks + 1, PlacementPolicy::kRoundRobin),
                       absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(Placement::Create(2, static_cast<PlacementPolicy>(9)),
                       absl::StatusCode::kInvalidArgument, {"policy"}));
  auto placement = Make(2, PlacementPolicy::kRoundRobin);
  EXPECT_TRUE(HasError(placement->Declare(Var("")), absl::StatusCode::kInvalidArgument, {"empty"}));
  EXPECT_TRUE(HasError(placement->Declare(Var(std::string(kMaxPsNameBytes + 1, 'x'))),
                       absl::StatusCode::kInvalidArgument, {"1025 bytes"}));
  EXPECT_TRUE(HasError(placement->Declare(Var(std::string("a\nb"))),
                       absl::StatusCode::kInvalidArgument, {"byte 10"}));
  // A name that fits, whose shard names ("/part_0") would not.
  EXPECT_TRUE(HasError(placement->Declare(Partitioned(std::string(kMaxPsNameBytes - 2, 'x'), {4},
                                                      Partitioner::FixedSize(2))),
                       absl::StatusCode::kInvalidArgument, {"shard name"}));
  EXPECT_TRUE(HasError(placement->Declare(Partitioned("p", {}, Partitioner::FixedSize(2))),
                       absl::StatusCode::kInvalidArgument, {"rank at least 1"}));
  EXPECT_EQ(TaskOf(*placement, Var("ok")), 0);  // nothing above was placed
}

TEST(PlacementTest, EveryWorkerComputesTheSamePlacement) {
  const auto declare_all = [](Placement& p) {
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < 20; ++i) {
      VariableDeclaration d = i % 3 == 0 ? Partitioned("p" + std::to_string(i), {i + 3, 2},
                                                       Partitioner::FixedSize(3))
                                         : Var("v" + std::to_string(i), {i * 7 % 11 + 1});
      out.push_back(ShardTasks(*p.Declare(d)));
    }
    return out;
  };
  for (PlacementPolicy policy : {PlacementPolicy::kRoundRobin, PlacementPolicy::kGreedyBytes}) {
    auto worker_0 = Make(3, policy);
    auto worker_1 = Make(3, policy);
    EXPECT_EQ(declare_all(*worker_0), declare_all(*worker_1));
  }
}

TEST(PlacementTest, FindReturnsTheDeclaration) {
  auto placement = Make(2, PlacementPolicy::kRoundRobin);
  ASSERT_TRUE(IsOk(placement->Declare(Var("a", {3}))));
  absl::StatusOr<VariablePlacement> found = placement->Find("a");
  ASSERT_TRUE(IsOk(found));
  EXPECT_EQ(found->declaration.shape.dims(), (distribute::Dims{3}));
  EXPECT_TRUE(HasError(placement->Find("b"), absl::StatusCode::kNotFound, {"'b'"}));
}

TEST(PlacementTest, SlotsAreDeclaredBesideEachShard) {
  auto placement = Make(3, PlacementPolicy::kRoundRobin);
  absl::StatusOr<VariablePlacement> w =
      placement->Declare(Partitioned("w", {5, 2}, Partitioner::FixedSize(2)));
  ASSERT_TRUE(IsOk(w));
  UpdateFunction adam_like;
  adam_like.slots = {{"m", 0.0, ""}, {"v", 0.0, ""}};
  absl::StatusOr<std::vector<VariableDeclaration>> slots = SlotDeclarations(*w, adam_like);
  ASSERT_TRUE(IsOk(slots));
  ASSERT_EQ(slots->size(), 4u);
  const std::vector<std::string> names = {"w/part_0/m", "w/part_0/v", "w/part_1/m", "w/part_1/v"};
  for (size_t i = 0; i < slots->size(); ++i) {
    const VariableDeclaration& slot = (*slots)[i];
    EXPECT_EQ(slot.name, names[i]);
    EXPECT_EQ(slot.shape, w->shards[i / 2].shape);
    EXPECT_EQ(TaskOf(*placement, slot), w->shards[i / 2].task) << slot.name;
  }
  EXPECT_EQ(TaskOf(*placement, Var("next")), 2);  // w took tasks 0 and 1; slots took no turn
}

TEST(PlacementTest, ConcurrentDeclarationsAreAllPlaced) {
  auto placement = Make(4, PlacementPolicy::kRoundRobin);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&placement, t] {
      for (int i = 0; i < 25; ++i) {
        EXPECT_TRUE(IsOk(placement->Declare(Var("t" + std::to_string(t) + "_" + std::to_string(i)))));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  // 100 scalars dealt round-robin over 4 tasks: 25 each, 4 bytes apiece.
  EXPECT_EQ(placement->TaskBytes(), (std::vector<uint64_t>{100, 100, 100, 100}));
}

}  // namespace
}  // namespace distribute::ps
