// The NCCL communicators of one process's GPU replicas (rank r on replica r's device) and
// the one way they stop: Abort, which ncclCommAbort's every one of them (freeing queued
// collectives a lost or late peer would otherwise block forever) and makes every later use
// fail with the cause. Sticky: an aborted communicator cannot be revived, like TF's.
//
// Thread-safety: rank r is used from replica r's thread; Abort and failure() from any
// thread. Use holds rank r's lock while queuing, so Abort never frees a communicator that a
// replica is queuing work on.
#ifndef DISTRIBUTE_CORE_GPU_NCCL_COMMUNICATORS_H_
#define DISTRIBUTE_CORE_GPU_NCCL_COMMUNICATORS_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/util/mutex.h"

namespace distribute {

class NcclCommunicators {
 public:
  // One communicator per device of this process (ncclCommInitAll).
  static absl::StatusOr<std::unique_ptr<NcclCommunicators>> Create(std::span<const int32_t> devices);
  // Communicators made elsewhere (ConnectNcclJob), rank r of this process at comms[r].
  static std::unique_ptr<NcclCommunicators> Adopt(std::vector<void*> comms);
  ~NcclCommunicators();
  NcclCommunicators(const NcclCommunicators&) = delete;
  NcclCommunicators& operator=(const NcclCommunicators&) = delete;

  // Runs `enqueue` with rank `rank`'s communicator, or fails with the abort's cause.
  absl::Status Use(int32_t rank, absl::FunctionRef<absl::Status(void* comm)> enqueue);
  // An asynchronous error of rank `rank`'s communicator (or the abort's cause).
  absl::Status Check(int32_t rank);
  // Aborts every communicator once; later calls fail with `cause` (the first cause wins).
  void Abort(const absl::Status& cause);
  absl::Status failure() const;

 private:
  explicit NcclCommunicators(std::vector<void*> comms);

  struct Rank {
    Mutex mu;
    void* comm ABSL_GUARDED_BY(mu);
  };
  std::vector<std::unique_ptr<Rank>> ranks_;
  mutable Mutex mu_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GPU_NCCL_COMMUNICATORS_H_
