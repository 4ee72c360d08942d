// How CrossWorker's reduce-scatter + all-gather cuts a pack: worker w owns bytes
// [begin(w), begin(w) + size(w)) (64-byte aligned, so that a boundary never splits an
// element), and each chunk travels as its first frame and then pieces (transport.h,
// Pipelining). A pure function of the pack size, the worker count and the transport's
// pipelining: every worker computes every worker's cut, also a peer's cut of a pack size
// that differs from its own (to know which messages that peer waits for).
#ifndef DISTRIBUTE_CORE_COLLECTIVE_SCATTER_CUT_H_
#define DISTRIBUTE_CORE_COLLECTIVE_SCATTER_CUT_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/collective/transport.h"

namespace distribute {

class ScatterCut {
 public:
  ScatterCut(size_t pack_bytes, int32_t workers, const Transport::Pipelining& pipelining)
      : pack_bytes_(pack_bytes),
        chunk_(RoundUp((pack_bytes + static_cast<size_t>(workers) - 1) / static_cast<size_t>(workers), 64)),
        frame_bytes_(pipelining.first_bytes),
        // From the nominal chunk, so the same on every worker (transport.h, Pipelining).
        piece_bytes_(std::clamp(RoundUp((chunk_ - std::min(chunk_, frame_bytes_)) / 4, 64),
                                pipelining.piece_bytes,
                                std::max(pipelining.piece_bytes, pipelining.max_piece_bytes))) {}

  size_t frame_bytes() const { return frame_bytes_; }
  size_t begin(int32_t worker) const { return std::min(pack_bytes_, chunk_ * static_cast<size_t>(worker)); }
  size_t size(int32_t worker) const { return begin(worker + 1) - begin(worker); }

  // How many messages a chunk of `size` bytes travels in: its first frame, then pieces.
  size_t pieces(size_t size) const {
    return size <= frame_bytes_ ? 1 : 1 + (size - frame_bytes_ + piece_bytes_ - 1) / piece_bytes_;
  }
  // Bytes [first, second) of a chunk of `size` bytes that piece `p` carries.
  std::pair<size_t, size_t> piece(size_t size, size_t p) const {
    if (p == 0) return {0, std::min(size, frame_bytes_)};
    const size_t from = std::min(size, frame_bytes_ + (p - 1) * piece_bytes_);
    return {from, std::min(size, from + piece_bytes_)};
  }

 private:
  static size_t RoundUp(size_t value, size_t to) { return (value + to - 1) / to * to; }

  size_t pack_bytes_;
  size_t chunk_;
  size_t frame_bytes_;
  size_t piece_bytes_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_SCATTER_CUT_H_
