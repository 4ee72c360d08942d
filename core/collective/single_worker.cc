#include "core/collective/single_worker.h"

#include <vector>

#include "core/kernels/reduce_kernels.h"

namespace distribute {

absl::Status SingleWorker::AllReduce(ReduceOp op, const void* pack, size_t /*pack_bytes*/,
                                     std::span<const Segment> segments, int64_t mean_divisor,
                                     const std::string& /*signature*/, const Deadline& /*deadline*/) {
  // The reduction of one worker's partial results: the same kernels, in the same
  // precision, as CrossWorker's with a single input.
  std::vector<char> result;
  for (const Segment& segment : segments) {
    const DType acc = AccumulatorDType(segment.dtype);
    const void* input = static_cast<const char*>(pack) + segment.offset;
    result.resize(segment.count * DTypeSize(acc));
    void* out = result.data();
    ReduceAccumulatorRange(acc, op, &input, 1, &out, 1, 0, segment.count, mean_divisor);
    for (void* output : segment.outputs) FromAccumulator(segment.dtype, out, output, segment.count);
  }
  return absl::OkStatus();
}

absl::Status SingleWorker::AllReduceLocal(ReduceOp op, DType dtype, const void* const* inputs,
                                          int32_t num_local, size_t count, void* output,
                                          int64_t mean_divisor, const std::string& /*signature*/,
                                          const Deadline& /*deadline*/) {
  ReduceRange(dtype, op, inputs, num_local, &output, 1, 0, count, mean_divisor);
  return absl::OkStatus();
}

absl::StatusOr<Tensor> SingleWorker::AllGatherAlongAxis(const Tensor& local, int32_t /*axis*/,
                                                        const std::string& /*signature*/,
                                                        const Deadline& /*deadline*/) {
  return local;
}

absl::Status SingleWorker::Broadcast(void* /*data*/, size_t /*bytes*/, int32_t /*root*/,
                                     const std::string& /*signature*/,
                                     const Deadline& /*deadline*/) {
  return absl::OkStatus();
}

}  // namespace distribute
