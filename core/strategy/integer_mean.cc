#include "core/strategy/integer_mean.h"

#include <memory>
#include <utility>

#include "core/kernels/reduce_kernels.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<Tensor> IntegerMean(const Tensor& sum, int64_t divisor, const DeviceSpec& device) {
  const DType dtype = ReducedDType(sum.dtype(), ReduceOp::kMean);
  const size_t count = static_cast<size_t>(sum.shape().num_elements());
  // The division runs on the host: a GPU sum comes over, a GPU result goes back.
  ASSIGN_OR_RETURN(const Tensor host_sum, sum.OnHost());
  const bool on_gpu = device.type == DeviceType::kGpu;
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                   Buffer::Allocate(on_gpu ? DeviceSpec{}.WithDefaults() : device,
                                    count * DTypeSize(dtype), false));
  IntegerSumToMean(sum.dtype(), host_sum.data(), buffer->data(), count, divisor);
  ASSIGN_OR_RETURN(Tensor mean, Tensor::FromBuffer(dtype, sum.shape(), std::move(buffer)));
  if (on_gpu) return mean.CopyTo(device.ToString());
  return mean;
}

}  // namespace distribute
