// The description of the last call a worker's leader made across workers
// (PublishedCall::Describe, which every cross-worker call's header carries), kept with what
// it describes: a training loop makes the same calls step after step, and formatting the
// text was about a sixth of the instructions of an 8-byte all-reduce between two processes.
//
// Thread-safety: one thread at a time (each worker's replica 0).
#ifndef DISTRIBUTE_CORE_COLLECTIVE_CALL_DESCRIPTION_CACHE_H_
#define DISTRIBUTE_CORE_COLLECTIVE_CALL_DESCRIPTION_CACHE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "core/collective/published_call.h"

namespace distribute {

class CallDescriptionCache {
 public:
  // call.Describe(): formatted again only when `call` differs from the last call in kind,
  // op, parameter, or any tensor's dtype or dimensions (but an all-gather's gathered axis,
  // which its text does not show). Valid until the next call.
  const std::string& Describe(const PublishedCall& call);

 private:
  bool Matches(const PublishedCall& call) const;

  bool valid_ = false;
  CallKind kind_ = CallKind::kError;
  ReduceOp op_ = ReduceOp::kSum;
  int32_t parameter_ = 0;
  std::vector<DType> dtypes_;
  std::vector<int32_t> ranks_;
  std::vector<int64_t> dims_;  // every tensor's, one after another
  std::string description_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_CALL_DESCRIPTION_CACHE_H_
