// Another worker process's shared host arena (core/tensor/shared_host_arena.h), mapped
// read-only in this one: the in-place all-reduce reads a peer's tensors through it.
//
// The peer announces "<pid>:<fd>:<bytes>" (Describe) through the coordination service;
// Map opens /proc/<pid>/fd/<fd> and maps it only when it is a regular file of this user,
// exactly `bytes` long and sealed against shrinking, so that no read of the mapping can
// fault past its end whatever the peer does later. Reads are bounded by At.
//
// Thread-safety: At may be called from any thread.
#ifndef DISTRIBUTE_CORE_SHM_PEER_ARENA_H_
#define DISTRIBUTE_CORE_SHM_PEER_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace distribute::shm {

class PeerArena {
 public:
  // This process's arena as a peer maps it (the arena must be enabled).
  static absl::StatusOr<std::string> Describe();
  // Maps the arena `description` (Describe's text) names.
  static absl::StatusOr<std::unique_ptr<PeerArena>> Map(const std::string& description);
  ~PeerArena();

  PeerArena(const PeerArena&) = delete;
  PeerArena& operator=(const PeerArena&) = delete;

  // The peer's bytes [offset, offset + bytes), or nullptr when they are not all in the arena.
  const char* At(uint64_t offset, size_t bytes) const;

 private:
  PeerArena(const char* data, uint64_t size) : data_(data), size_(size) {}

  const char* data_;
  uint64_t size_;
};

}  // namespace distribute::shm

#endif  // DISTRIBUTE_CORE_SHM_PEER_ARENA_H_
