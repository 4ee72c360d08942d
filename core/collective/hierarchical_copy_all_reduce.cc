#include "core/collective/local_all_reduce.h"
#include "core/collective/packing.h"
#include "core/kernels/reduce_kernels.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::Status HierarchicalCopyAllReduce::Run(LocalRendezvous& group, int32_t replica, ReduceOp op,
                                            const Deadline& deadline) {
  const std::span<const Tensor> inputs = group.call(replica).inputs;
  for (auto [first, last] : SplitEvenly(inputs, num_packs_)) {
    RETURN_IF_ERROR(ReducePack(group, replica, op, first, last, deadline));
  }
  if (inputs.empty()) RETURN_IF_ERROR(group.Arrive(replica, deadline));
  return absl::OkStatus();
}

absl::Status HierarchicalCopyAllReduce::ReducePack(LocalRendezvous& group, int32_t replica,
                                                   ReduceOp op, size_t first, size_t last,
                                                   const Deadline& deadline) {
  // Each replica's partial results live in accumulator-typed scratch (float32 for the
  // 16-bit floats); pairs combine in a fixed binary tree; replica 0's total is copied out.
  const int32_t n = group.size();
  const ReduceOp stage_op = op == ReduceOp::kMean ? ReduceOp::kSum : op;
  std::vector<std::shared_ptr<Buffer>>& mine = scratch_[static_cast<size_t>(replica)];
  mine.clear();
  const DeviceSpec host = DeviceSpec{}.WithDefaults();
  for (size_t t = first; t < last; ++t) {
    const Tensor& in = group.call(replica).inputs[t];
    const size_t count = static_cast<size_t>(in.shape().num_elements());
    const DType acc = AccumulatorDType(in.dtype());
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> partial,
                     Buffer::Allocate(host, count * DTypeSize(acc), false));
    ToAccumulator(in.dtype(), in.data(), partial->data(), count);
    mine.push_back(std::move(partial));
  }
  RETURN_IF_ERROR(group.Arrive(replica, deadline));
  for (int32_t stride = 1; stride < n; stride *= 2) {
    if (replica % (2 * stride) == 0 && replica + stride < n) {
      const auto& partner = scratch_[static_cast<size_t>(replica + stride)];
      for (size_t i = 0; i < mine.size(); ++i) {
        const Tensor& in = group.call(replica).inputs[first + i];
        const void* pair[2] = {mine[i]->data(), partner[i]->data()};
        void* out = mine[i]->data();
        ReduceRange(AccumulatorDType(in.dtype()), stage_op, pair, 2, &out, 1, 0,
                    static_cast<size_t>(in.shape().num_elements()), 1);
      }
    }
    RETURN_IF_ERROR(group.Arrive(replica, deadline));
  }
  if (op == ReduceOp::kMean && replica == 0) {
    for (size_t i = 0; i < mine.size(); ++i) {
      const Tensor& in = group.call(0).inputs[first + i];
      DivideInPlace(AccumulatorDType(in.dtype()), mine[i]->data(),
                    static_cast<size_t>(in.shape().num_elements()), n);
    }
  }
  if (op == ReduceOp::kMean) RETURN_IF_ERROR(group.Arrive(replica, deadline));
  const auto& total = scratch_[0];
  for (size_t i = 0; i < total.size(); ++i) {
    const Tensor& out = group.call(replica).outputs[first + i];
    FromAccumulator(out.dtype(), total[i]->data(), out.data(),
                    static_cast<size_t>(out.shape().num_elements()));
  }
  return group.Arrive(replica, deadline);
}

}  // namespace distribute
