// Host memory for tensors. Large blocks are recycled: a fresh mapping faults in every page
// on its first write (glibc maps blocks of 32 MiB and more anew on every malloc and unmaps
// them on free), which made a 64 MiB all-reduce spend most of its time in the kernel
// instead of moving bytes. Freed blocks of at least kPooledMinBytes wait in a pool keyed by
// size, up to kPoolCapacityBytes in all (the newest freed blocks stay: older blocks of other
// sizes make room for them), and large blocks ask for transparent huge pages. Once the
// shared host arena is on (shared_host_arena.h), large blocks come from it (in a pool of
// their own) while it has room.
#ifndef DISTRIBUTE_CORE_TENSOR_HOST_ALLOCATOR_H_
#define DISTRIBUTE_CORE_TENSOR_HOST_ALLOCATOR_H_

#include <cstddef>
#include <cstdint>

namespace distribute {

inline constexpr size_t kHostAlignment = 64;
inline constexpr size_t kPooledMinBytes = size_t{1} << 20;
inline constexpr size_t kPoolCapacityBytes = size_t{1} << 30;

// `bytes` > 0; nullptr when the system has no memory for it. Aligned to kHostAlignment.
void* HostAllocate(size_t bytes);

// Returns a block from HostAllocate, with the same `bytes`.
void HostRelease(void* block, size_t bytes);

// Bytes currently kept in the pool (for tests and diagnostics).
size_t HostPoolBytes();

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_TENSOR_HOST_ALLOCATOR_H_
