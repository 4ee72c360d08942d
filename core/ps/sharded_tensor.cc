#include "core/ps/sharded_tensor.h"

#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/ps/host_tensors.h"
#include "core/tensor/concatenate.h"
#include "core/util/status_macros.h"

namespace distribute::ps {
namespace {

// Elements before the axis (the "outer" count of a [outer, rows, inner] view).
int64_t OuterCount(const Shape& shape, int32_t axis) {
  int64_t outer = 1;
  for (int32_t i = 0; i < axis; ++i) outer *= shape.dim(i);
  return outer;
}

// A layout made by hand rather than by LayoutShards must still tile the axis exactly.
absl::Status CheckLayout(const ShardLayout& layout) {
  const Shape& shape = layout.full_shape;
  bool ok = layout.axis >= 0 && layout.axis < shape.rank() && layout.num_shards() >= 1 &&
            layout.sizes.size() == layout.offsets.size();
  int64_t next = 0;
  for (size_t s = 0; ok && s < layout.sizes.size(); ++s) {
    ok = layout.sizes[s] >= 0 && layout.offsets[s] == next;
    next += layout.sizes[s];
  }
  if (!ok || next != shape.dim(layout.axis)) {
    return absl::InvalidArgumentError(absl::StrCat("the shard layout does not tile axis ", layout.axis,
                                                   " of shape ", shape.ToString()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> SplitIntoShards(const Tensor& full, const ShardLayout& layout) {
  RETURN_IF_ERROR(CheckLayout(layout));
  if (!(full.shape() == layout.full_shape)) {
    return absl::InvalidArgumentError(absl::StrCat("the tensor has shape ", full.shape().ToString(),
                                                   " but the sharded variable has shape ",
                                                   layout.full_shape.ToString()));
  }
  ASSIGN_OR_RETURN(const Tensor host, OnHost(full));
  const int64_t outer = OuterCount(layout.full_shape, layout.axis);
  const size_t full_row_bytes =
      outer == 0 ? 0 : host.byte_size() / static_cast<size_t>(outer);  // one outer index
  const size_t axis_rows = static_cast<size_t>(layout.full_shape.dim(layout.axis));
  const size_t row_bytes = axis_rows == 0 ? 0 : full_row_bytes / axis_rows;  // one axis row
  const char* source = static_cast<const char*>(host.data());
  std::vector<Tensor> shards;
  for (int64_t s = 0; s < layout.num_shards(); ++s) {
    ASSIGN_OR_RETURN(Tensor shard, NewHostTensor(full.dtype(), layout.ShardShape(s)));
    const size_t part = static_cast<size_t>(layout.sizes[static_cast<size_t>(s)]) * row_bytes;
    const size_t skip = static_cast<size_t>(layout.offsets[static_cast<size_t>(s)]) * row_bytes;
    char* out = static_cast<char*>(shard.data());
    for (int64_t o = 0; o < outer && part > 0; ++o) {
      std::memcpy(out + static_cast<size_t>(o) * part,
                  source + static_cast<size_t>(o) * full_row_bytes + skip, part);
    }
    shards.push_back(std::move(shard));
  }
  return shards;
}

absl::StatusOr<Tensor> ConcatenateShards(std::span<const Tensor> shards, const ShardLayout& layout) {
  RETURN_IF_ERROR(CheckLayout(layout));
  if (static_cast<int64_t>(shards.size()) != layout.num_shards()) {
    return absl::InvalidArgumentError(absl::StrCat(shards.size(), " shards were given but the variable has ",
                                                   layout.num_shards()));
  }
  std::vector<Tensor> host;
  std::vector<std::span<const char>> blocks;
  for (size_t s = 0; s < shards.size(); ++s) {
    const Shape expected = layout.ShardShape(static_cast<int64_t>(s));
    if (shards[s].dtype() != shards[0].dtype() || !(shards[s].shape() == expected)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "shard ", s, " is ", DTypeName(shards[s].dtype()), " ", shards[s].shape().ToString(),
          " but must be ", DTypeName(shards[0].dtype()), " ", expected.ToString()));
    }
    ASSIGN_OR_RETURN(Tensor on_host, OnHost(shards[s]));
    host.push_back(std::move(on_host));
  }
  for (const Tensor& shard : host) blocks.push_back(BytesOf(shard));
  ASSIGN_OR_RETURN(Tensor full, NewHostTensor(shards[0].dtype(), layout.full_shape));
  ConcatenateAlongAxis(blocks, OuterCount(layout.full_shape, layout.axis),
                       static_cast<char*>(full.data()));
  return full;
}

}  // namespace distribute::ps
