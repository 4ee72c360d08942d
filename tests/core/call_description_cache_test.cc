// CallDescriptionCache: the text is always what PublishedCall::Describe gives for the call
// at hand, whether it was kept or formatted again, through every way two calls can differ
// (kind, op, parameter, tensor count, dtype, rank, a dimension), and never kept for a
// failure, whose text carries its message.
#include "core/collective/call_description_cache.h"

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

TEST(CallDescriptionCacheTest, EveryCallGetsItsOwnDescription) {
  const std::vector<Tensor> base = {Make(DType::kFloat32, {2, 3}), Make(DType::kInt64, {})};
  const std::vector<Tensor> other_dim = {Make(DType::kFloat32, {2, 4}), Make(DType::kInt64, {})};
  const std::vector<Tensor> other_dtype = {Make(DType::kFloat32, {2, 3}), Make(DType::kInt32, {})};
  const std::vector<Tensor> other_rank = {Make(DType::kFloat32, {2, 3}), Make(DType::kInt64, {1})};
  const std::vector<Tensor> fewer = {Make(DType::kFloat32, {2, 3})};
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
