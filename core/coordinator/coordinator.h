// The coordinator of TF 2 parameter-server training (ClusterCoordinator): a queue of
// closures (a registered function's name and its arguments) that one thread per worker
// task takes from and runs on its worker (closure_client.h), remote values that resolve
// when their closure finishes, and per-worker datasets and iterators made on each worker
// when a closure first needs them there. The semantics are include_c/distribute/coordinator.h's:
//
// - Lost workers: a call that finds its worker gone (closure_client.h's failure model)
//   puts the closure back at the front of the queue, and the worker's thread pings the
//   worker (every 50 ms, backing off to 1 s) until it answers; an answer with a new
//   incarnation means a restart, so its per-worker resources are made again first.
// - A closure's own error resolves its remote value, is kept as the queue's error (the
//   first only) and cancels every queued closure; schedule, join and done report it once.
// - Waits (join, fetch, a full queue) end with DeadlineExceeded when no closure finished
//   for the strategy's timeout.
//
// Thread-safety: safe. One mutex guards the queue, the remote values and the workers'
// bookkeeping (closures are few and coarse; RPCs run outside it).
#ifndef DISTRIBUTE_CORE_COORDINATOR_COORDINATOR_H_
#define DISTRIBUTE_CORE_COORDINATOR_COORDINATOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/coordinator/closure_arguments.h"
#include "core/input/input_options.h"
#include "core/server/closure_client.h"
#include "core/strategy/strategy.h"
#include "core/tensor/tensor.h"

namespace distribute::coordinator {

inline constexpr size_t kMaxQueuedClosures = 65536;

struct CoordinatorState;  // coordinator_state.h

// The result of a scheduled closure.
class RemoteValue {
 public:
  explicit RemoteValue(std::shared_ptr<CoordinatorState> state) : state_(std::move(state)) {}
  // Waits for the closure: its result (none when the function stored none) or its error;
  // Cancelled for a cancelled closure; DeadlineExceeded when no closure finished or went back to
  // the queue (its worker lost) for the timeout.
  absl::StatusOr<std::optional<Tensor>> Fetch();
  bool ready() const;

 private:
  friend struct CoordinatorState;
  const std::shared_ptr<CoordinatorState> state_;
  // Guarded by the state's mutex.
  bool done_ = false;
  absl::Status status_;
  std::optional<Tensor> result_;
};

// A per-worker dataset or iterator (PerWorkerValues). Releasing the last reference asks
// the workers that hold it to drop it.
class PerWorkerResource {
 public:
  ~PerWorkerResource();
  // iter(per_worker_dataset): a new iterator of `dataset` (a fresh pass on every worker).
  // InvalidArgument for an iterator.
  static absl::StatusOr<std::shared_ptr<PerWorkerResource>> MakeIterator(
      const std::shared_ptr<PerWorkerResource>& dataset);
  bool is_iterator() const { return dataset_ != nullptr; }
  uint64_t id() const { return id_; }
  const std::shared_ptr<CoordinatorState>& state() const { return state_; }

 private:
  friend class Coordinator;
  friend struct CoordinatorState;
  PerWorkerResource(std::shared_ptr<CoordinatorState> state, uint64_t id) : state_(std::move(state)), id_(id) {}
  const std::shared_ptr<CoordinatorState> state_;
  const uint64_t id_;
  closures::DatasetSpec spec_;                    // a dataset's (num_workers and index set per worker)
  std::shared_ptr<PerWorkerResource> dataset_;    // an iterator's dataset
};

class Coordinator {
 public:
  using ClientFactory = std::function<absl::StatusOr<std::unique_ptr<ClosureClient>>(
      const std::string& task, const std::string& address)>;

  // A coordinator over `strategy` (see coordinator.h for what it must be). `factory`
  // (empty: gRPC clients with the strategy's job token and TLS files) makes each worker's
  // client. AlreadyExists when the strategy has a coordinator.
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(std::shared_ptr<Strategy> strategy,
                                                             ClientFactory factory = nullptr);
  ~Coordinator();  // Shutdown
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  absl::StatusOr<std::shared_ptr<RemoteValue>> Schedule(absl::string_view function,
                                                        const ClosureArguments& arguments);
  absl::Status Join();
  absl::StatusOr<bool> Done();
  int32_t num_workers() const;

  absl::StatusOr<std::shared_ptr<PerWorkerResource>> CreatePerWorkerDataset(absl::string_view function,
                                                                            const InputOptions& options,
                                                                            bool from_function);
  const std::shared_ptr<Strategy>& strategy() const { return strategy_; }

 private:
  Coordinator(std::shared_ptr<Strategy> strategy, std::shared_ptr<CoordinatorState> state);
  void Shutdown();

  const std::shared_ptr<Strategy> strategy_;
  const std::shared_ptr<CoordinatorState> state_;
};

}  // namespace distribute::coordinator

#endif  // DISTRIBUTE_CORE_COORDINATOR_COORDINATOR_H_
