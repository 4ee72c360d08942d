#include "core/collective/all_reduce_stages.h"

#include <cstring>

#include "core/collective/packing.h"
#include "core/kernels/reduce_kernels.h"

namespace distribute {
namespace {

// The op and count, then each tensor's dtype and rank followed by its dimensions.
constexpr int32_t kSignatureWords = 1 + AllReduceStages::kMaxTensors + AllReduceStages::kMaxDims;

// A barrier record's payload: which call its replica staged for which meeting, then (for a
// call staged in the record) the signature word, the dimensions and the data.
//   tag = 2 (g + 1) + in_record   for meeting g; anything else: not staged for g
//   word = op | dtype << 8 | rank << 16
constexpr size_t kTagBytes = sizeof(uint64_t);
constexpr size_t kHeadBytes = kTagBytes + sizeof(int64_t);  // tag and word

uint64_t Tag(uint64_t generation, bool in_record) { return 2 * (generation + 1) + (in_record ? 1 : 0); }
uint64_t TagOf(const unsigned char* payload) {
  uint64_t tag;
  std::memcpy(&tag, payload, sizeof tag);
  return tag;
}
// Bytes of the record's signature (the word and the dimensions) for a rank.
size_t SignatureBytes(int32_t rank) { return sizeof(int64_t) * (1 + static_cast<size_t>(rank)); }

// Bytes of `call`'s inputs in a slot: each tensor 64-byte aligned after the one before.
size_t SlotBytes(const PublishedCall& call) {
  size_t bytes = 0;
  for (const Tensor& t : call.inputs) bytes = RoundUp(bytes, kPackAlign) + t.byte_size();
  return bytes;
}

}  // namespace

// One replica's staged call, when it is too large for the barrier record. The signature
// and the data start on lines of their own.
struct alignas(64) AllReduceStages::Slot {
  int32_t words = 0;
  int64_t signature[kSignatureWords] = {};
  alignas(64) unsigned char data[kMaxBytes];
};

AllReduceStages::AllReduceStages(int32_t replicas, Barrier& barrier)
    : n_(replicas), barrier_(barrier), slots_(new Slot[2 * static_cast<size_t>(replicas)]) {}

AllReduceStages::~AllReduceStages() = default;

const AllReduceStages::Slot& AllReduceStages::slot(int32_t replica, uint64_t generation) const {
  return slots_[2 * static_cast<size_t>(replica) + (generation & 1)];
}

bool AllReduceStages::Fits(const PublishedCall& call) {
  const size_t count = call.inputs.size();
  if (call.kind != CallKind::kAllReduce || count < 1 || count > kMaxTensors ||
      call.outputs.size() != count) {
    return false;
  }
  int32_t dims = 0;
  for (size_t t = 0; t < count; ++t) {
    if (!call.inputs[t].in_host_memory() || !call.outputs[t].in_host_memory()) return false;
    dims += call.inputs[t].shape().rank();
  }
  return dims <= kMaxDims && SlotBytes(call) <= kMaxBytes;
}

bool AllReduceStages::InRecord(const PublishedCall& call) {
  if (call.inputs.size() != 1) return false;
  const Tensor& t = call.inputs[0];
  return kTagBytes + SignatureBytes(t.shape().rank()) + t.byte_size() <= Barrier::kPayloadBytes;
}

void AllReduceStages::Stage(int32_t replica, uint64_t generation, const PublishedCall& call) {
  unsigned char* record = barrier_.payload(replica, generation);
  const bool in_record = InRecord(call);
  if (in_record) {
    const Tensor& t = call.inputs[0];
    const int32_t rank = t.shape().rank();
    const int64_t word = static_cast<int64_t>(call.op) | static_cast<int64_t>(t.dtype()) << 8 |
                         static_cast<int64_t>(rank) << 16;
    std::memcpy(record + kTagBytes, &word, sizeof word);
    for (int32_t d = 0; d < rank; ++d) {
      const int64_t dim = t.shape().dim(d);
      std::memcpy(record + kHeadBytes + sizeof(int64_t) * static_cast<size_t>(d), &dim, sizeof dim);
    }
    if (t.byte_size() > 0) std::memcpy(record + kTagBytes + SignatureBytes(rank), t.data(), t.byte_size());
  } else {
    StageInSlot(replica, generation, call);
  }
  const uint64_t tag = Tag(generation, in_record);
  std::memcpy(record, &tag, sizeof tag);
}

void AllReduceStages::StageInSlot(int32_t replica, uint64_t generation, const PublishedCall& call) {
  Slot& s = slots_[2 * static_cast<size_t>(replica) + (generation & 1)];
  int32_t w = 0;
  s.signature[w++] = static_cast<int64_t>(call.op) | static_cast<int64_t>(call.inputs.size()) << 8;
  size_t offset = 0;
  for (const Tensor& t : call.inputs) {
    const int32_t rank = t.shape().rank();
    s.signature[w++] = static_cast<int64_t>(t.dtype()) | static_cast<int64_t>(rank) << 16;
    for (int32_t d = 0; d < rank; ++d) s.signature[w++] = t.shape().dim(d);
    offset = RoundUp(offset, kPackAlign);
    if (t.byte_size() > 0) std::memcpy(s.data + offset, t.data(), t.byte_size());
    offset += t.byte_size();
  }
  s.words = w;
}

void AllReduceStages::Prefetch(int32_t replica, uint64_t generation, const PublishedCall& call) const {
  if (InRecord(call)) return;
  const size_t bytes = SlotBytes(call);
  for (int32_t q = 0; q < n_; ++q) {
    if (q == replica) continue;
    const Slot& s = slot(q, generation);
    __builtin_prefetch(&s.words);
    for (size_t line = 0; line < bytes; line += 64) __builtin_prefetch(s.data + line);
  }
}

bool AllReduceStages::AllAgree(uint64_t generation) const {
  const unsigned char* first_record = barrier_.payload(0, generation);
  const uint64_t tag = TagOf(first_record);
  if (tag != Tag(generation, false) && tag != Tag(generation, true)) return false;
  for (int32_t q = 1; q < n_; ++q) {
    if (TagOf(barrier_.payload(q, generation)) != tag) return false;
  }
  if (tag == Tag(generation, true)) {
    int64_t word;
    std::memcpy(&word, first_record + kTagBytes, sizeof word);
    const size_t bytes = SignatureBytes(static_cast<int32_t>(word >> 16 & 0xff));
    for (int32_t q = 1; q < n_; ++q) {
      if (std::memcmp(barrier_.payload(q, generation) + kTagBytes, first_record + kTagBytes, bytes) != 0) {
        return false;
      }
    }
    return true;
  }
  const Slot& first = slot(0, generation);
  for (int32_t q = 1; q < n_; ++q) {
    const Slot& s = slot(q, generation);
    if (s.words != first.words ||
        std::memcmp(s.signature, first.signature, sizeof(int64_t) * first.words) != 0) {
      return false;
    }
  }
  return true;
}

void AllReduceStages::Reduce(uint64_t generation, ReduceOp op, std::span<const Tensor> outputs) const {
  // Where replica q's staged data starts: after the signature in its record (a one-tensor
  // call), or at its slot's data; tensors follow 64-byte aligned.
  const bool in_record = TagOf(barrier_.payload(0, generation)) == Tag(generation, true);
  const size_t record_offset = kTagBytes + SignatureBytes(outputs[0].shape().rank());
  auto data_of = [&](int32_t q) {
    return in_record ? barrier_.payload(q, generation) + record_offset : slot(q, generation).data;
  };
  const void* inputs[kMaxReplicas];
  size_t offset = 0;
  for (const Tensor& out : outputs) {
    offset = RoundUp(offset, kPackAlign);
    for (int32_t q = 0; q < n_; ++q) inputs[q] = data_of(q) + offset;
    void* destination = out.data();
    ReduceRange(out.dtype(), op, inputs, n_, &destination, 1, 0,
                static_cast<size_t>(out.shape().num_elements()), n_);
    offset += out.byte_size();
  }
}

}  // namespace distribute
