#include "core/collective/cross_worker.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "core/collective/reduce_kernels.h"
#include "core/tensor/concatenate.h"
#include "core/util/status_macros.h"

namespace distribute {

enum class CrossWorker::Kind : uint32_t {
  kAllReduce = 1,
  kAllGather = 2,
  kBroadcast = 3,
  kBarrier = 4,
};

namespace {

constexpr uint32_t kMagic = 0x44495354;  // "DIST"
constexpr size_t kBlockBytes = 256;
constexpr size_t kSignatureBytes = 96;

size_t RoundUpTo(size_t value, size_t to) { return (value + to - 1) / to * to; }

}  // namespace

// What every worker says about its call; the rest of its block carries a small payload.
struct CrossWorker::Header {
  uint32_t magic;
  uint32_t kind;
  uint64_t sequence;
  uint64_t payload_bytes;
  uint64_t signature_hash;
  char signature[kSignatureBytes];
};
// Payload bytes that travel inside a header block.
constexpr size_t kInlineBytes = kBlockBytes - 128;

// The call a header's kind names, for messages (a header may come from a newer peer).
const char* CrossWorker::KindName(uint32_t kind) {
  switch (static_cast<Kind>(kind)) {
    case Kind::kAllReduce: return "all_reduce";
    case Kind::kAllGather: return "all_gather";
    case Kind::kBroadcast: return "broadcast";
    case Kind::kBarrier: return "barrier";
  }
  return "an unknown call";
}

CrossWorker::CrossWorker(std::unique_ptr<Transport> transport)
    : transport_(std::move(transport)) {
  headers_.resize(kBlockBytes * static_cast<size_t>(transport_->size()));
}

const char* CrossWorker::BlockOf(int32_t worker) const {
  return headers_.data() + kBlockBytes * static_cast<size_t>(worker);
}

void CrossWorker::WriteHeader(Kind kind, const std::string& signature, const void* payload,
                              size_t payload_bytes, bool inline_payload, char* block) {
  static_assert(sizeof(Header) == kBlockBytes - kInlineBytes);
  std::memset(block, 0, kBlockBytes);
  Header header{};
  header.magic = kMagic;
  header.kind = static_cast<uint32_t>(kind);
  header.sequence = sequence_++;
  header.payload_bytes = payload_bytes;
  header.signature_hash = std::hash<std::string>{}(signature);
  std::memcpy(header.signature, signature.data(), std::min(signature.size(), kSignatureBytes - 1));
  std::memcpy(block, &header, sizeof(header));
  if (inline_payload && payload_bytes > 0) std::memcpy(block + sizeof(Header), payload, payload_bytes);
}

absl::Status CrossWorker::CheckHeaders() const {
  Header mine;
  std::memcpy(&mine, BlockOf(worker()), sizeof(Header));
  for (int32_t w = 0; w < num_workers(); ++w) {
    Header theirs;
    std::memcpy(&theirs, BlockOf(w), sizeof(Header));
    theirs.signature[kSignatureBytes - 1] = '\0';
    if (theirs.magic != kMagic) {
      return absl::InternalError(absl::StrCat("task ", task_name(w), " sent a malformed collective header"));
    }
    const bool same_call = theirs.kind == mine.kind && theirs.sequence == mine.sequence &&
                           theirs.signature_hash == mine.signature_hash &&
                           (theirs.kind != static_cast<uint32_t>(Kind::kAllReduce) ||
                            theirs.payload_bytes == mine.payload_bytes);
    if (!same_call) {
      return absl::InvalidArgumentError(absl::StrCat(
          "workers disagree on collective call #", mine.sequence, ": task ", task_name(worker()),
          " called ", KindName(mine.kind), " (", mine.signature, ") but task ", task_name(w),
          " called ", KindName(theirs.kind), " (", theirs.signature, ") as its call #",
          theirs.sequence, "; every worker must make the same collective calls in the same order"));
    }
  }
  return absl::OkStatus();
}

bool CrossWorker::OnlyAllReduces() const {
  for (int32_t w = 0; w < num_workers(); ++w) {
    Header header;
    std::memcpy(&header, BlockOf(w), sizeof(Header));
    if (header.kind != static_cast<uint32_t>(Kind::kAllReduce)) return false;
  }
  return true;
}

absl::Status CrossWorker::ExchangeHeaders(Kind kind, const std::string& signature,
                                          const void* payload, size_t payload_bytes,
                                          bool inline_payload, const Deadline& deadline) {
  char block[kBlockBytes];
  WriteHeader(kind, signature, payload, payload_bytes, inline_payload, block);
  RETURN_IF_ERROR(transport_->AllGather(block, kBlockBytes, headers_.data(), deadline));
  return CheckHeaders();
}

absl::Status CrossWorker::AllReduce(ReduceOp op, const void* pack, size_t pack_bytes,
                                    std::span<const Segment> segments, int64_t mean_divisor,
                                    const std::string& signature, const Deadline& deadline) {
  if (pack_bytes > kInlineBytes && num_workers() > 1) {
    return ReduceScatterAllGather(op, static_cast<const char*>(pack), pack_bytes, segments,
                                  mean_divisor, signature, deadline);
  }
  // Every worker's pack comes with the headers: reduce all of it here.
  RETURN_IF_ERROR(ExchangeHeaders(Kind::kAllReduce, signature, pack, pack_bytes,
                                  pack_bytes <= kInlineBytes, deadline));
  const char* base = pack_bytes <= kInlineBytes ? nullptr : static_cast<const char*>(pack);
  std::vector<const void*> inputs(static_cast<size_t>(num_workers()));
  for (const Segment& segment : segments) {
    for (int32_t w = 0; w < num_workers(); ++w) {
      inputs[w] = (base != nullptr ? base : BlockOf(w) + sizeof(Header)) + segment.offset;
    }
    ReduceAccumulatorRange(segment.dtype, op, inputs.data(), num_workers(), segment.outputs.data(),
                           static_cast<int32_t>(segment.outputs.size()), 0, segment.count,
                           mean_divisor);
  }
  return absl::OkStatus();
}

absl::Status CrossWorker::ReduceScatterAllGather(ReduceOp op, const char* pack, size_t pack_bytes,
                                                 std::span<const Segment> segments,
                                                 int64_t mean_divisor, const std::string& signature,
                                                 const Deadline& deadline) {
  // Worker w owns bytes [w * chunk, (w + 1) * chunk) of the pack (64-byte aligned, so a
  // boundary never splits an element: tensors start 64-byte aligned in the pack). It
  // receives that chunk from every worker, reduces it in worker order, and sends the
  // result to every worker: each worker sends and receives 2 (W - 1) / W of the pack, as
  // in a ring all-reduce, but the order of the reduction is fixed.
  const int32_t workers = num_workers();
  const int32_t me = worker();
  const size_t chunk = RoundUpTo((pack_bytes + workers - 1) / workers, 64);
  auto begin_of = [&](int32_t w) { return std::min(pack_bytes, chunk * static_cast<size_t>(w)); };
  auto size_of = [&](int32_t w) { return begin_of(w + 1) - begin_of(w); };
  const size_t mine = size_of(me);
  const Transport::Pipelining cut = transport_->pipelining();
  const size_t frame_bytes = cut.first_bytes;
  // From the nominal chunk, the same on every worker (transport.h, Pipelining).
  const size_t piece_bytes = std::clamp(RoundUpTo((chunk - std::min(chunk, frame_bytes)) / 4, 64),
                                        cut.piece_bytes, std::max(cut.piece_bytes, cut.max_piece_bytes));

  // Round 1 carries the header and the first frame_bytes of each chunk. A receive may be
  // longer than the message it gets (never shorter: Gloo aborts on that), so every worker
  // posts frame_bytes for the first frame whatever its own sizes: a worker whose pack
  // differs is caught by the header check before anything sized by the pack moves.
  const size_t region = std::max(mine, frame_bytes);
  received_.resize(region * static_cast<size_t>(workers));
  char header[kBlockBytes];
  WriteHeader(Kind::kAllReduce, signature, nullptr, pack_bytes, false, header);
  std::memcpy(headers_.data() + kBlockBytes * static_cast<size_t>(me), header, kBlockBytes);
  std::vector<Transport::Transfer> sends, receives;
  for (int32_t w = 0; w < workers; ++w) {  // every header first, then every frame
    if (w == me) continue;
    sends.push_back({w, 0, header, kBlockBytes});
    sends.push_back({w, 1, const_cast<char*>(pack) + begin_of(w), std::min(size_of(w), frame_bytes)});
    receives.push_back({w, 0, headers_.data() + kBlockBytes * static_cast<size_t>(w), kBlockBytes});
  }
  for (int32_t w = 0; w < workers; ++w) {
    if (w != me) receives.push_back({w, 1, received_.data() + region * static_cast<size_t>(w), frame_bytes});
  }
  const size_t last_header = static_cast<size_t>(workers - 2);
  RETURN_IF_ERROR(transport_->Exchange(
      sends, receives, deadline, [&](size_t index) -> absl::StatusOr<std::vector<Transport::Transfer>> {
        // A worker making another kind of call sends no frame: do not wait for one.
        if (index == last_header && !OnlyAllReduces()) return CheckHeaders();
        return std::vector<Transport::Transfer>{};
      }));
  RETURN_IF_ERROR(CheckHeaders());

  // The reduced pack, in accumulator layout. A single tensor whose accumulator is itself
  // is reduced straight into its first output.
  const bool direct = segments.size() == 1 && AccumulatorDType(segments[0].dtype) == segments[0].dtype;
  char* result;
  if (direct) {
    result = static_cast<char*>(segments[0].outputs[0]);
  } else {
    result_.resize(pack_bytes);
    result = result_.data();
  }
  const size_t lo = begin_of(me);
  std::vector<const void*> inputs(static_cast<size_t>(workers));
  // Reduces bytes [from, to) of this worker's chunk (offsets within the pack).
  auto reduce = [&](size_t from, size_t to) {
    for (const Segment& segment : segments) {
      const DType acc = AccumulatorDType(segment.dtype);
      const size_t acc_size = DTypeSize(acc);
      const size_t first = std::max(segment.offset, from);
      const size_t last = std::min(segment.offset + segment.count * acc_size, to);
      if (first >= last) continue;
      for (int32_t w = 0; w < workers; ++w) {
        inputs[w] = w == me ? pack + first : received_.data() + region * static_cast<size_t>(w) + (first - lo);
      }
      void* out = result + first;
      // Reduced (and divided) in accumulator precision; stored in the tensor's dtype below.
      ReduceAccumulatorRange(acc, op, inputs.data(), workers, &out, 1, 0,
                             (last - first) / acc_size, mean_divisor);
    }
  };

  // Round 2, pipelined: a chunk is its first frame (piece 0, already here) and then pieces
  // of piece_bytes. Each piece of this worker's chunk is reduced as soon as every worker's
  // copy of it has arrived, and its result goes out at once, while later pieces are still
  // arriving. Channels: 1 + p for a piece's inputs, kResults + p for its result.
  constexpr int32_t kResults = 1 << 20;
  auto piece_bounds = [&](size_t size, size_t p) {
    if (p == 0) return std::make_pair(size_t{0}, std::min(size, frame_bytes));
    const size_t from = std::min(size, frame_bytes + (p - 1) * piece_bytes);
    return std::make_pair(from, std::min(size, from + piece_bytes));
  };
  auto pieces_of = [&](size_t size) {
    return size <= frame_bytes ? size_t{1} : 1 + (size - frame_bytes + piece_bytes - 1) / piece_bytes;
  };
  auto results_to_peers = [&](size_t p) {
    const auto [from, to] = piece_bounds(mine, p);
    std::vector<Transport::Transfer> out;
    for (int32_t w = 0; w < workers; ++w) {
      if (w != me) out.push_back({w, kResults + static_cast<int32_t>(p), result + lo + from, to - from});
    }
    return out;
  };
  sends.clear();
  receives.clear();
  const size_t my_pieces = pieces_of(mine);
  // Piece 0 (the first frames, here already) is reduced before posting only when it is
  // this worker's whole chunk. Otherwise the later pieces are posted first, so that the
  // peers' sends of them (Gloo's waits for the receive to be posted) move while piece 0 is
  // reduced in the first callback: a worker's first receive is always a later piece of its
  // own chunk, which every peer sends at once, so that callback never waits on a result.
  bool piece0_reduced = false;
  auto reduce_piece0 = [&] {
    if (piece0_reduced) return std::vector<Transport::Transfer>{};
    piece0_reduced = true;
    reduce(lo, lo + piece_bounds(mine, 0).second);
    return results_to_peers(0);
  };
  if (my_pieces == 1) sends = reduce_piece0();
  for (size_t p = 1; p < my_pieces; ++p) {  // inputs of this worker's later pieces, piece by piece
    const auto [from, to] = piece_bounds(mine, p);
    for (int32_t w = 0; w < workers; ++w) {
      if (w == me) continue;
      receives.push_back({w, static_cast<int32_t>(p), received_.data() + region * static_cast<size_t>(w) + from,
                          to - from});
    }
  }
  const size_t input_receives = receives.size();
  for (int32_t w = 0; w < workers; ++w) {
    if (w == me) continue;
    for (size_t p = 1; p < pieces_of(size_of(w)); ++p) {  // the later pieces of the others' chunks
      const auto [from, to] = piece_bounds(size_of(w), p);
      sends.push_back({w, static_cast<int32_t>(p), const_cast<char*>(pack) + begin_of(w) + from, to - from});
    }
    for (size_t p = 0; p < pieces_of(size_of(w)); ++p) {  // and their results
      const auto [from, to] = piece_bounds(size_of(w), p);
      receives.push_back({w, kResults + static_cast<int32_t>(p), result + begin_of(w) + from, to - from});
    }
  }
  const size_t peers = static_cast<size_t>(workers - 1);
  RETURN_IF_ERROR(transport_->Exchange(
      sends, receives, deadline, [&](size_t index) -> std::vector<Transport::Transfer> {
        std::vector<Transport::Transfer> out = reduce_piece0();
        // The last input of piece p from the last peer: piece p is complete.
        if (index >= input_receives || (index + 1) % peers != 0) return out;
        const size_t p = 1 + index / peers;
        const auto [from, to] = piece_bounds(mine, p);
        reduce(lo + from, lo + to);
        std::vector<Transport::Transfer> more = results_to_peers(p);
        out.insert(out.end(), more.begin(), more.end());
        return out;
      }));

  for (const Segment& segment : segments) {
    for (size_t k = direct ? 1 : 0; k < segment.outputs.size(); ++k) {
      FromAccumulator(segment.dtype, result + segment.offset, segment.outputs[k], segment.count);
    }
  }
  return absl::OkStatus();
}

absl::Status CrossWorker::AllReduceLocal(ReduceOp op, DType dtype, const void* const* inputs,
                                         int32_t num_local, size_t count, void* output,
                                         int64_t mean_divisor, const std::string& signature,
                                         const Deadline& deadline) {
  std::vector<char> partial(count * DTypeSize(AccumulatorDType(dtype)));
  ReduceRangeToAccumulator(dtype, op, inputs, num_local, partial.data(), 0, count);
  const Segment segment{dtype, count, 0, std::span<void* const>(&output, 1)};
  return AllReduce(op, partial.data(), partial.size(), std::span<const Segment>(&segment, 1),
                   mean_divisor, signature, deadline);
}

absl::StatusOr<CrossWorker::Gathered> CrossWorker::AllGather(const void* data, size_t bytes,
                                                             const std::string& signature,
                                                             const Deadline& deadline) {
  const bool fits = bytes <= kInlineBytes;
  RETURN_IF_ERROR(ExchangeHeaders(Kind::kAllGather, signature, data, bytes, fits, deadline));
  std::vector<size_t> sizes(static_cast<size_t>(num_workers()));
  bool all_inline = true;
  size_t total = 0;
  for (int32_t w = 0; w < num_workers(); ++w) {
    Header header;
    std::memcpy(&header, BlockOf(w), sizeof(Header));
    sizes[w] = header.payload_bytes;
    total += sizes[w];
    all_inline = all_inline && sizes[w] <= kInlineBytes;
  }
  Gathered result;
  result.storage.resize(total);
  if (all_inline) {
    size_t offset = 0;
    for (int32_t w = 0; w < num_workers(); ++w) {
      if (sizes[w] > 0) std::memcpy(result.storage.data() + offset, BlockOf(w) + sizeof(Header), sizes[w]);
      offset += sizes[w];
    }
  } else {
    RETURN_IF_ERROR(transport_->AllGatherV(data, sizes, result.storage.data(), deadline));
  }
  size_t offset = 0;
  for (int32_t w = 0; w < num_workers(); ++w) {
    result.blocks.emplace_back(result.storage.data() + offset, sizes[w]);
    offset += sizes[w];
  }
  return result;
}

absl::StatusOr<Tensor> CrossWorker::AllGatherAlongAxis(const Tensor& local, int32_t axis,
                                                       const std::string& signature,
                                                       const Deadline& deadline) {
  ASSIGN_OR_RETURN(Gathered gathered, AllGather(local.byte_size() > 0 ? local.data() : nullptr,
                                                local.byte_size(), signature, deadline));
  const Shape& shape = local.shape();
  const size_t element = DTypeSize(local.dtype());
  int64_t outer = 1;
  for (int32_t d = 0; d < axis; ++d) outer *= shape.dim(d);
  int64_t inner = 1;
  for (int32_t d = axis + 1; d < shape.rank(); ++d) inner *= shape.dim(d);
  // Each worker's block is [outer, its rows, inner]: its rows follow from its size.
  const size_t row_bytes = static_cast<size_t>(inner) * element;
  int64_t rows = 0;
  if (outer > 0 && row_bytes > 0) {
    for (const auto& block : gathered.blocks) {
      rows += static_cast<int64_t>(block.size() / (static_cast<size_t>(outer) * row_bytes));
    }
  }
  std::vector<int64_t> dims = shape.dims();
  dims[static_cast<size_t>(axis)] = rows;
  ASSIGN_OR_RETURN(Shape out_shape, Shape::Make(dims));
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                   Buffer::Allocate(DeviceSpec{}.WithDefaults(),
                                    static_cast<size_t>(out_shape.num_elements()) * element, false));
  ConcatenateAlongAxis(gathered.blocks, outer, static_cast<char*>(buffer->data()));
  return Tensor::FromBuffer(local.dtype(), std::move(out_shape), std::move(buffer));
}

absl::Status CrossWorker::Broadcast(void* data, size_t bytes, int32_t root,
                                    const std::string& signature, const Deadline& deadline) {
  const bool small = bytes <= kInlineBytes;
  RETURN_IF_ERROR(ExchangeHeaders(Kind::kBroadcast, absl::StrCat(signature, " from task ", task_name(root)),
                                  data, bytes, small, deadline));
  if (bytes == 0) return absl::OkStatus();
  if (small) {
    if (worker() != root) std::memcpy(data, BlockOf(root) + sizeof(Header), bytes);
    return absl::OkStatus();
  }
  return transport_->Broadcast(data, bytes, root, deadline);
}

absl::Status CrossWorker::Barrier(const std::string& name, const Deadline& deadline) {
  return ExchangeHeaders(Kind::kBarrier, name, nullptr, 0, false, deadline);
}

}  // namespace distribute
