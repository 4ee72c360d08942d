// DType numbers are TensorFlow's DataType enum values; sizes are those of the C++ types.
#include "core/tensor/dtype.h"

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

struct DTypeCase {
  int32_t tf_number;  // tensorflow/core/framework/types.proto
  DType dtype;
  size_t size;
  const char* name;
};

// Sizes from the C++ types each dtype stores; 16-bit floats are two bytes.
const std::vector<DTypeCase>& Cases() {
  static const std::vector<DTypeCase> cases = {
      {1, DType::kFloat32, sizeof(float), "float32"},
      {2, DType::kFloat64, sizeof(double), "float64"},
      {3, DType::kInt32, sizeof(int32_t), "int32"},
      {4, DType::kUInt8, sizeof(uint8_t), "uint8"},
      {5, DType::kInt16, sizeof(int16_t), "int16"},
      {6, DType::kInt8, sizeof(int8_t), "int8"},
      {9, DType::kInt64, sizeof(int64_t), "int64"},
      {10, DType::kBool, sizeof(bool), "bool"},
      {14, DType::kBFloat16, sizeof(uint16_t), "bfloat16"},
      {19, DType::kFloat16, sizeof(uint16_t), "float16"},
  };
  return cases;
}

TEST(DTypeTest, EnumValuesAreTensorFlowNumbers) {
  for (const DTypeCase& c : Cases()) {
    EXPECT_EQ(static_cast<int32_t>(c.dtype), c.tf_number) << c.name;
  }
}

TEST(DTypeTest, FromIntAcceptsEveryDType) {
  for (const DTypeCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<DType> dtype = DTypeFromInt(c.tf_number);
    ASSERT_TRUE(IsOk(dtype));
    EXPECT_EQ(*dtype, c.dtype);
  }
}

TEST(DTypeTest, FromIntRejectsEveryOtherNumberFromMinus8To200) {
  std::set<int32_t> valid;
  for (const DTypeCase& c : Cases()) valid.insert(c.tf_number);
  for (int32_t value = -8; value <= 200; ++value) {
    if (valid.count(value) != 0) continue;
    SCOPED_TRACE(value);
    EXPECT_TRUE(HasError(DTypeFromInt(value), absl::StatusCode::kInvalidArgument,
                         {absl::StrCat("dtype ", value, " ")}));
  }
}

TEST(DTypeTest, FromIntRejectsExtremes) {
  for (int32_t value : {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(),
                        101, 102, 119 /* TF reference types are 100 + n */}) {
    SCOPED_TRACE(value);
    EXPECT_TRUE(HasError(DTypeFromInt(value), absl::StatusCode::kInvalidArgument,
                         {absl::StrCat(value), "DIST_FLOAT32"}));
  }
}

TEST(DTypeTest, SizeMatchesTheCppType) {
  for (const DTypeCase& c : Cases()) {
    EXPECT_EQ(DTypeSize(c.dtype), c.size) << c.name;
  }
  EXPECT_EQ(DTypeSize(DType::kBool), 1u);
  EXPECT_EQ(DTypeSize(DType::kFloat16), 2u);
  EXPECT_EQ(DTypeSize(DType::kBFloat16), 2u);
}

TEST(DTypeTest, Names) {
  std::set<std::string> names;
  for (const DTypeCase& c : Cases()) {
    EXPECT_EQ(DTypeName(c.dtype), c.name);
    names.insert(std::string(DTypeName(c.dtype)));
  }
  EXPECT_EQ(names.size(), Cases().size());
}

}  // namespace
}  // namespace distribute
