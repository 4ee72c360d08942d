#include "core/collective/local_gather.h"

#include <span>
#include <vector>

#include "core/tensor/concatenate.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<Tensor> ConcatenatePublished(const LocalRendezvous& group, int32_t axis,
                                            const DeviceSpec& device) {
  const Tensor& first = group.call(0).inputs[0];
  const Shape& shape = first.shape();
  Dims dims = shape.dims();
  int64_t gathered = 0;
  for (int32_t q = 0; q < group.size(); ++q) gathered += group.call(q).inputs[0].shape().dim(axis);
  dims[static_cast<size_t>(axis)] = gathered;
  ASSIGN_OR_RETURN(Shape out_shape, Shape::Make(dims));
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                   Buffer::Allocate(device,
                                    static_cast<size_t>(out_shape.num_elements()) * DTypeSize(first.dtype()),
                                    false));
  // Row-major concatenation: for each index of the leading axes, each replica's block.
  int64_t outer = 1;
  for (int32_t d = 0; d < axis; ++d) outer *= shape.dim(d);
  std::vector<std::span<const char>> blocks;
  for (int32_t q = 0; q < group.size(); ++q) blocks.push_back(BytesOf(group.call(q).inputs[0]));
  ConcatenateAlongAxis(blocks, outer, static_cast<char*>(buffer->data()));
  return Tensor::FromBuffer(first.dtype(), std::move(out_shape), std::move(buffer));
}

}  // namespace distribute
