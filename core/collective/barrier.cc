#include "core/collective/barrier.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/util/spin.h"

namespace distribute {

Barrier::Barrier(int32_t participants)
    : n_(participants),
      spin_budget_ns_(SpinBudgetNs(participants)),
      yield_(Oversubscribed(participants)),
      records_(new Record[2 * static_cast<size_t>(participants)]),
      own_(new Own[static_cast<size_t>(participants)]),
      cpus_(participants) {}

absl::Status Barrier::abort_cause() const {
  MutexLock lock(&mu_);
  return abort_cause_;
}

absl::Status Barrier::AbortedStatus() const {
  const absl::Status cause = abort_cause();
  if (absl::IsDeadlineExceeded(cause) || absl::IsAborted(cause)) {
    return absl::AbortedError(cause.message());
  }
  return absl::AbortedError(absl::StrCat("aborted: ", cause.message()));
}

absl::Status Barrier::Arrive(int32_t replica, const Deadline& deadline) {
  if (aborted()) return AbortedStatus();
  const uint64_t generation = own_[replica].next++;
  if (n_ == 1) {
    // Alone, the meeting is complete on arrival: nobody reads the record or parks, so no
    // fence and no CPU note (every call of a worker with one replica arrives here).
    record(replica, generation).reached.store(generation + 1, std::memory_order_relaxed);
    return absl::OkStatus();
  }
  cpus_.Mark(replica);
  // A plain release store: the reads of the others' records below need not wait for it
  // (both transfers overlap); the fence before the sleepers check does.
  record(replica, generation).reached.store(generation + 1, std::memory_order_release);
  int32_t next = 0;  // every replica before `next` has arrived
  auto released = [&] {
    for (; next < n_; ++next) {
      if (next != replica && !Reached(next, generation, std::memory_order_acquire)) break;
    }
    return next == n_ || aborted();
  };
  const bool done = released();
  // Dekker pairing with a parking waiter's increment: either it sees this arrival before
  // parking, or this sees it counted and wakes it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_relaxed) > 0) {
    MutexLock lock(&mu_);
    cv_.notify_all();
  }
  if (next == n_) return absl::OkStatus();
  auto missing_share_core = [&] {
    return cpus_.SharesCore([&](int32_t q) { return !Reached(q, generation, std::memory_order_relaxed); });
  };
  if (!done && !SpinBeforeParking(spin_budget_ns_, yield_, missing_share_core, released)) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);  // the other half of the pairing
    MutexLock lock(&mu_);
    while (!released()) {
      if (cv_.wait_until(lock.native(), deadline.when) == std::cv_status::timeout && !released()) {
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        std::vector<int32_t> missing;
        for (int32_t q = 0; q < n_; ++q) {
          if (!Reached(q, generation, std::memory_order_relaxed)) missing.push_back(q);
        }
        const absl::Status timeout = absl::DeadlineExceededError(absl::StrCat(
            "timed out after ", deadline.timeout_ms, " ms waiting for replica",
            missing.size() == 1 ? " " : "s ", absl::StrJoin(missing, ", "),
            " to reach the same collective"));
        if (abort_cause_.ok()) abort_cause_ = timeout;
        aborted_.store(true, std::memory_order_release);
        cv_.notify_all();
        return timeout;
      }
    }
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (next == n_) return absl::OkStatus();
  return AbortedStatus();
}

void Barrier::Abort(const absl::Status& cause) {
  MutexLock lock(&mu_);
  if (abort_cause_.ok()) abort_cause_ = cause.ok() ? absl::AbortedError("aborted") : cause;
  aborted_.store(true, std::memory_order_release);
  cv_.notify_all();
}

void Barrier::Reset() {
  MutexLock lock(&mu_);
  abort_cause_ = absl::OkStatus();
  // Every replica starts again at one meeting past the furthest any reached, with no
  // record saying it arrived there or at the one after (records hold 0, and that meeting
  // is at least 2).
  uint64_t furthest = 0;
  for (int32_t q = 0; q < n_; ++q) furthest = std::max(furthest, own_[q].next);
  for (int32_t q = 0; q < n_; ++q) {
    own_[q].next = furthest + 2;
    for (int parity = 0; parity < 2; ++parity) {
      records_[2 * static_cast<size_t>(q) + parity].reached.store(0, std::memory_order_relaxed);
    }
  }
  aborted_.store(false, std::memory_order_release);
}

}  // namespace distribute
