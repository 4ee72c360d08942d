#include "core/collective/all_reduce_stages.h"

#include <cstring>
#include <limits>

#include "core/collective/packing.h"
#include "core/collective/reduce_kernels.h"

namespace distribute {
namespace {

constexpr uint64_t kNoGeneration = std::numeric_limits<uint64_t>::max();
// The op and count, then each tensor's dtype and rank followed by its dimensions.
constexpr int32_t kSignatureWords = 1 + AllReduceStages::kMaxTensors + AllReduceStages::kMaxDims;

}  // namespace

// One replica's staged call. The generation and the signature of a one-tensor call share
// the first cache line, and the data starts on a line of its own, so that the others read
// two lines of an 8-byte all-reduce.
struct alignas(64) AllReduceStages::Slot {
  uint64_t generation = kNoGeneration;
  int32_t words = 0;
  int64_t signature[kSignatureWords] = {};
  alignas(64) unsigned char data[kMaxBytes];
};

AllReduceStages::AllReduceStages(int32_t replicas)
    : n_(replicas), slots_(new Slot[2 * static_cast<size_t>(replicas)]) {}

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
  size_t bytes = 0;
  int32_t dims = 0;
  for (size_t t = 0; t < count; ++t) {
    if (!call.inputs[t].in_host_memory() || !call.outputs[t].in_host_memory()) return false;
    dims += call.inputs[t].shape().rank();
    bytes = RoundUp(bytes, kPackAlign) + call.inputs[t].byte_size();
  }
  return dims <= kMaxDims && bytes <= kMaxBytes;
}

void AllReduceStages::Stage(int32_t replica, uint64_t generation, const PublishedCall& call) {
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
  s.generation = generation;
}

bool AllReduceStages::AllAgree(uint64_t generation) const {
  const Slot& first = slot(0, generation);
  if (first.generation != generation) return false;
  for (int32_t q = 1; q < n_; ++q) {
    const Slot& s = slot(q, generation);
    if (s.generation != generation || s.words != first.words ||
        std::memcmp(s.signature, first.signature, sizeof(int64_t) * first.words) != 0) {
      return false;
    }
  }
  return true;
}

void AllReduceStages::Reduce(uint64_t generation, ReduceOp op, std::span<const Tensor> outputs) const {
  const void* inputs[kMaxReplicas];
  size_t offset = 0;
  for (const Tensor& out : outputs) {
    offset = RoundUp(offset, kPackAlign);
    for (int32_t q = 0; q < n_; ++q) inputs[q] = slot(q, generation).data + offset;
    void* destination = out.data();
    ReduceRange(out.dtype(), op, inputs, n_, &destination, 1, 0,
                static_cast<size_t>(out.shape().num_elements()), n_);
    offset += out.byte_size();
  }
}

}  // namespace distribute
