// A job of two workers on threads of this process, each doing what a
// MultiWorkerMirroredStrategy's worker does: start its server with the job token, meet the
// other at a start-up barrier, connect Gloo through the coordination service's key-value
// store (its rendezvous keys are "job/try0/0" and "job/try0/1"), then all-reduce. Each worker makes
// kRounds all-reduces, pauses while the test attacks the job, checks that no peer was
// declared lost, makes kRounds more, and meets the other at a last barrier. Every sum is
// checked against the one computed here; a worker's first error is its result.
#ifndef DISTRIBUTE_TESTS_CORE_TWO_WORKER_JOB_H_
#define DISTRIBUTE_TESTS_CORE_TWO_WORKER_JOB_H_

#include <array>
#include <condition_variable>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cluster/cluster_spec.h"
#include "core/collective/cross_worker.h"
#include "core/gloo/gloo_transport.h"
#include "core/server/server.h"
#include "core/util/status_macros.h"
#include "tests/common/free_ports.h"

namespace distribute::testing {

class TwoWorkerJob {
 public:
  static constexpr int kRounds = 3;
  static constexpr int64_t kLongMs = 60'000;

  explicit TwoWorkerJob(std::string token) : token_(std::move(token)), ports_(FreePorts(2)) {}
  ~TwoWorkerJob() { Finish(); }

  std::string address(int worker) const { return absl::StrCat("127.0.0.1:", ports_[worker]); }

  void Start(int worker) {
    threads_.emplace_back([this, worker] { results_[worker] = Run(worker); });
  }

  // Whether both workers made their first rounds (or failed) within kLongMs.
  bool WaitForFirstRounds() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::milliseconds(kLongMs), [this] { return paused_ == 2; });
  }

  // Worker `worker`'s coordination client, while the job is paused (after
  // WaitForFirstRounds returned true, before Finish): what the job itself would call.
  CoordinationClient& coordination(int worker) { return *clients_[worker]; }

  // Lets the workers go on and returns each one's result.
  std::array<absl::Status, 2> Finish() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      resumed_ = true;
    }
    cv_.notify_all();
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
    return results_;
  }

 private:
  ClusterSpec Cluster(int worker) const {
    ClusterSpec cluster;
    for (int i = 0; i < 2; ++i) (void)cluster.AddTask("worker", i, address(i));
    (void)cluster.SetTask("worker", worker);
    return cluster;
  }

  // Worker w contributes (w + 1) * (i + 1) + round at element i, so the sum of both is
  // 3 * (i + 1) + 2 * round: small integers, exact in float.
  static absl::Status AllReduces(CrossWorker& cross, int worker, int first_round) {
    constexpr size_t kCount = 4;
    for (int round = first_round; round < first_round + kRounds; ++round) {
      std::vector<float> values(kCount);
      for (size_t i = 0; i < kCount; ++i) values[i] = static_cast<float>((worker + 1) * (i + 1) + round);
      void* output = values.data();
      const CrossWorker::Segment segment{DType::kFloat32, kCount, 0, std::span<void* const>(&output, 1)};
      RETURN_IF_ERROR(cross.AllReduce(ReduceOp::kSum, values.data(), kCount * sizeof(float),
                                      std::span<const CrossWorker::Segment>(&segment, 1), 1,
                                      "all_reduce SUM float32[4]", Deadline::AfterMs(kLongMs)));
      for (size_t i = 0; i < kCount; ++i) {
        const float expected = static_cast<float>(3 * (i + 1) + 2 * round);
        if (values[i] != expected) {
          return absl::InternalError(absl::StrCat("worker ", worker, " round ", round, " element ", i,
                                                  ": the sum is ", values[i], ", expected ", expected));
        }
      }
    }
    return absl::OkStatus();
  }

  void Pause() {
    std::unique_lock<std::mutex> lock(mu_);
    ++paused_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return resumed_; });
  }

  absl::Status Run(int worker) {
    // Until the test lets go, even when this worker fails first.
    struct PauseOnExit {
      TwoWorkerJob* job;
      bool paused = false;
      ~PauseOnExit() {
        if (!paused) job->Pause();
      }
    } pause_on_exit{this};
    Server::Options options;
    options.job_token = token_;
    options.startup_timeout_ms = kLongMs;
    ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Start(Cluster(worker), options));
    CoordinationClient& coordination = server->coordination();
    RETURN_IF_ERROR(coordination.Barrier("job/startup", Deadline::AfterMs(kLongMs)));
    ASSIGN_OR_RETURN(std::unique_ptr<GlooTransport> transport,
                     GlooTransport::Connect(coordination, "job/", worker, {"worker:0", "worker:1"}, "127.0.0.1",
                                            server->job_token(),
                                            Deadline::AfterMs(kLongMs)));
    CrossWorker cross(std::move(transport));
    RETURN_IF_ERROR(AllReduces(cross, worker, 0));
    clients_[worker] = &coordination;
    pause_on_exit.paused = true;
    Pause();
    RETURN_IF_ERROR(coordination.PeerHealth());
    RETURN_IF_ERROR(AllReduces(cross, worker, kRounds));
    return coordination.Barrier("job/shutdown", Deadline::AfterMs(kLongMs));
  }

  const std::string token_;
  const std::vector<int> ports_;
  std::vector<std::thread> threads_;
  std::array<absl::Status, 2> results_;
  std::array<CoordinationClient*, 2> clients_{};  // written before the pause it is read in
  std::mutex mu_;
  std::condition_variable cv_;
  int paused_ = 0;        // guarded by mu_
  bool resumed_ = false;  // guarded by mu_
};

}  // namespace distribute::testing

#endif  // DISTRIBUTE_TESTS_CORE_TWO_WORKER_JOB_H_
