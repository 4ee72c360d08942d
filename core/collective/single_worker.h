// The workers of a job that is one process: every cross-worker step is the identity, so
// a cross-replica reduction is exactly the local one.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_SINGLE_WORKER_H_
#define DISTRIBUTE_CORE_COLLECTIVE_SINGLE_WORKER_H_

#include "core/collective/workers.h"

namespace distribute {

class SingleWorker final : public Workers {
 public:
  int32_t num_workers() const override { return 1; }
  int32_t worker() const override { return 0; }
  absl::Status AllReduce(ReduceOp op, const void* pack, size_t pack_bytes,
                         std::span<const Segment> segments, int64_t mean_divisor,
                         const std::string& signature, const Deadline& deadline) override;
  absl::Status AllReduceLocal(ReduceOp op, DType dtype, const void* const* inputs, int32_t num_local,
                              size_t count, void* output, int64_t mean_divisor,
                              const std::string& signature, const Deadline& deadline) override;
  absl::StatusOr<Tensor> AllGatherAlongAxis(const Tensor& local, int32_t axis,
                                            const std::string& signature,
                                            const Deadline& deadline) override;
  absl::Status Broadcast(void* data, size_t bytes, int32_t root, const std::string& signature,
                         const Deadline& deadline) override;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_SINGLE_WORKER_H_
