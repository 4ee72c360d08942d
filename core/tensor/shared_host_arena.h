// Host memory that the other worker processes of this host can map and read in place: the
// shared-memory transport's peers reduce straight out of this worker's tensors instead of
// having them copied into a ring first (CrossWorker's in-place all-reduce).
//
// One memfd per process, sized once to the host's physical memory (sparse: a page costs
// memory only once written), sealed so that it can never shrink (a peer's mapping cannot
// fault past its end, SIGBUS) or grow, and mapped MAP_SHARED. It has no name in /dev/shm:
// its memory goes when the last process that maps it exits, SIGKILL included, and a small
// /dev/shm (a container's) does not limit it. A peer opens it through /proc/<pid>/fd/<fd>
// (same user, core/shm/peer_arena.h).
//
// Off until EnableSharedHostArena (the shared-memory transport calls it when it connects):
// from then on HostAllocate takes blocks of kShareableMinBytes and more from the arena
// while it has room, and private memory after that. Tensors allocated earlier stay
// private, and a collective on them takes the copying path.
//
// Thread-safety: every function may be called from any thread.
#ifndef DISTRIBUTE_CORE_TENSOR_SHARED_HOST_ARENA_H_
#define DISTRIBUTE_CORE_TENSOR_SHARED_HOST_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"

namespace distribute {

// The smallest block HostAllocate takes from the arena: the in-place all-reduce starts
// there too. Between two workers on the 2-core machine in place took 0.65-0.8x the time
// through the rings at 64 KiB, 0.5x at 256 KiB and 1 MiB; smaller tensors cost more in
// its three rounds of signals than the copies it saves.
inline constexpr size_t kShareableMinBytes = size_t{64} << 10;

struct SharedHostArenaInfo {
  int fd;         // this process's descriptor of the memfd
  uint64_t bytes; // its size, fixed
};

// Creates the arena on the first call; later calls return the same arena.
absl::StatusOr<SharedHostArenaInfo> EnableSharedHostArena();

// Whether EnableSharedHostArena has succeeded in this process.
bool SharedHostArenaEnabled();

// Where [data, data + bytes) lies in the arena (its offset), or nullopt when it does not
// lie wholly inside it (or there is no arena).
std::optional<uint64_t> SharedHostArenaOffset(const void* data, size_t bytes);

// For host_allocator.cc. A block of `size` bytes (a multiple of 4 KiB) from the arena, or
// nullptr when it is off or full.
void* SharedHostArenaAllocate(size_t size);
// Gives a block from SharedHostArenaAllocate back: its pages are freed (punched out of the
// memfd) and its range merged with the free ranges beside it, for later blocks of any size.
// False when `block` is not in the arena.
bool SharedHostArenaRelease(void* block, size_t size);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_TENSOR_SHARED_HOST_ARENA_H_
