// A POSIX shared-memory segment (shm_open + mmap) mapped into this process. The creator
// makes it private to its user (0600, O_EXCL: never someone else's segment of that name);
// an opener checks that it belongs to this user and has exactly the size it expects, so
// a name that a stranger planted cannot be mapped at a size that reads out of bounds.
//
// The creator reserves the whole size at once (a full /dev/shm fails creation, never a
// later write). The name stays in /dev/shm until UnlinkSegment removes it; the mapping lasts until the
// object is destroyed, whether or not the name was unlinked.
#ifndef DISTRIBUTE_CORE_SHM_SHARED_SEGMENT_H_
#define DISTRIBUTE_CORE_SHM_SHARED_SEGMENT_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace distribute::shm {

class SharedSegment {
 public:
  static absl::StatusOr<std::unique_ptr<SharedSegment>> Create(const std::string& name, size_t bytes);
  static absl::StatusOr<std::unique_ptr<SharedSegment>> Open(const std::string& name, size_t bytes);
  ~SharedSegment();

  SharedSegment(const SharedSegment&) = delete;
  SharedSegment& operator=(const SharedSegment&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  SharedSegment(char* data, size_t size) : data_(data), size_(size) {}

  char* data_;
  size_t size_;
};

// Removes `name` from the system (a name already gone is fine).
void UnlinkSegment(const std::string& name);

// A fresh segment name for `rank`: "/dist-" + 32 random hex digits + "-" + rank.
std::string NewSegmentName(int32_t rank);
// Whether `name` has NewSegmentName's form (a peer's published name is checked before use).
bool IsSegmentName(const std::string& name);

}  // namespace distribute::shm

#endif  // DISTRIBUTE_CORE_SHM_SHARED_SEGMENT_H_
