// Batch, shard, repeat, shuffle, take and skip.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "core/input/sources.h"
#include "core/input/transformations.h"
#include "gtest/gtest.h"
#include "tests/core/input_test_util.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::Collect;
using ::distribute::testing::CollectBytes;
using ::distribute::testing::CollectScalars;
using ::distribute::testing::HasError;
using ::distribute::testing::Int64Tensor;
using ::distribute::testing::IsOk;
using ::distribute::testing::Values;
using ::distribute::testing::WriteFile;

DatasetPtr RangeOf(int64_t n) {
  auto ds = Range(0, n, 1);
  EXPECT_TRUE(IsOk(ds));
  return *ds;
}

std::vector<int64_t> Iota(int64_t from, int64_t to) {
  std::vector<int64_t> v;
  for (int64_t i = from; i < to; ++i) v.push_back(i);
  return v;
}

TEST(BatchTest, StacksAlongANewAxisAndKeepsTheRemainder) {
  auto slices = FromTensorSlices({Int64Tensor({5, 2}, Iota(0, 10)), Int64Tensor({5}, Iota(100, 105))});
  ASSERT_TRUE(IsOk(slices));
  auto ds = Batch(*slices, 2, false);
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ((*ds)->batch_size(), 2);
  EXPECT_EQ((*ds)->num_components(), 2);
  std::vector<Element> batches = Collect(*ds);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[0][0].shape().dims(), distribute::Dims({2, 2}));
  EXPECT_EQ(Values<int64_t>(batches[0][0]), Iota(0, 4));
  EXPECT_EQ(Values<int64_t>(batches[1][0]), Iota(4, 8));
  EXPECT_EQ(batches[2][0].shape().dims(), distribute::Dims({1, 2}));
  EXPECT_EQ(Values<int64_t>(batches[2][0]), Iota(8, 10));
  EXPECT_EQ(batches[0][1].shape().dims(), distribute::Dims({2}));
  EXPECT_EQ(Values<int64_t>(batches[2][1]), std::vector<int64_t>({104}));
}

TEST(BatchTest, DropRemainder) {
  auto ds = Batch(RangeOf(7), 3, true);
  ASSERT_TRUE(IsOk(ds));
  std::vector<Element> batches = Collect(*ds);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(Values<int64_t>(batches[1][0]), Iota(3, 6));
  auto exact = Batch(RangeOf(6), 3, true);
  ASSERT_TRUE(IsOk(exact));
  EXPECT_EQ(Collect(*exact).size(), 2u);
  auto none = Batch(RangeOf(2), 3, true);
  ASSERT_TRUE(IsOk(none));
  EXPECT_TRUE(Collect(*none).empty());
}

TEST(BatchTest, MismatchedShapesNameTheComponentAndShapes) {
  auto fn = std::make_shared<const GeneratorFn>([](int64_t index, Element* out) -> absl::StatusOr<bool> {
    if (index >= 2) return false;
    out->push_back(Int64Tensor({}, {index}));
    out->push_back(index == 0 ? Int64Tensor({2}, {1, 2}) : Int64Tensor({3}, {1, 2, 3}));
    return true;
  });
  auto gen = FromGenerator(2, fn);
  ASSERT_TRUE(IsOk(gen));
  auto ds = Batch(*gen, 2, false);
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kInvalidArgument,
                       {"component 1", "[2]", "[3]"}));
}

TEST(BatchTest, RejectsBadArguments) {
  EXPECT_TRUE(HasError(Batch(RangeOf(3), 0, false), absl::StatusCode::kInvalidArgument,
                       {"batch_size is 0: expected at least 1"}));
  EXPECT_TRUE(HasError(Batch(nullptr, 1, false), absl::StatusCode::kInvalidArgument, {"input"}));
}

TEST(ShardTest, EveryNthElementFromIndex) {
  auto ds = Shard(RangeOf(10), 3, 1);
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ(CollectScalars(*ds), std::vector<int64_t>({1, 4, 7}));
  // The shards together are the input, each element once.
  std::vector<int64_t> all;
  for (int64_t i = 0; i < 4; ++i) {
    auto shard = Shard(RangeOf(10), 4, i);
    ASSERT_TRUE(IsOk(shard));
    for (int64_t v : CollectScalars(*shard)) all.push_back(v);
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, Iota(0, 10));
}

TEST(ShardTest, RejectsBadArguments) {
  EXPECT_TRUE(HasError(Shard(RangeOf(3), 0, 0), absl::StatusCode::kInvalidArgument, {"num_shards"}));
  EXPECT_TRUE(HasError(Shard(RangeOf(3), 2, 2), absl::StatusCode::kInvalidArgument, {"index is 2"}));
  EXPECT_TRUE(HasError(Shard(RangeOf(3), 2, -1), absl::StatusCode::kInvalidArgument, {"index"}));
}

TEST(RepeatTest, RepeatsCountTimes) {
  auto ds = Repeat(RangeOf(3), 2);
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ(CollectScalars(*ds), std::vector<int64_t>({0, 1, 2, 0, 1, 2}));
  auto zero = Repeat(RangeOf(3), 0);
  ASSERT_TRUE(IsOk(zero));
  EXPECT_TRUE(CollectScalars(*zero).empty());
}

TEST(RepeatTest, ForeverThenTake) {
  auto forever = Repeat(RangeOf(3), -1);
  ASSERT_TRUE(IsOk(forever));
  auto ds = Take(*forever, 8);
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ(CollectScalars(*ds), std::vector<int64_t>({0, 1, 2, 0, 1, 2, 0, 1}));
}

TEST(RepeatTest, ForeverOverAnEmptyInputEnds) {
  auto forever = Repeat(RangeOf(0), -1);
  ASSERT_TRUE(IsOk(forever));
  EXPECT_TRUE(CollectScalars(*forever).empty());
}

TEST(RepeatTest, RejectsBadCount) {
  EXPECT_TRUE(HasError(Repeat(RangeOf(3), -2), absl::StatusCode::kInvalidArgument, {"count is -2"}));
}

TEST(ShuffleTest, IsAPermutationReproducibleForASeed) {
  auto ds = Shuffle(RangeOf(100), 10, 42);
  ASSERT_TRUE(IsOk(ds));
  const std::vector<int64_t> first = CollectScalars(*ds);
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, Iota(0, 100));
  EXPECT_NE(first, Iota(0, 100));
  EXPECT_EQ(CollectScalars(*ds), first);  // same seed, same pass: same order
  auto same_seed = Shuffle(RangeOf(100), 10, 42);
  ASSERT_TRUE(IsOk(same_seed));
  EXPECT_EQ(CollectScalars(*same_seed), first);
  auto other_seed = Shuffle(RangeOf(100), 10, 43);
  ASSERT_TRUE(IsOk(other_seed));
  EXPECT_NE(CollectScalars(*other_seed), first);
  EXPECT_NE(CollectScalars(*ds, 1), first);  // another pass: another order
}

TEST(ShuffleTest, ABufferBoundsHowFarElementsMove) {
  auto ds = Shuffle(RangeOf(200), 5, 1);
  ASSERT_TRUE(IsOk(ds));
  const std::vector<int64_t> order = CollectScalars(*ds);
  ASSERT_EQ(order.size(), 200u);
  // With a buffer of 5, output position i holds an element read among the first i + 5.
  for (size_t i = 0; i < order.size(); ++i) EXPECT_LT(order[i], static_cast<int64_t>(i) + 5);
  auto one = Shuffle(RangeOf(10), 1, 9);
  ASSERT_TRUE(IsOk(one));
  EXPECT_EQ(CollectScalars(*one), Iota(0, 10));
}

TEST(ShuffleTest, RepeatReshufflesEveryEpoch) {
  auto shuffled = Shuffle(RangeOf(50), 50, 7);
  ASSERT_TRUE(IsOk(shuffled));
  auto ds = Repeat(*shuffled, 3);
  ASSERT_TRUE(IsOk(ds));
  const std::vector<int64_t> all = CollectScalars(*ds);
  ASSERT_EQ(all.size(), 150u);
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 3; ++e) {
    epochs.emplace_back(all.begin() + e * 50, all.begin() + (e + 1) * 50);
    std::vector<int64_t> sorted = epochs.back();
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, Iota(0, 50));
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  EXPECT_EQ(epochs[0], CollectScalars(*shuffled, 0));
  EXPECT_EQ(CollectScalars(*ds), all);  // reproducible as a whole
}

TEST(ShuffleTest, RejectsBadBufferSize) {
  EXPECT_TRUE(HasError(Shuffle(RangeOf(3), 0, 1), absl::StatusCode::kInvalidArgument,
                       {"buffer_size is 0"}));
}

TEST(TakeSkipTest, PrefixesAndSuffixes) {
  auto take = Take(RangeOf(5), 3);
  ASSERT_TRUE(IsOk(take));
  EXPECT_EQ(CollectScalars(*take), Iota(0, 3));
  auto take_all = Take(RangeOf(5), -1);
  ASSERT_TRUE(IsOk(take_all));
  EXPECT_EQ(CollectScalars(*take_all), Iota(0, 5));
  auto take_more = Take(RangeOf(5), 10);
  ASSERT_TRUE(IsOk(take_more));
  EXPECT_EQ(CollectScalars(*take_more), Iota(0, 5));
  auto take_none = Take(RangeOf(5), 0);
  ASSERT_TRUE(IsOk(take_none));
  EXPECT_TRUE(CollectScalars(*take_none).empty());
  auto skip = Skip(RangeOf(5), 2);
  ASSERT_TRUE(IsOk(skip));
  EXPECT_EQ(CollectScalars(*skip), Iota(2, 5));
  auto skip_all = Skip(RangeOf(5), 9);
  ASSERT_TRUE(IsOk(skip_all));
  EXPECT_TRUE(CollectScalars(*skip_all).empty());
  EXPECT_TRUE(HasError(Take(RangeOf(5), -2), absl::StatusCode::kInvalidArgument, {"count is -2"}));
  EXPECT_TRUE(HasError(Skip(RangeOf(5), -1), absl::StatusCode::kInvalidArgument, {"count is -1"}));
}

TEST(TakeTest, NeverPullsPastTheLastElementTaken) {
  int64_t calls = 0;
  auto fn = std::make_shared<const GeneratorFn>([&calls](int64_t index, Element* out) -> absl::StatusOr<bool> {
    ++calls;
    if (index >= 2) return absl::InternalError("pulled too far");
    out->push_back(Int64Tensor({}, {index}));
    return true;
  });
  auto gen = FromGenerator(1, fn);
  ASSERT_TRUE(IsOk(gen));
  auto ds = Take(*gen, 2);
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ(CollectScalars(*ds), Iota(0, 2));
  EXPECT_EQ(calls, 2);
}

TEST(SourceFilesTest, TransformationsDelegateAndRebuild) {
  const std::string a = WriteFile("a.txt", "a1\na2\na3\n");
  const std::string b = WriteFile("b.txt", "b1\nb2\n");
  auto lines = TextLines({a, b});
  ASSERT_TRUE(IsOk(lines));
  auto skipped = Skip(*lines, 1);
  ASSERT_TRUE(IsOk(skipped));
  auto batched = Batch(*skipped, 2, false);
  ASSERT_TRUE(IsOk(batched));
  EXPECT_EQ((*batched)->SourceFiles(), std::vector<std::string>({a, b}));
  auto rebuilt = (*batched)->WithSourceFiles({b});
  ASSERT_TRUE(IsOk(rebuilt));
  EXPECT_EQ((*rebuilt)->batch_size(), 2);
  EXPECT_EQ((*rebuilt)->SourceFiles(), std::vector<std::string>({b}));
  std::vector<Element> batches = Collect(*rebuilt);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0][0].shape().dims(), distribute::Dims({1, 2}));  // "b2"
  // Every transformation rebuilds itself.
  std::vector<DatasetPtr> pipelines;
  pipelines.push_back(*Shard(*lines, 2, 0));
  pipelines.push_back(*Repeat(*lines, 2));
  pipelines.push_back(*Shuffle(*lines, 4, 1));
  pipelines.push_back(*Take(*lines, 1));
  pipelines.push_back(*Prefetch(*lines, 2));
  pipelines.push_back(*Map(*lines, std::make_shared<const MapFn>([](const Element& in, Element* out) {
    *out = in;
    return absl::OkStatus();
  }), 1, 2));
  for (const DatasetPtr& p : pipelines) {
    EXPECT_EQ(p->SourceFiles(), std::vector<std::string>({a, b}));
    auto only_a = p->WithSourceFiles({a});
    ASSERT_TRUE(IsOk(only_a));
    EXPECT_EQ((*only_a)->SourceFiles(), std::vector<std::string>({a}));
    for (const std::string& line : CollectBytes(*only_a)) EXPECT_EQ(line[0], 'a');
  }
  auto range_batched = Batch(RangeOf(4), 2, false);
  ASSERT_TRUE(IsOk(range_batched));
  EXPECT_TRUE((*range_batched)->SourceFiles().empty());
  EXPECT_TRUE(HasError((*range_batched)->WithSourceFiles({a}), absl::StatusCode::kFailedPrecondition));
}

}  // namespace
}  // namespace distribute
