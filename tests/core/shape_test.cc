// Shape::Make: rank 0..32, dims >= 0, and an element count n with n * 8 <= INT64_MAX (so
// the byte size fits in int64_t and size_t for every dtype), checked with 128-bit
// arithmetic in the test.
#include "core/tensor/shape.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

absl::StatusOr<Shape> Make(const std::vector<int64_t>& dims) { return Shape::Make(dims); }

// The reference rule, computed without overflow.
bool FitsInBytes(const std::vector<int64_t>& dims) {
  unsigned __int128 count = 1;
  for (int64_t d : dims) {
    if (d == 0) return true;
  }
  for (int64_t d : dims) {
    count *= static_cast<unsigned __int128>(d);
    if (count * 8 > static_cast<unsigned __int128>(kInt64Max)) return false;
  }
  return true;
}

int64_t ReferenceCount(const std::vector<int64_t>& dims) {
  int64_t count = 1;
  for (int64_t d : dims) {
    if (d == 0) return 0;
  }
  for (int64_t d : dims) count *= d;
  return count;
}

TEST(ShapeTest, DefaultIsAScalar) {
  const Shape scalar;
  EXPECT_EQ(scalar.rank(), 0);
  EXPECT_EQ(scalar.num_elements(), 1);
  EXPECT_TRUE(scalar.dims().empty());
  EXPECT_EQ(scalar.ToString(), "[]");
}

TEST(ShapeTest, MakeEmptyIsAScalar) {
  absl::StatusOr<Shape> shape = Make({});
  ASSERT_TRUE(IsOk(shape));
  EXPECT_EQ(shape->rank(), 0);
  EXPECT_EQ(shape->num_elements(), 1);
  EXPECT_TRUE(*shape == Shape());
}

TEST(ShapeTest, MakeValidShapes) {
  const std::vector<std::vector<int64_t>> cases = {
      {1}, {7}, {2, 3}, {3, 2}, {2, 3, 4}, {1, 1, 1, 1}, {0}, {0, 5}, {5, 0, 7},
      {1024, 1024, 8}, {1LL << 20, 1LL << 20}, {(1LL << 60) - 1}, {1LL << 30, (1LL << 30) - 1}};
  for (const std::vector<int64_t>& dims : cases) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    absl::StatusOr<Shape> shape = Make(dims);
    ASSERT_TRUE(IsOk(shape));
    EXPECT_EQ(shape->rank(), static_cast<int32_t>(dims.size()));
    EXPECT_EQ(shape->dims(), distribute::Dims(dims.begin(), dims.end()));
    for (size_t i = 0; i < dims.size(); ++i) EXPECT_EQ(shape->dim(static_cast<int32_t>(i)), dims[i]);
    EXPECT_EQ(shape->num_elements(), ReferenceCount(dims));
  }
}

TEST(ShapeTest, ToString) {
  EXPECT_EQ(Make({2, 3})->ToString(), "[2, 3]");
  EXPECT_EQ(Make({0})->ToString(), "[0]");
  EXPECT_EQ(Make({4, 1, 9})->ToString(), "[4, 1, 9]");
}

TEST(ShapeTest, Equality) {
  EXPECT_TRUE(*Make({2, 3}) == *Make({2, 3}));
  EXPECT_FALSE(*Make({2, 3}) == *Make({3, 2}));
  EXPECT_FALSE(*Make({6}) == *Make({2, 3}));
  EXPECT_FALSE(*Make({1}) == *Make({}));
}

TEST(ShapeTest, RejectsNegativeDimsNamingTheIndex) {
  EXPECT_TRUE(HasError(Make({-1}), absl::StatusCode::kInvalidArgument, {"shape[0]", "-1"}));
  EXPECT_TRUE(HasError(Make({2, -3}), absl::StatusCode::kInvalidArgument, {"shape[1]", "-3"}));
  EXPECT_TRUE(HasError(Make({2, 3, 4, std::numeric_limits<int64_t>::min()}),
                       absl::StatusCode::kInvalidArgument,
                       {"shape[3]", absl::StrCat(std::numeric_limits<int64_t>::min())}));
  // A zero elsewhere does not excuse a negative dimension.
  EXPECT_TRUE(HasError(Make({0, -1}), absl::StatusCode::kInvalidArgument, {"shape[1]"}));
  EXPECT_TRUE(HasError(Make({-1, 0}), absl::StatusCode::kInvalidArgument, {"shape[0]"}));
}

TEST(ShapeTest, RankLimit) {
  EXPECT_EQ(kMaxRank, 32);
  absl::StatusOr<Shape> max_rank = Make(std::vector<int64_t>(32, 1));
  ASSERT_TRUE(IsOk(max_rank));
  EXPECT_EQ(max_rank->rank(), 32);
  EXPECT_EQ(max_rank->num_elements(), 1);

  absl::StatusOr<Shape> twos = Make(std::vector<int64_t>(32, 2));  // 2^32 elements
  ASSERT_TRUE(IsOk(twos));
  EXPECT_EQ(twos->num_elements(), 1LL << 32);

  for (size_t rank : {33u, 64u, 1000u}) {
    SCOPED_TRACE(rank);
    EXPECT_TRUE(HasError(Make(std::vector<int64_t>(rank, 1)), absl::StatusCode::kInvalidArgument,
                         {absl::StrCat("rank ", rank), "32"}));
  }
}

TEST(ShapeTest, RejectsElementCountsWhoseByteSizeOverflows) {
  const std::vector<std::vector<int64_t>> cases = {
      {1LL << 40, 1LL << 40},
      {1LL << 60},
      {1LL << 30, 1LL << 30},
      {kInt64Max},
      {kInt64Max, kInt64Max},
      {kInt64Max, 2},
      {2, kInt64Max},
      {3, 1LL << 62},
      {1LL << 21, 1LL << 21, 1LL << 21},
      {(1LL << 32) + 1, (1LL << 32) + 1},  // wraps to a small number in 64-bit arithmetic
      std::vector<int64_t>(32, 4),          // 2^64 elements
      std::vector<int64_t>(31, 4),          // 2^62 elements
  };
  for (const std::vector<int64_t>& dims : cases) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    ASSERT_FALSE(FitsInBytes(dims));
    EXPECT_TRUE(HasError(Make(dims), absl::StatusCode::kInvalidArgument,
                         {"too many elements", absl::StrCat(dims[0])}));
  }
}

TEST(ShapeTest, ByteSizeBoundIsExact) {
  // n * 8 <= INT64_MAX  <=>  n <= 2^60 - 1.
  const int64_t limit = kInt64Max / 8;
  ASSERT_EQ(limit, (1LL << 60) - 1);
  for (const std::vector<int64_t>& dims :
       std::vector<std::vector<int64_t>>{{limit}, {limit + 1}, {1, limit}, {limit, 1},
                                         {(1LL << 30) - 1, (1LL << 30) + 1},
                                         {1LL << 30, 1LL << 30},
                                         {3, 5, 17, 257, 65537, 4294967297LL} /* 2^64-1 */}) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    EXPECT_EQ(Make(dims).ok(), FitsInBytes(dims));
  }
}

TEST(ShapeTest, ZeroDimensionWithHugeOthersHasZeroElements) {
  const std::vector<std::vector<int64_t>> cases = {
      {0, kInt64Max},
      {kInt64Max, 0},
      {kInt64Max, kInt64Max, 0},
      {1LL << 40, 0, 1LL << 40},
      {0, kInt64Max, kInt64Max, kInt64Max},
  };
  for (const std::vector<int64_t>& dims : cases) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    absl::StatusOr<Shape> shape = Make(dims);
    ASSERT_TRUE(IsOk(shape));
    EXPECT_EQ(shape->num_elements(), 0);
    EXPECT_EQ(shape->dims(), distribute::Dims(dims.begin(), dims.end()));
  }
}

}  // namespace
}  // namespace distribute
