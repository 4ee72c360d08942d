// ReadScalar: the one element of a tensor of exactly the requested dtype, any rank.
#include "core/tensor/scalar.h"

#include <cstdint>

#include "gtest/gtest.h"
#include "tests/core/numeric_reference.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
using ::distribute::testing::ZeroTensor;

TEST(ScalarTest, ReadsOneElementOfAnyRank) {
  Tensor rank0 = ZeroTensor(DType::kInt64, {});
  *static_cast<int64_t*>(rank0.data()) = int64_t{1} << 40;
  int64_t l = 0;
  ASSERT_TRUE(IsOk(ReadScalar(rank0, DType::kInt64, &l)));
  EXPECT_EQ(l, int64_t{1} << 40);
  Tensor rank3 = ZeroTensor(DType::kFloat64, {1, 1, 1});
  *static_cast<double*>(rank3.data()) = -0.125;
  double d = 0;
  ASSERT_TRUE(IsOk(ReadScalar(rank3, DType::kFloat64, &d)));
  EXPECT_EQ(d, -0.125);
}

TEST(ScalarTest, RejectsAnotherDtypeOrElementCount) {
  float f = 0;
  EXPECT_TRUE(HasError(ReadScalar(ZeroTensor(DType::kFloat64, {}), DType::kFloat32, &f),
                       absl::StatusCode::kInvalidArgument, {"float64", "expected float32"}));
  EXPECT_TRUE(HasError(ReadScalar(ZeroTensor(DType::kFloat32, {2, 3}), DType::kFloat32, &f),
                       absl::StatusCode::kInvalidArgument, {"[2, 3]", "6 elements"}));
  EXPECT_TRUE(HasError(ReadScalar(ZeroTensor(DType::kFloat32, {0}), DType::kFloat32, &f),
                       absl::StatusCode::kInvalidArgument, {"[0]"}));
}

}  // namespace
}  // namespace distribute
