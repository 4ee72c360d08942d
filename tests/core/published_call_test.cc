// PublishedCall::Describe: the exact text that error messages and the cross-worker headers
// carry, for every kind of call, one and several tensors, scalars and the gathered axis.
#include "core/collective/published_call.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/tensor/tensor.h"

namespace distribute {
namespace {

Tensor Make(DType dtype, std::vector<int64_t> dims) {
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(dtype);
  desc.dims = dims;
  absl::StatusOr<Tensor> tensor = Tensor::Create(desc, nullptr);
  EXPECT_TRUE(tensor.ok()) << tensor.status();
  return *std::move(tensor);
}

TEST(PublishedCallTest, DescribesEveryKindOfCall) {
  const std::vector<Tensor> two = {Make(DType::kFloat32, {2, 3}), Make(DType::kInt64, {})};
  const std::vector<Tensor> one = {Make(DType::kFloat16, {4, 5, 6})};
  PublishedCall reduce{.kind = CallKind::kAllReduce, .op = ReduceOp::kMean, .inputs = two};
  EXPECT_EQ(reduce.Describe(), "all_reduce(MEAN) of 2 tensor(s) float32[2, 3], int64[]");
  PublishedCall gather{.kind = CallKind::kAllGather, .parameter = 1, .inputs = one};
  EXPECT_EQ(gather.Describe(), "all_gather(axis 1) of float16[4, *, 6]");
  PublishedCall broadcast{.kind = CallKind::kBroadcast, .parameter = 3, .inputs = one};
  EXPECT_EQ(broadcast.Describe(), "broadcast(from replica 3) of float16[4, 5, 6]");
  PublishedCall none{.kind = CallKind::kAllReduce, .op = ReduceOp::kSum};
  EXPECT_EQ(none.Describe(), "all_reduce(SUM) of 0 tensor(s) ");
  PublishedCall merge{.kind = CallKind::kMerge, .parameter = 2};
  EXPECT_EQ(merge.Describe(), "merge_call with 2 argument(s)");
  const absl::Status error = absl::InvalidArgumentError("bad shape");
  EXPECT_EQ(PublishedCall::Failure(&error).Describe(), "a collective it could not take part in (bad shape)");
}

}  // namespace
}  // namespace distribute
