// A mutex that admits its lockers strictly in the order they arrived (a ticket lock).
// A ps task applies the updates of one variable "atomically, in arrival order": std::mutex
// promises no order at all, and under load a late update could overtake an earlier one
// again and again. Each Lock takes the next ticket and waits until it is served.
#ifndef DISTRIBUTE_CORE_PS_ARRIVAL_ORDER_MUTEX_H_
#define DISTRIBUTE_CORE_PS_ARRIVAL_ORDER_MUTEX_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace distribute::ps {

// Thread-safety: safe. Not recursive: a holder that locks again waits for ever.
class ABSL_LOCKABLE ArrivalOrderMutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION();
  void Unlock() ABSL_UNLOCK_FUNCTION();

  // Lockers that hold a ticket and wait for their turn (for tests that need to know
  // that a thread has arrived).
  uint64_t Waiting() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable turn_;
  uint64_t next_ticket_ = 0;  // guarded by mu_
  uint64_t serving_ = 0;      // guarded by mu_
};

class ABSL_SCOPED_LOCKABLE ArrivalOrderLock {
 public:
  explicit ArrivalOrderLock(ArrivalOrderMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~ArrivalOrderLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  ArrivalOrderLock(const ArrivalOrderLock&) = delete;
  ArrivalOrderLock& operator=(const ArrivalOrderLock&) = delete;

 private:
  ArrivalOrderMutex* const mu_;
};

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_ARRIVAL_ORDER_MUTEX_H_
