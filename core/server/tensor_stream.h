// How tensors travel on the variable service (variables.proto): a header, then their bytes
// cut into chunks over the messages of one stream. The server receives requests and the
// client receives answers through the same TensorAssembler, so a header is checked the
// same way on both sides, completely, before a byte is allocated for it. Only the gRPC
// translation units include this header.
#ifndef DISTRIBUTE_CORE_SERVER_TENSOR_STREAM_H_
#define DISTRIBUTE_CORE_SERVER_TENSOR_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <grpcpp/impl/call_op_set.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "server/variables.pb.h"  // generated
#include "core/server/variable_service_limits.h"
#include "core/tensor/tensor.h"
#include "core/util/byte_budget.h"

namespace distribute {

// The header of `tensor` (its dtype, dims and byte size).
void SetTensorHeader(const Tensor& tensor, variables::TensorHeader* header);

// Receives the bytes of the tensors some headers declare, into host tensors.
class TensorAssembler {
 public:
  // Checks every header and allocates host tensors for them. InvalidArgument, naming the
  // tensor by its position, for an unknown dtype, a rank above kMaxRank, a negative
  // dimension, an element count whose bytes overflow, a byte_size other than the dtype's
  // size times the element count, or tensors of more than `max_bytes` bytes together; all
  // of it before anything is allocated. With a `reservation`, the tensors' bytes are then
  // taken from its budget, waiting until `deadline`: ResourceExhausted, allocating
  // nothing, when they are not free by then (or exceed the whole budget).
  static absl::StatusOr<TensorAssembler> Start(std::span<const variables::TensorHeader* const> headers,
                                               uint64_t max_bytes, ByteBudget::Reservation* reservation = nullptr,
                                               ByteBudget::Clock::time_point deadline = {});

  // The next bytes of the tensors, in order. InvalidArgument when they go past the bytes
  // the headers declared (nothing is appended then).
  absl::Status Append(absl::string_view data);

  // The tensors, once every declared byte arrived; InvalidArgument saying how many are
  // missing otherwise.
  absl::StatusOr<std::vector<Tensor>> Finish() &&;

 private:
  explicit TensorAssembler(std::vector<Tensor> tensors);

  std::vector<Tensor> tensors_;
  size_t current_ = 0;  // the tensor the next byte goes to
  size_t offset_ = 0;   // where in it
  uint64_t declared_ = 0;
  uint64_t received_ = 0;
};

// The bytes of host tensors, back to back, cut into chunks.
class ChunkCursor {
 public:
  explicit ChunkCursor(std::span<const Tensor> tensors) : tensors_(tensors) { SkipEmpty(); }
  bool done() const { return current_ == tensors_.size(); }
  // The next `max_bytes` bytes, or all that remain when fewer do.
  std::string Next(size_t max_bytes);

 private:
  void SkipEmpty();

  std::span<const Tensor> tensors_;
  size_t current_ = 0;
  size_t offset_ = 0;
};

// What a message needs beside its data bytes for the data field's tag and length.
inline constexpr size_t kDataFieldOverheadBytes = 16;

// InvalidArgument unless a first message whose other fields take `header_bytes` fits
// `max_message_bytes` (a request naming many long hyperparameters may not).
absl::Status CheckHeaderFits(size_t header_bytes, size_t max_message_bytes);

// Sends `first` on `stream` (a gRPC client or server writer of Message) with as many of
// the bytes of `tensors` (host tensors) as fit beside its fields within
// `max_message_bytes`, then the rest in messages of its type holding only chunks of
// TensorChunkBytes(max_message_bytes). The last message goes with the end of the stream
// (set_last_message: a client's half-close, a server's status), which saves a round of the
// transport per call. `first` must pass CheckHeaderFits. False when a write failed (the
// stream's status says why).
template <typename Message, typename Stream>
bool WriteChunked(Message first, std::span<const Tensor> tensors, size_t max_message_bytes, Stream* stream) {
  ChunkCursor cursor(tensors);
  const size_t chunk = TensorChunkBytes(max_message_bytes);
  const size_t used = first.ByteSizeLong() + kDataFieldOverheadBytes;
  const size_t room = max_message_bytes > used ? max_message_bytes - used : 0;
  first.set_data(cursor.Next(room < chunk ? room : chunk));
  Message next;
  for (Message* message = &first;; message = &next) {
    if (cursor.done()) return stream->Write(*message, grpc::WriteOptions().set_last_message());
    if (!stream->Write(*message)) return false;
    next.Clear();
    next.set_data(cursor.Next(chunk));
  }
}

// Reads the messages of a stream after its first into `assembler`, until `read(Message*)`
// says the stream ended. InvalidArgument for a message that carries anything but data, or
// no data (either would let a sender hold the reader without sending bytes).
template <typename Message, typename Read>
absl::Status ReadChunks(TensorAssembler& assembler, Read&& read) {
  Message message;
  for (int64_t index = 1; read(&message); ++index) {
    std::string data;
    data.swap(*message.mutable_data());  // leaves the field empty, so the size below is the rest
    if (data.empty() || message.ByteSizeLong() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "message ", index, " of the stream carries ",
          data.empty() ? "no tensor bytes" : "more than tensor bytes",
          ": only the first message declares tensors, and every later one continues their bytes"));
    }
    if (absl::Status appended = assembler.Append(data); !appended.ok()) return appended;
    message.Clear();
  }
  return absl::OkStatus();
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_TENSOR_STREAM_H_
