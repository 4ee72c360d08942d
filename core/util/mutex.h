// The project's mutex: std::mutex (which ThreadSanitizer understands through its pthread
// interceptors, unlike Debian's uninstrumented absl::Mutex) with Abseil's thread-safety
// annotations, so members can be ABSL_GUARDED_BY it.
#ifndef DISTRIBUTE_CORE_UTIL_MUTEX_H_
#define DISTRIBUTE_CORE_UTIL_MUTEX_H_

#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace distribute {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : lock_(mu->native()) {}
  ~MutexLock() ABSL_UNLOCK_FUNCTION() = default;
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  // For waiting on a std::condition_variable while holding the lock.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_MUTEX_H_
