#include "core/coordinator/wire_values.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/strategy/ps_variables.h"
#include "core/tensor/dtype.h"
#include "core/tensor/shape.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"

namespace distribute::coordinator {

absl::Status EncodeTensor(const Tensor& tensor, uint64_t max_bytes, closures::TensorValue* out) {
  if (tensor.device().type != DeviceType::kCpu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the tensor is on ", tensor.device_name(), ": closures carry host (CPU) tensors only"));
  }
  if (tensor.byte_size() > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("the tensor has ", tensor.byte_size(),
                                                   " bytes, more than the ", max_bytes,
                                                   " a closure message may carry"));
  }
  out->set_dtype(static_cast<int32_t>(tensor.dtype()));
  out->clear_dims();
  for (int64_t dim : tensor.shape().dims()) out->add_dims(dim);
  out->set_data(static_cast<const char*>(tensor.data()), tensor.byte_size());
  return absl::OkStatus();
}

absl::StatusOr<Tensor> DecodeTensor(const closures::TensorValue& message) {
  if (message.dims_size() > kMaxRank) {
    return absl::InvalidArgumentError(
        absl::StrCat("a tensor of rank ", message.dims_size(), ": the most is ", kMaxRank));
  }
  // Tensor::Create checks the dtype, the dims and that the bytes are exactly what they
  // take, before it allocates.
  Tensor::Description description;
  description.dtype = message.dtype();
  description.dims = std::span<const int64_t>(message.dims().data(), static_cast<size_t>(message.dims_size()));
  description.byte_size = message.data().size();
  return Tensor::Create(description, message.data().data());
}

absl::Status EncodeVariable(const Value& variable, closures::VariableRef* out) {
  ASSIGN_OR_RETURN(PsVariableStorage * storage, PsStorageOf(variable));
  const Variable& v = *variable.variable();
  const ps::VariablePlacement& placement = storage->placement();
  out->set_name(v.name());
  out->set_dtype(static_cast<int32_t>(v.dtype()));
  out->clear_dims();
  for (int64_t dim : v.shape().dims()) out->add_dims(dim);
  out->set_synchronization(static_cast<int32_t>(v.sync()));
  out->set_aggregation(static_cast<int32_t>(v.aggregation()));
  out->set_partitioned(placement.layout.has_value());
  out->set_axis(placement.layout.has_value() ? placement.layout->axis : 0);
  out->clear_shards();
  for (const ps::ShardPlacement& shard : placement.shards) {
    closures::VariableShard* s = out->add_shards();
    s->set_name(shard.name);
    s->set_task(shard.task);
    for (int64_t dim : shard.shape.dims()) s->add_dims(dim);
  }
  return absl::OkStatus();
}

}  // namespace distribute::coordinator
