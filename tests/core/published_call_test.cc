// PublishedCall::Describe: the exact text that error messages and the cross-worker headers
// carry, for every kind of call, one and several tensors, scalars and the gathered axis.
// CallDescriptionCache: always that text for the call at hand, whether kept or formatted
// again, through every way two calls can differ, and never kept for a failure.
#include "core/collective/published_call.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/collective/call_description_cache.h"
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

TEST(CallDescriptionCacheTest, EveryCallGetsItsOwnDescription) {
  const std::vector<Tensor> base = {Make(DType::kFloat32, {2, 3}), Make(DType::kInt64, {})};
  const std::vector<Tensor> other_dim = {Make(DType::kFloat32, {2, 4}), Make(DType::kInt64, {})};
  const std::vector<Tensor> other_dtype = {Make(DType::kFloat32, {2, 3}), Make(DType::kInt32, {})};
  const std::vector<Tensor> other_rank = {Make(DType::kFloat32, {2, 3}), Make(DType::kInt64, {1})};
  const std::vector<Tensor> fewer = {Make(DType::kFloat32, {2, 3})};
  // For an all-gather along axis 1: that axis longer (the same text), then the other one.
  const std::vector<Tensor> longer_axis = {Make(DType::kFloat32, {2, 7})};
  const std::vector<Tensor> other_first = {Make(DType::kFloat32, {5, 7})};
  // Dimensions that move between tensors but keep their flattened order.
  const std::vector<Tensor> moved = {Make(DType::kFloat32, {2}), Make(DType::kInt64, {3})};
  // Each call differs from the one before it in one way only (or not at all).
  const PublishedCall mean{.kind = CallKind::kAllReduce, .op = ReduceOp::kMean, .inputs = base};
  const std::vector<PublishedCall> calls = {
      {.kind = CallKind::kAllReduce, .op = ReduceOp::kSum, .inputs = base},
      {.kind = CallKind::kAllReduce, .op = ReduceOp::kSum, .inputs = base},  // the same again
      mean,  // the op
      {.kind = CallKind::kAllReduce, .op = ReduceOp::kMean, .inputs = other_dim},
      mean,
      {.kind = CallKind::kAllReduce, .op = ReduceOp::kMean, .inputs = other_dtype},
      mean,
      {.kind = CallKind::kAllReduce, .op = ReduceOp::kMean, .inputs = other_rank},
      mean,
      {.kind = CallKind::kAllReduce, .op = ReduceOp::kMean, .inputs = moved},
      mean,
      {.kind = CallKind::kAllReduce, .op = ReduceOp::kMean, .inputs = fewer},  // the tensor count
      {.kind = CallKind::kAllGather, .op = ReduceOp::kMean, .inputs = fewer},  // the kind
      {.kind = CallKind::kAllGather, .op = ReduceOp::kMean, .parameter = 1, .inputs = fewer},
      {.kind = CallKind::kAllGather, .op = ReduceOp::kMean, .parameter = 1, .inputs = longer_axis},
      {.kind = CallKind::kAllGather, .op = ReduceOp::kMean, .parameter = 1, .inputs = other_first},
      {.kind = CallKind::kBroadcast, .op = ReduceOp::kMean, .parameter = 1, .inputs = fewer},
      {.kind = CallKind::kBroadcast, .op = ReduceOp::kMean, .parameter = 1, .inputs = fewer},
      {.kind = CallKind::kAllReduce, .op = ReduceOp::kMean},
  };
  CallDescriptionCache cache;
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(cache.Describe(calls[i]), calls[i].Describe()) << "call " << i;
  }
}

TEST(CallDescriptionCacheTest, AFailureIsNeverKept) {
  const absl::Status first = absl::InvalidArgumentError("bad shape");
  const absl::Status second = absl::InvalidArgumentError("bad dtype");
  CallDescriptionCache cache;
  EXPECT_EQ(cache.Describe(PublishedCall::Failure(&first)), "a collective it could not take part in (bad shape)");
  EXPECT_EQ(cache.Describe(PublishedCall::Failure(&second)), "a collective it could not take part in (bad dtype)");
  EXPECT_EQ(cache.Describe(PublishedCall{.kind = CallKind::kMerge, .parameter = 2}), "merge_call with 2 argument(s)");
  EXPECT_EQ(cache.Describe(PublishedCall{.kind = CallKind::kMerge, .parameter = 3}), "merge_call with 3 argument(s)");
}

}  // namespace
}  // namespace distribute
