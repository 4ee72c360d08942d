#include "core/util/fan_out_pool.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"

namespace distribute {

// One Run call. Pool threads hold it through a shared_ptr, because a thread may pop it
// after the caller has already run every group and returned; such a thread finds no
// unstarted group and never touches `call`, which lives on the caller's stack.
struct FanOutPool::Request {
  Request(std::span<const std::vector<int32_t>> g, absl::FunctionRef<absl::Status(int32_t)> c)
      : groups(g), call(c), statuses(g.size()) {}

  std::span<const std::vector<int32_t>> groups;
  absl::FunctionRef<absl::Status(int32_t)> call;
  std::atomic<size_t> next_group{0};  // the first group no one has started
  // Per group: the first error of its calls, with that call's index.
  std::vector<std::pair<int32_t, absl::Status>> statuses;
  Mutex mu;
  std::condition_variable done_cv;
  size_t groups_done ABSL_GUARDED_BY(mu) = 0;
};

FanOutPool::FanOutPool(int32_t threads)
    : num_threads_(std::clamp<int32_t>(threads, 0, kMaxThreads)) {}

FanOutPool::~FanOutPool() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  work_cv_.notify_all();
  for (std::thread& t : threads) t.join();
}

void FanOutPool::GrowForQueue() {
  while (!stopping_ && queue_.size() > idle_ && threads_.size() < static_cast<size_t>(num_threads_)) {
    const auto id = static_cast<int32_t>(threads_.size());
    try {
      threads_.emplace_back([this, id] { ThreadLoop(id); });
    } catch (const std::system_error&) {
      return;  // no thread to be had: the callers run their groups themselves
    }
    ++idle_;  // it takes the lock before its first wait, so count it as waiting already
  }
}

void FanOutPool::ThreadLoop(int32_t id) {
  // A write to a socket whose peer died raises SIGPIPE, which would kill the host process.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  char name[16];
  std::snprintf(name, sizeof name, "dist-fanout-%d", static_cast<int>(id));
  pthread_setname_np(pthread_self(), name);
  for (;;) {
    std::shared_ptr<Request> request;
    {
      MutexLock lock(&mu_);
      work_cv_.wait(lock.native(), [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return stopping_ || !queue_.empty();
      });
      if (queue_.empty()) return;  // stopping, and nothing left to help with
      request = std::move(queue_.front());
      queue_.pop_front();
      --idle_;
    }
    RunUnstartedGroups(*request);
    request.reset();
    MutexLock lock(&mu_);
    ++idle_;
  }
}

namespace {

// A call's status, an escaping exception (an allocation that failed) turned into one: it
// must not unwind a pool thread (std::terminate) or the caller while helpers still run the
// caller's other groups.
absl::Status CallCatching(absl::FunctionRef<absl::Status(int32_t)> call, int32_t index) {
  try {
    return call(index);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("call ", index, " of a fan-out threw: ", e.what()));
  } catch (...) {
    return absl::InternalError(absl::StrCat("call ", index, " of a fan-out threw"));
  }
}

}  // namespace

void FanOutPool::RunUnstartedGroups(Request& request) {
  for (;;) {
    const size_t g = request.next_group.fetch_add(1, std::memory_order_relaxed);
    if (g >= request.groups.size()) return;
    std::pair<int32_t, absl::Status>& first_error = request.statuses[g];
    for (int32_t index : request.groups[g]) {
      absl::Status status = CallCatching(request.call, index);
      if (!status.ok() && (first_error.second.ok() || index < first_error.first)) {
        first_error = {index, std::move(status)};
      }
    }
    MutexLock lock(&request.mu);
    if (++request.groups_done == request.groups.size()) request.done_cv.notify_all();
  }
}

absl::Status FanOutPool::Run(std::span<const std::vector<int32_t>> groups,
                             absl::FunctionRef<absl::Status(int32_t)> call) {
  auto request = std::make_shared<Request>(groups, call);
  const size_t helpers = std::min<size_t>(groups.empty() ? 0 : groups.size() - 1,
                                          static_cast<size_t>(num_threads_));
  if (helpers > 0) {
    {
      MutexLock lock(&mu_);
      for (size_t i = 0; i < helpers; ++i) queue_.push_back(request);
      GrowForQueue();
    }
    if (helpers == 1) {
      work_cv_.notify_one();
    } else {
      work_cv_.notify_all();
    }
  }
  RunUnstartedGroups(*request);
  {
    MutexLock lock(&request->mu);
    request->done_cv.wait(lock.native(), [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return request->groups_done == groups.size();
    });
  }
  const std::pair<int32_t, absl::Status>* lowest = nullptr;
  for (const auto& group_error : request->statuses) {
    if (group_error.second.ok()) continue;
    if (lowest == nullptr || group_error.first < lowest->first) lowest = &group_error;
  }
  return lowest == nullptr ? absl::OkStatus() : lowest->second;
}

}  // namespace distribute
