#include "core/util/byte_budget.h"

namespace distribute {

bool ByteBudget::Reservation::Take(uint64_t bytes, Clock::time_point deadline) {
  if (bytes == 0) return true;
  // More than the whole budget would wait for ever.
  if (bytes > budget_.capacity_ - held_) return false;
  MutexLock lock(&budget_.mu_);
  const bool free = budget_.freed_.wait_until(lock.native(), deadline, [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return budget_.capacity_ - budget_.in_use_ >= bytes;
  });
  if (!free) return false;
  budget_.in_use_ += bytes;
  held_ += bytes;
  return true;
}

uint64_t ByteBudget::in_use() {
  MutexLock lock(&mu_);
  return in_use_;
}

void ByteBudget::Release(uint64_t bytes) {
  if (bytes == 0) return;
  {
    MutexLock lock(&mu_);
    in_use_ -= bytes;
  }
  freed_.notify_all();
}

}  // namespace distribute
