// What one replica publishes for a collective call in its process's rendezvous: the kind
// of call, its op and parameter, and its tensors, so that every replica can check that
// all of them made the same call and then read each other's buffers in place.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_PUBLISHED_CALL_H_
#define DISTRIBUTE_CORE_COLLECTIVE_PUBLISHED_CALL_H_

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "core/kernels/reduce_op.h"
#include "core/tensor/tensor.h"

namespace distribute {

enum class CallKind { kAllReduce, kAllGather, kBroadcast, kMerge, kError };

struct PublishedCall {
  CallKind kind;
  ReduceOp op = ReduceOp::kSum;
  int32_t parameter = 0;  // axis for all-gather, root for broadcast, arg count for merge
  std::span<const Tensor> inputs = {};
  std::span<const Tensor> outputs = {};
  const void* payload = nullptr;        // kMerge: the replica's arguments
  const absl::Status* error = nullptr;  // kError: why this replica cannot take part

  // A call that stands for `error` (the replica found its own arguments invalid).
  static PublishedCall Failure(const absl::Status* error) {
    return PublishedCall{.kind = CallKind::kError, .error = error};
  }

  // Whether `other` is the same call (cheap: no strings; the axis of an all-gather may
  // differ in length).
  bool SameCallAs(const PublishedCall& other) const;

  // What the call looks like, for the error that names the replicas when they disagree
  // and for the cross-worker agreement check.
  std::string Describe() const;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_PUBLISHED_CALL_H_
