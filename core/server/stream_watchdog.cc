#include "core/server/stream_watchdog.h"

#include <algorithm>

namespace distribute {

StreamWatchdog::Watch::Watch(StreamWatchdog& watchdog, grpc::ServerContext* context)
    : watchdog_(watchdog), context_(context), last_(Clock::now().time_since_epoch().count()) {
  std::lock_guard<std::mutex> lock(watchdog_.mu_);
  watchdog_.watches_.insert(this);
}

StreamWatchdog::Watch::~Watch() {
  std::lock_guard<std::mutex> lock(watchdog_.mu_);
  watchdog_.watches_.erase(this);
}

StreamWatchdog::StreamWatchdog(std::chrono::milliseconds idle_limit)
    : idle_limit_(idle_limit), thread_([this] { Run(); }) {}

StreamWatchdog::~StreamWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void StreamWatchdog::Run() {
  // Checked a few times per limit, so a stream is cancelled within about 1.25 limits.
  const auto interval = std::clamp<std::chrono::milliseconds>(idle_limit_ / 4, std::chrono::milliseconds(10),
                                                              std::chrono::milliseconds(1000));
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval, [this] { return stopping_; })) {
    const Clock::rep now = Clock::now().time_since_epoch().count();
    const Clock::rep limit = std::chrono::duration_cast<Clock::duration>(idle_limit_).count();
    for (Watch* watch : watches_) {
      if (!watch->cancelled_.load() && now - watch->last_.load(std::memory_order_relaxed) > limit) {
        watch->cancelled_.store(true);
        watch->context_->TryCancel();  // the handler's pending Read returns false
      }
    }
  }
}

}  // namespace distribute
