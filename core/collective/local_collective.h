// The collectives of replicas that share one process (Mirrored, CentralStorage and
// OneDevice strategies): every call meets in the local rendezvous and runs in shared
// memory; the all-reduce algorithm is the strategy's CrossDeviceOps. Its workers() is a
// SingleWorker.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_LOCAL_COLLECTIVE_H_
#define DISTRIBUTE_CORE_COLLECTIVE_LOCAL_COLLECTIVE_H_

#include <memory>

#include "core/collective/collective.h"
#include "core/collective/local_all_reduce.h"
#include "core/collective/single_worker.h"

namespace distribute {

class LocalCollective final : public Collective {
 public:
  LocalCollective(int32_t replicas, std::unique_ptr<LocalAllReduce> all_reduce)
      : Collective(replicas), all_reduce_(std::move(all_reduce)) {}

  absl::Status AllReduce(int32_t replica, ReduceOp op, std::span<const Tensor> inputs,
                         std::span<const Tensor> outputs, const Deadline& deadline) override;
  absl::StatusOr<Tensor> AllGather(int32_t replica, const Tensor& input, int32_t axis,
                                   const DeviceSpec& device, const Deadline& deadline) override;
  absl::StatusOr<Tensor> Broadcast(int32_t replica, const Tensor& input, int32_t root,
                                   const DeviceSpec& device, const Deadline& deadline) override;
  absl::Status FailTogether(int32_t replica, const absl::Status& error,
                            const Deadline& deadline) override;
  Workers& workers() override { return workers_; }

 private:
  const std::unique_ptr<LocalAllReduce> all_reduce_;
  SingleWorker workers_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_LOCAL_COLLECTIVE_H_
