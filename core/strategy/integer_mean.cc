#include "core/strategy/integer_mean.h"

#include <memory>
#include <utility>

#include "core/collective/reduce_kernels.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<Tensor> IntegerMean(const Tensor& sum, int64_t divisor, const DeviceSpec& device) {
  const DType dtype = ReducedDType(sum.dtype(), ReduceOp::kMean);
  const size_t count = static_cast<size_t>(sum.shape().num_elements());
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                   Buffer::Allocate(device, count * DTypeSize(dtype), false));
  IntegerSumToMean(sum.dtype(), sum.data(), buffer->data(), count, divisor);
  return Tensor::FromBuffer(dtype, sum.shape(), std::move(buffer));
}

}  // namespace distribute
