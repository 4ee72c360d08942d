#include "core/tensor/buffer.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "core/tensor/host_allocator.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

int32_t GpuIndexOrHost(const DeviceSpec& device) {
  return device.type == DeviceType::kGpu ? device.index : DIST_GPU_HOST_DEVICE;
}

// Buffer with a public constructor, so that make_shared puts the buffer and its reference
// count in one allocation.
struct SharedBuffer final : Buffer {
  SharedBuffer(const DeviceSpec& device, void* data, size_t size, absl::AnyInvocable<void() &&> release)
      : Buffer(device, data, size, std::move(release)) {}
};

std::shared_ptr<Buffer> MakeBuffer(const DeviceSpec& device, void* data, size_t size,
                                   absl::AnyInvocable<void() &&> release) {
  return std::make_shared<SharedBuffer>(device, data, size, std::move(release));
}

// Host tensors up to this size keep their bytes inside the buffer's own allocation.
constexpr size_t kInlineHostBytes = 4096;

// A small host buffer whose bytes share one allocation with the buffer and its reference
// count: one malloc and one free per tensor instead of two each (a small all-reduce makes a
// new value every call, and the second block was a fifth of its cost). The bytes start at
// the first kHostAlignment boundary inside `storage_`, as HostAllocate's do.
template <size_t kCapacity>
struct InlineHostBuffer final : Buffer {
  InlineHostBuffer(const DeviceSpec& device, size_t size)
      : Buffer(device, AlignUp(storage_), size, nullptr) {}

  static void* AlignUp(unsigned char* p) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(p);
    return reinterpret_cast<void*>((address + kHostAlignment - 1) / kHostAlignment * kHostAlignment);
  }

  unsigned char storage_[kCapacity + kHostAlignment];
};

// The smallest inline buffer (capacities in powers of two from 64 bytes) that holds
// `bytes` (1 to kInlineHostBytes).
std::shared_ptr<Buffer> MakeInlineHostBuffer(const DeviceSpec& device, size_t bytes) {
  if (bytes <= 64) return std::make_shared<InlineHostBuffer<64>>(device, bytes);
  if (bytes <= 128) return std::make_shared<InlineHostBuffer<128>>(device, bytes);
  if (bytes <= 256) return std::make_shared<InlineHostBuffer<256>>(device, bytes);
  if (bytes <= 512) return std::make_shared<InlineHostBuffer<512>>(device, bytes);
  if (bytes <= 1024) return std::make_shared<InlineHostBuffer<1024>>(device, bytes);
  if (bytes <= 2048) return std::make_shared<InlineHostBuffer<2048>>(device, bytes);
  static_assert(kInlineHostBytes == 4096, "one class per power of two up to kInlineHostBytes");
  return std::make_shared<InlineHostBuffer<4096>>(device, bytes);
}

}  // namespace

Buffer::Buffer(const DeviceSpec& device, void* data, size_t size,
               absl::AnyInvocable<void() &&> release)
    : device_(device), data_(data), size_(size), release_(std::move(release)) {}

Buffer::~Buffer() {
  if (release_) std::move(release_)();
}

absl::StatusOr<std::shared_ptr<Buffer>> Buffer::Allocate(const DeviceSpec& device, size_t bytes,
                                                         bool zero) {
  if (bytes == 0) return MakeBuffer(device, nullptr, 0, nullptr);
  if (device.type == DeviceType::kGpu) {
    const GpuRuntime& gpu = GpuRuntime::Get();
    ASSIGN_OR_RETURN(void* ptr, gpu.Allocate(device.index, bytes));
    auto buffer =
        MakeBuffer(device, ptr, bytes, [&gpu, index = device.index, ptr] { gpu.Release(index, ptr); });
    if (zero) RETURN_IF_ERROR(gpu.Zero(device.index, ptr, bytes));
    return buffer;
  }
  if (bytes <= kInlineHostBytes) {
    std::shared_ptr<Buffer> buffer = MakeInlineHostBuffer(device, bytes);
    if (zero) std::memset(buffer->data(), 0, bytes);
    return buffer;
  }
  void* ptr = HostAllocate(bytes);
  if (ptr == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("allocating ", bytes, " bytes of host memory failed"));
  }
  if (zero) std::memset(ptr, 0, bytes);
  return MakeBuffer(device, ptr, bytes, [ptr, bytes] { HostRelease(ptr, bytes); });
}

std::shared_ptr<Buffer> Buffer::Borrow(const DeviceSpec& device, void* data, size_t bytes,
                                       absl::AnyInvocable<void() &&> release) {
  return MakeBuffer(device, data, bytes, std::move(release));
}

absl::Status CopyBytes(const Buffer& dst, const Buffer& src, size_t bytes) {
  if (bytes == 0) return absl::OkStatus();
  if (dst.device().type != DeviceType::kGpu && src.device().type != DeviceType::kGpu) {
    std::memcpy(dst.data(), src.data(), bytes);
    return absl::OkStatus();
  }
  return GpuRuntime::Get().Copy(GpuIndexOrHost(dst.device()), dst.data(),
                                GpuIndexOrHost(src.device()), src.data(), bytes);
}

}  // namespace distribute
