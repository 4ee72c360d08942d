// The engine's job system: a fixed pool of threads that each run the frame's job and
// report back, as a game engine's worker pool does. The library never creates threads for
// the simulation: each pool thread joins the strategy as one replica and keeps that role
// for the life of the pool.
#ifndef DISTRIBUTE_EXAMPLES_ENGINE_THREAD_POOL_H_
#define DISTRIBUTE_EXAMPLES_ENGINE_THREAD_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace engine {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads) {
    threads_.reserve(static_cast<size_t>(num_threads));
    for (int i = 0; i < num_threads; ++i) threads_.emplace_back([this, i] { Loop(i); });
  }
  ~ThreadPool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
      ++generation_;
    }
    start_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(threads_.size()); }

  // Runs job(thread_index) once on every pool thread and returns when all have finished.
  // The job is called through a plain function pointer: no allocation per frame.
  template <class Job>
  void Run(Job& job) {
    std::unique_lock<std::mutex> lock(mu_);
    job_ = &job;
    call_ = [](void* j, int index) { (*static_cast<Job*>(j))(index); };
    pending_ = size();
    ++generation_;
    start_.notify_all();
    done_.wait(lock, [this] { return pending_ == 0; });
    job_ = nullptr;
  }

 private:
  void Loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      void* job;
      void (*call)(void*, int);
      {
        std::unique_lock<std::mutex> lock(mu_);
        start_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (stopping_) return;
        job = job_;
        call = call_;
      }
      call(job, index);
      std::lock_guard<std::mutex> lock(mu_);
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::mutex mu_;
  std::condition_variable start_;
  std::condition_variable done_;
  uint64_t generation_ = 0;
  int pending_ = 0;
  bool stopping_ = false;
  void* job_ = nullptr;
  void (*call_)(void*, int) = nullptr;
  std::vector<std::thread> threads_;
};

}  // namespace engine

#endif  // DISTRIBUTE_EXAMPLES_ENGINE_THREAD_POOL_H_
