#include "core/strategy/replica_pool.h"

#include <pthread.h>
#include <signal.h>

#include <cstdio>

#include "core/util/spin.h"

namespace distribute {
namespace {

thread_local const ReplicaPool* current_pool = nullptr;

// A write to a socket whose peer died raises SIGPIPE, which would kill the host process;
// replica threads (and every thread they start, which inherits the mask) block it.
void BlockSigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

// Names the thread "dist-replica-<r>" so that debuggers, top -H and profilers show which
// replica a thread serves. Linux allows 15 characters: ids past 99999 are cut, harmlessly.
void NameReplicaThread(int32_t replica) {
  char name[16];
  std::snprintf(name, sizeof name, "dist-replica-%d", static_cast<int>(replica));
  pthread_setname_np(pthread_self(), name);
}

}  // namespace

ReplicaPool::ReplicaPool(int32_t replicas)
    : n_(replicas), spin_budget_ns_(SpinBudgetNs(replicas)), yield_(Oversubscribed(replicas)), cpus_(replicas) {
  threads_.reserve(static_cast<size_t>(n_ > 0 ? n_ - 1 : 0));
  for (int32_t r = 1; r < n_; ++r) threads_.emplace_back([this, r] { WorkerLoop(r); });
}

ReplicaPool::~ReplicaPool() {
  stopping_.store(true, std::memory_order_seq_cst);
  {
    MutexLock lock(&mu_);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    work_cv_.notify_all();
  }
  for (std::thread& t : threads_) t.join();
}

bool ReplicaPool::OnWorkerThread() const { return current_pool == this; }

void ReplicaPool::Wake() {
  if (parked_workers_.load(std::memory_order_seq_cst) > 0) {
    MutexLock lock(&mu_);
    work_cv_.notify_all();
  }
}

void ReplicaPool::Run(absl::FunctionRef<void(int32_t)> task) {
  if (n_ > 1) {
    cpus_.Mark(0);
    task_ = &task;
    remaining_.store(n_ - 1, std::memory_order_relaxed);
    epoch_.fetch_add(1, std::memory_order_seq_cst);
    Wake();
  }
  task(0);
  if (n_ <= 1) return;
  auto done = [&] { return remaining_.load(std::memory_order_acquire) == 0; };
  // The workers still running may share this core (another process holding the others).
  auto workers_share_core = [&] { return cpus_.SharesCore([](int32_t r) { return r != 0; }); };
  if (!SpinBeforeParking(spin_budget_ns_, yield_, workers_share_core, done)) {
    caller_parked_.store(true, std::memory_order_seq_cst);
    MutexLock lock(&mu_);
    done_cv_.wait(lock.native(), done);
    caller_parked_.store(false, std::memory_order_relaxed);
  }
  task_ = nullptr;
}

void ReplicaPool::WorkerLoop(int32_t replica) {
  BlockSigpipe();
  NameReplicaThread(replica);
  current_pool = this;
  uint64_t seen = 0;
  while (true) {
    auto published = [&] { return epoch_.load(std::memory_order_acquire) != seen; };
    // The caller runs the steps: it may share this core (see CpuBoard).
    auto caller_shares_core = [&] { return cpus_.SharesCore([](int32_t r) { return r == 0; }); };
    if (!SpinBeforeParking(spin_budget_ns_, yield_, caller_shares_core, published)) {
      parked_workers_.fetch_add(1, std::memory_order_seq_cst);
      MutexLock lock(&mu_);
      work_cv_.wait(lock.native(), published);
      parked_workers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = epoch_.load(std::memory_order_acquire);
    if (stopping_.load(std::memory_order_acquire)) return;
    cpus_.Mark(replica);
    (*task_)(replica);
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1 &&
        caller_parked_.load(std::memory_order_seq_cst)) {
      MutexLock lock(&mu_);
      done_cv_.notify_all();
    }
  }
}

}  // namespace distribute
