#include "core/collective/cross_worker.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "core/collective/reduce_kernels.h"
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

const char* KindName(uint32_t kind) {
  switch (kind) {
    case 1: return "all_reduce";
    case 2: return "all_gather";
    case 3: return "broadcast";
    case 4: return "barrier";
    default: return "an unknown call";
  }
}

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

CrossWorker::CrossWorker(std::unique_ptr<WorkerCollectives> transport, int32_t replicas_per_worker)
    : transport_(std::move(transport)), replicas_per_worker_(replicas_per_worker) {
  headers_.resize(kBlockBytes * static_cast<size_t>(transport_->size()));
}

const char* CrossWorker::BlockOf(int32_t worker) const {
  return headers_.data() + kBlockBytes * static_cast<size_t>(worker);
}

absl::Status CrossWorker::ExchangeHeaders(Kind kind, const std::string& signature,
                                          const void* payload, size_t payload_bytes,
                                          bool inline_payload, const Deadline& deadline) {
  static_assert(sizeof(Header) == kBlockBytes - kInlineBytes);
  char block[kBlockBytes] = {};
  Header header{};
  header.magic = kMagic;
  header.kind = static_cast<uint32_t>(kind);
  header.sequence = sequence_++;
  header.payload_bytes = payload_bytes;
  header.signature_hash = std::hash<std::string>{}(signature);
  std::memcpy(header.signature, signature.data(), std::min(signature.size(), kSignatureBytes - 1));
  std::memcpy(block, &header, sizeof(header));
  if (inline_payload && payload_bytes > 0) std::memcpy(block + sizeof(Header), payload, payload_bytes);
  RETURN_IF_ERROR(transport_->AllGather(block, kBlockBytes, headers_.data(), deadline));

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
                           theirs.signature_hash == mine.signature_hash;
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

absl::Status CrossWorker::AllReduce(ReduceOp op, const void* pack, size_t pack_bytes,
                                    std::span<const Segment> segments, int64_t mean_divisor,
                                    const std::string& signature, const Deadline& deadline) {
  const bool small = pack_bytes <= kInlineBytes;
  RETURN_IF_ERROR(ExchangeHeaders(Kind::kAllReduce, signature, pack, pack_bytes, small, deadline));
  const char* base;
  size_t stride;
  if (small) {
    base = headers_.data() + sizeof(Header);
    stride = kBlockBytes;
  } else {
    gathered_.resize(pack_bytes * static_cast<size_t>(num_workers()));
    RETURN_IF_ERROR(transport_->AllGather(pack, pack_bytes, gathered_.data(), deadline));
    base = gathered_.data();
    stride = pack_bytes;
  }
  std::vector<const void*> inputs(static_cast<size_t>(num_workers()));
  for (const Segment& segment : segments) {
    for (int32_t w = 0; w < num_workers(); ++w) {
      inputs[w] = base + stride * static_cast<size_t>(w) + segment.offset;
    }
    ReduceAccumulatorRange(segment.dtype, op, inputs.data(), num_workers(), segment.outputs.data(),
                           static_cast<int32_t>(segment.outputs.size()), 0, segment.count,
                           mean_divisor);
  }
  return absl::OkStatus();
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
  char* dst = static_cast<char*>(buffer->data());
  for (int64_t o = 0; o < outer; ++o) {
    for (const auto& block : gathered.blocks) {
      const size_t part = block.size() / static_cast<size_t>(outer);
      if (part == 0) continue;
      std::memcpy(dst, block.data() + static_cast<size_t>(o) * part, part);
      dst += part;
    }
  }
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
