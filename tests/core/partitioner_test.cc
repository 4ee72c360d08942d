// TF's partitioners and shard layout, checked against shard counts and sizes worked out by
// hand from TF's formulas (partitioned_variables.py, variable_scope._iter_slices), and the
// split / concatenation of a sharded variable checked element by element against row-major
// index arithmetic.
#include "core/ps/partitioner.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/ps/names.h"
#include "core/ps/sharded_tensor.h"
#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"

namespace distribute::ps {
namespace {

using ::distribute::testing::AllDTypes;
using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::SizeOf;
using ::distribute::testing::ZeroTensor;

Shape MakeShape(std::vector<int64_t> dims) { return *Shape::Make(dims); }

int64_t Count(const Partitioner& p, DType dtype, std::vector<int64_t> dims) {
  absl::StatusOr<int64_t> count = ShardCount(p, dtype, MakeShape(dims));
  EXPECT_TRUE(IsOk(count));
  return count.ok() ? *count : -1;
}

TEST(PartitionerTest, FixedSizeIsMinOfShardsAndAxisSize) {
  // partitions[axis] = min(num_shards, shape[axis])
  EXPECT_EQ(Count(Partitioner::FixedSize(3), DType::kFloat32, {10, 3}), 3);
  EXPECT_EQ(Count(Partitioner::FixedSize(20), DType::kFloat32, {10}), 10);
  EXPECT_EQ(Count(Partitioner::FixedSize(2, 1), DType::kFloat32, {2, 5}), 2);
  EXPECT_EQ(Count(Partitioner::FixedSize(1), DType::kInt8, {7}), 1);
}

TEST(PartitionerTest, MinMaxFollowsTheBytesPerSlice) {
  // max(1, min(shape[axis], max_partitions, ceil(num_elements * size / min_slice_size)))
  // TF's docstring: float32 [1024, 1024] is 4 MiB = 16 slices of 256 KiB.
  EXPECT_EQ(Count(Partitioner::MinMax(32), DType::kFloat32, {1024, 1024}), 16);
  EXPECT_EQ(Count(Partitioner::MinMax(8), DType::kFloat32, {1024, 1024}), 8);
  // float64 [3, 1000] = 24000 bytes; ceil(24000 / 10000) = 3.
  EXPECT_EQ(Count(Partitioner::MinMax(10, 0, 10000), DType::kFloat64, {3, 1000}), 3);
  // ... but only 2 rows to split: min(2, 10, 3) = 2.
  EXPECT_EQ(Count(Partitioner::MinMax(10, 0, 10000), DType::kFloat64, {2, 1000}), 2);
  // 24000 bytes along axis 1 (1000 columns): 3.
  EXPECT_EQ(Count(Partitioner::MinMax(10, 1, 10000), DType::kFloat64, {3, 1000}), 3);
  // 20 bytes with the default 256 KiB minimum: ceil(20 / 262144) = 1.
  EXPECT_EQ(Count(Partitioner::MinMax(4), DType::kFloat32, {5}), 1);
  // An exact multiple does not round up: 4 * 8 * 4 = 128 bytes / 32 = 4.
  EXPECT_EQ(Count(Partitioner::MinMax(100, 0, 32), DType::kFloat32, {4, 8}), 4);
  // An empty variable still makes one shard (max(1, 0)).
  EXPECT_EQ(Count(Partitioner::MinMax(4), DType::kFloat32, {0, 4}), 1);
}

TEST(PartitionerTest, VariableAxisSizeKeepsShardsUnderTheByteBound) {
  // bytes_per_slice = num_elements / shape[axis] * size; slices_per_shard =
  // max(1, floor(max_shard_bytes / bytes_per_slice)); shards = ceil(shape[axis] /
  // slices_per_shard), at most max_shards.
  // float32 [100, 10]: a row is 40 bytes. 400 / 40 = 10 rows per shard: 10 shards.
  EXPECT_EQ(Count(Partitioner::VariableAxisSize(400), DType::kFloat32, {100, 10}), 10);
  // 390 / 40 = 9.75 -> 9 rows per shard: ceil(100 / 9) = 12 shards.
  EXPECT_EQ(Count(Partitioner::VariableAxisSize(390), DType::kFloat32, {100, 10}), 12);
  EXPECT_EQ(Count(Partitioner::VariableAxisSize(390, 0, 5), DType::kFloat32, {100, 10}), 5);
  // A bound below one row still puts one row in each shard: 100 shards.
  EXPECT_EQ(Count(Partitioner::VariableAxisSize(10), DType::kFloat32, {100, 10}), 100);
  // Along axis 1 a slice is a column of 100 floats = 400 bytes: 1000 / 400 = 2 per shard.
  EXPECT_EQ(Count(Partitioner::VariableAxisSize(1000, 1), DType::kFloat32, {100, 10}), 5);
  // float16 [6]: a slice is 2 bytes, 5 / 2 = 2 per shard: 3 shards.
  EXPECT_EQ(Count(Partitioner::VariableAxisSize(5), DType::kFloat16, {6}), 3);
}

TEST(PartitionerTest, RefusesWhatTfRefuses) {
  const Shape matrix = MakeShape({4, 4});
  EXPECT_TRUE(HasError(ShardCount(Partitioner::FixedSize(2), DType::kFloat32, Shape()),
                       absl::StatusCode::kInvalidArgument, {"rank at least 1"}));
  EXPECT_TRUE(HasError(ShardCount(Partitioner::FixedSize(2, 2), DType::kFloat32, matrix),
                       absl::StatusCode::kInvalidArgument, {"axis 2", "[4, 4]"}));
  EXPECT_TRUE(HasError(ShardCount(Partitioner::FixedSize(2), DType::kFloat32, MakeShape({0, 4})),
                       absl::StatusCode::kInvalidArgument, {"zero partitions"}));
  EXPECT_TRUE(HasError(ShardCount(Partitioner::FixedSize(0), DType::kFloat32, matrix),
                       absl::StatusCode::kInvalidArgument, {"num_shards"}));
  EXPECT_TRUE(HasError(ShardCount(Partitioner::FixedSize(2, -1), DType::kFloat32, matrix),
                       absl::StatusCode::kInvalidArgument, {"axis"}));
  EXPECT_TRUE(HasError(ShardCount(Partitioner::MinMax(0), DType::kFloat32, matrix),
                       absl::StatusCode::kInvalidArgument, {"max_partitions"}));
  EXPECT_TRUE(HasError(ShardCount(Partitioner::MinMax(2, 0, 0), DType::kFloat32, matrix),
                       absl::StatusCode::kInvalidArgument, {"min_slice_size"}));
  EXPECT_TRUE(HasError(ShardCount(Partitioner::VariableAxisSize(0), DType::kFloat32, matrix),
                       absl::StatusCode::kInvalidArgument, {"max_shard_bytes"}));
  EXPECT_TRUE(HasError(ShardCount(Partitioner::VariableAxisSize(8, 0, -1), DType::kFloat32, matrix),
                       absl::StatusCode::kInvalidArgument, {"max_shards"}));
  EXPECT_TRUE(HasError(ShardCount(Partitioner::VariableAxisSize(8), DType::kFloat32, MakeShape({4, 0})),
                       absl::StatusCode::kInvalidArgument, {"without elements"}));
  Partitioner unknown;
  unknown.kind = static_cast<PartitionerKind>(7);
  EXPECT_TRUE(HasError(ShardCount(unknown, DType::kFloat32, matrix),
                       absl::StatusCode::kInvalidArgument, {"unknown"}));
}

TEST(PartitionerTest, ShardCountIsBounded) {
  // One byte per shard of a 5000-element int8 vector would make 5000 shards.
  EXPECT_TRUE(HasError(ShardCount(Partitioner::VariableAxisSize(1), DType::kInt8, MakeShape({5000})),
                       absl::StatusCode::kInvalidArgument, {"5000 shards", "4096"}));
  EXPECT_EQ(Count(Partitioner::VariableAxisSize(1), DType::kInt8, {4096}), 4096);
}

TEST(PartitionerTest, LayoutGivesTheFirstShardsTheRemainder) {
  // dim // n rows each, the first dim % n shards one more.
  absl::StatusOr<ShardLayout> layout = LayoutShards(MakeShape({11, 2}), 0, 4);
  ASSERT_TRUE(IsOk(layout));
  EXPECT_EQ(layout->sizes, (std::vector<int64_t>{3, 3, 3, 2}));
  EXPECT_EQ(layout->offsets, (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(layout->ShardShape(3).dims(), (distribute::Dims{2, 2}));

  layout = LayoutShards(MakeShape({2, 10, 3}), 1, 3);
  ASSERT_TRUE(IsOk(layout));
  EXPECT_EQ(layout->sizes, (std::vector<int64_t>{4, 3, 3}));
  EXPECT_EQ(layout->offsets, (std::vector<int64_t>{0, 4, 7}));
  EXPECT_EQ(layout->ShardShape(0).dims(), (distribute::Dims{2, 4, 3}));

  layout = Partition(Partitioner::FixedSize(3), DType::kFloat32, MakeShape({10, 3}));
  ASSERT_TRUE(IsOk(layout));
  EXPECT_EQ(layout->sizes, (std::vector<int64_t>{4, 3, 3}));

  EXPECT_TRUE(HasError(LayoutShards(MakeShape({3}), 0, 4), absl::StatusCode::kInvalidArgument,
                       {"4 shards"}));
  EXPECT_TRUE(HasError(LayoutShards(MakeShape({3}), 0, 0), absl::StatusCode::kInvalidArgument));
  EXPECT_TRUE(IsOk(LayoutShards(MakeShape({0}), 0, 1)));
}

TEST(PartitionerTest, ShardNamesAreTfs) {
  EXPECT_EQ(ShardName("dense/kernel", 0), "dense/kernel/part_0");
  EXPECT_EQ(ShardName("w", 12), "w/part_12");
  EXPECT_EQ(PartitionerName(Partitioner::FixedSize(3, 1)), "fixed_size_partitioner(num_shards=3, axis=1)");
}

// A tensor of `dims` whose element bytes are a pattern of its byte index, so every byte
// of every element is distinguishable.
Tensor Patterned(DType dtype, std::vector<int64_t> dims) {
  Tensor t = ZeroTensor(dtype, dims);
  unsigned char* bytes = static_cast<unsigned char*>(t.data());
  for (size_t i = 0; i < t.byte_size(); ++i) bytes[i] = static_cast<unsigned char>(i * 7 + 3);
  return t;
}

// The bytes of element (a, b, c) of a row-major [A, B, C] tensor.
const unsigned char* At(const Tensor& t, int64_t a, int64_t b, int64_t c) {
  const Shape& s = t.shape();
  const size_t index = static_cast<size_t>((a * s.dim(1) + b) * s.dim(2) + c);
  return static_cast<const unsigned char*>(t.data()) + index * SizeOf(t.dtype());
}

TEST(ShardedTensorTest, SplitAndConcatenateEveryDtypeAndAxis) {
  for (DType dtype : AllDTypes()) {
    for (int32_t axis = 0; axis < 3; ++axis) {
      const Tensor full = Patterned(dtype, {3, 5, 4});
      const int64_t shards = axis == 1 ? 3 : 2;
      absl::StatusOr<ShardLayout> layout = LayoutShards(full.shape(), axis, shards);
      ASSERT_TRUE(IsOk(layout));
      absl::StatusOr<std::vector<Tensor>> parts = SplitIntoShards(full, *layout);
      ASSERT_TRUE(IsOk(parts));
      ASSERT_EQ(parts->size(), static_cast<size_t>(shards));
      for (int64_t s = 0; s < shards; ++s) {
        const Tensor& part = (*parts)[static_cast<size_t>(s)];
        ASSERT_EQ(part.shape(), layout->ShardShape(s));
        const Shape& ps = part.shape();
        for (int64_t a = 0; a < ps.dim(0); ++a) {
          for (int64_t b = 0; b < ps.dim(1); ++b) {
            for (int64_t c = 0; c < ps.dim(2); ++c) {
              int64_t idx[3] = {a, b, c};
              idx[axis] += layout->offsets[static_cast<size_t>(s)];
              ASSERT_EQ(std::memcmp(At(part, a, b, c), At(full, idx[0], idx[1], idx[2]), SizeOf(dtype)), 0)
                  << "dtype " << static_cast<int>(dtype) << " axis " << axis << " shard " << s;
            }
          }
        }
      }
      absl::StatusOr<Tensor> back = ConcatenateShards(*parts, *layout);
      ASSERT_TRUE(IsOk(back));
      EXPECT_EQ(back->shape(), full.shape());
      EXPECT_EQ(std::memcmp(back->data(), full.data(), full.byte_size()), 0);
    }
  }
}

TEST(ShardedTensorTest, EmptyShardsRoundTrip) {
  const Tensor full = ZeroTensor(DType::kFloat32, {0, 4});
  absl::StatusOr<ShardLayout> layout = LayoutShards(full.shape(), 0, 1);
  ASSERT_TRUE(IsOk(layout));
  absl::StatusOr<std::vector<Tensor>> parts = SplitIntoShards(full, *layout);
  ASSERT_TRUE(IsOk(parts));
  absl::StatusOr<Tensor> back = ConcatenateShards(*parts, *layout);
  ASSERT_TRUE(IsOk(back));
  EXPECT_EQ(back->shape(), full.shape());
}

TEST(ShardedTensorTest, MismatchesAreInvalidArgument) {
  const Tensor full = Patterned(DType::kFloat32, {4, 2, 1});
  const ShardLayout layout = *LayoutShards(full.shape(), 0, 2);
  EXPECT_TRUE(HasError(SplitIntoShards(Patterned(DType::kFloat32, {5, 2, 1}), layout),
                       absl::StatusCode::kInvalidArgument, {"[5, 2, 1]", "[4, 2, 1]"}));
  std::vector<Tensor> parts = *SplitIntoShards(full, layout);
  EXPECT_TRUE(HasError(ConcatenateShards(std::span<const Tensor>(parts.data(), 1), layout),
                       absl::StatusCode::kInvalidArgument, {"1 shards", "2"}));
  std::vector<Tensor> wrong_shape = {parts[0], Patterned(DType::kFloat32, {3, 2, 1})};
  EXPECT_TRUE(HasError(ConcatenateShards(wrong_shape, layout), absl::StatusCode::kInvalidArgument,
                       {"shard 1", "[2, 2, 1]"}));
  std::vector<Tensor> mixed = {parts[0], Patterned(DType::kInt32, {2, 2, 1})};
  EXPECT_TRUE(HasError(ConcatenateShards(mixed, layout), absl::StatusCode::kInvalidArgument,
                       {"int32"}));
  ShardLayout gap = layout;
  gap.offsets[1] = 3;  // rows 2 of the axis would be in no shard
  EXPECT_TRUE(HasError(SplitIntoShards(full, gap), absl::StatusCode::kInvalidArgument, {"tile"}));
  EXPECT_TRUE(HasError(ConcatenateShards(parts, ShardLayout{}), absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace distribute::ps
