// Batches on their way to GPU replicas (InputOptions.fetch_to_device): while a step runs,
// the next step's batch is already being copied to the GPUs. Each GPU replica has a copy
// stream and page-locked (pinned) staging memory per component; Stage copies a host batch
// into the staging memory and queues its transfer into fresh device buffers, Take waits
// for the transfers. CPU replicas' tensors are placed as before (host views).
//
// Thread-safety: one thread at a time (the iterator's).
#ifndef DISTRIBUTE_CORE_INPUT_DEVICE_PREFETCH_H_
#define DISTRIBUTE_CORE_INPUT_DEVICE_PREFETCH_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/device/device_spec.h"
#include "core/device/gpu_stream.h"
#include "core/input/dataset.h"

namespace distribute {

class DevicePrefetcher {
 public:
  // `workers`: the replicas' devices, one element of each batch per replica.
  explicit DevicePrefetcher(std::vector<DeviceSpec> workers);
  // Waits for transfers still in flight, then frees the staging memory.
  ~DevicePrefetcher();
  DevicePrefetcher(const DevicePrefetcher&) = delete;
  DevicePrefetcher& operator=(const DevicePrefetcher&) = delete;

  // Starts moving `by_replica` (element r for replica r, in host memory or already on its
  // device) to the replicas' devices. At most one batch is staged at a time.
  absl::Status Stage(std::vector<Element> by_replica);
  // The staged batch on the replicas' devices, once its transfers have finished.
  absl::StatusOr<std::vector<Element>> Take();

 private:
  // Replica r's copy stream and staging memory, made on first use.
  struct Replica {
    std::unique_ptr<GpuStream> stream;
    std::vector<std::pair<void*, size_t>> pinned;  // per component: memory, bytes
  };
  absl::StatusOr<Tensor> StageTensor(size_t replica, size_t component, const Tensor& tensor);
  absl::Status WaitAll();

  const std::vector<DeviceSpec> workers_;
  std::vector<Replica> replicas_;
  std::vector<Element> staged_;
  bool has_staged_ = false;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_DEVICE_PREFETCH_H_
