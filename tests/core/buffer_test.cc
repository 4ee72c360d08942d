// Buffer: host allocation alignment and zero fill, borrowed memory released exactly once,
// CopyBytes, and the GPU paths (failing without a GPU, round-tripping with one).
#include "core/tensor/buffer.h"
#include "core/tensor/host_allocator.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "core/device/gpu_runtime.h"
#include "gtest/gtest.h"
#include "tests/core/release_probe.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::CountingRelease;
using ::distribute::testing::IsOk;
using ::distribute::testing::ReleaseProbe;

DeviceSpec Device(DeviceType type, int32_t index) {
  DeviceSpec spec;
  spec.type = type;
  spec.index = index;
  return spec;
}

const DeviceSpec kCpu0 = Device(DeviceType::kCpu, 0);

bool HasGpu() { return GpuRuntime::Get().device_count() > 0; }

TEST(BufferTest, HostAlignmentIs64) { EXPECT_EQ(kHostAlignment, 64u); }

TEST(BufferTest, AllocateIsAlignedAndSized) {
  // Up to 4 KiB the bytes share the buffer's allocation, in classes of powers of two: each
  // class's edges, where an off-by-one overruns into the next allocation (ASan).
  for (size_t bytes : {size_t{1}, size_t{3}, size_t{63}, size_t{64}, size_t{65}, size_t{100},
                       size_t{127}, size_t{128}, size_t{129}, size_t{256}, size_t{257},
                       size_t{512}, size_t{513}, size_t{1024}, size_t{1025}, size_t{2048},
                       size_t{2049}, size_t{4095}, size_t{4096}, size_t{4097}, size_t{1} << 20,
                       (size_t{1} << 20) + 7}) {
    for (bool zero : {false, true}) {
      SCOPED_TRACE(::testing::Message() << bytes << " bytes, zero=" << zero);
      absl::StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::Allocate(kCpu0, bytes, zero);
      ASSERT_TRUE(IsOk(buffer));
      ASSERT_NE(*buffer, nullptr);
      ASSERT_NE((*buffer)->data(), nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>((*buffer)->data()) % 64, 0u);
      EXPECT_EQ((*buffer)->size(), bytes);
      EXPECT_TRUE((*buffer)->device() == kCpu0);
      // The whole range is writable (checked under sanitizers).
      std::memset((*buffer)->data(), 0x5a, bytes);
    }
  }
}

TEST(BufferTest, AllocateZeroFills) {
  // Dirty memory first, free it, then allocate the same sizes again with zero=true: the
  // allocator is likely to hand the dirty blocks back.
  for (size_t bytes : {size_t{1}, size_t{64}, size_t{100}, size_t{4096}, size_t{1} << 20}) {
    SCOPED_TRACE(bytes);
    for (int round = 0; round < 4; ++round) {
      {
        absl::StatusOr<std::shared_ptr<Buffer>> dirty = Buffer::Allocate(kCpu0, bytes, false);
        ASSERT_TRUE(IsOk(dirty));
        std::memset((*dirty)->data(), 0xab, bytes);
      }
      absl::StatusOr<std::shared_ptr<Buffer>> clean = Buffer::Allocate(kCpu0, bytes, true);
      ASSERT_TRUE(IsOk(clean));
      const auto* bytes_ptr = static_cast<const unsigned char*>((*clean)->data());
      size_t nonzero = 0;
      for (size_t i = 0; i < bytes; ++i) nonzero += bytes_ptr[i] != 0;
      EXPECT_EQ(nonzero, 0u);
    }
  }
}

// Small host buffers live beside their reference counts: many alive at once never share
// a byte.
TEST(BufferTest, SmallBuffersAliveTogetherAreDisjoint) {
  std::vector<std::shared_ptr<Buffer>> buffers;
  for (size_t i = 0; i < 64; ++i) {
    const size_t bytes = 1 + i * 67 % 4096;
    absl::StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::Allocate(kCpu0, bytes, false);
    ASSERT_TRUE(IsOk(buffer));
    std::memset((*buffer)->data(), static_cast<int>(i), bytes);
    buffers.push_back(*std::move(buffer));
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto* data = static_cast<const unsigned char*>(buffers[i]->data());
    size_t wrong = 0;
    for (size_t b = 0; b < buffers[i]->size(); ++b) wrong += data[b] != static_cast<unsigned char>(i);
    EXPECT_EQ(wrong, 0u) << "buffer " << i << " of " << buffers[i]->size() << " bytes";
  }
}

// The pool keeps the block freed last: older cached blocks of other sizes make room for
// it (a 256 MiB all-reduce after smaller ones found the pool full of their blocks and
// faulted in fresh pages every call). Blocks are mapped but never touched here.
TEST(HostAllocatorTest, AFreshlyFreedBlockPushesOutStaleSizes) {
  constexpr size_t kStale = size_t{96} << 20;
  constexpr size_t kFresh = size_t{256} << 20;
  std::vector<void*> stale;
  for (size_t i = 0; i < kPoolCapacityBytes / kStale + 1; ++i) {
    stale.push_back(HostAllocate(kStale));
    ASSERT_NE(stale.back(), nullptr);
  }
  for (void* block : stale) HostRelease(block, kStale);
  EXPECT_LE(HostPoolBytes(), kPoolCapacityBytes);
  EXPECT_GT(HostPoolBytes() + kFresh, kPoolCapacityBytes);  // full of the stale size

  void* fresh = HostAllocate(kFresh);
  ASSERT_NE(fresh, nullptr);
  HostRelease(fresh, kFresh);
  const size_t with_fresh = HostPoolBytes();
  EXPECT_LE(with_fresh, kPoolCapacityBytes);
  void* again = HostAllocate(kFresh);
  EXPECT_EQ(again, fresh) << "the block freed last was not kept";
  EXPECT_EQ(HostPoolBytes(), with_fresh - kFresh) << "the block did not come from the pool";
  HostRelease(again, kFresh);
  // A block larger than the whole pool is never cached.
  void* huge = HostAllocate(kPoolCapacityBytes + (size_t{2} << 20));
  ASSERT_NE(huge, nullptr);
  const size_t before = HostPoolBytes();
  HostRelease(huge, kPoolCapacityBytes + (size_t{2} << 20));
  EXPECT_EQ(HostPoolBytes(), before);
}

TEST(BufferTest, AllocateZeroBytes) {
  for (bool zero : {false, true}) {
    absl::StatusOr<std::shared_ptr<Buffer>> buffer = Buffer::Allocate(kCpu0, 0, zero);
    ASSERT_TRUE(IsOk(buffer));
    ASSERT_NE(*buffer, nullptr);
    EXPECT_EQ((*buffer)->size(), 0u);
  }
}

TEST(BufferTest, AllocateImpossibleSizesIsResourceExhausted) {
  const size_t max = std::numeric_limits<size_t>::max();
  // SIZE_MAX and SIZE_MAX - 10 overflow when rounded up to the alignment; the others are
  // simply more memory than any machine has.
  for (size_t bytes : {max, max - 10, max - 63, max / 2, size_t{1} << 62}) {
    SCOPED_TRACE(bytes);
    EXPECT_TRUE(HasError(Buffer::Allocate(kCpu0, bytes, false),
                         absl::StatusCode::kResourceExhausted, {std::to_string(bytes)}));
  }
}

TEST(BufferTest, AllocateOnGpuWithoutGpuIsFailedPrecondition) {
  if (HasGpu()) GTEST_SKIP() << "this machine has a GPU";
  for (bool zero : {false, true}) {
    EXPECT_TRUE(HasError(Buffer::Allocate(Device(DeviceType::kGpu, 0), 256, zero),
                         absl::StatusCode::kFailedPrecondition, {"GPU:0"}));
  }
}

TEST(BufferTest, BorrowReleasesExactlyOnceWhenTheLastShareDies) {
  ReleaseProbe probe;
  alignas(8) unsigned char memory[32] = {};
  {
    std::shared_ptr<Buffer> buffer = Buffer::Borrow(kCpu0, memory, sizeof memory,
                                                    CountingRelease(&probe));
    ASSERT_NE(buffer, nullptr);
    EXPECT_EQ(buffer->data(), memory);
    EXPECT_EQ(buffer->size(), sizeof memory);
    EXPECT_TRUE(buffer->device() == kCpu0);

    std::shared_ptr<Buffer> second = buffer;
    std::vector<std::shared_ptr<Buffer>> many(10, buffer);
    buffer.reset();
    EXPECT_EQ(probe.calls, 0);
    many.clear();
    EXPECT_EQ(probe.calls, 0);
    std::shared_ptr<Buffer> moved = std::move(second);
    EXPECT_EQ(probe.calls, 0);
  }
  EXPECT_EQ(probe.calls, 1);
  EXPECT_EQ(probe.destroyed, 1);
}

TEST(BufferTest, BorrowWithoutReleaseFunction) {
  unsigned char memory[4] = {1, 2, 3, 4};
  {
    std::shared_ptr<Buffer> buffer = Buffer::Borrow(kCpu0, memory, sizeof memory, nullptr);
    EXPECT_EQ(buffer->data(), memory);
  }
  EXPECT_EQ(memory[0], 1);  // borrowed memory is left alone
}

TEST(BufferTest, BorrowKeepsTheDeviceAsGiven) {
  int calls = 0;
  {
    std::shared_ptr<Buffer> buffer =
        Buffer::Borrow(Device(DeviceType::kGpu, 3), reinterpret_cast<void*>(0x1000), 16,
                       [&calls] { ++calls; });
    EXPECT_TRUE(buffer->device() == Device(DeviceType::kGpu, 3));
  }
  EXPECT_EQ(calls, 1);
}

TEST(BufferTest, CopyBytesHostToHost) {
  std::vector<unsigned char> src(100), dst(100, 0xee);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7 + 1);
  auto src_buffer = Buffer::Borrow(kCpu0, src.data(), src.size(), nullptr);
  auto dst_buffer = Buffer::Borrow(kCpu0, dst.data(), dst.size(), nullptr);

  ASSERT_TRUE(IsOk(CopyBytes(*dst_buffer, *src_buffer, 0)));
  EXPECT_EQ(dst, std::vector<unsigned char>(100, 0xee));

  ASSERT_TRUE(IsOk(CopyBytes(*dst_buffer, *src_buffer, 60)));
  for (size_t i = 0; i < 100; ++i) {
    EXPECT_EQ(dst[i], i < 60 ? src[i] : 0xee) << i;
  }
  ASSERT_TRUE(IsOk(CopyBytes(*dst_buffer, *src_buffer, 100)));
  EXPECT_EQ(dst, src);
}

TEST(BufferTest, CopyBytesBetweenAllocatedBuffers) {
  absl::StatusOr<std::shared_ptr<Buffer>> a = Buffer::Allocate(kCpu0, 256, false);
  absl::StatusOr<std::shared_ptr<Buffer>> b = Buffer::Allocate(Device(DeviceType::kCpu, 1), 256, true);
  ASSERT_TRUE(IsOk(a));
  ASSERT_TRUE(IsOk(b));
  for (int i = 0; i < 256; ++i) static_cast<unsigned char*>((*a)->data())[i] = static_cast<unsigned char>(255 - i);
  ASSERT_TRUE(IsOk(CopyBytes(**b, **a, 256)));
  for (int i = 0; i < 256; ++i) {
    EXPECT_EQ(static_cast<unsigned char*>((*b)->data())[i], 255 - i);
  }
}

TEST(BufferTest, CopyBytesToGpuWithoutGpuIsFailedPrecondition) {
  if (HasGpu()) GTEST_SKIP() << "this machine has a GPU";
  unsigned char host[16] = {};
  auto src = Buffer::Borrow(kCpu0, host, sizeof host, nullptr);
  auto fake_gpu = Buffer::Borrow(Device(DeviceType::kGpu, 0), reinterpret_cast<void*>(0x1000),
                                 16, nullptr);
  EXPECT_TRUE(HasError(CopyBytes(*fake_gpu, *src, 16), absl::StatusCode::kFailedPrecondition));
  EXPECT_TRUE(HasError(CopyBytes(*src, *fake_gpu, 16), absl::StatusCode::kFailedPrecondition));
}

TEST(BufferTest, GpuAllocateZeroAndRoundTrip) {
  if (!HasGpu()) GTEST_SKIP() << "no GPU: " << GpuRuntime::Get().unavailable_reason();
  const size_t bytes = 1000;
  const DeviceSpec gpu0 = Device(DeviceType::kGpu, 0);
  absl::StatusOr<std::shared_ptr<Buffer>> zeros = Buffer::Allocate(gpu0, bytes, true);
  ASSERT_TRUE(IsOk(zeros));
  EXPECT_TRUE((*zeros)->device() == gpu0);
  EXPECT_EQ((*zeros)->size(), bytes);

  std::vector<unsigned char> host(bytes, 0xcc);
  auto host_buffer = Buffer::Borrow(kCpu0, host.data(), bytes, nullptr);
  ASSERT_TRUE(IsOk(CopyBytes(*host_buffer, **zeros, bytes)));
  EXPECT_EQ(host, std::vector<unsigned char>(bytes, 0));

  std::vector<unsigned char> pattern(bytes);
  for (size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<unsigned char>(i % 251);
  auto pattern_buffer = Buffer::Borrow(kCpu0, pattern.data(), bytes, nullptr);
  absl::StatusOr<std::shared_ptr<Buffer>> other = Buffer::Allocate(gpu0, bytes, false);
  ASSERT_TRUE(IsOk(other));
  ASSERT_TRUE(IsOk(CopyBytes(**zeros, *pattern_buffer, bytes)));   // host -> GPU
  ASSERT_TRUE(IsOk(CopyBytes(**other, **zeros, bytes)));           // GPU -> GPU
  ASSERT_TRUE(IsOk(CopyBytes(*host_buffer, **other, bytes)));      // GPU -> host
  EXPECT_EQ(host, pattern);
}

TEST(BufferTest, GpuAllocateBeyondTheLastGpuIsNotFound) {
  if (!HasGpu()) GTEST_SKIP() << "no GPU: " << GpuRuntime::Get().unavailable_reason();
  const int32_t count = GpuRuntime::Get().device_count();
  EXPECT_TRUE(HasError(Buffer::Allocate(Device(DeviceType::kGpu, count), 16, false),
                       absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace distribute
