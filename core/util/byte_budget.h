// A budget of bytes that concurrent requests take from and give back: what bounds the
// memory a server's calls hold at once (issue 43, finding 3: a ps task's calls could
// together hold 32 x 1 GiB). A call reserves its bytes once it knows them and before it
// allocates, waiting while others hold the budget, and gives them back when it ends.
//
// Thread-safety: safe. A Reservation belongs to one thread.
#ifndef DISTRIBUTE_CORE_UTIL_BYTE_BUDGET_H_
#define DISTRIBUTE_CORE_UTIL_BYTE_BUDGET_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>

#include "core/util/mutex.h"

namespace distribute {

class ByteBudget {
 public:
  using Clock = std::chrono::steady_clock;

  // What one call holds, given back on destruction.
  class Reservation {
   public:
    explicit Reservation(ByteBudget& budget) : budget_(budget) {}
    ~Reservation() { budget_.Release(held_); }
    Reservation(const Reservation&) = delete;
    Reservation& operator=(const Reservation&) = delete;

    // Takes `bytes` more, waiting until `deadline` for them to be free. False (taking
    // nothing) when the deadline passed first, or at once when `bytes` with what this
    // reservation holds exceed the whole capacity.
    bool Take(uint64_t bytes, Clock::time_point deadline);
    uint64_t held() const { return held_; }

   private:
    ByteBudget& budget_;
    uint64_t held_ = 0;
  };

  explicit ByteBudget(uint64_t capacity) : capacity_(capacity) {}
  ByteBudget(const ByteBudget&) = delete;
  ByteBudget& operator=(const ByteBudget&) = delete;

  uint64_t capacity() const { return capacity_; }
  // The bytes reservations hold now.
  uint64_t in_use();

 private:
  void Release(uint64_t bytes);

  const uint64_t capacity_;
  Mutex mu_;
  std::condition_variable freed_;
  uint64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_BYTE_BUDGET_H_
