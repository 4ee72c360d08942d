#include "core/collective/cross_worker.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "core/kernels/reduce_kernels.h"
#include "core/collective/scatter_cut.h"
#include "core/tensor/buffer.h"
#include "core/tensor/shared_host_arena.h"
#include "core/tensor/concatenate.h"
#include "core/util/status_macros.h"

namespace distribute {

enum class CrossWorker::Kind : uint32_t {
  kAllReduce = 1,
  kAllGather = 2,
  kBroadcast = 3,
  kBarrier = 4,
  kAllReduceInPlace = 5,
  kAllReduceGathered = 6,
  kBroadcastWhole = 7,
};

namespace {

constexpr uint32_t kMagic = 0x44495354;  // "DIST"
constexpr size_t kBlockBytes = 256;
constexpr size_t kSignatureBytes = 96;

// Channels of a large all-reduce's messages: 0 the header, 1 + p piece p of a chunk's
// inputs, kResultChannels + p piece p of its result.
constexpr int32_t kResultChannels = 1 << 20;

// Workers whose per-worker pointers a call keeps without a heap allocation.
constexpr size_t kInlineWorkers = 8;

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
    case Kind::kAllReduceInPlace: return "all_reduce (in place)";
    case Kind::kAllReduceGathered: return "all_reduce";
    case Kind::kBroadcastWhole: return "broadcast";
  }
  return "an unknown call";
}

CrossWorker::CrossWorker(std::unique_ptr<Transport> transport)
    : transport_(std::move(transport)), pipelining_(transport_->pipelining()) {
  headers_.resize(kBlockBytes * static_cast<size_t>(transport_->size()));
}

const char* CrossWorker::BlockOf(int32_t worker) const {
  return headers_.data() + kBlockBytes * static_cast<size_t>(worker);
}

CrossWorker::Header CrossWorker::HeaderOf(int32_t worker) const {
  Header header;
  std::memcpy(&header, BlockOf(worker), sizeof(Header));
  return header;
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
  if (!hashed_ || signature != hashed_signature_) {  // a loop repeats its calls: hash each once
    hashed_ = true;
    hashed_signature_ = signature;
    signature_hash_ = std::hash<std::string>{}(signature);
  }
  header.signature_hash = signature_hash_;
  std::memcpy(header.signature, signature.data(), std::min(signature.size(), kSignatureBytes - 1));
  std::memcpy(block, &header, sizeof(header));
  if (inline_payload && payload_bytes > 0) std::memcpy(block + sizeof(Header), payload, payload_bytes);
}

absl::Status CrossWorker::CheckHeaders() const {
  const Header mine = HeaderOf(worker());
  for (int32_t w = 0; w < num_workers(); ++w) {
    Header theirs = HeaderOf(w);
    theirs.signature[kSignatureBytes - 1] = '\0';
    if (theirs.magic != kMagic) {
      return absl::InternalError(absl::StrCat("task ", task_name(w), " sent a malformed collective header"));
    }
    const bool same_call = theirs.kind == mine.kind && theirs.sequence == mine.sequence &&
                           theirs.signature_hash == mine.signature_hash &&
                           ((theirs.kind != static_cast<uint32_t>(Kind::kAllReduce) &&
                             theirs.kind != static_cast<uint32_t>(Kind::kAllReduceInPlace) &&
                             theirs.kind != static_cast<uint32_t>(Kind::kAllReduceGathered) &&
                             theirs.kind != static_cast<uint32_t>(Kind::kBroadcastWhole)) ||
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
    if (transport_->shares_memory() && pack_bytes >= kShareableMinBytes) {
      ASSIGN_OR_RETURN(const bool reduced, InPlaceAllReduce(op, static_cast<const char*>(pack), pack_bytes, segments,
                                                            mean_divisor, signature, deadline));
      if (reduced) return absl::OkStatus();
    }
    if (pack_bytes <= GatheredMaxBytes()) {
      return GatheredAllReduce(op, static_cast<const char*>(pack), pack_bytes, segments, mean_divisor, signature,
                               deadline);
    }
    return ReduceScatterAllGather(op, static_cast<const char*>(pack), pack_bytes, segments,
                                  mean_divisor, signature, deadline);
  }
  // Every worker's pack comes with the headers (one worker: its own): reduce all of it here.
  RETURN_IF_ERROR(ExchangeHeaders(Kind::kAllReduce, signature, pack, pack_bytes,
                                  pack_bytes <= kInlineBytes, deadline));
  absl::InlinedVector<const char*, kInlineWorkers> packs(static_cast<size_t>(num_workers()));
  for (int32_t w = 0; w < num_workers(); ++w) {
    packs[w] = pack_bytes <= kInlineBytes ? BlockOf(w) + sizeof(Header) : static_cast<const char*>(pack);
  }
  ReduceWholePacks(op, segments, mean_divisor, packs);
  return absl::OkStatus();
}

void CrossWorker::ReduceWholePacks(ReduceOp op, std::span<const Segment> segments, int64_t mean_divisor,
                                   std::span<const char* const> packs) {
  absl::InlinedVector<const void*, kInlineWorkers> inputs(packs.size());
  for (const Segment& segment : segments) {
    for (size_t w = 0; w < packs.size(); ++w) inputs[w] = packs[w] + segment.offset;
    ReduceAccumulatorRange(segment.dtype, op, inputs.data(), static_cast<int32_t>(packs.size()),
                           segment.outputs.data(), static_cast<int32_t>(segment.outputs.size()), 0, segment.count,
                           mean_divisor);
  }
}

size_t CrossWorker::GatheredMaxBytes() const {
  return pipelining_.gathered_bytes * 2 / static_cast<size_t>(std::max(num_workers(), 2));
}

absl::Status CrossWorker::GatheredAllReduce(ReduceOp op, const char* pack, size_t pack_bytes,
                                            std::span<const Segment> segments, int64_t mean_divisor,
                                            const std::string& signature, const Deadline& deadline) {
  // Every worker sends its whole pack right behind its header, and each reduces every
  // worker's pack itself, in worker order: one message each way, where the reduce-scatter
  // and all-gather send two in turn (a small pack's time is its messages' latency, not
  // their bytes).
  WriteHeader(Kind::kAllReduceGathered, signature, nullptr, pack_bytes, false, OwnBlock());
  RETURN_IF_ERROR(ExchangeWhole(pack, pack_bytes, deadline));
  absl::InlinedVector<const char*, kInlineWorkers> packs(static_cast<size_t>(num_workers()));
  for (int32_t w = 0; w < num_workers(); ++w) packs[w] = w == worker() ? pack : WholeOf(w);
  ReduceWholePacks(op, segments, mean_divisor, packs);
  ++gathered_calls_;
  return absl::OkStatus();
}

absl::Status CrossWorker::ReduceScatterAllGather(ReduceOp op, const char* pack, size_t pack_bytes,
                                                 std::span<const Segment> segments,
                                                 int64_t mean_divisor, const std::string& signature,
                                                 const Deadline& deadline) {
  // Worker w owns chunk w of the pack (ScatterCut). It receives that chunk from every
  // worker, reduces it in worker order, and sends the result to every worker: each worker
  // sends and receives 2 (W - 1) / W of the pack, as in a ring all-reduce, but the order of
  // the reduction is fixed.
  //
  // One exchange: every receive of the call is posted at its start (the headers, the first
  // frames, the later pieces of this worker's chunk, the results of the others' chunks), so
  // that no message waits for its receive to be posted (Gloo's sender waits for the
  // receiver's ready message, a round trip per message posted late). The headers and the
  // first frames go out at once; the later pieces only after every header has arrived and
  // agreed, since a receive must be at least as long as its message and a worker whose pack
  // differs cuts differently. A receive may be longer than its message, so the first frames
  // are received into frame_bytes whatever the sizes.
  const int32_t workers = num_workers();
  const int32_t me = worker();
  const size_t peers = static_cast<size_t>(workers - 1);
  const ScatterCut cut(pack_bytes, workers, pipelining_);
  const size_t frame_bytes = cut.frame_bytes();
  const size_t mine = cut.size(me);
  const size_t lo = cut.begin(me);
  const size_t my_pieces = cut.pieces(mine);
  // Between two workers, on a transport that relays: each later piece of this worker's
  // chunk is reduced as it arrives, straight out of the transport's buffer, and its result
  // sent on at once (Transport::Relay), instead of being copied in, reduced and sent: only
  // the first frames are received here.
  const bool relay = workers == 2 && transport_->relays();
  const size_t region = relay ? frame_bytes : std::max(mine, frame_bytes);
  received_.resize(region * static_cast<size_t>(workers));
  auto received = [&](int32_t w, size_t offset) { return received_.data() + region * static_cast<size_t>(w) + offset; };

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

  char header[kBlockBytes];
  WriteHeader(Kind::kAllReduce, signature, nullptr, pack_bytes, false, header);
  std::memcpy(headers_.data() + kBlockBytes * static_cast<size_t>(me), header, kBlockBytes);

  std::vector<Transport::Transfer> sends, receives;
  for (int32_t w = 0; w < workers; ++w) {  // every header first, then every first frame
    if (w == me) continue;
    sends.push_back({w, 0, header, kBlockBytes});
    sends.push_back({w, 1, const_cast<char*>(pack) + cut.begin(w), cut.piece(cut.size(w), 0).second});
    receives.push_back({w, 0, headers_.data() + kBlockBytes * static_cast<size_t>(w), kBlockBytes});
  }
  for (int32_t w = 0; w < workers; ++w) {
    if (w != me) receives.push_back({w, 1, received(w, 0), frame_bytes});
  }
  // consume may run before this worker's own header check (Transport::Relay), but the
  // peer sends a later piece only once every header agreed, which with two workers is
  // this worker's verdict too; a peer whose headers disagree sends them empty.
  std::vector<Transport::Relay> relays;
  relays.reserve(my_pieces * peers);  // receives point at them
  const size_t first_pieces = receives.size();  // inputs of this worker's later pieces, piece by piece
  for (size_t p = 1; p < my_pieces; ++p) {
    const auto [from, to] = cut.piece(mine, p);
    for (int32_t w = 0; w < workers; ++w) {
      if (w == me) continue;
      const Transport::Relay* relayed = nullptr;
      if (relay) {
        relays.push_back({w, kResultChannels + static_cast<int32_t>(p), result + lo + from,
                          [&, w, start = lo + from](size_t offset, const char* in, size_t n) {
                            const char* inputs[2];  // relays are for two workers
                            inputs[me] = pack + start + offset;
                            inputs[w] = in;
                            ReduceSpan(op, segments, mean_divisor, inputs, start + offset, start + offset + n, result);
                          }});
        relayed = &relays.back();
      }
      receives.push_back({w, static_cast<int32_t>(1 + p), relay ? nullptr : received(w, from), to - from, relayed});
    }
  }
  const size_t first_result = receives.size();
  for (int32_t w = 0; w < workers; ++w) {  // the others' results
    if (w == me) continue;
    for (size_t p = 0; p < cut.pieces(cut.size(w)); ++p) {
      const auto [from, to] = cut.piece(cut.size(w), p);
      receives.push_back({w, kResultChannels + static_cast<int32_t>(p), result + cut.begin(w) + from, to - from});
    }
  }

  // Reduces piece p of this worker's chunk and returns its result's sends.
  auto reduce_piece = [&](size_t p) {
    const auto [piece_from, piece_to] = cut.piece(mine, p);
    const size_t from = lo + piece_from, to = lo + piece_to;
    absl::InlinedVector<const char*, kInlineWorkers> inputs(static_cast<size_t>(workers));
    for (int32_t w = 0; w < workers; ++w) inputs[w] = w == me ? pack + from : received(w, from - lo);
    ReduceSpan(op, segments, mean_divisor, inputs, from, to, result);
    std::vector<Transport::Transfer> out;
    for (int32_t w = 0; w < workers; ++w) {
      if (w != me) out.push_back({w, kResultChannels + static_cast<int32_t>(p), result + from, to - from});
    }
    return out;
  };

  absl::Status disagreement;  // the headers disagreed: every posted transfer is drained
  RETURN_IF_ERROR(transport_->Exchange(
      sends, receives, deadline, [&](size_t index) -> absl::StatusOr<std::vector<Transport::Transfer>> {
        if (index + 1 == peers) return AfterHeaders(pack, &disagreement);
        if (!disagreement.ok() || index >= first_result) return std::vector<Transport::Transfer>{};
        // Every worker's copy of a piece has arrived (the last of the first frames, or the
        // last peer's input of a later piece): reduce it and send its result.
        if (index + 1 == first_pieces) return reduce_piece(0);
        if (relay) return std::vector<Transport::Transfer>{};  // reduced and passed on as they came
        if (index >= first_pieces && (index - first_pieces + 1) % peers == 0) {
          return reduce_piece(1 + (index - first_pieces) / peers);
        }
        return std::vector<Transport::Transfer>{};
      }));
  RETURN_IF_ERROR(disagreement);

  for (const Segment& segment : segments) {
    for (size_t k = direct ? 1 : 0; k < segment.outputs.size(); ++k) {
      FromAccumulator(segment.dtype, result + segment.offset, segment.outputs[k], segment.count);
    }
  }
  return absl::OkStatus();
}

// What a worker's header says in an in-place all-reduce (in its payload room): where its
// pack and its result lie in the memory its peers map.
struct CrossWorker::SharedPlaces {
  uint64_t shared;  // 1 when both lie in it
  uint64_t pack;
  uint64_t result;
};

absl::StatusOr<bool> CrossWorker::InPlaceAllReduce(ReduceOp op, const char* pack, size_t pack_bytes,
                                                   std::span<const Segment> segments, int64_t mean_divisor,
                                                   const std::string& signature, const Deadline& deadline) {
  // Worker w reduces chunk w of the pack (ScatterCut) straight out of every worker's pack,
  // in worker order, into its own result; after a signal it copies every other chunk out of
  // its owner's result; after another, everyone may touch its buffers again. Each worker
  // reads and writes its share of the bytes once or twice, where the copying protocol moves
  // every piece through a ring three times. Peers' memory is only ever read.
  static_assert(sizeof(SharedPlaces) <= kInlineBytes);
  const int32_t workers = num_workers();
  const int32_t me = worker();
  const bool direct = segments.size() == 1 && AccumulatorDType(segments[0].dtype) == segments[0].dtype;
  char* result = nullptr;
  if (direct) {
    result = static_cast<char*>(segments[0].outputs[0]);
  } else {
    if (shared_result_ == nullptr || shared_result_->size() < pack_bytes) {
      absl::StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::Allocate(DeviceSpec{}.WithDefaults(), pack_bytes, false);
      shared_result_ = buffer.ok() ? *std::move(buffer) : nullptr;  // none: this call copies
    }
    if (shared_result_ != nullptr) result = static_cast<char*>(shared_result_->data());
  }
  SharedPlaces places{};
  const std::optional<uint64_t> pack_place = transport_->SharedPlace(pack, pack_bytes);
  const std::optional<uint64_t> result_place =
      result != nullptr ? transport_->SharedPlace(result, pack_bytes) : std::nullopt;
  if (pack_place.has_value() && result_place.has_value()) places = {1, *pack_place, *result_place};

  char* own = WritePlacedHeader(Kind::kAllReduceInPlace, signature, pack_bytes, places);
  absl::InlinedVector<Transport::Transfer, kInlineWorkers> sends, receives;
  for (int32_t w = 0; w < workers; ++w) {
    if (w == me) continue;
    sends.push_back({w, 0, own, kBlockBytes});
    receives.push_back({w, 0, headers_.data() + kBlockBytes * static_cast<size_t>(w), kBlockBytes});
  }
  // A peer in the copying protocol (a pack of another size) has sent its first frame too:
  // with it in flight this communicator cannot be used again, so the exchange ends failed
  // (the peer fails at once on this worker's header as well).
  RETURN_IF_ERROR(transport_->Exchange(
      sends, receives, deadline, [&](size_t index) -> absl::StatusOr<std::vector<Transport::Transfer>> {
        if (index + 1 < receives.size()) return std::vector<Transport::Transfer>{};
        absl::Status agreed = CheckHeaders();
        for (int32_t w = 0; w < workers && !agreed.ok(); ++w) {
          if (InCopyingAllReduce(HeaderOf(w))) return agreed;
        }
        return std::vector<Transport::Transfer>{};
      }));
  RETURN_IF_ERROR(CheckHeaders());

  absl::InlinedVector<const char*, kInlineWorkers> packs(static_cast<size_t>(workers));
  absl::InlinedVector<const char*, kInlineWorkers> results(static_cast<size_t>(workers));
  std::string unreadable;  // a peer whose places are not in its arena, as this worker maps it
  for (int32_t w = 0; w < workers; ++w) {
    const SharedPlaces theirs = PlacesOf(w);
    if (theirs.shared != 1) return false;  // every worker sees it: all copy instead
    if (w == me) continue;
    packs[w] = transport_->PeerBytes(w, theirs.pack, pack_bytes);
    results[w] = transport_->PeerBytes(w, theirs.result, pack_bytes);
    if ((packs[w] == nullptr || results[w] == nullptr) && unreadable.empty()) unreadable = task_name(w);
  }
  packs[me] = pack;
  results[me] = result;

  const ScatterCut cut(pack_bytes, workers, pipelining_);
  const size_t lo = cut.begin(me);
  const size_t hi = lo + cut.size(me);
  if (unreadable.empty() && lo < hi) {
    absl::InlinedVector<const char*, kInlineWorkers> inputs(static_cast<size_t>(workers));
    for (int32_t w = 0; w < workers; ++w) inputs[w] = packs[w] + lo;
    ReduceSpan(op, segments, mean_divisor, inputs, lo, hi, result);
  }
  // Every worker says whether it reduced its chunk: one that could not read a peer fails
  // the call on every worker, and nobody reads a result that was never made.
  const char reduced = unreadable.empty() ? 1 : 0;
  ASSIGN_OR_RETURN(const int32_t failed, Signal(1, reduced, deadline));
  if (failed >= 0) {
    return absl::InternalError(absl::StrCat("task ", task_name(failed),
                                            " could not read a peer's tensors in shared memory",
                                            failed == me ? absl::StrCat(" (task ", unreadable, "'s)") : ""));
  }
  for (int32_t w = 0; w < workers; ++w) {
    if (w != me && cut.size(w) > 0) std::memcpy(result + cut.begin(w), results[w] + cut.begin(w), cut.size(w));
  }
  // Nobody may change its pack or result before every worker has read them.
  RETURN_IF_ERROR(Signal(2, 1, deadline).status());  // every worker that got here read
  for (const Segment& segment : segments) {
    for (size_t k = direct ? 1 : 0; k < segment.outputs.size(); ++k) {
      FromAccumulator(segment.dtype, result + segment.offset, segment.outputs[k], segment.count);
    }
  }
  ++in_place_calls_;
  return true;
}

char* CrossWorker::OwnBlock() { return headers_.data() + kBlockBytes * static_cast<size_t>(worker()); }

size_t CrossWorker::WholeCapacity() const {
  // A receive may be longer than its message, and a peer in the reduce-scatter (a larger
  // pack) sends its first frame on channel 1 too: room for either, so that a disagreement
  // is found in the headers, never as a message too long for its receive.
  return std::max(pipelining_.gathered_bytes, pipelining_.first_bytes);
}

const char* CrossWorker::WholeOf(int32_t w) const { return whole_.get() + WholeCapacity() * static_cast<size_t>(w); }

absl::Status CrossWorker::ExchangeWhole(const void* payload, size_t payload_bytes, const Deadline& deadline) {
  // Every worker sends every peer a message on channel 1, empty when it has no payload, so
  // that whatever the workers disagree on (who is the root, what sizes), every receive
  // posted is met and nothing is left in flight.
  const int32_t workers = num_workers();
  const int32_t me = worker();
  const size_t peers = static_cast<size_t>(workers - 1);
  const size_t capacity = WholeCapacity();
  if (whole_ == nullptr) {
    // Not zero-filled: only the pages messages land in are ever touched (1 MiB per worker
    // over TCP, most of it room a peer in another protocol might need).
    whole_.reset(new char[capacity * static_cast<size_t>(workers)]);
  }
  const uint32_t kind = HeaderOf(me).kind;
  absl::InlinedVector<Transport::Transfer, 2 * kInlineWorkers> sends, receives;
  for (int32_t w = 0; w < workers; ++w) {
    if (w == me) continue;
    sends.push_back({w, 0, OwnBlock(), kBlockBytes});
    sends.push_back({w, 1, const_cast<void*>(payload), payload_bytes});
    receives.push_back({w, 0, headers_.data() + kBlockBytes * static_cast<size_t>(w), kBlockBytes});
  }
  for (int32_t w = 0; w < workers; ++w) {
    if (w != me) receives.push_back({w, 1, whole_.get() + capacity * static_cast<size_t>(w), capacity});
  }
  RETURN_IF_ERROR(transport_->Exchange(
      sends, receives, deadline, [&](size_t index) -> absl::StatusOr<std::vector<Transport::Transfer>> {
        // Once every header is here, when they disagree: peers in this protocol all send
        // their payloads; an all-reduce's peers in the reduce-scatter posted more
        // receives, which this worker answers with empty messages; a peer in another call
        // sends nothing more, so the exchange ends now (the communicator is failed).
        std::vector<Transport::Transfer> drain;
        if (index + 1 != peers) return drain;
        const absl::Status agreed = CheckHeaders();
        if (agreed.ok()) return drain;
        if (kind == static_cast<uint32_t>(Kind::kAllReduceGathered)) {
          if (!AllInCopyingAllReduces()) return agreed;
          for (int32_t w = 0; w < workers; ++w) {
            if (w != me) AppendDrainSends(w, &drain);
          }
          return drain;
        }
        for (int32_t w = 0; w < workers; ++w) {
          const Header theirs = HeaderOf(w);
          if (theirs.magic != kMagic || theirs.kind != kind) return agreed;
        }
        return drain;
      }));
  return CheckHeaders();
}

absl::StatusOr<int32_t> CrossWorker::Signal(int32_t channel, char flag, const Deadline& deadline) {
  const int32_t workers = num_workers();
  absl::InlinedVector<char, kInlineWorkers> flags(static_cast<size_t>(workers), 1);
  flags[worker()] = flag;
  absl::InlinedVector<Transport::Transfer, kInlineWorkers> sends, receives;
  for (int32_t w = 0; w < workers; ++w) {
    if (w == worker()) continue;
    sends.push_back({w, channel, &flags[worker()], 1});
    receives.push_back({w, channel, &flags[w], 1});
  }
  RETURN_IF_ERROR(transport_->Exchange(sends, receives, deadline));
  for (int32_t w = 0; w < workers; ++w) {
    if (flags[w] != 1) return w;
  }
  return -1;
}

char* CrossWorker::WritePlacedHeader(Kind kind, const std::string& signature, size_t payload_bytes,
                                     const SharedPlaces& places) {
  char* own = OwnBlock();
  WriteHeader(kind, signature, nullptr, payload_bytes, false, own);
  std::memcpy(own + sizeof(Header), &places, sizeof places);
  return own;
}

CrossWorker::SharedPlaces CrossWorker::PlacesOf(int32_t w) const {
  SharedPlaces places;
  std::memcpy(&places, BlockOf(w) + sizeof(Header), sizeof places);
  return places;
}

absl::Status CrossWorker::ExchangePlaces(Kind kind, const std::string& signature, size_t payload_bytes,
                                         const SharedPlaces& places, const Deadline& deadline) {
  char* own = WritePlacedHeader(kind, signature, payload_bytes, places);
  RETURN_IF_ERROR(transport_->AllGather(own, kBlockBytes, headers_.data(), deadline));
  return CheckHeaders();
}

const char* CrossWorker::PlacedBytes(int32_t w, size_t bytes, const void* own) const {
  if (w == worker()) return static_cast<const char*>(own);
  const SharedPlaces theirs = PlacesOf(w);
  return theirs.shared == 1 ? transport_->PeerBytes(w, theirs.pack, bytes) : nullptr;
}

void CrossWorker::ReduceSpan(ReduceOp op, std::span<const Segment> segments, int64_t mean_divisor,
                             std::span<const char* const> inputs, size_t from, size_t to, char* result) {
  absl::InlinedVector<const void*, kInlineWorkers> at(inputs.size());
  for (const Segment& segment : segments) {
    const DType acc = AccumulatorDType(segment.dtype);
    const size_t acc_size = DTypeSize(acc);
    const size_t first = std::max(segment.offset, from);
    const size_t last = std::min(segment.offset + segment.count * acc_size, to);
    if (first >= last) continue;
    for (size_t w = 0; w < inputs.size(); ++w) at[w] = inputs[w] + (first - from);
    void* out = result + first;
    // Reduced (and divided) in accumulator precision; stored in the tensor's dtype later.
    ReduceAccumulatorRange(acc, op, at.data(), static_cast<int32_t>(at.size()), &out, 1, 0,
                           (last - first) / acc_size, mean_divisor);
  }
}

absl::StatusOr<std::vector<Transport::Transfer>> CrossWorker::AfterHeaders(const char* pack,
                                                                          absl::Status* disagreement) {
  const int32_t workers = num_workers();
  const int32_t me = worker();
  const absl::Status agreed = CheckHeaders();
  std::vector<Transport::Transfer> sends;
  if (!agreed.ok()) {
    // Every worker is in a copying all-reduce, and they disagree: each answers every
    // receive each peer posted with an empty message, so that nothing is left in flight
    // and the communicator stays usable. Otherwise the exchange ends failed.
    if (!AllInCopyingAllReduces()) return agreed;
    *disagreement = agreed;
    for (int32_t w = 0; w < workers; ++w) {
      if (w != me) AppendDrainSends(w, &sends);
    }
    return sends;
  }
  const ScatterCut cut(HeaderOf(me).payload_bytes, workers, pipelining_);
  for (int32_t w = 0; w < workers; ++w) {
    if (w == me) continue;
    for (size_t p = 1; p < cut.pieces(cut.size(w)); ++p) {  // the later pieces of w's chunk
      const auto [from, to] = cut.piece(cut.size(w), p);
      sends.push_back({w, static_cast<int32_t>(1 + p), const_cast<char*>(pack) + cut.begin(w) + from, to - from});
    }
  }
  return sends;
}

bool CrossWorker::InCopyingAllReduce(const Header& header) const {
  const bool scattering = header.kind == static_cast<uint32_t>(Kind::kAllReduce) && header.payload_bytes > kInlineBytes;
  const bool gathering =
      header.kind == static_cast<uint32_t>(Kind::kAllReduceGathered) && header.payload_bytes <= GatheredMaxBytes();
  return header.magic == kMagic && (scattering || gathering);
}

bool CrossWorker::AllInCopyingAllReduces() const {
  // A worker in another kind of call, or in an all-reduce small enough for the headers,
  // posted nothing past its header and sends no frame, and a malformed header says
  // nothing to trust: such a worker's peers must not wait for a frame that never comes.
  for (int32_t w = 0; w < num_workers(); ++w) {
    if (!InCopyingAllReduce(HeaderOf(w))) return false;
  }
  return true;
}

void CrossWorker::AppendDrainSends(int32_t w, std::vector<Transport::Transfer>* sends) const {
  const Header theirs = HeaderOf(w);
  // A peer in the gathered protocol posted nothing past its header and its pack's receive,
  // which this worker's header and first message (frame or pack) have met.
  if (theirs.kind != static_cast<uint32_t>(Kind::kAllReduce)) return;
  // Peer w's cut, from its pack size: what it posted beyond the first frames.
  const ScatterCut cut(theirs.payload_bytes, num_workers(), pipelining_);
  for (size_t p = 1; p < cut.pieces(cut.size(w)); ++p) {  // the later pieces of w's chunk
    sends->push_back({w, static_cast<int32_t>(1 + p), nullptr, 0});
  }
  for (size_t p = 0; p < cut.pieces(cut.size(worker())); ++p) {  // the results of this worker's chunk
    sends->push_back({w, kResultChannels + static_cast<int32_t>(p), nullptr, 0});
  }
}

absl::Status CrossWorker::AllReduceLocal(ReduceOp op, DType dtype, const void* const* inputs,
                                         int32_t num_local, size_t count, void* output,
                                         int64_t mean_divisor, const std::string& signature,
                                         const Deadline& deadline) {
  // The library's host memory: on shared memory the peers read it in place.
  const size_t bytes = count * DTypeSize(AccumulatorDType(dtype));
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> partial,
                   Buffer::Allocate(DeviceSpec{}.WithDefaults(), std::max<size_t>(bytes, 1), false));
  ReduceRangeToAccumulator(dtype, op, inputs, num_local, partial->data(), 0, count);
  const Segment segment{dtype, count, 0, std::span<void* const>(&output, 1)};
  return AllReduce(op, partial->data(), bytes, std::span<const Segment>(&segment, 1),
                   mean_divisor, signature, deadline);
}

absl::StatusOr<CrossWorker::Gathered> CrossWorker::AllGather(const void* data, size_t bytes,
                                                             const std::string& signature,
                                                             const Deadline& deadline,
                                                             const DeviceSpec& device) {
  // One exchange brings every block of up to the transport's gathered_bytes: in the
  // header (up to 128 bytes) or right behind it. A larger block's header says where it lies
  // in memory its peers map (shared memory, the library's tensors from 64 KiB); such blocks
  // are then copied straight out of their owners' memory, or else travel in a second
  // exchange.
  const size_t whole_max = pipelining_.gathered_bytes;
  const bool fits = bytes <= kInlineBytes;
  const bool whole = !fits && bytes <= whole_max;
  if (fits) {
    WriteHeader(Kind::kAllGather, signature, data, bytes, true, OwnBlock());
  } else {
    SharedPlaces places{};
    if (const std::optional<uint64_t> place = transport_->SharedPlace(data, bytes);
        place.has_value() && !whole && bytes >= kShareableMinBytes) {
      places = {1, *place, 0};
    }
    WritePlacedHeader(Kind::kAllGather, signature, bytes, places);
  }
  RETURN_IF_ERROR(ExchangeWhole(whole ? data : nullptr, whole ? bytes : 0, deadline));
  const int32_t workers = num_workers();
  std::vector<size_t> sizes(static_cast<size_t>(workers)), offsets(static_cast<size_t>(workers));
  size_t total = 0;
  bool all_here = true;                         // no block larger than whole_max
  bool all_placed = transport_->shares_memory();  // every larger one where its peers map it
  for (int32_t w = 0; w < workers; ++w) {
    sizes[w] = HeaderOf(w).payload_bytes;
    offsets[w] = total;
    if (sizes[w] > SIZE_MAX - total) {
      return absl::InvalidArgumentError(absl::StrCat("task ", task_name(w), " announced an all-gather block of ",
                                                     sizes[w], " bytes, more than this process can hold"));
    }
    total += sizes[w];
    if (sizes[w] > whole_max) {
      all_here = false;
      all_placed = all_placed && PlacesOf(w).shared == 1;
    }
  }
  Gathered result;
  ASSIGN_OR_RETURN(result.storage, Buffer::Allocate(device, total, false));
  char* const storage = static_cast<char*>(result.storage->data());
  for (int32_t w = 0; w < workers; ++w) {
    if (sizes[w] == 0 || sizes[w] > whole_max) continue;
    const char* block = w == worker() ? static_cast<const char*>(data)
                        : sizes[w] <= kInlineBytes ? BlockOf(w) + sizeof(Header)
                                                   : WholeOf(w);
    std::memcpy(storage + offsets[w], block, sizes[w]);
  }
  if (!all_here && all_placed) {
    // Each worker copies the larger blocks itself, and nobody changes its block before all have.
    int32_t unreadable = -1;
    for (int32_t w = 0; w < workers; ++w) {
      if (sizes[w] <= whole_max) continue;
      const char* block = PlacedBytes(w, sizes[w], data);
      if (block == nullptr && unreadable < 0) unreadable = w;
      if (block != nullptr) std::memcpy(storage + offsets[w], block, sizes[w]);
    }
    ASSIGN_OR_RETURN(const int32_t failed, Signal(1, unreadable < 0 ? 1 : 0, deadline));
    if (failed >= 0) {
      return absl::InternalError(absl::StrCat("task ", task_name(failed),
                                              " could not read a peer's block in shared memory"));
    }
    ++in_place_calls_;
  } else if (!all_here) {
    // The larger blocks travel now, each straight into its place.
    absl::InlinedVector<Transport::Transfer, kInlineWorkers> sends, receives;
    for (int32_t w = 0; w < workers; ++w) {
      if (w == worker()) continue;
      if (bytes > whole_max) sends.push_back({w, 0, const_cast<void*>(data), bytes});
      if (sizes[w] > whole_max) receives.push_back({w, 0, storage + offsets[w], sizes[w]});
    }
    if (bytes > whole_max) std::memcpy(storage + offsets[worker()], data, bytes);
    RETURN_IF_ERROR(transport_->Exchange(sends, receives, deadline));
  }
  size_t offset = 0;
  for (int32_t w = 0; w < num_workers(); ++w) {
    result.blocks.emplace_back(storage + offset, sizes[w]);
    offset += sizes[w];
  }
  return result;
}

absl::StatusOr<Tensor> CrossWorker::AllGatherAlongAxis(const Tensor& local, int32_t axis,
                                                       const std::string& signature,
                                                       const Deadline& deadline, const DeviceSpec& device) {
  ASSIGN_OR_RETURN(Gathered gathered, AllGather(local.byte_size() > 0 ? local.data() : nullptr,
                                                local.byte_size(), signature, deadline, device));
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
  Dims dims = shape.dims();
  dims[static_cast<size_t>(axis)] = rows;
  ASSIGN_OR_RETURN(Shape out_shape, Shape::Make(dims));
  const size_t out_bytes = static_cast<size_t>(out_shape.num_elements()) * element;
  // With one index of the leading axes, the blocks back to back are the concatenation.
  if (outer == 1 && gathered.storage->size() == out_bytes) {
    return Tensor::FromBuffer(local.dtype(), std::move(out_shape), std::move(gathered.storage));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, Buffer::Allocate(device, out_bytes, false));
  ConcatenateAlongAxis(gathered.blocks, outer, static_cast<char*>(buffer->data()));
  return Tensor::FromBuffer(local.dtype(), std::move(out_shape), std::move(buffer));
}

absl::Status CrossWorker::Broadcast(void* data, size_t bytes, int32_t root,
                                    const std::string& signature, const Deadline& deadline,
                                    void* root_copy) {
  const bool small = bytes <= kInlineBytes;
  // The root's own copy, made while its peers read or receive (before it waits for them).
  auto copy_at_root = [&] {
    if (worker() == root && root_copy != nullptr && bytes > 0) std::memcpy(root_copy, data, bytes);
  };
  const std::string described = absl::StrCat(signature, " from task ", task_name(root));
  if (WouldReadInPlace(bytes)) {
    // The root says where its bytes lie; when its peers can map them, each copies them
    // straight out of the root's memory, and the root waits until all have.
    SharedPlaces places{};
    if (worker() == root) {
      if (const std::optional<uint64_t> place = transport_->SharedPlace(data, bytes)) places = {1, *place, 0};
    }
    RETURN_IF_ERROR(ExchangePlaces(Kind::kBroadcast, described, bytes, places, deadline));
    if (PlacesOf(root).shared == 1) {
      const char* source = worker() == root ? nullptr : PlacedBytes(root, bytes, data);
      if (source != nullptr) std::memcpy(data, source, bytes);
      copy_at_root();
      ASSIGN_OR_RETURN(const int32_t failed, Signal(1, worker() == root || source != nullptr ? 1 : 0, deadline));
      if (failed >= 0) {
        return absl::InternalError(absl::StrCat("task ", task_name(failed), " could not read task ",
                                                task_name(root), "'s tensor in shared memory"));
      }
      ++in_place_calls_;
      return absl::OkStatus();
    }
    copy_at_root();
    return transport_->Broadcast(data, bytes, root, deadline);
  }
  if (!small && bytes <= pipelining_.gathered_bytes) {
    // The root's bytes travel right behind its header: one message each way.
    WriteHeader(Kind::kBroadcastWhole, described, nullptr, bytes, false, OwnBlock());
    const bool sending = worker() == root;
    RETURN_IF_ERROR(ExchangeWhole(sending ? data : nullptr, sending ? bytes : 0, deadline));
    copy_at_root();
    if (!sending) std::memcpy(data, WholeOf(root), bytes);
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(ExchangeHeaders(Kind::kBroadcast, described, data, bytes, small, deadline));
  copy_at_root();
  if (bytes == 0) return absl::OkStatus();
  if (small) {
    if (worker() != root) std::memcpy(data, BlockOf(root) + sizeof(Header), bytes);
    return absl::OkStatus();
  }
  return transport_->Broadcast(data, bytes, root, deadline);
}

// A block read in place is never one that rides in its header.
static_assert(kShareableMinBytes > kInlineBytes);

bool CrossWorker::WouldReadInPlace(size_t bytes) const {
  return transport_->shares_memory() && bytes >= kShareableMinBytes;
}

bool CrossWorker::ReadInPlace(const void* data, size_t bytes) const {
  return WouldReadInPlace(bytes) && transport_->SharedPlace(data, bytes).has_value();
}

absl::Status CrossWorker::Barrier(const std::string& name, const Deadline& deadline) {
  return ExchangeHeaders(Kind::kBarrier, name, nullptr, 0, false, deadline);
}

}  // namespace distribute
