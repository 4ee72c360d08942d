#include "core/shm/ring_reader.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace distribute::shm {

absl::Status Continues(ReceiveProgress& receive, const RecordHeader& record) {
  if (!receive.started) {
    if (record.message_bytes > receive.capacity) {
      return absl::InternalError(absl::StrCat("sent ", record.message_bytes, " bytes on channel ",
                                              record.channel, " where at most ", receive.capacity,
                                              " were expected"));
    }
    receive.started = true;
    receive.message_bytes = record.message_bytes;
  }
  if (record.message_bytes != receive.message_bytes || record.offset != receive.arrived ||
      record.bytes > receive.message_bytes - receive.arrived) {
    return absl::DataLossError(absl::StrCat("sent a record out of place on channel ", record.channel));
  }
  if (receive.relayed && record.bytes % kLine != 0 && record.offset + record.bytes != record.message_bytes) {
    return absl::DataLossError(absl::StrCat("cut a relayed message on channel ", record.channel,
                                            " at a byte that is not a line boundary"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> DrainRing(const char* ring, uint64_t ring_bytes, uint64_t head, uint64_t* tail,
                               uint32_t tag, MatchRecord match, RelayRecord relay) {
  if (head == *tail) return false;
  if (head < *tail || head - *tail > ring_bytes) {
    return absl::DataLossError("corrupted the ring it writes to");
  }
  bool moved = false;
  while (*tail < head) {
    // *tail only ever advances by whole 64-byte lines or to the ring's end, so a header
    // always fits before the end.
    const uint64_t position = *tail % ring_bytes;
    const uint64_t contiguous = ring_bytes - position;
    const uint64_t available = head - *tail;
    const char* at = ring + position;
    RecordHeader record;
    std::memcpy(&record, at, sizeof record);  // read once: the peer could change it meanwhile
    if (record.kind == static_cast<uint32_t>(RecordKind::kPadding)) {
      if (contiguous > available) return absl::DataLossError("padded past its data");
      *tail += contiguous;
      moved = true;
      continue;
    }
    const uint64_t length = RoundUpToLine(kRecordHeaderBytes + uint64_t{record.bytes});
    if (record.kind != static_cast<uint32_t>(RecordKind::kData) || length > contiguous || length > available) {
      return absl::DataLossError("wrote a malformed record");
    }
    if (record.tag != tag) {
      if (static_cast<int32_t>(record.tag - tag) > 0) break;  // its next call's: it stays for then
      return absl::DataLossError("sent a record of an earlier call");
    }
    ASSIGN_OR_RETURN(ReceiveProgress * receive, match(record));
    // A message no receive of this call expects stays where it is, as it would on a
    // socket: the peer is making another call (CrossWorker's header check says which).
    if (receive == nullptr) break;
    if (record.bytes > 0) {
      if (receive->relayed) {
        relay(*receive, record, at + kRecordHeaderBytes);
      } else {
        std::memcpy(receive->data + record.offset, at + kRecordHeaderBytes, record.bytes);
      }
    }
    receive->arrived += record.bytes;
    receive->done = receive->arrived == receive->message_bytes;
    *tail += length;
    moved = true;
  }
  return moved;
}

}  // namespace distribute::shm
