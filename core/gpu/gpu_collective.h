// The collectives of one process's GPU replicas (Mirrored, CentralStorage or OneDevice
// over GPU:i): the same rendezvous and agreement check as the CPU collectives, then the work
// on the GPUs: all-reduce by the CrossDeviceOps' algorithm (gpu_all_reduce.h), all-gather
// and broadcast by copies between devices. Every wait on a GPU is bounded by the call's
// deadline; a GPU error or an expired wait aborts the NCCL communicators and fails every
// later collective with the cause (sticky, as a lost GPU would be), naming the call and
// the device. Its workers() is the job's workers (a single worker for one process). A
// cross-replica reduction in one process runs on the destination GPU (ReduceOnDevice); in
// a job it stages GPU tensors through the host and workers().
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
#include "core/gpu/nccl_communicators.h"
#include "core/server/coordination_client.h"
#include "core/server/peer_death_watcher.h"

namespace distribute {

class GpuCollective final : public Collective {
 public:
  // One process: `devices` are its replicas (distinct GPUs); `reduce_replica` is where
  // ReductionToOneDevice reduces.
  static absl::StatusOr<std::unique_ptr<GpuCollective>> Create(const std::vector<DeviceSpec>& devices,
                                                               const CrossDeviceOps& ops,
                                                               int32_t reduce_replica);

  // A multi-worker job: `comms` span every GPU replica of the job (ConnectNcclJob);
  // `workers` carries what runs on the host between workers (cross-replica reductions,
  // all-gather, the dtypes NCCL lacks); a death reported by `coordination` aborts the
  // communicators with the report (UNAVAILABLE naming the task). Before each NCCL
  // collective the workers check that they all make the same call (an all-gather of a
  // digest of it), so a disagreement fails every worker with a message instead of hanging.
  static absl::StatusOr<std::unique_ptr<GpuCollective>> CreateForJob(
      const std::vector<DeviceSpec>& devices, std::unique_ptr<NcclCommunicators> comms,
      std::shared_ptr<Workers> workers, CoordinationClient* coordination);

  ~GpuCollective() override;

  absl::Status AllReduce(int32_t replica, ReduceOp op, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const Deadline& deadline) override;
  absl::StatusOr<Tensor> AllGather(int32_t replica, const Tensor& input, int32_t axis,
                                   const DeviceSpec& device, const Deadline& deadline) override;
  absl::StatusOr<Tensor> Broadcast(int32_t replica, const Tensor& input, int32_t root,
                                   const DeviceSpec& device, const Deadline& deadline) override;
  absl::Status FailTogether(int32_t replica, const absl::Status& error,
                            const Deadline& deadline) override;
  Workers& workers() override { return *workers_; }
  // One process, a destination that is one of its replicas' GPUs, every component on its
  // replica's GPU, at most DIST_GPU_REDUCE_MAX_INPUTS of them: the plugin's reduction kernel
  // on the destination (reading peers in place where it can, else copies first), with the
  // CPU kernels' summation order, so the bits equal the host path's. Else std::nullopt.
  absl::StatusOr<std::optional<Tensor>> ReduceOnDevice(ReduceOp op, std::span<const Tensor> components,
                                                       const DeviceSpec& destination,
                                                       const Deadline& deadline) override;

 protected:
  // Inputs may live anywhere: the GPU collectives copy what is not on the replica's GPU.
  absl::Status CheckLocalInputs(std::span<const Tensor> inputs) const override;

 private:
  GpuCollective(int32_t replicas, std::shared_ptr<Workers> workers);

  bool in_job() const { return !agree_send_.empty(); }
  // Runs `work` after publishing `call` (and, in a job, after every worker agreed on it);
  // when it fails, the other replicas are released with the same error instead of waiting.
  absl::Status PublishAndRun(int32_t replica, const PublishedCall& call, const Deadline& deadline,
                             absl::FunctionRef<absl::Status()> work);
  // In a job: every rank's digest of its call (or its failure), gathered through NCCL.
  absl::Status AgreeAcrossWorkers(int32_t replica, const PublishedCall& call, bool failed,
                                  const Deadline& deadline);
  // Copies every block of the published inputs into `out` on this replica's GPU or host.
  absl::Status GatherInto(int32_t replica, int32_t axis, const Tensor& out, const Deadline& deadline);
  // In a job: the local inputs concatenated on the host, then the workers' (replica 0).
  absl::StatusOr<Tensor> GatherAcrossWorkers(int32_t axis, const Deadline& deadline);
  // This replica's copy of `input` on its GPU (itself when already there).
  absl::StatusOr<Tensor> OnReplicaGpu(int32_t replica, const Tensor& input) const;

  const std::shared_ptr<Workers> workers_;
  std::unique_ptr<GpuReplicas> gpus_;
  std::unique_ptr<GpuAllReduce> all_reduce_;
  // In a job: per replica, the device memory of the agreement all-gather (a digest in,
  // every rank's out).
  std::vector<std::shared_ptr<Buffer>> agree_send_;
  std::vector<std::shared_ptr<Buffer>> agree_recv_;
  absl::StatusOr<Tensor> gathered_;  // GatherAcrossWorkers' result, read by every replica
  std::unique_ptr<PeerDeathWatcher> watcher_;  // last: stopped before the rest goes
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GPU_GPU_COLLECTIVE_H_
