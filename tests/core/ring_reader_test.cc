// The ring reader (core/shm/ring_reader.h) on rings written here, record by record: what
// the fuzz target (shm_ring_fuzz) checks only as invariants. A relayed receive's records
// go to the hook, in order, never into its buffer; a relayed message cut at a byte that
// is not a line boundary (except its end) fails the ring, since a run the hook
// transforms must not split an element.
#include "core/shm/ring_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/util/status_macros.h"
#include "status_test_util.h"

namespace distribute::shm {
namespace {

using ::distribute::testing::HasError;

constexpr uint64_t kRingBytes = 4096;
constexpr uint32_t kTag = 7;

// A ring with records appended one after another from position 0.
struct Ring {
  std::vector<char> bytes = std::vector<char>(kRingBytes, 0);
  uint64_t head = 0;

  void Append(int32_t channel, uint64_t message_bytes, uint64_t offset, const std::string& payload) {
    const RecordHeader record{static_cast<uint32_t>(RecordKind::kData), kTag, channel,
                              static_cast<uint32_t>(payload.size()), message_bytes, offset};
    std::memcpy(bytes.data() + head, &record, sizeof record);
    std::memcpy(bytes.data() + head + kRecordHeaderBytes, payload.data(), payload.size());
    head += RoundUpToLine(kRecordHeaderBytes + payload.size());
  }
};

struct RelayedRun {
  uint64_t offset;
  std::string bytes;
};

// Drains `ring` into one receive on channel 1 of `capacity` bytes; relayed runs go to `runs`.
absl::StatusOr<bool> Drain(const Ring& ring, ReceiveProgress& receive, std::vector<RelayedRun>& runs, uint64_t* tail) {
  return DrainRing(
      ring.bytes.data(), kRingBytes, ring.head, tail, kTag,
      [&](const RecordHeader& record) -> absl::StatusOr<ReceiveProgress*> {
        if (record.channel != 1) return nullptr;
        RETURN_IF_ERROR(Continues(receive, record));
        return &receive;
      },
      [&](ReceiveProgress& progress, const RecordHeader& record, const char* payload) {
        EXPECT_EQ(&progress, &receive);
        runs.push_back({record.offset, std::string(payload, record.bytes)});
      });
}

TEST(RingReaderTest, ARelayedMessageGoesToTheHookRunByRunNotIntoItsBuffer) {
  Ring ring;
  const std::string first(64, 'a'), second(36, 'b');
  ring.Append(1, 100, 0, first);
  ring.Append(1, 100, 64, second);
  std::vector<char> buffer(128, 'x');
  ReceiveProgress receive{buffer.data(), buffer.size()};
  receive.relayed = true;
  std::vector<RelayedRun> runs;
  uint64_t tail = 0;
  absl::StatusOr<bool> moved = Drain(ring, receive, runs, &tail);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_TRUE(*moved);
  EXPECT_EQ(tail, ring.head);
  EXPECT_TRUE(receive.done);
  EXPECT_EQ(receive.arrived, 100u);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].offset, 0u);
  EXPECT_EQ(runs[0].bytes, first);
  EXPECT_EQ(runs[1].offset, 64u);
  EXPECT_EQ(runs[1].bytes, second);
  EXPECT_EQ(std::string(buffer.begin(), buffer.end()), std::string(128, 'x')) << "written into the buffer";
}

TEST(RingReaderTest, ARelayedMessageCutInsideALineFailsTheRing) {
  Ring ring;
  ring.Append(1, 100, 0, std::string(40, 'a'));
  ring.Append(1, 100, 40, std::string(60, 'b'));
  ReceiveProgress receive{nullptr, 128};
  receive.relayed = true;
  std::vector<RelayedRun> runs;
  uint64_t tail = 0;
  EXPECT_TRUE(HasError(Drain(ring, receive, runs, &tail), absl::StatusCode::kDataLoss,
                       {"not a line boundary", "channel 1"}));
  EXPECT_TRUE(runs.empty());
}

TEST(RingReaderTest, APlainMessageMayBeCutAnywhere) {
  Ring ring;
  ring.Append(1, 100, 0, std::string(40, 'a'));
  ring.Append(1, 100, 40, std::string(60, 'b'));
  std::vector<char> buffer(100, 'x');
  ReceiveProgress receive{buffer.data(), buffer.size()};
  std::vector<RelayedRun> runs;
  uint64_t tail = 0;
  absl::StatusOr<bool> moved = Drain(ring, receive, runs, &tail);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_TRUE(receive.done);
  EXPECT_TRUE(runs.empty());
  EXPECT_EQ(std::string(buffer.begin(), buffer.end()), std::string(40, 'a') + std::string(60, 'b'));
}

}  // namespace
}  // namespace distribute::shm
