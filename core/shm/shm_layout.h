// The layout of a worker's shared-memory segment (ShmTransport): a header, then one ring
// per peer that the peer writes its messages to this worker into. Every field a peer
// writes is read once into a local copy and checked before use: a peer's bugs (or a
// stranger who got the segment's name) can fail the communicator, never corrupt this
// process's memory.
//
// A ring is a single-producer single-consumer byte queue: the sender alone advances
// `head`, the receiver alone `tail` (both count bytes since the start, never wrap). A
// message travels as one or more records, each a RecordHeader and its payload, 64-byte
// aligned; a record never wraps past the ring's end (a padding record skips to it).
#ifndef DISTRIBUTE_CORE_SHM_SHM_LAYOUT_H_
#define DISTRIBUTE_CORE_SHM_SHM_LAYOUT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace distribute::shm {

inline constexpr uint64_t kSegmentMagic = 0x4449535453484d31ull;  // "DISTSHM1"
inline constexpr size_t kLine = 64;

struct alignas(kLine) SegmentHeader {
  uint64_t magic;
  int32_t workers;
  int32_t rank;
  uint64_t ring_bytes;
  // Bumped by whoever made progress possible for this worker (a message in one of its
  // rings, room in a ring it writes to); it sleeps on this word (a futex) when idle.
  alignas(kLine) std::atomic<uint32_t> doorbell;
  std::atomic<uint32_t> sleepers;
  // Set when this worker's communicator failed or went away: peers waiting on it stop.
  alignas(kLine) std::atomic<uint32_t> closed;
};

struct alignas(kLine) RingControl {
  alignas(kLine) std::atomic<uint64_t> head;  // bytes the sender has written
  alignas(kLine) std::atomic<uint64_t> tail;  // bytes the receiver has consumed
};

enum class RecordKind : uint32_t { kData = 1, kPadding = 2 };

struct RecordHeader {
  uint32_t kind;
  uint32_t tag;            // the exchange (call) the message belongs to
  int32_t channel;
  uint32_t bytes;          // payload of this record
  uint64_t message_bytes;  // the whole message
  uint64_t offset;         // of this record's payload within the message
};
inline constexpr size_t kRecordHeaderBytes = kLine;  // payloads start 64-byte aligned
static_assert(sizeof(RecordHeader) <= kRecordHeaderBytes);

static_assert(std::atomic<uint32_t>::is_always_lock_free && std::atomic<uint64_t>::is_always_lock_free,
              "shared-memory atomics must be lock-free to work across processes");

inline constexpr size_t RoundUpToLine(size_t bytes) { return (bytes + kLine - 1) / kLine * kLine; }

// Byte offsets within a segment of `workers` workers with `ring_bytes` rings: one ring per
// peer, in rank order without the owner's own rank.
inline constexpr size_t kRingsOffset = RoundUpToLine(sizeof(SegmentHeader));
inline constexpr size_t RingStride(uint64_t ring_bytes) { return sizeof(RingControl) + ring_bytes; }
inline constexpr size_t SegmentBytes(int32_t workers, uint64_t ring_bytes) {
  return kRingsOffset + static_cast<size_t>(workers > 1 ? workers - 1 : 0) * RingStride(ring_bytes);
}
// Where the ring that `sender` writes to sits in the segment of `owner` (sender != owner).
inline constexpr size_t RingOffset(int32_t owner, int32_t sender, uint64_t ring_bytes) {
  const int32_t index = sender < owner ? sender : sender - 1;
  return kRingsOffset + static_cast<size_t>(index) * RingStride(ring_bytes);
}

}  // namespace distribute::shm

#endif  // DISTRIBUTE_CORE_SHM_SHM_LAYOUT_H_
