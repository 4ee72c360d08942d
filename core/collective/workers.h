// The workers (processes) of a job, as one worker's cross-replica code sees them: what a
// reduction, gather or broadcast in cross-replica context does after combining this
// worker's own replicas. A job of one process has one worker (SingleWorker: every call
// is the local step alone); a multi-worker job's workers talk through a transport
// (CrossWorker). Strategy code calls this interface and never asks which one it has.
//
// Every call is collective across workers: every worker makes the same calls in the same
// order; `signature` describes the call for the agreement check, and must be equal on
// every worker.
//
// Thread-safety: one thread at a time.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_WORKERS_H_
#define DISTRIBUTE_CORE_COLLECTIVE_WORKERS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/kernels/reduce_op.h"
#include "core/tensor/dtype.h"
#include "core/tensor/tensor.h"
#include "core/util/deadline.h"

namespace distribute {

class Workers {
 public:
  virtual ~Workers() = default;

  virtual int32_t num_workers() const = 0;
  // This worker's rank, 0 ... num_workers-1 (the chief is 0).
  virtual int32_t worker() const = 0;

  // One tensor of an all-reduce: `count` accumulator elements (AccumulatorDType(dtype))
  // at `offset` bytes into the pack, whose result (stored as `dtype`) goes to every
  // pointer in `outputs`.
  struct Segment {
    DType dtype;
    size_t count;
    size_t offset;
    std::span<void* const> outputs;
  };
  // Reduces this worker's `pack` of partial results (accumulator precision) with every
  // other worker's, in worker order. MEAN divides by `mean_divisor` (the replica count
  // of the whole job).
  virtual absl::Status AllReduce(ReduceOp op, const void* pack, size_t pack_bytes,
                                 std::span<const Segment> segments, int64_t mean_divisor,
                                 const std::string& signature, const Deadline& deadline) = 0;

  // One tensor's reduction across every replica of the job: this worker's `num_local`
  // arrays of `count` `dtype` elements, then the other workers' in worker order (the order
  // one process with all the replicas uses when the worker count is a power of 2 or
  // num_local is 1), stored in `output` (which may alias inputs[0]).
  virtual absl::Status AllReduceLocal(ReduceOp op, DType dtype, const void* const* inputs,
                                      int32_t num_local, size_t count, void* output,
                                      int64_t mean_divisor, const std::string& signature,
                                      const Deadline& deadline) = 0;

  // Every worker's `local` (a host tensor, rank >= 1) concatenated along `axis` in worker
  // order, as a host tensor. Dimensions other than `axis` must agree.
  virtual absl::StatusOr<Tensor> AllGatherAlongAxis(const Tensor& local, int32_t axis,
                                                    const std::string& signature,
                                                    const Deadline& deadline) = 0;

  // `data` takes worker `root`'s bytes; `bytes` must agree everywhere.
  virtual absl::Status Broadcast(void* data, size_t bytes, int32_t root,
                                 const std::string& signature, const Deadline& deadline) = 0;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_WORKERS_H_
