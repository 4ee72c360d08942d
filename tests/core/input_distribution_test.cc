// Distributed input: splitting global batches across replicas (partial and empty batches),
// per-replica batches, dataset functions, InputContext, and auto-shard decisions. The
// expectations are the tf.distribute rules written out in each test.
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/device/local_devices.h"
#include "core/input/dataset.h"
#include "core/input/distributed_dataset.h"
#include "core/input/distribution.h"
#include "core/input/input_context.h"
#include "core/input/input_options.h"
#include "core/strategy/strategy.h"
#include "core/values/value.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"
#include "tests/core/strategy_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

// An int32 tensor of shape [rows, cols] (rank 1 when cols is 0) holding first, first+1, ...
Tensor Rows(int64_t rows, int64_t cols, int32_t first) {
  std::vector<int64_t> dims = {rows};
  if (cols > 0) dims.push_back(cols);
  const int64_t count = rows * (cols > 0 ? cols : 1);
  std::vector<int32_t> data(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) data[static_cast<size_t>(i)] = first + static_cast<int32_t>(i);
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(DType::kInt32);
  desc.dims = dims;
  desc.byte_size = data.size() * sizeof(int32_t);
  absl::StatusOr<Tensor> tensor = Tensor::Create(desc, data.data());
  EXPECT_TRUE(IsOk(tensor));
  return *tensor;
}

std::vector<int32_t> Contents(const Tensor& tensor) {
  std::vector<int32_t> out(tensor.byte_size() / sizeof(int32_t));
  if (!out.empty()) std::memcpy(out.data(), tensor.data(), tensor.byte_size());
  return out;
}

std::vector<int32_t> Iota(int32_t first, int32_t count) {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < count; ++i) out.push_back(first + i);
  return out;
}

// Elements from memory, optionally failing at one index, optionally "reading" files.
class FakeDataset : public Dataset {
 public:
  FakeDataset(std::vector<Element> elements, int64_t batch_size,
              std::vector<std::string> files = {}, int64_t fail_at = -1)
      : elements_(std::move(elements)),
        batch_size_(batch_size),
        files_(std::move(files)),
        fail_at_(fail_at) {}

  int32_t num_components() const override {
    return elements_.empty() ? 1 : static_cast<int32_t>(elements_.front().size());
  }

  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator(uint64_t) const override {
    class Iterator : public DatasetIterator {
     public:
      explicit Iterator(const FakeDataset* d) : d_(d) {}
      absl::StatusOr<bool> GetNext(Element* out) override {
        if (static_cast<int64_t>(next_) == d_->fail_at_) {
          return absl::DataLossError(absl::StrCat("element ", next_, " is corrupt"));
        }
        if (next_ >= d_->elements_.size()) return false;
        *out = d_->elements_[next_++];
        return true;
      }

     private:
      const FakeDataset* d_;
      size_t next_ = 0;
    };
    return std::unique_ptr<DatasetIterator>(new Iterator(this));
  }

  std::vector<std::string> SourceFiles() const override { return files_; }

  absl::StatusOr<std::shared_ptr<const Dataset>> WithSourceFiles(
      std::vector<std::string> files) const override {
    if (files_.empty()) return absl::FailedPreconditionError("reads no files");
    return std::shared_ptr<const Dataset>(
        std::make_shared<FakeDataset>(elements_, batch_size_, std::move(files), fail_at_));
  }

  int64_t batch_size() const override { return batch_size_; }

 private:
  std::vector<Element> elements_;
  int64_t batch_size_;
  std::vector<std::string> files_;
  int64_t fail_at_;
};

// Batches of `batch` rows over `total` rows (values 0..total-1), two components: [n] and
// [n, 2] (the second holding 100 + 2 * row, 101 + 2 * row).
std::vector<Element> Batches(int32_t total, int32_t batch) {
  std::vector<Element> out;
  for (int32_t start = 0; start < total; start += batch) {
    const int32_t n = std::min(batch, total - start);
    out.push_back({Rows(n, 0, start), Rows(n, 2, 100 + 2 * start)});
  }
  return out;
}

class InputDistributionTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(IsOk(SetLogicalCpuDeviceCount(4))); }

  static std::shared_ptr<Strategy> Mirrored(int32_t n) { return testing::MirroredOnCpus(n); }

  static InputOptions NoPrefetch() {
    InputOptions options;
    options.prefetch_depth = 0;
    return options;
  }

  // Every step of a pass: [step][component][replica] contents, and the first-dim sizes.
  struct Pass {
    std::vector<std::vector<std::vector<std::vector<int32_t>>>> contents;
    std::vector<std::vector<int64_t>> sizes;  // [step][replica], component 0
    std::vector<std::vector<std::string>> devices;  // [step][replica], component 0
  };

  static Pass Iterate(const DistributedDataset& dataset) {
    Pass pass;
    absl::StatusOr<std::unique_ptr<DistributedIterator>> iterator = dataset.MakeIterator();
    EXPECT_TRUE(IsOk(iterator));
    if (!iterator.ok()) return pass;
    for (int step = 0; step < 1000; ++step) {
      std::vector<Value> values;
      absl::StatusOr<bool> has = (*iterator)->GetNext(&values);
      EXPECT_TRUE(IsOk(has));
      if (!has.ok() || !*has) break;
      EXPECT_EQ(values.size(), static_cast<size_t>(dataset.num_components()));
      std::vector<std::vector<std::vector<int32_t>>> step_contents;
      std::vector<int64_t> sizes;
      std::vector<std::string> devices;
      for (size_t c = 0; c < values.size(); ++c) {
        if (dataset.num_replicas() == 1) {
          EXPECT_EQ(values[c].kind(), ValueKind::kTensor);
        } else {
          EXPECT_EQ(values[c].kind(), ValueKind::kPerReplica);
        }
        EXPECT_EQ(values[c].components().size(), static_cast<size_t>(dataset.num_replicas()));
        std::vector<std::vector<int32_t>> per_replica;
        for (const Tensor& t : values[c].components()) {
          per_replica.push_back(Contents(t));
          if (c == 0) {
            sizes.push_back(t.shape().dim(0));
            devices.push_back(t.device_name());
          }
        }
        step_contents.push_back(std::move(per_replica));
      }
      pass.contents.push_back(std::move(step_contents));
      pass.sizes.push_back(std::move(sizes));
      pass.devices.push_back(std::move(devices));
    }
    // The end repeats.
    std::vector<Value> values;
    absl::StatusOr<bool> again = (*iterator)->GetNext(&values);
    EXPECT_TRUE(IsOk(again));
    EXPECT_FALSE(again.ok() && *again);
    return pass;
  }
};

TEST_F(InputDistributionTest, GlobalBatchOfEightWithPartialSixSplitsFourAndTwo) {
  auto strategy = Mirrored(2);
  auto dataset = std::make_shared<FakeDataset>(Batches(14, 8), 8);
  auto distributed = DistributedDataset::FromDataset(*strategy, dataset, NoPrefetch());
  ASSERT_TRUE(IsOk(distributed));
  const Pass pass = Iterate(**distributed);
  ASSERT_EQ(pass.sizes.size(), 2u);
  EXPECT_EQ(pass.sizes[0], (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(pass.sizes[1], (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(pass.contents[0][0][0], Iota(0, 4));
  EXPECT_EQ(pass.contents[0][0][1], Iota(4, 4));
  EXPECT_EQ(pass.contents[1][0][0], Iota(8, 4));
  EXPECT_EQ(pass.contents[1][0][1], Iota(12, 2));
  // The [n, 2] component follows its rows.
  EXPECT_EQ(pass.contents[1][1][1], Iota(100 + 24, 4));
  // Each replica's batch is on its device.
  EXPECT_EQ(pass.devices[0][0], "/device:CPU:0");
  EXPECT_EQ(pass.devices[0][1], "/device:CPU:1");
}

TEST_F(InputDistributionTest, FourReplicasGetTwoTwoTwoAndAnEmptyBatch) {
  auto strategy = Mirrored(4);
  auto dataset = std::make_shared<FakeDataset>(Batches(14, 8), 8);
  auto distributed = DistributedDataset::FromDataset(*strategy, dataset, NoPrefetch());
  ASSERT_TRUE(IsOk(distributed));
  const Pass pass = Iterate(**distributed);
  ASSERT_EQ(pass.sizes.size(), 2u);
  EXPECT_EQ(pass.sizes[0], (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(pass.sizes[1], (std::vector<int64_t>{2, 2, 2, 0}));
  EXPECT_EQ(pass.contents[1][0][2], Iota(12, 2));
  EXPECT_TRUE(pass.contents[1][0][3].empty());
  EXPECT_TRUE(pass.contents[1][1][3].empty());
}

TEST_F(InputDistributionTest, EmptyBatchesKeepInnerDimensionsAndDtype) {
  auto strategy = Mirrored(4);
  // A last batch of one row over four replicas: 1, 0, 0, 0.
  auto dataset = std::make_shared<FakeDataset>(Batches(9, 8), 8);
  auto distributed = DistributedDataset::FromDataset(*strategy, dataset, NoPrefetch());
  ASSERT_TRUE(IsOk(distributed));
  auto iterator = (*distributed)->MakeIterator();
  ASSERT_TRUE(IsOk(iterator));
  std::vector<Value> values;
  ASSERT_TRUE(IsOk((*iterator)->GetNext(&values)));
  ASSERT_TRUE(*(*iterator)->GetNext(&values));
  ASSERT_EQ(values.size(), 2u);
  std::span<const Tensor> second = values[1].components();
  ASSERT_EQ(second.size(), 4u);
  EXPECT_EQ(second[0].shape().dims(), (distribute::Dims{1, 2}));
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ(second[r].shape().dims(), (distribute::Dims{0, 2}));
    EXPECT_EQ(second[r].dtype(), DType::kInt32);
    EXPECT_EQ(second[r].byte_size(), 0u);
  }
  absl::StatusOr<bool> end = (*iterator)->GetNext(&values);
  ASSERT_TRUE(IsOk(end));
  EXPECT_FALSE(*end);
}

TEST_F(InputDistributionTest, UnknownBatchSizeComesFromTheFirstElement) {
  auto strategy = Mirrored(2);
  auto dataset = std::make_shared<FakeDataset>(Batches(14, 8), 0);
  auto distributed = DistributedDataset::FromDataset(*strategy, dataset, NoPrefetch());
  ASSERT_TRUE(IsOk(distributed));
  const Pass pass = Iterate(**distributed);
  ASSERT_EQ(pass.sizes.size(), 2u);
  EXPECT_EQ(pass.sizes[1], (std::vector<int64_t>{4, 2}));
}

TEST_F(InputDistributionTest, OneReplicaGivesPlainTensors) {
  auto strategy = Mirrored(1);
  auto dataset = std::make_shared<FakeDataset>(Batches(10, 4), 4);
  auto distributed = DistributedDataset::FromDataset(*strategy, dataset, NoPrefetch());
  ASSERT_TRUE(IsOk(distributed));
  const Pass pass = Iterate(**distributed);
  ASSERT_EQ(pass.sizes.size(), 3u);
  EXPECT_EQ(pass.contents[2][0][0], Iota(8, 2));
}

TEST_F(InputDistributionTest, TwoIteratorsAreIndependentPasses) {
  auto strategy = Mirrored(2);
  auto dataset = std::make_shared<FakeDataset>(Batches(14, 8), 8);
  auto distributed = DistributedDataset::FromDataset(*strategy, dataset, NoPrefetch());
  ASSERT_TRUE(IsOk(distributed));
  auto first = (*distributed)->MakeIterator();
  ASSERT_TRUE(IsOk(first));
  std::vector<Value> values;
  ASSERT_TRUE(*(*first)->GetNext(&values));
  const Pass second = Iterate(**distributed);
  EXPECT_EQ(second.sizes.size(), 2u);
  ASSERT_TRUE(*(*first)->GetNext(&values));
  EXPECT_EQ(Contents(values[0].components()[1]), Iota(12, 2));
}

TEST_F(InputDistributionTest, ScalarsAndMismatchedFirstDimensionsAreErrors) {
  auto strategy = Mirrored(2);
  auto scalars = std::make_shared<FakeDataset>(
      std::vector<Element>{{Rows(2, 0, 0)}, {[] {
                                               Tensor::Description desc;
                                               desc.dtype = static_cast<int32_t>(DType::kInt32);
                                               desc.byte_size = 4;
                                               int32_t v = 7;
                                               return *Tensor::Create(desc, &v);
                                             }()}},
      0);
  auto distributed = DistributedDataset::FromDataset(*strategy, scalars, NoPrefetch());
  ASSERT_TRUE(IsOk(distributed));
  auto iterator = (*distributed)->MakeIterator();
  ASSERT_TRUE(IsOk(iterator));
  std::vector<Value> values;
  ASSERT_TRUE(IsOk((*iterator)->GetNext(&values)));
  EXPECT_TRUE(HasError((*iterator)->GetNext(&values), absl::StatusCode::kInvalidArgument,
                       {"scalar"}));

  auto mismatched = std::make_shared<FakeDataset>(
      std::vector<Element>{{Rows(4, 0, 0), Rows(3, 2, 0)}}, 4);
  auto distributed2 = DistributedDataset::FromDataset(*strategy, mismatched, NoPrefetch());
  ASSERT_TRUE(IsOk(distributed2));
  auto iterator2 = (*distributed2)->MakeIterator();
  ASSERT_TRUE(IsOk(iterator2));
  EXPECT_TRUE(HasError((*iterator2)->GetNext(&values), absl::StatusCode::kInvalidArgument,
                       {"different first dimensions", "4", "3"}));
}

TEST_F(InputDistributionTest, SourceErrorsPropagate) {
  auto strategy = Mirrored(2);
  auto dataset = std::make_shared<FakeDataset>(Batches(24, 8), 8, std::vector<std::string>{}, 1);
  auto distributed = DistributedDataset::FromDataset(*strategy, dataset, NoPrefetch());
  ASSERT_TRUE(IsOk(distributed));
  auto iterator = (*distributed)->MakeIterator();
  ASSERT_TRUE(IsOk(iterator));
  std::vector<Value> values;
  ASSERT_TRUE(*(*iterator)->GetNext(&values));
  EXPECT_TRUE(HasError((*iterator)->GetNext(&values), absl::StatusCode::kDataLoss, {"corrupt"}));
}

TEST_F(InputDistributionTest, PrefetchingGivesTheSameSteps) {
  auto strategy = Mirrored(4);
  InputOptions options;
  options.prefetch_depth = 2;
  auto dataset = std::make_shared<FakeDataset>(Batches(30, 8), 8);
  auto distributed = DistributedDataset::FromDataset(*strategy, dataset, options);
  ASSERT_TRUE(IsOk(distributed));
  const Pass pass = Iterate(**distributed);
  ASSERT_EQ(pass.sizes.size(), 4u);
  EXPECT_EQ(pass.sizes[3], (std::vector<int64_t>{2, 2, 2, 0}));
  EXPECT_EQ(pass.contents[3][0][2], Iota(28, 2));
}

TEST_F(InputDistributionTest, PerReplicaBatchesTakeConsecutiveBatchesAndEndTogether) {
  auto strategy = Mirrored(2);
  InputOptions options = NoPrefetch();
  options.per_replica_batches = true;
  // Batches of 4 rows: [0..3], [4..7], [8..11], [12..14].
  auto dataset = std::make_shared<FakeDataset>(Batches(15, 4), 4);
  auto distributed = DistributedDataset::FromDataset(*strategy, dataset, options);
  ASSERT_TRUE(IsOk(distributed));
  const Pass pass = Iterate(**distributed);
  ASSERT_EQ(pass.sizes.size(), 2u);
  EXPECT_EQ(pass.sizes[0], (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(pass.contents[0][0][0], Iota(0, 4));
  EXPECT_EQ(pass.contents[0][0][1], Iota(4, 4));
  EXPECT_EQ(pass.sizes[1], (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(pass.contents[1][0][0], Iota(8, 4));
  EXPECT_EQ(pass.contents[1][0][1], Iota(12, 3));
}

TEST_F(InputDistributionTest, PerReplicaBatchesPadTheReplicaWithoutABatch) {
  auto strategy = Mirrored(2);
  InputOptions options = NoPrefetch();
  options.per_replica_batches = true;
  auto dataset = std::make_shared<FakeDataset>(Batches(10, 4), 4);  // 4, 4, 2
  auto distributed = DistributedDataset::FromDataset(*strategy, dataset, options);
  ASSERT_TRUE(IsOk(distributed));
  const Pass pass = Iterate(**distributed);
  ASSERT_EQ(pass.sizes.size(), 2u);
  EXPECT_EQ(pass.sizes[1], (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(pass.contents[1][0][0], Iota(8, 2));
  EXPECT_EQ(pass.devices[1][1], "/device:CPU:1");
}

TEST_F(InputDistributionTest, PerWorkerFunctionIsCalledOnceAndReplicasTakeConsecutiveBatches) {
  auto strategy = Mirrored(2);
  std::vector<std::tuple<int32_t, int32_t, int32_t>> calls;
  auto distributed = DistributedDataset::FromFunction(
      *strategy,
      [&](const InputContext& context) -> absl::StatusOr<DatasetPtr> {
        calls.emplace_back(context.num_input_pipelines(), context.input_pipeline_id(),
                           context.num_replicas_in_sync());
        return std::make_shared<FakeDataset>(Batches(12, 4), 4);
      },
      NoPrefetch());
  ASSERT_TRUE(IsOk(distributed));
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], std::make_tuple(1, 0, 2));
  const Pass pass = Iterate(**distributed);
  ASSERT_EQ(pass.sizes.size(), 2u);
  EXPECT_EQ(pass.contents[0][0][1], Iota(4, 4));
  EXPECT_EQ(pass.sizes[1], (std::vector<int64_t>{4, 0}));
}

TEST_F(InputDistributionTest, PerReplicaFunctionGivesEachReplicaItsOwnDataset) {
  auto strategy = Mirrored(3);
  InputOptions options = NoPrefetch();
  options.replication_mode = InputReplicationMode::kPerReplica;
  std::vector<std::tuple<int32_t, int32_t, int32_t>> calls;
  auto distributed = DistributedDataset::FromFunction(
      *strategy,
      [&](const InputContext& context) -> absl::StatusOr<DatasetPtr> {
        calls.emplace_back(context.num_input_pipelines(), context.input_pipeline_id(),
                           context.num_replicas_in_sync());
        // Pipeline i has i + 1 batches of 2 rows starting at 1000 * i.
        std::vector<Element> batches;
        const int32_t id = context.input_pipeline_id();
        for (int32_t b = 0; b <= id; ++b) {
          batches.push_back({Rows(2, 0, 1000 * id + 2 * b), Rows(2, 2, 0)});
        }
        return std::make_shared<FakeDataset>(std::move(batches), 2);
      },
      options);
  ASSERT_TRUE(IsOk(distributed));
  ASSERT_EQ(calls.size(), 3u);
  for (int32_t r = 0; r < 3; ++r) EXPECT_EQ(calls[r], std::make_tuple(3, r, 3));
  const Pass pass = Iterate(**distributed);
  ASSERT_EQ(pass.sizes.size(), 3u);
  EXPECT_EQ(pass.contents[0][0][2], Iota(2000, 2));
  EXPECT_EQ(pass.sizes[1], (std::vector<int64_t>{0, 2, 2}));
  EXPECT_EQ(pass.sizes[2], (std::vector<int64_t>{0, 0, 2}));
  EXPECT_EQ(pass.contents[2][0][2], Iota(2004, 2));
}

TEST_F(InputDistributionTest, FunctionErrorsAndDisagreeingDatasetsFail) {
  auto strategy = Mirrored(2);
  InputOptions options = NoPrefetch();
  options.replication_mode = InputReplicationMode::kPerReplica;
  EXPECT_TRUE(HasError(DistributedDataset::FromFunction(
                           *strategy,
                           [](const InputContext&) -> absl::StatusOr<DatasetPtr> {
                             return absl::NotFoundError("no such file");
                           },
                           options),
                       absl::StatusCode::kNotFound, {"no such file"}));
  EXPECT_TRUE(HasError(
      DistributedDataset::FromFunction(
          *strategy,
          [](const InputContext& context) -> absl::StatusOr<DatasetPtr> {
            if (context.input_pipeline_id() == 0) {
              return std::make_shared<FakeDataset>(Batches(4, 2), 2);
            }
            return std::make_shared<FakeDataset>(std::vector<Element>{{Rows(2, 0, 0)}}, 2);
          },
          options),
      absl::StatusCode::kInvalidArgument, {"components"}));
}

TEST_F(InputDistributionTest, PerReplicaBatchSizeDividesOrFails) {
  const InputContext context(1, 0, 4);
  EXPECT_EQ(*context.PerReplicaBatchSize(64), 16);
  EXPECT_EQ(*context.PerReplicaBatchSize(0), 0);
  EXPECT_TRUE(HasError(context.PerReplicaBatchSize(10), absl::StatusCode::kInvalidArgument,
                       {"10", "4"}));
  EXPECT_TRUE(HasError(context.PerReplicaBatchSize(-4), absl::StatusCode::kInvalidArgument));
}

// TF 2.x (PartialBatchSplit::kEven): a partial batch of p rows gives each replica
// ceil(p / replicas) rows, in order. TF: list(strategy.experimental_distribute_dataset(
// tf.data.Dataset.range(10).batch(4))) over 2 replicas ends with [8] and [9]; a last batch
// of 6 of 8 gives 3 + 3; over 4 replicas ceil(6 / 4) = 2: 2 + 2 + 2 + 0.
TEST_F(InputDistributionTest, EvenPartialBatchSplitFollowsTf2) {
  InputOptions options = NoPrefetch();
  options.partial_batch_split = PartialBatchSplit::kEven;
  // `total` rows batched by `batch`, over `replicas`.
  auto pass_of = [&](int32_t total, int32_t batch, int32_t replicas) {
    auto dataset = std::make_shared<FakeDataset>(Batches(total, batch), batch);
    auto distributed = DistributedDataset::FromDataset(*Mirrored(replicas), dataset, options);
    EXPECT_TRUE(IsOk(distributed));
    return distributed.ok() ? Iterate(**distributed) : Pass{};
  };
  const Pass range = pass_of(10, 4, 2);
  ASSERT_EQ(range.sizes.size(), 3u);
  EXPECT_EQ(range.sizes[0], (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(range.sizes[2], (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(range.contents[2][0][0], Iota(8, 1));
  EXPECT_EQ(range.contents[2][0][1], Iota(9, 1));
  const Pass two = pass_of(14, 8, 2);
  ASSERT_EQ(two.sizes.size(), 2u);
  EXPECT_EQ(two.sizes[0], (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(two.sizes[1], (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(two.contents[1][0][1], Iota(11, 3));
  const Pass four = pass_of(14, 8, 4);
  ASSERT_EQ(four.sizes.size(), 2u);
  EXPECT_EQ(four.sizes[1], (std::vector<int64_t>{2, 2, 2, 0}));
}

// Across workers each worker splits the same global batch and keeps its replicas' rows
// (first_replica of replicas_in_sync), so a worker's replicas get what they would in one
// process with all the replicas. A last batch of 3 of a global batch of 8 over 2 replicas:
// even 2 + 1, in order 3 + 0; over 4 replicas: even 1 + 1 + 1 + 0.
TEST_F(InputDistributionTest, EvenPartialBatchSplitAcrossWorkers) {
  const std::vector<DeviceSpec> two_local = {DeviceSpec{}.WithDefaults(),
                                             DeviceSpec{}.WithDefaults()};
  const std::vector<DeviceSpec> one_local = {DeviceSpec{}.WithDefaults()};
  auto rows_of = [](const std::vector<Element>& split) {
    std::vector<int64_t> out;
    for (const Element& e : split) out.push_back(e[0].shape().dim(0));
    return out;
  };
  const Element three = {Rows(3, 0, 0)};
  // Worker 1 of 2, one replica each: global replica 1 of 2.
  auto even = SplitBatch(three, 4, one_local, false, 1, 2, PartialBatchSplit::kEven);
  auto in_order = SplitBatch(three, 4, one_local, false, 1, 2, PartialBatchSplit::kInOrder);
  ASSERT_TRUE(IsOk(even));
  ASSERT_TRUE(IsOk(in_order));
  EXPECT_EQ(rows_of(*even), (std::vector<int64_t>{1}));
  EXPECT_EQ(Contents((*even)[0][0]), Iota(2, 1));
  EXPECT_EQ(rows_of(*in_order), (std::vector<int64_t>{0}));
  // Worker 1 of 2 with 2 replicas each (replicas 2 and 3 of 4), 6 rows of 8: 2 + 2 + 2 + 0
  // either way; 3 rows: even 1 + 1 + 1 + 0 gives this worker [2] and [].
  const Element six = {Rows(6, 0, 0)};
  auto six_even = SplitBatch(six, 2, two_local, false, 2, 4, PartialBatchSplit::kEven);
  ASSERT_TRUE(IsOk(six_even));
  EXPECT_EQ(rows_of(*six_even), (std::vector<int64_t>{2, 0}));
  auto three_even = SplitBatch(three, 2, two_local, false, 2, 4, PartialBatchSplit::kEven);
  ASSERT_TRUE(IsOk(three_even));
  EXPECT_EQ(rows_of(*three_even), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(Contents((*three_even)[0][0]), Iota(2, 1));
}

TEST_F(InputDistributionTest, PartialBatchSplitOptionIsValidated) {
  InputOptions options;
  options.partial_batch_split = static_cast<PartialBatchSplit>(2);
  EXPECT_TRUE(HasError(ValidateInputOptions(options), absl::StatusCode::kInvalidArgument,
                       {"partial batch split 2"}));
  EXPECT_TRUE(IsOk(PartialBatchSplitFromInt(1)));
  EXPECT_FALSE(PartialBatchSplitFromInt(-1).ok());
}

TEST_F(InputDistributionTest, SplitBatchSizeRoundsUp) {
  EXPECT_EQ(SplitBatchSize(8, 2), 4);
  EXPECT_EQ(SplitBatchSize(8, 3), 3);
  EXPECT_EQ(SplitBatchSize(7, 4), 2);
  EXPECT_EQ(SplitBatchSize(0, 4), 0);
}

// ---- Auto-sharding ----

std::vector<int32_t> FirstComponents(const DatasetPtr& dataset) {
  std::vector<int32_t> out;
  auto iterator = dataset->MakeIterator(0);
  EXPECT_TRUE(IsOk(iterator));
  Element element;
  while (true) {
    absl::StatusOr<bool> has = (*iterator)->GetNext(&element);
    EXPECT_TRUE(IsOk(has));
    if (!has.ok() || !*has) break;
    for (int32_t v : Contents(element[0])) out.push_back(v);
  }
  return out;
}

std::vector<Element> Singles(int32_t n) {
  std::vector<Element> out;
  for (int32_t i = 0; i < n; ++i) out.push_back({Rows(1, 0, i)});
  return out;
}

TEST_F(InputDistributionTest, OnePipelineNeverShards) {
  auto files = std::make_shared<FakeDataset>(Singles(4), 0, std::vector<std::string>{"a"});
  for (AutoShardPolicy policy : {AutoShardPolicy::kOff, AutoShardPolicy::kAuto,
                                 AutoShardPolicy::kFile, AutoShardPolicy::kData}) {
    absl::StatusOr<DatasetPtr> sharded = AutoShard(files, policy, 1, 0);
    ASSERT_TRUE(IsOk(sharded)) << AutoShardPolicyName(policy);
    EXPECT_EQ(sharded->get(), files.get()) << AutoShardPolicyName(policy);
  }
}

TEST_F(InputDistributionTest, OffKeepsTheDatasetOnEveryPipeline) {
  auto files = std::make_shared<FakeDataset>(Singles(4), 0, std::vector<std::string>{"a", "b"});
  absl::StatusOr<DatasetPtr> sharded = AutoShard(files, AutoShardPolicy::kOff, 2, 1);
  ASSERT_TRUE(IsOk(sharded));
  EXPECT_EQ(sharded->get(), files.get());
}

TEST_F(InputDistributionTest, FileShardingTakesEveryNthFile) {
  auto files = std::make_shared<FakeDataset>(
      Singles(4), 0, std::vector<std::string>{"f0", "f1", "f2", "f3", "f4"});
  absl::StatusOr<DatasetPtr> sharded = AutoShard(files, AutoShardPolicy::kFile, 2, 1);
  ASSERT_TRUE(IsOk(sharded));
  EXPECT_EQ((*sharded)->SourceFiles(), (std::vector<std::string>{"f1", "f3"}));
  absl::StatusOr<DatasetPtr> first = AutoShard(files, AutoShardPolicy::kFile, 2, 0);
  ASSERT_TRUE(IsOk(first));
  EXPECT_EQ((*first)->SourceFiles(), (std::vector<std::string>{"f0", "f2", "f4"}));
}

TEST_F(InputDistributionTest, FileShardingNeedsAFilePerPipeline) {
  auto files = std::make_shared<FakeDataset>(Singles(4), 0, std::vector<std::string>{"f0", "f1"});
  EXPECT_TRUE(HasError(AutoShard(files, AutoShardPolicy::kFile, 3, 0),
                       absl::StatusCode::kInvalidArgument, {"at least 3 files", "reads 2"}));
  auto memory = std::make_shared<FakeDataset>(Singles(4), 0);
  EXPECT_TRUE(HasError(AutoShard(memory, AutoShardPolicy::kFile, 2, 0),
                       absl::StatusCode::kInvalidArgument, {"reads 0"}));
}

TEST_F(InputDistributionTest, AutoPicksFileForFilesAndDataOtherwise) {
  auto files = std::make_shared<FakeDataset>(Singles(4), 0,
                                             std::vector<std::string>{"f0", "f1", "f2"});
  absl::StatusOr<DatasetPtr> by_file = AutoShard(files, AutoShardPolicy::kAuto, 3, 2);
  ASSERT_TRUE(IsOk(by_file));
  EXPECT_EQ((*by_file)->SourceFiles(), (std::vector<std::string>{"f2"}));
  // Every element still there: the file list, not the elements, was sharded.
  EXPECT_EQ(FirstComponents(*by_file), Iota(0, 4));

  auto memory = std::make_shared<FakeDataset>(Singles(7), 0);
  absl::StatusOr<DatasetPtr> by_data = AutoShard(memory, AutoShardPolicy::kAuto, 3, 1);
  ASSERT_TRUE(IsOk(by_data));
  EXPECT_EQ(FirstComponents(*by_data), (std::vector<int32_t>{1, 4}));

  // Fewer files than pipelines: AUTO falls back to DATA.
  absl::StatusOr<DatasetPtr> fallback = AutoShard(files, AutoShardPolicy::kAuto, 4, 3);
  ASSERT_TRUE(IsOk(fallback));
  EXPECT_EQ(FirstComponents(*fallback), (std::vector<int32_t>{3}));
}

TEST_F(InputDistributionTest, DataShardingKeepsEveryNthElement) {
  auto memory = std::make_shared<FakeDataset>(Singles(7), 0, std::vector<std::string>{"f0"});
  absl::StatusOr<DatasetPtr> sharded = AutoShard(memory, AutoShardPolicy::kData, 2, 0);
  ASSERT_TRUE(IsOk(sharded));
  EXPECT_EQ(FirstComponents(*sharded), (std::vector<int32_t>{0, 2, 4, 6}));
  EXPECT_TRUE(HasError(AutoShard(memory, AutoShardPolicy::kData, 2, 2),
                       absl::StatusCode::kInvalidArgument, {"input_pipeline_id"}));
}

TEST_F(InputDistributionTest, FromDatasetAppliesThePipelineShare) {
  auto strategy = Mirrored(2);
  InputOptions options = NoPrefetch();
  options.auto_shard_policy = AutoShardPolicy::kFile;
  auto files = std::make_shared<FakeDataset>(Batches(8, 4), 4, std::vector<std::string>{"f0"});
  EXPECT_TRUE(HasError(DistributedDataset::FromDataset(*strategy, files, options, 2, 0),
                       absl::StatusCode::kInvalidArgument, {"FILE auto-sharding"}));
  options.auto_shard_policy = AutoShardPolicy::kData;
  // DATA between 2 pipelines of 2 replicas: pipeline 1 reads every global batch of 4 rows
  // and its replicas (2 and 3 of 4) take rows 2 and 3 of each, as in one process.
  auto distributed = DistributedDataset::FromDataset(*strategy, files, options, 2, 1);
  ASSERT_TRUE(IsOk(distributed));
  const Pass pass = Iterate(**distributed);
  ASSERT_EQ(pass.sizes.size(), 2u);
  EXPECT_EQ(pass.contents[0][0][0], Iota(2, 1));
  EXPECT_EQ(pass.contents[0][0][1], Iota(3, 1));
  EXPECT_EQ(pass.contents[1][0][0], Iota(6, 1));
  EXPECT_EQ(pass.contents[1][0][1], Iota(7, 1));
}

TEST_F(InputDistributionTest, OptionsAreValidated) {
  auto strategy = Mirrored(2);
  auto dataset = std::make_shared<FakeDataset>(Batches(8, 4), 4);
  InputOptions options;
  options.prefetch_depth = -1;
  EXPECT_TRUE(HasError(DistributedDataset::FromDataset(*strategy, dataset, options),
                       absl::StatusCode::kInvalidArgument, {"prefetch"}));
  EXPECT_TRUE(HasError(InputReplicationModeFromInt(3), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(AutoShardPolicyFromInt(4), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(HasError(DistributedDataset::FromDataset(*strategy, nullptr, InputOptions{}),
                       absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace distribute
