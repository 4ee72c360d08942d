// The transformations with library threads: map with num_parallel_calls > 1, and prefetch.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/input/sources.h"
#include "core/input/transformations.h"
#include "core/util/mutex.h"
#include "gtest/gtest.h"
#include "tests/core/input_test_util.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::CollectScalars;
using ::distribute::testing::HasError;
using ::distribute::testing::Int64Tensor;
using ::distribute::testing::IsOk;
using ::distribute::testing::Scalar;

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

// x -> (x * x, x + 1), after a random sleep of up to max_sleep_us.
std::shared_ptr<const MapFn> SlowSquare(int max_sleep_us, std::atomic<int64_t>* calls = nullptr) {
  return std::make_shared<const MapFn>([max_sleep_us, calls](const Element& in, Element* out) {
    if (calls != nullptr) calls->fetch_add(1);
    thread_local std::mt19937 rng(std::random_device{}());
    if (max_sleep_us > 0) {
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % static_cast<unsigned>(max_sleep_us)));
    }
    const int64_t x = Scalar(in[0]);
    out->push_back(Int64Tensor({}, {x * x}));
    out->push_back(Int64Tensor({}, {x + 1}));
    return absl::OkStatus();
  });
}

TEST(MapTest, SequentialAndParallelGiveTheInputOrder) {
  for (int32_t parallel : {1, 2, 4, 8}) {
    SCOPED_TRACE(parallel);
    auto ds = Map(RangeOf(200), SlowSquare(500), 2, parallel);
    ASSERT_TRUE(IsOk(ds));
    EXPECT_EQ((*ds)->num_components(), 2);
    std::vector<Element> elements = testing::Collect(*ds);
    ASSERT_EQ(elements.size(), 200u);
    for (int64_t i = 0; i < 200; ++i) {
      EXPECT_EQ(Scalar(elements[static_cast<size_t>(i)][0]), i * i);
      EXPECT_EQ(Scalar(elements[static_cast<size_t>(i)][1]), i + 1);
    }
  }
}

TEST(MapTest, RunsCallsConcurrently) {
  std::atomic<int> running{0}, most{0};
  auto fn = std::make_shared<const MapFn>([&](const Element& in, Element* out) {
    const int now = running.fetch_add(1) + 1;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    running.fetch_sub(1);
    *out = in;
    return absl::OkStatus();
  });
  auto ds = Map(RangeOf(40), fn, 1, 4);
  ASSERT_TRUE(IsOk(ds));
  EXPECT_EQ(CollectScalars(*ds), Iota(0, 40));
  EXPECT_GT(most.load(), 1);
  EXPECT_LE(most.load(), 4);
}

TEST(MapTest, ErrorsArriveInOrder) {
  for (int32_t parallel : {1, 4}) {
    SCOPED_TRACE(parallel);
    auto fn = std::make_shared<const MapFn>([](const Element& in, Element* out) {
      if (Scalar(in[0]) == 5) return absl::InvalidArgumentError("bad element 5");
      *out = in;
      return absl::OkStatus();
    });
    auto ds = Map(RangeOf(10), fn, 1, parallel);
    ASSERT_TRUE(IsOk(ds));
    auto it = (*ds)->MakeIterator(0);
    ASSERT_TRUE(IsOk(it));
    Element e;
    for (int64_t i = 0; i < 5; ++i) {
      absl::StatusOr<bool> got = (*it)->GetNext(&e);
      ASSERT_TRUE(IsOk(got));
      ASSERT_TRUE(*got);
      EXPECT_EQ(Scalar(e[0]), i);
    }
    EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kInvalidArgument, {"bad element 5"}));
    // The iterator stays usable past a function error, and destroyable.
    absl::StatusOr<bool> next = (*it)->GetNext(&e);
    ASSERT_TRUE(IsOk(next));
    EXPECT_EQ(Scalar(e[0]), 6);
  }
}

TEST(MapTest, AnInputErrorArrivesAfterTheElementsBeforeIt) {
  auto gen_fn = std::make_shared<const GeneratorFn>([](int64_t index, Element* out) -> absl::StatusOr<bool> {
    if (index == 7) return absl::DataLossError("source broke");
    out->push_back(Int64Tensor({}, {index}));
    return true;
  });
  auto gen = FromGenerator(1, gen_fn);
  ASSERT_TRUE(IsOk(gen));
  auto ds = Map(*gen, SlowSquare(300), 2, 4);
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  for (int64_t i = 0; i < 7; ++i) {
    absl::StatusOr<bool> got = (*it)->GetNext(&e);
    ASSERT_TRUE(IsOk(got));
    ASSERT_TRUE(*got);
    EXPECT_EQ(Scalar(e[0]), i * i);
  }
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kDataLoss, {"source broke"}));
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kDataLoss, {"source broke"}));
}

TEST(MapTest, ChecksTheOutputCount) {
  auto ds = Map(RangeOf(3), SlowSquare(0), 3, 2);
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kInvalidArgument, {"2", "3"}));
}

TEST(MapTest, DestroyedMidEpochStopsCleanly) {
  for (int round = 0; round < 20; ++round) {
    std::atomic<int64_t> calls{0};
    auto forever = Repeat(RangeOf(5), -1);
    ASSERT_TRUE(IsOk(forever));
    auto ds = Map(*forever, SlowSquare(200, &calls), 2, 4);
    ASSERT_TRUE(IsOk(ds));
    {
      auto it = (*ds)->MakeIterator(0);
      ASSERT_TRUE(IsOk(it));
      Element e;
      for (int i = 0; i < round; ++i) ASSERT_TRUE(IsOk((*it)->GetNext(&e)));
    }
    const int64_t after = calls.load();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(calls.load(), after);  // no thread still calls the function
    EXPECT_LE(after, round + 4);     // work ahead is bounded by num_parallel_calls
  }
}

TEST(MapTest, RejectsBadArguments) {
  EXPECT_TRUE(HasError(Map(RangeOf(3), nullptr, 1, 1), absl::StatusCode::kInvalidArgument, {"fn"}));
  EXPECT_TRUE(HasError(Map(RangeOf(3), SlowSquare(0), 0, 1), absl::StatusCode::kInvalidArgument,
                       {"num_outputs is 0"}));
  EXPECT_TRUE(HasError(Map(RangeOf(3), SlowSquare(0), 2, 0), absl::StatusCode::kInvalidArgument,
                       {"num_parallel_calls is 0"}));
}

TEST(PrefetchTest, DeliversEveryElementOnceInOrder) {
  for (int64_t buffer : {1, 3, 64}) {
    auto ds = Prefetch(RangeOf(1000), buffer);
    ASSERT_TRUE(IsOk(ds));
    EXPECT_EQ(CollectScalars(*ds), Iota(0, 1000));
    EXPECT_EQ(CollectScalars(*ds), Iota(0, 1000));
  }
}

TEST(PrefetchTest, ZeroIsAPassThroughAndBatchSizeShowsThrough) {
  DatasetPtr input = RangeOf(3);
  auto same = Prefetch(input, 0);
  ASSERT_TRUE(IsOk(same));
  EXPECT_EQ(*same, input);
  auto batched = Batch(input, 2, false);
  ASSERT_TRUE(IsOk(batched));
  auto prefetched = Prefetch(*batched, 2);
  ASSERT_TRUE(IsOk(prefetched));
  EXPECT_EQ((*prefetched)->batch_size(), 2);
  EXPECT_TRUE(HasError(Prefetch(input, -2), absl::StatusCode::kInvalidArgument,
                       {"buffer_size is -2", "AUTOTUNE"}));
  // kAutotune is a prefetch, not an error.
  auto tuned = Prefetch(input, kAutotune);
  ASSERT_TRUE(IsOk(tuned));
  EXPECT_NE(*tuned, input);
}

TEST(PrefetchTest, ProducesAheadUpToTheBuffer) {
  std::atomic<int64_t> produced{0};
  auto fn = std::make_shared<const GeneratorFn>([&produced](int64_t index, Element* out) -> absl::StatusOr<bool> {
    produced.fetch_add(1);
    out->push_back(Int64Tensor({}, {index}));
    return true;
  });
  auto gen = FromGenerator(1, fn);
  ASSERT_TRUE(IsOk(gen));
  auto ds = Prefetch(*gen, 4);
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  ASSERT_TRUE(IsOk((*it)->GetNext(&e)));
  for (int i = 0; i < 200 && produced.load() < 5; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  // One taken, four buffered: the producer then blocks on the full buffer.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(produced.load(), 5);
  // Destroying it now must not hang on the blocked producer.
  it->reset();
}

TEST(PrefetchTest, ErrorsArriveAfterTheElementsBeforeThem) {
  auto fn = std::make_shared<const GeneratorFn>([](int64_t index, Element* out) -> absl::StatusOr<bool> {
    if (index == 5) return absl::UnavailableError("source went away");
    out->push_back(Int64Tensor({}, {index}));
    return true;
  });
  auto gen = FromGenerator(1, fn);
  ASSERT_TRUE(IsOk(gen));
  auto ds = Prefetch(*gen, 3);
  ASSERT_TRUE(IsOk(ds));
  auto it = (*ds)->MakeIterator(0);
  ASSERT_TRUE(IsOk(it));
  Element e;
  for (int64_t i = 0; i < 5; ++i) {
    absl::StatusOr<bool> got = (*it)->GetNext(&e);
    ASSERT_TRUE(IsOk(got));
    ASSERT_TRUE(*got);
    EXPECT_EQ(Scalar(e[0]), i);
  }
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kUnavailable, {"source went away"}));
  EXPECT_TRUE(HasError((*it)->GetNext(&e), absl::StatusCode::kUnavailable));
}

TEST(PrefetchTest, DestroyedMidEpochOrUnusedJoinsCleanly) {
  auto forever = Repeat(RangeOf(7), -1);
  ASSERT_TRUE(IsOk(forever));
  auto mapped = Map(*forever, SlowSquare(100), 2, 3);
  ASSERT_TRUE(IsOk(mapped));
  auto ds = Prefetch(*mapped, 2);
  ASSERT_TRUE(IsOk(ds));
  for (int round = 0; round < 20; ++round) {
    auto it = (*ds)->MakeIterator(0);
    ASSERT_TRUE(IsOk(it));
    Element e;
    for (int i = 0; i < round; ++i) {
      absl::StatusOr<bool> got = (*it)->GetNext(&e);
      ASSERT_TRUE(IsOk(got));
      EXPECT_EQ(Scalar(e[1]) - 1, i % 7);  // second output is x + 1: order kept
    }
  }
}

TEST(PrefetchTest, ConcurrentIteratorsAreIndependent) {
  auto shuffled = Shuffle(RangeOf(500), 50, 5);
  ASSERT_TRUE(IsOk(shuffled));
  auto mapped = Map(*shuffled, SlowSquare(20), 2, 3);
  ASSERT_TRUE(IsOk(mapped));
  auto ds = Prefetch(*mapped, 8);
  ASSERT_TRUE(IsOk(ds));
  std::vector<std::vector<int64_t>> results(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { results[static_cast<size_t>(t)] = CollectScalars(*ds); });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(results[0].size(), 500u);
  for (int t = 1; t < 4; ++t) EXPECT_EQ(results[static_cast<size_t>(t)], results[0]);
}

}  // namespace
}  // namespace distribute
