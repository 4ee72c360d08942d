#include "core/tensor/shared_host_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <iterator>
#include <map>

#include "core/util/errno_status.h"
#include "core/util/mutex.h"
#include "core/util/physical_memory.h"

namespace distribute {
namespace {

constexpr uint64_t kGranule = uint64_t{2} << 20;
constexpr uint64_t kMinArenaBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxArenaBytes = uint64_t{1} << 40;

// The host's physical memory, rounded up: no process of this host can fill more.
uint64_t ArenaBytes() {
  const uint64_t bytes = std::clamp(PhysicalMemoryBytes().value_or(kMinArenaBytes), kMinArenaBytes, kMaxArenaBytes);
  return (bytes + kGranule - 1) / kGranule * kGranule;
}

// Blocks are carved from the memfd best-fit; a released block's pages are punched out and
// its range merges with free neighbours, so that a job whose tensor sizes change over time
// reuses the arena instead of running out of it (and falling back to private memory).
class Arena {
 public:
  Arena(int fd, char* base, uint64_t bytes) : fd_(fd), base_(base), bytes_(bytes) {}

  int fd() const { return fd_; }
  char* base() const { return base_; }
  uint64_t bytes() const { return bytes_; }

  void* Allocate(size_t size) {
    MutexLock lock(&mu_);
    if (auto fit = by_size_.lower_bound(size); fit != by_size_.end()) {
      const uint64_t offset = fit->second;
      const uint64_t free = fit->first;
      Unlist(offset, free);
      if (free > size) List(offset + size, free - size);
      return base_ + offset;
    }
    if (size > bytes_ - top_) return nullptr;
    const uint64_t offset = top_;
    top_ += size;
    return base_ + offset;
  }

  void Release(void* block, size_t size) {
    uint64_t offset = static_cast<uint64_t>(static_cast<char*>(block) - base_);
    // Its pages go back to the system now; the range reads as zeros until it is reused.
    fallocate(fd_, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, static_cast<off_t>(offset),
              static_cast<off_t>(size));
    MutexLock lock(&mu_);
    uint64_t length = size;
    if (auto next = by_offset_.find(offset + length); next != by_offset_.end()) {
      const uint64_t next_length = next->second;
      Unlist(offset + length, next_length);
      length += next_length;
    }
    if (auto after = by_offset_.lower_bound(offset); after != by_offset_.begin()) {
      const auto before = std::prev(after);
      if (before->first + before->second == offset) {
        const uint64_t start = before->first;
        const uint64_t before_length = before->second;
        Unlist(start, before_length);
        offset = start;
        length += before_length;
      }
    }
    if (offset + length == top_) {
      top_ = offset;  // the free end of the carved part
    } else {
      List(offset, length);
    }
  }

 private:
  void List(uint64_t offset, uint64_t length) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    by_offset_.emplace(offset, length);
    by_size_.emplace(length, offset);
  }
  void Unlist(uint64_t offset, uint64_t length) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    by_offset_.erase(offset);
    for (auto [it, end] = by_size_.equal_range(length); it != end; ++it) {
      if (it->second == offset) {
        by_size_.erase(it);
        break;
      }
    }
  }

  const int fd_;
  char* const base_;
  const uint64_t bytes_;
  Mutex mu_;
  uint64_t top_ ABSL_GUARDED_BY(mu_) = 0;                  // [0, top_) has been carved
  std::map<uint64_t, uint64_t> by_offset_ ABSL_GUARDED_BY(mu_);     // free ranges below top_
  std::multimap<uint64_t, uint64_t> by_size_ ABSL_GUARDED_BY(mu_);  // the same, by length
};

std::atomic<Arena*> the_arena{nullptr};  // set once, never destroyed (blocks outlive exit)
Mutex enable_mu;

absl::StatusOr<Arena*> CreateArena() {
  const uint64_t bytes = ArenaBytes();
  const int fd = memfd_create("distribute-host-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return ErrnoStatus(errno, "creating the shared host arena (memfd_create)");
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int error = errno;
    close(fd);
    return ErrnoStatus(error, "sizing the shared host arena");
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (base == MAP_FAILED) {
    const int error = errno;
    close(fd);
    return ErrnoStatus(error, "mapping the shared host arena");
  }
  madvise(base, bytes, MADV_HUGEPAGE);  // advice only: most hosts keep shared memory in small pages
  return new Arena(fd, static_cast<char*>(base), bytes);
}

}  // namespace

absl::StatusOr<SharedHostArenaInfo> EnableSharedHostArena() {
  MutexLock lock(&enable_mu);
  Arena* arena = the_arena.load(std::memory_order_acquire);
  if (arena == nullptr) {
    absl::StatusOr<Arena*> created = CreateArena();
    if (!created.ok()) return created.status();
    arena = *created;
    the_arena.store(arena, std::memory_order_release);
  }
  return SharedHostArenaInfo{arena->fd(), arena->bytes()};
}

bool SharedHostArenaEnabled() { return the_arena.load(std::memory_order_acquire) != nullptr; }

std::optional<uint64_t> SharedHostArenaOffset(const void* data, size_t bytes) {
  const Arena* arena = the_arena.load(std::memory_order_acquire);
  if (arena == nullptr || data == nullptr) return std::nullopt;
  const auto at = reinterpret_cast<uintptr_t>(data);
  const auto base = reinterpret_cast<uintptr_t>(arena->base());
  if (at < base || at - base > arena->bytes() || bytes > arena->bytes() - (at - base)) return std::nullopt;
  return static_cast<uint64_t>(at - base);
}

void* SharedHostArenaAllocate(size_t size) {
  Arena* arena = the_arena.load(std::memory_order_acquire);
  return arena == nullptr ? nullptr : arena->Allocate(size);
}

bool SharedHostArenaRelease(void* block, size_t size) {
  Arena* arena = the_arena.load(std::memory_order_acquire);
  if (arena == nullptr || !SharedHostArenaOffset(block, size).has_value()) return false;
  arena->Release(block, size);
  return true;
}

}  // namespace distribute
