#include "core/shm/doorbell.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace distribute::shm {
namespace {

// The atomic's storage is the futex word: std::atomic<uint32_t> is a plain 32-bit word.
uint32_t* Word(std::atomic<uint32_t>& word) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  return reinterpret_cast<uint32_t*>(&word);
}

}  // namespace

void Ring(SegmentHeader& header) {
  header.doorbell.fetch_add(1, std::memory_order_seq_cst);
  if (header.sleepers.load(std::memory_order_seq_cst) > 0) {
    // Not FUTEX_PRIVATE: the sleeper is another process mapping the same page.
    syscall(SYS_futex, Word(header.doorbell), FUTEX_WAKE, INT_MAX, nullptr, nullptr, 0);
  }
}

void SleepUnlessRung(SegmentHeader& header, uint32_t seen, int64_t timeout_ns) {
  header.sleepers.fetch_add(1, std::memory_order_seq_cst);
  if (header.doorbell.load(std::memory_order_seq_cst) == seen) {
    const timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000),
                           static_cast<long>(timeout_ns % 1'000'000'000)};
    syscall(SYS_futex, Word(header.doorbell), FUTEX_WAIT, seen, &timeout, nullptr, 0);
  }
  header.sleepers.fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace distribute::shm
