// Workers as threads of one test process: an in-process coordination service for
// `workers` tasks ("worker:0" ...), and fn(rank, client, names, prefix) on one thread per
// worker, each with its own coordination client; `prefix` is new for every call, as a
// communicator's key prefix is.
#ifndef DISTRIBUTE_TESTS_CORE_WORKER_THREADS_H_
#define DISTRIBUTE_TESTS_CORE_WORKER_THREADS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/server/coordination_service.h"
#include "core/server/local_coordination_client.h"

namespace distribute::testing {

using WorkerThreadFn = std::function<void(int32_t rank, CoordinationClient& client,
                                          const std::vector<std::string>& names, const std::string& prefix)>;

inline void RunWorkerThreads(int32_t workers, const WorkerThreadFn& fn) {
  static std::atomic<int> instance{0};
  std::vector<std::string> names;
  for (int32_t w = 0; w < workers; ++w) names.push_back(absl::StrCat("worker:", w));
  CoordinationService::Options options;
  options.tasks = names;
  options.barrier_tasks = names;
  CoordinationService service(options);
  const std::string prefix = absl::StrCat("test/", ++instance, "/");
  std::vector<std::thread> threads;
  for (int32_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      LocalCoordinationClient client(&service, names[w]);
      fn(w, client, names, prefix);
    });
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace distribute::testing

#endif  // DISTRIBUTE_TESTS_CORE_WORKER_THREADS_H_
