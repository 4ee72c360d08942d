#include "core/server/tensor_stream.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "core/tensor/buffer.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// A header's dtype and shape, checked, and its byte size.
struct CheckedHeader {
  DType dtype;
  Shape shape;
  uint64_t bytes;
};

absl::StatusOr<CheckedHeader> CheckHeader(const variables::TensorHeader& header) {
  ASSIGN_OR_RETURN(const DType dtype, DTypeFromInt(header.dtype()));
  ASSIGN_OR_RETURN(Shape shape, Shape::Make(std::span<const int64_t>(header.dims().data(),
                                                                     static_cast<size_t>(header.dims_size()))));
  // Shape::Make bounds the element count so that this product cannot overflow.
  const uint64_t bytes = static_cast<uint64_t>(shape.num_elements()) * DTypeSize(dtype);
  if (header.byte_size() != bytes) {
    return absl::InvalidArgumentError(absl::StrCat("byte_size is ", header.byte_size(), " but a ", DTypeName(dtype),
                                                   " tensor of shape ", shape.ToString(), " has ", bytes, " bytes"));
  }
  return CheckedHeader{dtype, std::move(shape), bytes};
}

}  // namespace

void SetTensorHeader(const Tensor& tensor, variables::TensorHeader* header) {
  header->set_dtype(static_cast<int32_t>(tensor.dtype()));
  header->mutable_dims()->Assign(tensor.shape().dims().begin(), tensor.shape().dims().end());
  header->set_byte_size(tensor.byte_size());
}

TensorAssembler::TensorAssembler(std::vector<Tensor> tensors) : tensors_(std::move(tensors)) {
  for (const Tensor& tensor : tensors_) declared_ += tensor.byte_size();
  while (current_ < tensors_.size() && tensors_[current_].byte_size() == 0) ++current_;
}

absl::StatusOr<TensorAssembler> TensorAssembler::Start(std::span<const variables::TensorHeader* const> headers,
                                                       uint64_t max_bytes, ByteBudget::Reservation* reservation,
                                                       ByteBudget::Clock::time_point deadline) {
  std::vector<CheckedHeader> checked;
  checked.reserve(headers.size());
  uint64_t total = 0;
  for (size_t i = 0; i < headers.size(); ++i) {
    absl::StatusOr<CheckedHeader> header = CheckHeader(*headers[i]);
    if (!header.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", i, ": ", header.status().message()));
    }
    if (header->bytes > max_bytes - total) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", i, " has ", header->bytes, " bytes, which makes ",
                                                     "more than the ", max_bytes, " bytes one call may carry"));
    }
    total += header->bytes;
    checked.push_back(*std::move(header));
  }
  if (reservation != nullptr && !reservation->Take(total, deadline)) {
    return absl::ResourceExhaustedError(absl::StrCat("tensors of ", total, " bytes did not find room in time"));
  }
  const DeviceSpec host = DeviceSpec{}.WithDefaults();
  std::vector<Tensor> tensors;
  tensors.reserve(checked.size());
  for (CheckedHeader& header : checked) {
    // Not zeroed: every byte is about to be written, or the tensor is dropped.
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, Buffer::Allocate(host, header.bytes, /*zero=*/false));
    ASSIGN_OR_RETURN(Tensor tensor, Tensor::FromBuffer(header.dtype, std::move(header.shape), std::move(buffer)));
    tensors.push_back(std::move(tensor));
  }
  return TensorAssembler(std::move(tensors));
}

absl::Status TensorAssembler::Append(absl::string_view data) {
  if (data.size() > declared_ - received_) {
    return absl::InvalidArgumentError(absl::StrCat("the stream carries more tensor bytes than the ", declared_,
                                                   " its headers declared"));
  }
  received_ += data.size();
  while (!data.empty()) {
    const Tensor& tensor = tensors_[current_];
    const size_t n = std::min(data.size(), tensor.byte_size() - offset_);
    std::memcpy(static_cast<char*>(tensor.data()) + offset_, data.data(), n);
    data.remove_prefix(n);
    offset_ += n;
    if (offset_ == tensor.byte_size()) {
      offset_ = 0;
      ++current_;
      while (current_ < tensors_.size() && tensors_[current_].byte_size() == 0) ++current_;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> TensorAssembler::Finish() && {
  if (received_ != declared_) {
    return absl::InvalidArgumentError(absl::StrCat("the stream ended after ", received_, " of the ", declared_,
                                                   " tensor bytes its headers declared"));
  }
  return std::move(tensors_);
}

void ChunkCursor::SkipEmpty() {
  while (current_ < tensors_.size() && offset_ == tensors_[current_].byte_size()) {
    ++current_;
    offset_ = 0;
  }
}

std::string ChunkCursor::Next(size_t max_bytes) {
  std::string chunk;
  while (!done() && chunk.size() < max_bytes) {
    const Tensor& tensor = tensors_[current_];
    const size_t n = std::min(max_bytes - chunk.size(), tensor.byte_size() - offset_);
    chunk.append(static_cast<const char*>(tensor.data()) + offset_, n);
    offset_ += n;
    SkipEmpty();
  }
  return chunk;
}

absl::Status CheckHeaderFits(size_t header_bytes, size_t max_message_bytes) {
  if (header_bytes + kDataFieldOverheadBytes <= max_message_bytes) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the request's names, hyperparameters and tensor headers take ",
                                                 header_bytes, " bytes, more than the ", max_message_bytes,
                                                 " bytes of a message (max_message_bytes)"));
}

}  // namespace distribute
