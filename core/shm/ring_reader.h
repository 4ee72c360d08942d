// Reading the records a peer wrote into a ring (shm_layout.h). Every field the peer
// controls (the ring's head, each record's header) is read once into a local copy and
// checked before it is used, so a broken peer, or a stranger who mapped the segment, can
// fail the communicator but never make this process read or write outside the ring or a
// receive's buffer. Pure functions over a ring's bytes, so that they are fuzzed
// (tests/core/shm_ring_fuzz.cc) without processes; ShmTransport::Drain is a call of
// DrainRing. Error messages are the writer's misdeeds ("wrote a malformed record"): the
// caller puts the writer's name in front.
#ifndef DISTRIBUTE_CORE_SHM_RING_READER_H_
#define DISTRIBUTE_CORE_SHM_RING_READER_H_

#include <cstdint>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/shm/shm_layout.h"

namespace distribute::shm {

// A receive posted for a message, as its records arrive.
struct ReceiveProgress {
  char* data = nullptr;
  uint64_t capacity = 0;       // what the receive can hold
  uint64_t message_bytes = 0;  // as the message's first record says
  uint64_t arrived = 0;
  bool started = false;
  bool done = false;
  // Its records go to the RelayRecord hook instead of into `data`; each must be a whole
  // number of 64-byte lines long, except the message's last (so that a run the hook
  // transforms never splits an element).
  bool relayed = false;
  size_t index = 0;  // which of its owner's receives this is (the owner's bookkeeping)
};

// Whether `record` is the next piece of `receive` (the first record fixes the message's
// length, which must fit the capacity); on success the payload may be copied to
// receive.data + record.offset.
absl::Status Continues(ReceiveProgress& receive, const RecordHeader& record);

// The posted receive that `record` belongs to (checked with Continues), or null when no
// receive of this call is for its channel: the record then stays in the ring.
using MatchRecord = absl::FunctionRef<absl::StatusOr<ReceiveProgress*>(const RecordHeader& record)>;

// Takes a relayed receive's record (checked with Continues, not empty): its `record.bytes`
// bytes of payload at `payload`, inside the ring, valid only during the call.
using RelayRecord =
    absl::FunctionRef<void(ReceiveProgress& receive, const RecordHeader& record, const char* payload)>;

// Moves the records of call `tag` from a ring of `ring_bytes` bytes at `ring` (a peer
// published `head`) into their receives (or to `relay`, for a relayed receive), advancing
// `*tail`; stops at a record of a later call or of no posted receive. True when anything
// was consumed.
absl::StatusOr<bool> DrainRing(const char* ring, uint64_t ring_bytes, uint64_t head, uint64_t* tail,
                               uint32_t tag, MatchRecord match, RelayRecord relay);

}  // namespace distribute::shm

#endif  // DISTRIBUTE_CORE_SHM_RING_READER_H_
