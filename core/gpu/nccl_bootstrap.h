// NCCL communicators spanning every GPU replica of a multi-worker job (one flat
// communicator: rank worker * replicas_per_worker + r), created through the coordination
// service's key-value store: every worker says how many GPU replicas it brings (all must
// bring as many, as TF's MultiWorkerMirroredStrategy requires), the chief publishes the
// NCCL unique id, and every replica's rank is created without blocking and polled until
// all are ready, the deadline passes (naming the ranks still missing), or one fails.
#ifndef DISTRIBUTE_CORE_GPU_NCCL_BOOTSTRAP_H_
#define DISTRIBUTE_CORE_GPU_NCCL_BOOTSTRAP_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "core/gpu/nccl_communicators.h"
#include "core/server/coordination_client.h"
#include "core/util/deadline.h"

namespace distribute {

struct NcclJob {
  CoordinationClient* coordination;
  std::string key_prefix;  // the same on every worker, new for every strategy
  int32_t worker = 0;      // this worker's rank; 0 publishes the id
  int32_t num_workers = 1;
};

// A communicator's creation failure as the user should read it: NCCL refuses two ranks on
// one GPU ("Duplicate GPU detected"), which in a job means two workers share a GPU: that
// becomes FAILED_PRECONDITION saying how to give each worker its own. Others unchanged.
absl::Status ExplainNcclCreationFailure(const absl::Status& failure);

// This worker's ranks, one per entry of `devices` (GPU indices), in replica order.
absl::StatusOr<std::unique_ptr<NcclCommunicators>> ConnectNcclJob(const NcclJob& job,
                                                                  std::span<const int32_t> devices,
                                                                  const Deadline& deadline);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GPU_NCCL_BOOTSTRAP_H_
