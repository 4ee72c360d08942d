#include "core/ps/arrival_order_mutex.h"

namespace distribute::ps {

void ArrivalOrderMutex::Lock() {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t ticket = next_ticket_++;
  turn_.wait(lock, [&] { return serving_ == ticket; });
}

void ArrivalOrderMutex::Unlock() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++serving_;
  }
  // Every waiter checks whether it is next: one condition variable for all tickets.
  turn_.notify_all();
}

uint64_t ArrivalOrderMutex::Waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  // The holder's ticket is issued and not yet served, so it is not waiting.
  return next_ticket_ - serving_ - (next_ticket_ > serving_ ? 1 : 0);
}

}  // namespace distribute::ps
