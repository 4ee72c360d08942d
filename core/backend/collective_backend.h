// The one place a strategy's collective backend is chosen, from data: the strategy's
// replica devices (their kind), its CrossDeviceOps (the in-process all-reduce algorithm)
// and, for a multi-worker job, the cluster and CommunicationOptions (the cross-worker
// transport). Strategy code only ever sees the Collective interface.
//
//   one process, CPU replicas   -> LocalCollective with the CrossDeviceOps' algorithm
//   several workers, CPU        -> HierarchicalCollective over CrossWorker over Gloo TCP
//   one process, GPU replicas   -> GpuCollective (NCCL or the plugin's reduction kernels)
//   several workers, GPU        -> GpuCollective over one NCCL communicator for the job
//                                  (host side: the CPU workers' transport)
#ifndef DISTRIBUTE_CORE_BACKEND_COLLECTIVE_BACKEND_H_
#define DISTRIBUTE_CORE_BACKEND_COLLECTIVE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/backend/multi_worker_runtime.h"
#include "core/cluster/cluster_spec.h"
#include "core/collective/collective.h"
#include "core/collective/communication_options.h"
#include "core/collective/cross_device_ops.h"
#include "core/device/device_spec.h"

namespace distribute {

// What a strategy's replicas communicate through, and what keeps it working.
class CollectiveBackend {
 public:
  CollectiveBackend(std::unique_ptr<Collective> collective,
                    std::shared_ptr<MultiWorkerRuntime> runtime)
      : runtime_(std::move(runtime)), collective_(std::move(collective)) {}

  Collective& collective() { return *collective_; }
  Workers& workers() { return collective_->workers(); }
  int32_t num_workers() { return workers().num_workers(); }
  int32_t worker_index() { return workers().worker(); }

 private:
  // Destroyed after the collective that talks through it: the runtime's destructor waits
  // for the other workers to finish.
  std::shared_ptr<MultiWorkerRuntime> runtime_;
  std::unique_ptr<Collective> collective_;
};

struct BackendRequest {
  std::vector<DeviceSpec> devices;  // this process's replicas, resolved
  CrossDeviceOps ops;
  // A multi-worker job: its cluster (whose current task is this process), how workers
  // communicate, and the bound of start-up. Null cluster: one process.
  const ClusterSpec* cluster = nullptr;
  CommunicationOptions communication;
  int64_t timeout_ms = 0;
};

// Builds the backend `request` calls for; a multi-worker one connects to every worker
// first (blocking up to request.timeout_ms).
absl::StatusOr<std::unique_ptr<CollectiveBackend>> CreateCollectiveBackend(const BackendRequest& request);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_BACKEND_COLLECTIVE_BACKEND_H_
