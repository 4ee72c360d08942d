#include "core/gpu/gpu_kernel_reduce.h"

#include <vector>

#include "core/device/gpu_runtime.h"
#include "core/util/status_macros.h"

namespace distribute {

size_t ScratchBytes(size_t bytes) { return (bytes + 255) / 256 * 256; }

absl::StatusOr<const void*> Readable(GpuReplicas& gpus, int32_t reader, int32_t owner,
                                     const Tensor& tensor, char** scratch) {
  if (gpus.CanRead(reader, owner)) return static_cast<const void*>(tensor.data());
  char* copy = *scratch;
  RETURN_IF_ERROR(GpuRuntime::Get().CopyAsync(gpus.gpu(reader), copy, gpus.gpu(owner),
                                              tensor.data(), tensor.byte_size(),
                                              gpus.gpu(reader), gpus.stream(reader)));
  *scratch += ScratchBytes(tensor.byte_size());
  return static_cast<const void*>(copy);
}

absl::Status QueueReduceToOne(GpuReplicas& gpus, int32_t root, ReduceOp op,
                              absl::FunctionRef<const Tensor&(int32_t replica)> input_of,
                              const Tensor& output, char* scratch) {
  const int32_t n = gpus.size();
  std::vector<const void*> sources(static_cast<size_t>(n));
  for (int32_t q = 0; q < n; ++q) {
    ASSIGN_OR_RETURN(sources[static_cast<size_t>(q)], Readable(gpus, root, q, input_of(q), &scratch));
  }
  const bool mean = op == ReduceOp::kMean;
  return GpuRuntime::Get().Reduce(gpus.gpu(root), gpus.stream(root), static_cast<int32_t>(output.dtype()),
                                  static_cast<int32_t>(mean ? ReduceOp::kSum : op), sources.data(), n,
                                  output.data(), static_cast<size_t>(output.shape().num_elements()),
                                  mean ? n : 1);
}

}  // namespace distribute
