// Fuzz target for the shared-memory transport's ring reader (core/shm/ring_reader.cc): the
// bytes a peer (or a stranger who mapped the segment) could write into a ring, its head,
// and the receives this worker posted. Whatever they are, DrainRing must consume records
// or fail with a message, never read outside the ring or write outside a receive (ASan
// watches), never move the tail past the head, and never let a receive take more than its
// capacity. Receive 1 may be relayed: the hook must see runs inside the ring that continue
// the message in order, each a whole number of lines except the message's last. Layout of
// the input: head (8 bytes), tag (4), tail in lines (4), the two receives' capacities
// (4 + 4, the top bit of the second relays it), then the ring's bytes (zero-padded to 4 KiB).
// Built with -fsanitize=fuzzer under clang, and with tests/core/fuzz_replay_main.cc as a
// corpus-replay test under any compiler.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/shm/ring_reader.h"

namespace {

using distribute::shm::DrainRing;
using distribute::shm::ReceiveProgress;
using distribute::shm::RecordHeader;

constexpr uint64_t kRingBytes = 4096;

template <typename T>
T Take(const uint8_t*& data, size_t& size) {
  T value{};
  const size_t n = size < sizeof value ? size : sizeof value;
  std::memcpy(&value, data, n);
  data += n;
  size -= n;
  return value;
}

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint64_t head_offset = Take<uint64_t>(data, size) % (2 * kRingBytes + 1);
  const uint32_t tag = Take<uint32_t>(data, size) % 4;
  const uint64_t tail_start = (Take<uint32_t>(data, size) % 1024) * distribute::shm::kLine;
  const uint32_t first_capacity = Take<uint32_t>(data, size) % 8192;
  const uint32_t second = Take<uint32_t>(data, size);
  const uint32_t capacities[2] = {first_capacity, second % 8192};
  const bool relayed = (second >> 31) != 0;
  // The ring exactly as large as it is, so that ASan sees any read past its end.
  std::vector<char> ring(kRingBytes, 0);
  std::memcpy(ring.data(), data, size < kRingBytes ? size : kRingBytes);

  std::vector<char> buffers[2] = {std::vector<char>(capacities[0]), std::vector<char>(capacities[1])};
  ReceiveProgress receives[2];
  for (int c = 0; c < 2; ++c) {
    receives[c].data = buffers[c].data();
    receives[c].capacity = capacities[c];
  }
  receives[1].relayed = relayed;
  uint64_t relayed_bytes = 0;
  auto relay = [&](ReceiveProgress& receive, const RecordHeader& record, const char* payload) {
    Check(&receive == &receives[1] && relayed && record.bytes > 0);
    Check(payload >= ring.data() && payload + record.bytes <= ring.data() + kRingBytes);
    Check(record.offset == relayed_bytes && record.offset + record.bytes <= receive.message_bytes);
    Check(record.bytes % distribute::shm::kLine == 0 || record.offset + record.bytes == receive.message_bytes);
    Check(receive.message_bytes <= receive.capacity);
    relayed_bytes += record.bytes;
  };
  auto match = [&](const RecordHeader& record) -> absl::StatusOr<ReceiveProgress*> {
    if (record.channel < 0 || record.channel > 1 || receives[record.channel].done) return nullptr;
    ReceiveProgress& receive = receives[record.channel];
    if (absl::Status s = distribute::shm::Continues(receive, record); !s.ok()) return s;
    return &receive;
  };
  uint64_t tail = tail_start;
  const uint64_t head = tail_start + head_offset;
  for (int round = 0; round < 8; ++round) {
    absl::StatusOr<bool> moved = DrainRing(ring.data(), kRingBytes, head, &tail, tag, match, relay);
    if (!moved.ok()) {
      Check(!moved.status().message().empty());
      break;
    }
    Check(tail <= head);
    if (!*moved) break;
  }
  Check(!relayed || relayed_bytes == receives[1].arrived);
  for (const ReceiveProgress& receive : receives) {
    Check(receive.arrived <= receive.capacity);
    Check(!receive.started || receive.message_bytes <= receive.capacity);
  }
  return 0;
}
