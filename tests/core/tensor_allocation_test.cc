// How many heap allocations a small host tensor costs: one (its buffer, reference count
// and bytes together) for shapes up to rank 4 and up to 4 KiB, and none more when it
// becomes a Value or is copied. A small all-reduce makes a new value every call, so each
// allocation here is a measurable share of its time. Allocations are counted with a
// replacement global operator new (tests/common/counting_operator_new.h).
#include <cstdint>
#include <vector>

#include "core/tensor/buffer.h"
#include "core/tensor/shape.h"
#include "core/tensor/tensor.h"
#include "core/values/value.h"
#include "gtest/gtest.h"
#include "tests/common/counting_operator_new.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::counting_operator_new::AllocationsOf;
using ::distribute::testing::IsOk;

TEST(TensorAllocationTest, ASmallHostTensorIsOneAllocation) {
  // The first tensor on a device fills per-thread caches (its interned name).
  Tensor::Description scalar;
  scalar.dtype = static_cast<int32_t>(DType::kFloat32);
  ASSERT_TRUE(IsOk(Tensor::Create(scalar, nullptr)));
  const std::vector<std::vector<int64_t>> shapes = {{}, {1}, {2}, {32}, {4, 8}, {2, 2, 2}, {2, 4, 8, 16}};
  for (const std::vector<int64_t>& dims : shapes) {
    SCOPED_TRACE(::testing::PrintToString(dims));
    Tensor::Description desc;
    desc.dtype = static_cast<int32_t>(DType::kFloat32);
    desc.dims = dims;
    long made = -1;
    {
      absl::StatusOr<Tensor> tensor;
      made = AllocationsOf([&] { tensor = Tensor::Create(desc, nullptr); });
      ASSERT_TRUE(IsOk(tensor));
      ASSERT_LE(tensor->byte_size(), 4096u);
    }
    EXPECT_EQ(made, 1);
  }
}

// An array new and delete in a program that counts them (the replacements cover both).
TEST(TensorAllocationTest, ArrayNewAndDeletePair) {
  EXPECT_EQ(AllocationsOf([] {
              int* values = new int[4]{1, 2, 3, 4};
              EXPECT_EQ(values[3], 4);
              delete[] values;
            }),
            1);
}

TEST(TensorAllocationTest, AValueOfATensorAndItsCopiesAllocateNothingMore) {
  const int64_t dims[] = {3, 5};
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(DType::kInt32);
  desc.dims = dims;
  absl::StatusOr<Tensor> tensor = Tensor::Create(desc, nullptr);
  ASSERT_TRUE(IsOk(tensor));
  long made = AllocationsOf([&] {
    Value value(*tensor);
    Value copy = value;
    Value moved = std::move(copy);
    EXPECT_EQ(moved.components().size(), 1u);
    EXPECT_EQ(moved.components()[0].data(), tensor->data());
  });
  EXPECT_EQ(made, 0);
}

// Past the inline sizes the old costs come back, and nothing breaks.
TEST(TensorAllocationTest, LargerTensorsAndHigherRanksStillWork) {
  const int64_t dims[] = {2, 1, 1, 1, 1, 3};  // rank 6: dimensions on the heap
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(DType::kFloat64);
  desc.dims = dims;
  absl::StatusOr<Tensor> tensor = Tensor::Create(desc, nullptr);
  ASSERT_TRUE(IsOk(tensor));
  EXPECT_EQ(tensor->shape().rank(), 6);
  EXPECT_EQ(tensor->shape().dims(), (Dims{2, 1, 1, 1, 1, 3}));
  const int64_t big[] = {1025};  // 8200 bytes: a block of its own
  desc.dims = big;
  absl::StatusOr<Tensor> large = Tensor::Create(desc, nullptr);
  ASSERT_TRUE(IsOk(large));
  const auto* bytes = static_cast<const unsigned char*>(large->data());
  size_t nonzero = 0;
  for (size_t i = 0; i < large->byte_size(); ++i) nonzero += bytes[i] != 0;
  EXPECT_EQ(nonzero, 0u);
}

}  // namespace
}  // namespace distribute
