#include "core/c_api/handle_destroy.h"

#include <array>

#include "absl/base/thread_annotations.h"
#include "core/util/mutex.h"

namespace distribute::c_api {
namespace {

// A ring of kHandleQuarantineSize slots: adding frees the oldest memory in it.
class Ring {
 public:
  // Keeps `memory` and returns what falls out (nullptr until the ring has gone round once).
  void* Push(void* memory) {
    void* oldest = slots_[next_];
    slots_[next_] = memory;
    next_ = (next_ + 1) % slots_.size();
    return oldest;
  }
  // Everything it holds, oldest first, leaving it empty.
  template <typename Fn>
  void Drain(Fn&& fn) {
    for (size_t i = 0; i < slots_.size(); ++i) {
      void*& slot = slots_[(next_ + i) % slots_.size()];
      if (slot != nullptr) fn(slot);
      slot = nullptr;
    }
  }

 private:
  std::array<void*, kHandleQuarantineSize> slots_ = {};
  size_t next_ = 0;
};

// Shared by threads whose own ring is gone (a handle destroyed by a static destructor at
// exit, after the thread's thread_local objects). Never destroyed: its memory stays
// reachable from here, so leak checkers are silent.
class SharedQuarantine {
 public:
  void Add(void* memory) ABSL_LOCKS_EXCLUDED(mutex_) {
    void* oldest = nullptr;
    {
      MutexLock lock(&mutex_);
      oldest = ring_.Push(memory);
    }
    ::operator delete(oldest);
  }

 private:
  Mutex mutex_;  // the project's (ThreadSanitizer sees it; Debian's absl::Mutex it does not)
  Ring ring_ ABSL_GUARDED_BY(mutex_);
};

SharedQuarantine& Shared() {
  static SharedQuarantine* const quarantine = new SharedQuarantine();
  return *quarantine;
}

// Each thread quarantines into a ring of its own: replica threads destroying their
// results every step no longer contend for one mutex (it cost a futex round trip per
// small all-reduce). At thread exit the ring's memory moves to the shared ring.
thread_local bool tls_ring_gone = false;  // trivially destructible: readable at exit
struct ThreadRing {
  Ring ring;
  ~ThreadRing() {
    tls_ring_gone = true;
    ring.Drain([](void* memory) { Shared().Add(memory); });
  }
};
thread_local ThreadRing tls_ring;

}  // namespace

void QuarantineHandleMemory(void* memory) {
  if (tls_ring_gone) {
    Shared().Add(memory);
    return;
  }
  ::operator delete(tls_ring.ring.Push(memory));
}

}  // namespace distribute::c_api
