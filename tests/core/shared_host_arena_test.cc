// The shared host arena (core/tensor/shared_host_arena.h) and a peer's view of it
// (core/shm/peer_arena.h), in one process: the peer's mapping is a second mapping of the
// same memfd, as another process's would be. The arena cannot be turned off once on, so
// the first test checks what holds before it is enabled (gtest runs them in order).
#include "core/tensor/shared_host_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/shm/peer_arena.h"
#include "core/tensor/host_allocator.h"
#include "status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;

TEST(SharedHostArenaTest, OffUntilEnabled) {
  EXPECT_FALSE(SharedHostArenaEnabled());
  void* block = HostAllocate(kShareableMinBytes * 2);
  ASSERT_NE(block, nullptr);
  EXPECT_FALSE(SharedHostArenaOffset(block, kShareableMinBytes * 2).has_value());
  EXPECT_EQ(SharedHostArenaAllocate(kShareableMinBytes), nullptr);
  EXPECT_FALSE(SharedHostArenaRelease(block, kShareableMinBytes * 2));
  HostRelease(block, kShareableMinBytes * 2);
  EXPECT_TRUE(HasError(shm::PeerArena::Describe(), absl::StatusCode::kFailedPrecondition, {"no shared host arena"}));
}

TEST(SharedHostArenaTest, LargeBlocksComeFromTheArenaOnceEnabled) {
  absl::StatusOr<SharedHostArenaInfo> info = EnableSharedHostArena();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_GE(info->fd, 0);
  EXPECT_GE(info->bytes, uint64_t{1} << 30);
  absl::StatusOr<SharedHostArenaInfo> again = EnableSharedHostArena();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->fd, info->fd);
  EXPECT_TRUE(SharedHostArenaEnabled());
  // Sealed: nobody can shrink it under a peer's mapping.
  EXPECT_NE(fcntl(info->fd, F_GET_SEALS) & F_SEAL_SHRINK, 0);
  EXPECT_NE(ftruncate(info->fd, 4096), 0);

  void* large = HostAllocate(kShareableMinBytes);
  void* small = HostAllocate(kShareableMinBytes - 64);
  ASSERT_NE(large, nullptr);
  ASSERT_NE(small, nullptr);
  const std::optional<uint64_t> offset = SharedHostArenaOffset(large, kShareableMinBytes);
  ASSERT_TRUE(offset.has_value());
  EXPECT_EQ(*offset % 64, 0u);
  EXPECT_FALSE(SharedHostArenaOffset(small, 64).has_value());
  // A range that runs past the arena's end, or starts before it, is not in it.
  EXPECT_TRUE(SharedHostArenaOffset(large, info->bytes - *offset).has_value());
  EXPECT_FALSE(SharedHostArenaOffset(large, info->bytes - *offset + 1).has_value());
  EXPECT_FALSE(SharedHostArenaOffset(static_cast<char*>(large) - *offset - 1, 1).has_value());
  EXPECT_FALSE(SharedHostArenaOffset(nullptr, 1).has_value());

  // A released block waits in the pool and comes back for the same size.
  HostRelease(large, kShareableMinBytes);
  EXPECT_EQ(HostAllocate(kShareableMinBytes), large);
  HostRelease(large, kShareableMinBytes);
  HostRelease(small, kShareableMinBytes - 64);
}

TEST(SharedHostArenaTest, ReleasedRangesMergeAndServeAnySize) {
  ASSERT_TRUE(EnableSharedHostArena().ok());
  constexpr size_t kMiB = size_t{1} << 20;
  auto* x = static_cast<char*>(SharedHostArenaAllocate(3 * kMiB));
  ASSERT_NE(x, nullptr);
  void* guard = SharedHostArenaAllocate(4096);  // x is not the carved part's end
  ASSERT_NE(guard, nullptr);
  std::memset(x, 0x5a, 3 * kMiB);
  // A hole in the middle serves smaller blocks, best fit.
  ASSERT_TRUE(SharedHostArenaRelease(x + kMiB, kMiB));
  EXPECT_EQ(SharedHostArenaAllocate(kMiB / 2), x + kMiB);
  EXPECT_EQ(SharedHostArenaAllocate(kMiB / 2), x + kMiB + kMiB / 2);
  // Released in any order, the pieces merge back into one range that a larger block takes.
  ASSERT_TRUE(SharedHostArenaRelease(x + kMiB + kMiB / 2, kMiB / 2));
  ASSERT_TRUE(SharedHostArenaRelease(x, kMiB));
  ASSERT_TRUE(SharedHostArenaRelease(x + 2 * kMiB, kMiB));
  ASSERT_TRUE(SharedHostArenaRelease(x + kMiB, kMiB / 2));
  EXPECT_EQ(SharedHostArenaAllocate(3 * kMiB), x);
  // Released pages were given back: they read as zeros.
  EXPECT_EQ(x[0], 0);
  EXPECT_EQ(x[3 * kMiB - 1], 0);
  ASSERT_TRUE(SharedHostArenaRelease(x, 3 * kMiB));
  ASSERT_TRUE(SharedHostArenaRelease(guard, 4096));
  // The arena's end is free again too: the same block comes back.
  EXPECT_EQ(SharedHostArenaAllocate(3 * kMiB), x);
  ASSERT_TRUE(SharedHostArenaRelease(x, 3 * kMiB));
  // More than the arena holds is refused, not wrapped around.
  EXPECT_EQ(SharedHostArenaAllocate(EnableSharedHostArena()->bytes + 4096), nullptr);
}

TEST(SharedHostArenaTest, APeerReadsTheBytesInPlace) {
  ASSERT_TRUE(EnableSharedHostArena().ok());
  absl::StatusOr<std::string> description = shm::PeerArena::Describe();
  ASSERT_TRUE(description.ok()) << description.status();
  absl::StatusOr<std::unique_ptr<shm::PeerArena>> peer = shm::PeerArena::Map(*description);
  ASSERT_TRUE(peer.ok()) << peer.status();

  constexpr size_t kBytes = size_t{3} << 20;
  auto* block = static_cast<unsigned char*>(HostAllocate(kBytes));
  ASSERT_NE(block, nullptr);
  for (size_t i = 0; i < kBytes; ++i) block[i] = static_cast<unsigned char>(i * 7 + 3);
  const uint64_t offset = *SharedHostArenaOffset(block, kBytes);
  const char* seen = (*peer)->At(offset, kBytes);
  ASSERT_NE(seen, nullptr);
  ASSERT_NE(static_cast<const void*>(seen), static_cast<const void*>(block));  // another mapping
  EXPECT_EQ(std::memcmp(seen, block, kBytes), 0);
  block[12345] ^= 0xff;  // a later write is seen too: the same memory
  EXPECT_EQ(static_cast<unsigned char>(seen[12345]), block[12345]);
  const uint64_t size = EnableSharedHostArena()->bytes;
  EXPECT_EQ((*peer)->At(size, 1), nullptr);
  EXPECT_EQ((*peer)->At(size - 1, 2), nullptr);
  EXPECT_EQ((*peer)->At(UINT64_MAX, 1), nullptr);
  EXPECT_NE((*peer)->At(size - 1, 1), nullptr);
  HostRelease(block, kBytes);
}

TEST(SharedHostArenaTest, MapRefusesWhatIsNotAnArena) {
  ASSERT_TRUE(EnableSharedHostArena().ok());
  for (const char* bad : {"", "1:2", "1:2:3:4", "x:3:4096", "-1:3:4096", "1:-3:4096", "1:3:0", "1:3:99999999999999999999"}) {
    EXPECT_TRUE(HasError(shm::PeerArena::Map(bad), absl::StatusCode::kInvalidArgument, {"malformed"})) << bad;
  }
  const uint64_t size = EnableSharedHostArena()->bytes;
  // A descriptor that is not open.
  EXPECT_FALSE(shm::PeerArena::Map(absl::StrCat(getpid(), ":", 999999, ":", size)).ok());
  // The arena announced at another size.
  EXPECT_TRUE(HasError(shm::PeerArena::Map(absl::StrCat(getpid(), ":", EnableSharedHostArena()->fd, ":", size - 4096)),
                       absl::StatusCode::kFailedPrecondition, {"not an arena"}));
  // A memfd of the right size that is not sealed: it could shrink under the mapping.
  const int unsealed = memfd_create("not-an-arena", MFD_CLOEXEC);
  ASSERT_GE(unsealed, 0);
  ASSERT_EQ(ftruncate(unsealed, 1 << 20), 0);
  EXPECT_TRUE(HasError(shm::PeerArena::Map(absl::StrCat(getpid(), ":", unsealed, ":", 1 << 20)),
                       absl::StatusCode::kFailedPrecondition, {"may shrink"}));
  close(unsealed);
}

}  // namespace
}  // namespace distribute
