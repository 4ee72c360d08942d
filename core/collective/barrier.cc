#include "core/collective/barrier.h"

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
      arrived_at_(new ArrivalRecord[static_cast<size_t>(participants)]),
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
  const uint64_t generation = generation_.load(std::memory_order_acquire);
  arrived_at_[replica].generation.store(generation + 1, std::memory_order_relaxed);
  cpus_.Mark(replica);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_) {
    arrived_.store(0, std::memory_order_relaxed);
    generation_.store(generation + 1, std::memory_order_seq_cst);
    // Dekker pairing with the sleeper's increment below: either it sees the new
    // generation before parking, or we see it counted and wake it.
    if (sleepers_.load(std::memory_order_seq_cst) > 0) {
      MutexLock lock(&mu_);
      cv_.notify_all();
    }
    return absl::OkStatus();
  }
  auto released = [&] {
    return generation_.load(std::memory_order_acquire) != generation || aborted();
  };
  auto missing_share_core = [&] {
    return cpus_.SharesCore([&](int32_t q) {
      return arrived_at_[q].generation.load(std::memory_order_relaxed) != generation + 1;
    });
  };
  if (!SpinBeforeParking(spin_budget_ns_, yield_, missing_share_core, released)) {
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    MutexLock lock(&mu_);
    while (!released()) {
      if (cv_.wait_until(lock.native(), deadline.when) == std::cv_status::timeout && !released()) {
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
        std::vector<int32_t> missing;
        for (int32_t i = 0; i < n_; ++i) {
          if (arrived_at_[i].generation.load(std::memory_order_relaxed) != generation + 1) missing.push_back(i);
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
  if (generation_.load(std::memory_order_acquire) != generation) return absl::OkStatus();
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
  arrived_.store(0, std::memory_order_relaxed);
  aborted_.store(false, std::memory_order_release);
  // A new generation, so no arrival record of the old run counts.
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace distribute
