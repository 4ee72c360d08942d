#include "core/tensor/host_allocator.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <utility>
#include <vector>

#include "core/tensor/shared_host_arena.h"
#include "core/util/mutex.h"

namespace distribute {
namespace {


constexpr size_t kHugePage = size_t{2} << 20;

// Pooled blocks are whole mappings, their size rounded up so that nearby sizes share.
size_t MappingSize(size_t bytes) {
  const size_t granule = bytes >= kHugePage ? kHugePage : size_t{64} << 10;
  return (bytes + granule - 1) / granule * granule;
}

// Blocks of the shared host arena are whole pages (a freed one is punched out of the
// memfd), in huge-page granules from 2 MiB like the mappings above.
size_t ArenaBlockSize(size_t bytes) {
  const size_t granule = bytes >= kHugePage ? kHugePage : size_t{4} << 10;
  return (bytes + granule - 1) / granule * granule;
}

class Pool {
 public:
  void* Take(size_t size) {
    MutexLock lock(&mu_);
    auto it = free_.find(size);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* block = it->second.back();
    it->second.pop_back();
    cached_ -= size;
    return block;
  }

  // Keeps `block`, making room by handing back cached blocks of other sizes (largest
  // first) when the pool is full: the block just freed is the likeliest to be asked for
  // again (a training step allocates the same sizes every time), and stale sizes from an
  // earlier phase must not push it out. Returns what the caller unmaps (`block` itself
  // when it is larger than the whole pool).
  std::vector<std::pair<void*, size_t>> Give(void* block, size_t size) {
    std::vector<std::pair<void*, size_t>> evicted;
    if (size > kPoolCapacityBytes) {
      evicted.emplace_back(block, size);
      return evicted;
    }
    MutexLock lock(&mu_);
    for (auto it = free_.rbegin(); cached_ + size > kPoolCapacityBytes && it != free_.rend(); ++it) {
      if (it->first == size) continue;
      while (!it->second.empty() && cached_ + size > kPoolCapacityBytes) {
        evicted.emplace_back(it->second.back(), it->first);
        it->second.pop_back();
        cached_ -= it->first;
      }
    }
    if (cached_ + size > kPoolCapacityBytes) {  // only blocks of this size: enough of them
      evicted.emplace_back(block, size);
      return evicted;
    }
    free_[size].push_back(block);
    cached_ += size;
    return evicted;
  }

  size_t cached() {
    MutexLock lock(&mu_);
    return cached_;
  }

 private:
  Mutex mu_;
  std::map<size_t, std::vector<void*>> free_ ABSL_GUARDED_BY(mu_);
  size_t cached_ ABSL_GUARDED_BY(mu_) = 0;
};

Pool& ThePool() {
  static Pool* pool = new Pool();  // never destroyed: buffers may be released at exit
  return *pool;
}

// Blocks of the shared host arena wait in a pool of their own: a block a peer is to read
// in place must come from the arena, never be a private one of the same size.
Pool& TheArenaPool() {
  static Pool* pool = new Pool();
  return *pool;
}

// Small blocks come from plain malloc, over-allocated and aligned by hand, with the
// malloc'd pointer stored just before the aligned one: glibc serves them from its
// per-thread caches, where aligned_alloc splits a larger chunk and frees the rest on every
// call (a third of the allocator's time in a loop of 8-byte all-reduces).
constexpr size_t kSmallBlockBytes = 4096;
constexpr size_t kSmallOverhead = kHostAlignment + sizeof(void*);

void* AllocateSmall(size_t bytes) {
  void* origin = std::malloc(bytes + kSmallOverhead);
  if (origin == nullptr) return nullptr;
  const uintptr_t first = reinterpret_cast<uintptr_t>(origin) + sizeof(void*);
  const uintptr_t aligned = (first + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
  auto* block = reinterpret_cast<void**>(aligned);
  block[-1] = origin;
  return block;
}

void ReleaseSmall(void* block) { std::free(static_cast<void**>(block)[-1]); }

}  // namespace

void* HostAllocate(size_t bytes) {
  if (bytes <= kSmallBlockBytes) return AllocateSmall(bytes);
  if (bytes >= kShareableMinBytes && SharedHostArenaEnabled()) {
    const size_t size = ArenaBlockSize(bytes);
    if (size < bytes) return nullptr;
    if (void* block = TheArenaPool().Take(size)) return block;
    if (void* block = SharedHostArenaAllocate(size)) return block;
  }
  if (bytes < kPooledMinBytes) {
    const size_t rounded = (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
    return rounded >= bytes ? std::aligned_alloc(kHostAlignment, rounded) : nullptr;
  }
  const size_t size = MappingSize(bytes);
  if (size < bytes) return nullptr;
  if (void* block = ThePool().Take(size)) return block;
  void* block = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (block == MAP_FAILED) return nullptr;
  if (size >= kHugePage) madvise(block, size, MADV_HUGEPAGE);  // advice only; may be refused
  return block;
}

void HostRelease(void* block, size_t bytes) {
  if (block == nullptr) return;
  if (bytes <= kSmallBlockBytes) {
    ReleaseSmall(block);
    return;
  }
  if (bytes >= kShareableMinBytes && SharedHostArenaOffset(block, bytes).has_value()) {
    const size_t size = ArenaBlockSize(bytes);
    for (const auto& [unused, evicted] : TheArenaPool().Give(block, size)) SharedHostArenaRelease(unused, evicted);
    return;
  }
  if (bytes < kPooledMinBytes) {
    std::free(block);
    return;
  }
  for (const auto& [unused, evicted] : ThePool().Give(block, MappingSize(bytes))) munmap(unused, evicted);
}

size_t HostPoolBytes() { return ThePool().cached() + TheArenaPool().cached(); }

}  // namespace distribute
