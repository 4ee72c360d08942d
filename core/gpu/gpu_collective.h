// The collectives of one process's GPU replicas (Mirrored, CentralStorage or OneDevice
// over GPU:i): the same rendezvous and agreement check as the CPU collectives, then the work
// on the GPUs: all-reduce by the CrossDeviceOps' algorithm (gpu_all_reduce.h), all-gather
// and broadcast by copies between devices. Every wait on a GPU is bounded by the call's
// deadline; a GPU error or an expired wait aborts the NCCL communicators and fails every
// later collective with the cause (sticky, as a lost GPU would be), naming the call and
// the device. Its workers() is the single worker (cross-replica reductions stage GPU
// tensors through the host).
#ifndef DISTRIBUTE_CORE_GPU_GPU_COLLECTIVE_H_
#define DISTRIBUTE_CORE_GPU_GPU_COLLECTIVE_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "core/collective/collective.h"
#include "core/collective/cross_device_ops.h"
#include "core/collective/single_worker.h"
#include "core/gpu/gpu_all_reduce.h"
#include "core/gpu/gpu_replicas.h"

namespace distribute {

class GpuCollective final : public Collective {
 public:
  // `devices`: this process's replicas, distinct GPUs. `reduce_replica`: where
  // ReductionToOneDevice reduces.
  static absl::StatusOr<std::unique_ptr<GpuCollective>> Create(const std::vector<DeviceSpec>& devices,
                                                               const CrossDeviceOps& ops,
                                                               int32_t reduce_replica);

  absl::Status AllReduce(int32_t replica, ReduceOp op, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const Deadline& deadline) override;
  absl::StatusOr<Tensor> AllGather(int32_t replica, const Tensor& input, int32_t axis,
                                   const DeviceSpec& device, const Deadline& deadline) override;
  absl::StatusOr<Tensor> Broadcast(int32_t replica, const Tensor& input, int32_t root,
                                   const DeviceSpec& device, const Deadline& deadline) override;
  absl::Status FailTogether(int32_t replica, const absl::Status& error,
                            const Deadline& deadline) override;
  Workers& workers() override { return workers_; }

 protected:
  // Inputs may live anywhere: the GPU collectives copy what is not on the replica's GPU.
  absl::Status CheckLocalInputs(std::span<const Tensor> inputs) const override;

 private:
  GpuCollective(std::unique_ptr<GpuReplicas> gpus, std::unique_ptr<GpuAllReduce> all_reduce);

  // Runs `work` after publishing `call`; when it fails, the other replicas are released
  // from the rendezvous with the same error instead of waiting for this one.
  absl::Status PublishAndRun(int32_t replica, const PublishedCall& call, const Deadline& deadline,
                             absl::FunctionRef<absl::Status()> work);
  // Copies every block of the published inputs into `out` on this replica's GPU or host.
  absl::Status GatherInto(int32_t replica, int32_t axis, const Tensor& out, const Deadline& deadline);

  const std::unique_ptr<GpuReplicas> gpus_;
  const std::unique_ptr<GpuAllReduce> all_reduce_;
  SingleWorker workers_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GPU_GPU_COLLECTIVE_H_
