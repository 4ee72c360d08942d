// Datasets, iterators and distributed input through the wrapper (cpp/input.hpp): each
// source and transformation yields what tf.data's does (written out here), a lambda maps
// elements (in order with parallel calls; its failures and exceptions reach get_next; the
// dataset destroys it exactly once, also when creation fails), a lambda generates elements
// by index, a Mirrored strategy splits each global batch across its replicas, and a lambda
// builds each input pipeline's dataset from its input context.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

#include "distribute/distribute.hpp"
#include "mirrored_fixture.h"

namespace {

// Every int64 of every element (one component), in order, until the end.
std::vector<int64_t> Drain(const dist::Dataset& dataset) {
  dist::Iterator it = dataset.make_iterator().value();
  std::vector<int64_t> out;
  for (;;) {
    dist::Result<std::optional<std::vector<dist::Value>>> next = it.get_next_as_optional(1);
    EXPECT_TRUE(next.ok()) << next.status().to_string();
    if (!next.ok() || !next->has_value()) break;
    for (int64_t v : (**next)[0].data<int64_t>().value()) out.push_back(v);
  }
  return out;
}

using Ints = std::vector<int64_t>;

TEST(DatasetTest, RangeAndItsTransformations) {
  dist::Dataset ten = dist::Dataset::range(0, 10).value();
  EXPECT_EQ(ten.num_components().value(), 1);
  EXPECT_EQ(Drain(ten), (Ints{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(Drain(dist::Dataset::range(1, 10, 3).value()), (Ints{1, 4, 7}));
  EXPECT_EQ(Drain(ten.batch(4).value()), (Ints{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(Drain(ten.batch(4, true).value()), (Ints{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(Drain(ten.shard(3, 1).value()), (Ints{1, 4, 7}));
  EXPECT_EQ(Drain(ten.skip(2).value().take(3).value()), (Ints{2, 3, 4}));
  EXPECT_EQ(Drain(dist::Dataset::range(0, 3).value().repeat(2).value()), (Ints{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(Drain(ten.prefetch().value()), Drain(ten));
  // A shuffle keeps every element once, and a seed makes it repeatable.
  Ints shuffled = Drain(ten.shuffle(10, 7).value());
  EXPECT_EQ(shuffled, Drain(ten.shuffle(10, 7).value()));
  std::sort(shuffled.begin(), shuffled.end());
  EXPECT_EQ(shuffled, Drain(ten));
  EXPECT_EQ(Drain(ten.shuffle(1, 7).value()), Drain(ten));  // a buffer of one cannot reorder
}

TEST(DatasetTest, BatchesComeAsTensorsOfTheBatchSize) {
  dist::Iterator it = dist::Dataset::range(0, 10).value().batch(4).value().make_iterator().value();
  const std::vector<int64_t> expected_rows = {4, 4, 2};
  for (int64_t rows : expected_rows) {
    std::vector<dist::Value> element = it.get_next(1).value();
    ASSERT_EQ(element.size(), 1u);
    EXPECT_EQ(element[0].shape().value(), (Ints{rows}));
  }
  // The end, and again at every call after it.
  EXPECT_EQ(it.get_next(1).status().code(), DIST_OUT_OF_RANGE);
  EXPECT_EQ(it.get_next(1).status().code(), DIST_OUT_OF_RANGE);
  dist::Result<std::optional<std::vector<dist::Value>>> end = it.get_next_as_optional(1);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
  // Into caller-owned values (no allocation), and the counts the C call refuses.
  dist::Iterator again = dist::Dataset::range(0, 3).value().make_iterator().value();
  dist::Value slot[1];
  ASSERT_TRUE(again.get_next(slot).ok());
  EXPECT_EQ(slot[0].scalar<int64_t>().value(), 0);
  ASSERT_TRUE(again.get_next(slot).ok());  // the previous value is replaced
  EXPECT_EQ(slot[0].scalar<int64_t>().value(), 1);
  EXPECT_TRUE(again.get_next_as_optional(slot).value());
  EXPECT_FALSE(again.get_next_as_optional(slot).value());
  EXPECT_EQ(again.get_next(0).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(again.get_next(-1).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(again.get_next_as_optional(-1).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(again.get_next(dist::Span<dist::Value>()).code(), DIST_INVALID_ARGUMENT);
}

TEST(DatasetTest, TensorSlicesShareTheirComponents) {
  const int64_t shape[] = {3};
  const int64_t ids[] = {10, 11, 12};
  const float weights[] = {0.5f, 1.5f, 2.5f};
  dist::Value a = dist::tensor<int64_t>(ids, shape).value();
  dist::Value b = dist::tensor<float>(weights, shape).value();
  dist::Dataset slices = dist::Dataset::from_tensor_slices({a, b}).value();
  EXPECT_EQ(slices.num_components().value(), 2);
  dist::Iterator it = slices.make_iterator().value();
  for (int i = 0; i < 3; ++i) {
    std::vector<dist::Value> element = it.get_next(2).value();
    EXPECT_EQ(element[0].scalar<int64_t>().value(), ids[i]);
    EXPECT_EQ(element[1].scalar<float>().value(), weights[i]);
  }
  // The iterator asks for as many outputs as there are components.
  EXPECT_EQ(dist::Dataset::from_tensor_slices({a, b}).value().make_iterator().value().get_next(1).status().code(),
            DIST_INVALID_ARGUMENT);
}

TEST(DatasetTest, FileSourcesReadWhatWasWritten) {
  char path[] = "/tmp/dist_cpp_input_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const unsigned char bytes[] = {'h', 'd', 1, 2, 3, 4, 5, 6, 'f'};  // header 2, records of 3, footer 1
  ASSERT_EQ(write(fd, bytes, sizeof bytes), static_cast<ssize_t>(sizeof bytes));
  close(fd);
  const char* paths[] = {path};
  dist::Iterator it = dist::Dataset::from_fixed_length_records(paths, 3, 2, 1).value().make_iterator().value();
  for (int r = 0; r < 2; ++r) {
    std::vector<dist::Value> record = it.get_next(1).value();
    dist::Span<uint8_t> data = record[0].data<uint8_t>().value();
    ASSERT_EQ(data.size(), 3u);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(data[k], 1 + 3 * r + k);
  }
  EXPECT_EQ(it.get_next(1).status().code(), DIST_OUT_OF_RANGE);
  // Not TFRecord: the first get_next names the file (creation reads nothing yet).
  dist::Iterator bad = dist::Dataset::from_tfrecord_files(paths).value().make_iterator().value();
  const dist::Status status = bad.get_next(1).status();
  EXPECT_NE(status.code(), DIST_OK);
  EXPECT_NE(status.message().find(path), std::string::npos) << status.to_string();
  std::remove(path);
  // A record size of 0 is refused at creation.
  EXPECT_EQ(dist::Dataset::from_fixed_length_records(paths, 0).status().code(), DIST_INVALID_ARGUMENT);
  // Text lines without their terminators, each a uint8 [length] tensor.
  char text[] = "/tmp/dist_cpp_lines_XXXXXX";
  const int text_fd = mkstemp(text);
  ASSERT_GE(text_fd, 0);
  const char lines[] = "first\r\n\nthird line\n";
  ASSERT_EQ(write(text_fd, lines, sizeof lines - 1), static_cast<ssize_t>(sizeof lines - 1));
  close(text_fd);
  const char* text_paths[] = {text};
  dist::Iterator line_it = dist::Dataset::from_text_files(text_paths).value().make_iterator().value();
  for (const std::string expected : {"first", "", "third line"}) {
    std::vector<dist::Value> line = line_it.get_next(1).value();
    dist::Span<uint8_t> data = line[0].data<uint8_t>().value();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(data.data()), data.size()), expected);
  }
  EXPECT_EQ(line_it.get_next(1).status().code(), DIST_OUT_OF_RANGE);
  std::remove(text);
}

// A callable that counts its live copies, to see the dataset destroy the one it keeps.
struct Square {
  std::shared_ptr<std::atomic<int>> live;
  explicit Square(std::shared_ptr<std::atomic<int>> l) : live(std::move(l)) { ++*live; }
  Square(const Square& other) : live(other.live) { ++*live; }
  Square(Square&& other) noexcept : live(other.live) { ++*live; }
  ~Square() { --*live; }
  dist::Status operator()(dist::Args in, dist::Results out) const {
    const int64_t x = in[0].scalar<int64_t>().value();
    return out.set(0, dist::scalar<int64_t>(x * x).value());
  }
};

TEST(DatasetTest, MapRunsALambdaInOrderAndFreesItOnce) {
  auto live = std::make_shared<std::atomic<int>>(0);
  {
    dist::Dataset squares = dist::Dataset::range(0, 50).value().map(Square(live), 1, 4).value();
    EXPECT_EQ(live->load(), 1);  // only the dataset's copy is left
    Ints expected;
    for (int64_t x = 0; x < 50; ++x) expected.push_back(x * x);
    EXPECT_EQ(Drain(squares), expected);
  }
  EXPECT_EQ(live->load(), 0);
  // An iterator keeps the callable after its dataset is gone.
  {
    dist::Iterator it;
    {
      dist::Dataset squares = dist::Dataset::range(0, 5).value().map(Square(live), 1).value();
      it = squares.make_iterator().value();
    }
    EXPECT_EQ(live->load(), 1);
    EXPECT_EQ(it.get_next(1).value()[0].scalar<int64_t>().value(), 0);
    EXPECT_EQ(it.get_next(1).value()[0].scalar<int64_t>().value(), 1);
  }
  EXPECT_EQ(live->load(), 0);
  // A refused map destroys the callable too (the library never took it).
  EXPECT_EQ(dist::Dataset::range(0, 3).value().map(Square(live), 0).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::Dataset::range(0, 3).value().map(Square(live), 1, 0).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(live->load(), 0);
}

TEST(DatasetTest, AMapFunctionsFailureReachesGetNext) {
  dist::Dataset failing = dist::Dataset::range(0, 5).value().map(
      [](dist::Args in, dist::Results out) -> dist::Status {
        const int64_t x = in[0].scalar<int64_t>().value();
        if (x == 2) return dist::Status(DIST_DATA_LOSS, "element two is corrupt");
        return out.set(0, dist::scalar<int64_t>(x).value());
      },
      1).value();
  dist::Iterator it = failing.make_iterator().value();
  EXPECT_TRUE(it.get_next(1).ok());
  EXPECT_TRUE(it.get_next(1).ok());
  const dist::Status status = it.get_next(1).status();
  EXPECT_EQ(status.code(), DIST_DATA_LOSS);
  EXPECT_NE(status.message().find("element two is corrupt"), std::string::npos) << status.to_string();
#if DIST_CPP_EXCEPTIONS
  dist::Dataset throwing = dist::Dataset::range(0, 2).value().map(
      [](dist::Args, dist::Results) -> dist::Status { throw std::runtime_error("no squares today"); }, 1).value();
  const dist::Status thrown = throwing.make_iterator().value().get_next(1).status();
  EXPECT_EQ(thrown.code(), DIST_UNKNOWN);
  EXPECT_NE(thrown.message().find("no squares today"), std::string::npos) << thrown.to_string();
#endif
}

TEST(DatasetTest, AnEmptyHandleIsRefusedNotCrashed) {
  dist::Dataset moved = dist::Dataset::range(0, 3).value();
  dist::Dataset taken = std::move(moved);
  EXPECT_EQ(moved.make_iterator().status().code(), DIST_INVALID_ARGUMENT);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(moved.batch(2).status().code(), DIST_INVALID_ARGUMENT);         // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(dist::Iterator().get_next(1).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(Drain(taken), (Ints{0, 1, 2}));
}

// A generator of index * 10 for index < 4, counting its live copies.
struct Tens {
  explicit Tens(std::shared_ptr<std::atomic<int>> live) : live_(std::move(live)) { ++*live_; }
  Tens(const Tens& other) : live_(other.live_) { ++*live_; }
  ~Tens() { --*live_; }
  bool operator()(int64_t index, dist::Results out) const {
    if (index >= 4) return false;
    return out.set(0, dist::scalar<int64_t>(index * 10).value()).ok();
  }
  std::shared_ptr<std::atomic<int>> live_;
};

TEST(DatasetTest, AGeneratorLambdaMakesElementsByIndexAndIsFreedOnce) {
  auto live = std::make_shared<std::atomic<int>>(0);
  {
    dist::Dataset tens = dist::Dataset::from_generator(Tens(live), 1).value();
    EXPECT_EQ(live->load(), 1);
    EXPECT_EQ(tens.num_components().value(), 1);
    EXPECT_EQ(Drain(tens), (Ints{0, 10, 20, 30}));
    EXPECT_EQ(Drain(tens), (Ints{0, 10, 20, 30}));  // every iterator starts again at index 0
    EXPECT_EQ(Drain(tens.batch(3).value()), (Ints{0, 10, 20, 30}));
  }
  EXPECT_EQ(live->load(), 0);
  // A refused generator destroys the callable too.
  EXPECT_EQ(dist::Dataset::from_generator(Tens(live), 0).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(live->load(), 0);
  // Two components, from a lambda returning Result<bool>.
  dist::Dataset pairs = dist::Dataset::from_generator(
      [](int64_t index, dist::Results out) -> dist::Result<bool> {
        if (index == 3) return false;
        dist::Status first = out.set(0, dist::scalar<int64_t>(index).value());
        if (!first.ok()) return first;
        dist::Status second = out.set(1, dist::scalar<float>(0.5f * static_cast<float>(index)).value());
        if (!second.ok()) return second;
        return true;
      },
      2).value();
  dist::Iterator it = pairs.make_iterator().value();
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<dist::Value> element = it.get_next(2).value();
    EXPECT_EQ(element[0].scalar<int64_t>().value(), i);
    EXPECT_EQ(element[1].scalar<float>().value(), 0.5f * static_cast<float>(i));
  }
  EXPECT_EQ(it.get_next(2).status().code(), DIST_OUT_OF_RANGE);
}

TEST(DatasetTest, AGeneratorsFailureReachesGetNext) {
  dist::Dataset failing = dist::Dataset::from_generator(
      [](int64_t index, dist::Results out) -> dist::Result<bool> {
        if (index == 1) return dist::Status(DIST_UNAVAILABLE, "the sensor went away");
        return out.set(0, dist::scalar<int64_t>(index).value()).ok();
      },
      1).value();
  dist::Iterator it = failing.make_iterator().value();
  EXPECT_EQ(it.get_next(1).value()[0].scalar<int64_t>().value(), 0);
  const dist::Status status = it.get_next(1).status();
  EXPECT_EQ(status.code(), DIST_UNAVAILABLE);
  EXPECT_NE(status.message().find("the sensor went away"), std::string::npos) << status.to_string();
  // Returning true without setting the components is the library's error, not a crash.
  dist::Dataset empty = dist::Dataset::from_generator([](int64_t, dist::Results) { return true; }, 1).value();
  EXPECT_EQ(empty.make_iterator().value().get_next(1).status().code(), DIST_INVALID_ARGUMENT);
#if DIST_CPP_EXCEPTIONS
  dist::Dataset throwing = dist::Dataset::from_generator(
      [](int64_t, dist::Results) -> bool { throw std::runtime_error("no more frames"); }, 1).value();
  const dist::Status thrown = throwing.make_iterator().value().get_next(1).status();
  EXPECT_EQ(thrown.code(), DIST_UNKNOWN);
  EXPECT_NE(thrown.message().find("no more frames"), std::string::npos) << thrown.to_string();
#endif
}

TEST(InputContextTest, AnOwnedContextAnswersAndRefusesBadArguments) {
  dist::InputContext context = dist::InputContext::create(3, 1, 6).value();
  EXPECT_EQ(context.num_input_pipelines().value(), 3);
  EXPECT_EQ(context.input_pipeline_id().value(), 1);
  EXPECT_EQ(context.num_replicas_in_sync().value(), 6);
  EXPECT_EQ(context.per_replica_batch_size(12).value(), 2);
  EXPECT_EQ(context.per_replica_batch_size(7).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(context.view().input_pipeline_id().value(), 1);
  EXPECT_EQ(dist::InputContext::create(2, 2, 1).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::InputContext::create(0, 0, 1).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::InputContext().num_input_pipelines().status().code(), DIST_INVALID_ARGUMENT);
}

TEST(InputOptionsTest, SettersCheckTheirValues) {
  dist::InputOptions o = dist::InputOptions::create().value();
  EXPECT_TRUE(o.set_prefetch_depth(0).ok());
  EXPECT_EQ(o.set_prefetch_depth(-2).code(), DIST_INVALID_ARGUMENT);
  EXPECT_TRUE(o.set_replication_mode(DIST_INPUT_PER_WORKER).ok());
  EXPECT_EQ(o.set_replication_mode(7).code(), DIST_INVALID_ARGUMENT);
  EXPECT_TRUE(o.set_auto_shard_policy(DIST_AUTO_SHARD_DATA).ok());
  EXPECT_EQ(o.set_auto_shard_policy(9).code(), DIST_INVALID_ARGUMENT);
  EXPECT_TRUE(o.set_fetch_to_device(false).ok());
  EXPECT_TRUE(o.set_per_replica_batches(false).ok());
  EXPECT_TRUE(o.set_partial_batch_split(DIST_PARTIAL_BATCH_EVEN).ok());
  EXPECT_EQ(o.set_partial_batch_split(5).code(), DIST_INVALID_ARGUMENT);
}

// range(10).batch(4) over two replicas: [0 1][2 3], [4 5][6 7], then the partial batch
// in order with the full per-replica size, [8 9][] (the default), or [8][9] (EVEN).
class DistributeDatasetTest : public MirroredTest {};

std::vector<Ints> Steps(const dist::DistributedDataset& distributed) {
  dist::Iterator it = distributed.make_iterator().value();
  std::vector<Ints> steps;
  for (;;) {
    dist::Result<std::optional<std::vector<dist::Value>>> next = it.get_next_as_optional(1);
    EXPECT_TRUE(next.ok()) << next.status().to_string();
    if (!next.ok() || !next->has_value()) break;
    const dist::Value& per_replica = (**next)[0];
    EXPECT_EQ(per_replica.num_components().value(), 2);
    for (int32_t r = 0; r < 2; ++r) {
      dist::Value rows = per_replica.component(r).value();
      Ints values;
      for (int64_t v : rows.data<int64_t>().value()) values.push_back(v);
      steps.push_back(values);
    }
  }
  return steps;
}

TEST_F(DistributeDatasetTest, EachGlobalBatchIsSplitAcrossTheReplicas) {
  dist::Dataset batches = dist::Dataset::range(0, 10).value().batch(4).value();
  dist::DistributedDataset in_order = dist::distribute_dataset(strategy(), batches).value();
  EXPECT_EQ(in_order.num_components().value(), 1);
  EXPECT_EQ(Steps(in_order), (std::vector<Ints>{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {}}));
  dist::InputOptions even = dist::InputOptions::create().value();
  ASSERT_TRUE(even.set_partial_batch_split(DIST_PARTIAL_BATCH_EVEN).ok());
  EXPECT_EQ(Steps(dist::distribute_dataset(strategy(), batches, &even).value()),
            (std::vector<Ints>{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8}, {9}}));
  // A dataset of scalars is not batched: the first get_next says so.
  dist::DistributedDataset scalars = dist::distribute_dataset(strategy(), dist::Dataset::range(0, 4).value()).value();
  EXPECT_EQ(scalars.make_iterator().value().get_next(1).status().code(), DIST_INVALID_ARGUMENT);
  // An empty dataset handle is refused.
  EXPECT_EQ(dist::distribute_dataset(strategy(), dist::Dataset()).status().code(), DIST_INVALID_ARGUMENT);
}

// A plain function (not a lambda) as a dataset function.
dist::Result<dist::Dataset> EightInPairs(dist::InputContextView) { return dist::Dataset::range(0, 8).value().batch(2); }

// distribute_datasets_from_function: the lambda sees one pipeline of two replicas (or one
// per replica with PER_REPLICA) and batches by the per-replica size; the replicas take
// consecutive batches.
TEST_F(DistributeDatasetTest, ALambdaBuildsEachInputPipeline) {
  std::vector<std::vector<int64_t>> contexts;  // pipelines, id, replicas, per-replica batch
  auto build = [&](dist::InputContextView context) -> dist::Result<dist::Dataset> {
    const int32_t id = context.input_pipeline_id().value();
    contexts.push_back({context.num_input_pipelines().value(), id, context.num_replicas_in_sync().value(),
                        context.per_replica_batch_size(4).value()});
    return dist::Dataset::range(100 * id, 100 * id + 6).value().batch(context.per_replica_batch_size(4).value());
  };
  dist::DistributedDataset per_worker = dist::distribute_datasets_from_function(strategy(), build).value();
  EXPECT_EQ(contexts, (std::vector<std::vector<int64_t>>{{1, 0, 2, 2}}));
  EXPECT_EQ(Steps(per_worker), (std::vector<Ints>{{0, 1}, {2, 3}, {4, 5}, {}}));

  contexts.clear();
  dist::InputOptions per_replica = dist::InputOptions::create().value();
  ASSERT_TRUE(per_replica.set_replication_mode(DIST_INPUT_PER_REPLICA).ok());
  dist::DistributedDataset own = dist::distribute_datasets_from_function(strategy(), build, &per_replica).value();
  std::sort(contexts.begin(), contexts.end());
  EXPECT_EQ(contexts, (std::vector<std::vector<int64_t>>{{2, 0, 2, 2}, {2, 1, 2, 2}}));
  EXPECT_EQ(Steps(own), (std::vector<Ints>{{0, 1}, {100, 101}, {2, 3}, {102, 103}, {4, 5}, {104, 105}}));

  // The contrib iterators: the same splits.
  dist::Iterator from_fn = dist::make_input_fn_iterator(strategy(), build).value();
  std::vector<dist::Value> first = from_fn.get_next(1).value();
  EXPECT_EQ(first[0].component(1).value().data<int64_t>().value()[0], 2);
  dist::Iterator from_plain_function = dist::make_input_fn_iterator(strategy(), EightInPairs).value();
  EXPECT_EQ(from_plain_function.get_next(1).value()[0].component(1).value().data<int64_t>().value()[0], 2);
  EXPECT_EQ(Steps(dist::distribute_datasets_from_function(strategy(), EightInPairs).value()),
            (std::vector<Ints>{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  dist::Iterator from_dataset =
      dist::make_dataset_iterator(strategy(), dist::Dataset::range(0, 8).value().batch(4).value()).value();
  EXPECT_EQ(from_dataset.get_next(1).value()[0].component(1).value().data<int64_t>().value()[0], 2);
}

TEST_F(DistributeDatasetTest, ADatasetFunctionsFailureIsTheCallers) {
  const dist::Status refused =
      dist::distribute_datasets_from_function(strategy(), [](dist::InputContextView) -> dist::Result<dist::Dataset> {
        return dist::Status(DIST_NOT_FOUND, "no shard files for this worker");
      }).status();
  EXPECT_EQ(refused.code(), DIST_NOT_FOUND);
  EXPECT_NE(refused.message().find("no shard files for this worker"), std::string::npos) << refused.to_string();
  const dist::Status empty =
      dist::distribute_datasets_from_function(strategy(), [](dist::InputContextView) { return dist::Dataset(); })
          .status();
  EXPECT_EQ(empty.code(), DIST_INVALID_ARGUMENT);
  EXPECT_NE(empty.message().find("empty dist::Dataset"), std::string::npos) << empty.to_string();
#if DIST_CPP_EXCEPTIONS
  const dist::Status thrown =
      dist::make_input_fn_iterator(strategy(), [](dist::InputContextView) -> dist::Dataset {
        throw std::runtime_error("the input fn threw");
      }).status();
  EXPECT_EQ(thrown.code(), DIST_UNKNOWN);
  EXPECT_NE(thrown.message().find("the input fn threw"), std::string::npos) << thrown.to_string();
#endif
  EXPECT_EQ(dist::make_dataset_iterator(strategy(), dist::Dataset()).status().code(), DIST_INVALID_ARGUMENT);
}

}  // namespace
