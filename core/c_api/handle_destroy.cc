#include "core/c_api/handle_destroy.h"

#include <array>

#include "absl/base/thread_annotations.h"
#include "core/util/mutex.h"

namespace distribute::c_api {
namespace {

class HandleQuarantine {
 public:
  void Add(void* memory) ABSL_LOCKS_EXCLUDED(mutex_) {
    void* oldest = nullptr;
    {
      MutexLock lock(&mutex_);
      oldest = slots_[next_];
      slots_[next_] = memory;
      next_ = (next_ + 1) % slots_.size();
    }
    ::operator delete(oldest);  // nullptr until the ring has gone round once
  }

 private:
  Mutex mutex_;  // the project's (ThreadSanitizer sees it; Debian's absl::Mutex it does not)
  std::array<void*, kHandleQuarantineSize> slots_ ABSL_GUARDED_BY(mutex_) = {};
  size_t next_ ABSL_GUARDED_BY(mutex_) = 0;
};

// Never destroyed: handles may be destroyed by other static destructors at exit. The
// memory it still holds then stays reachable from here, so leak checkers are silent.
HandleQuarantine& Quarantine() {
  static HandleQuarantine* const quarantine = new HandleQuarantine();
  return *quarantine;
}

}  // namespace

void QuarantineHandleMemory(void* memory) { Quarantine().Add(memory); }

}  // namespace distribute::c_api
