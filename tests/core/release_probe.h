// A release callback for borrowed memory that counts how often it runs and how often the
// callable itself is destroyed, to check "called exactly once" and "destroyed without
// being called" contracts.
#ifndef DISTRIBUTE_TESTS_CORE_RELEASE_PROBE_H_
#define DISTRIBUTE_TESTS_CORE_RELEASE_PROBE_H_

#include <utility>

namespace distribute::testing {

struct ReleaseProbe {
  int calls = 0;
  int destroyed = 0;  // destructions of a live (not moved-from) callable
};

class CountingRelease {
 public:
  explicit CountingRelease(ReleaseProbe* probe) : probe_(probe) {}
  CountingRelease(CountingRelease&& other) noexcept
      : probe_(std::exchange(other.probe_, nullptr)) {}
  CountingRelease& operator=(CountingRelease&&) = delete;
  CountingRelease(const CountingRelease&) = delete;
  CountingRelease& operator=(const CountingRelease&) = delete;
  ~CountingRelease() {
    if (probe_ != nullptr) ++probe_->destroyed;
  }
  void operator()() && { ++probe_->calls; }

 private:
  ReleaseProbe* probe_;
};

}  // namespace distribute::testing

#endif  // DISTRIBUTE_TESTS_CORE_RELEASE_PROBE_H_
