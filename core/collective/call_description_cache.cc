#include "core/collective/call_description_cache.h"

namespace distribute {

bool CallDescriptionCache::Matches(const PublishedCall& call) const {
  if (!valid_ || call.kind != kind_ || call.op != op_ || call.parameter != parameter_ ||
      call.inputs.size() != dtypes_.size()) {
    return false;
  }
  size_t next = 0;
  for (size_t i = 0; i < call.inputs.size(); ++i) {
    const Tensor& t = call.inputs[i];
    const int32_t rank = t.shape().rank();
    if (t.dtype() != dtypes_[i] || rank != ranks_[i]) return false;
    for (int32_t d = 0; d < rank; ++d, ++next) {
      // The gathered axis may change length from call to call: its text is '*' anyway.
      const bool gathered = call.kind == CallKind::kAllGather && d == call.parameter;
      if (!gathered && t.shape().dim(d) != dims_[next]) return false;
    }
  }
  return true;
}

const std::string& CallDescriptionCache::Describe(const PublishedCall& call) {
  if (Matches(call)) return description_;
  valid_ = false;  // until the key below is whole
  description_ = call.Describe();
  kind_ = call.kind;
  op_ = call.op;
  parameter_ = call.parameter;
  dtypes_.clear();
  ranks_.clear();
  dims_.clear();
  for (const Tensor& t : call.inputs) {
    dtypes_.push_back(t.dtype());
    ranks_.push_back(t.shape().rank());
    for (int32_t d = 0; d < t.shape().rank(); ++d) dims_.push_back(t.shape().dim(d));
  }
  // A failure's text carries its message, and a merge is never sent across workers:
  // only the collectives are kept.
  valid_ = call.kind == CallKind::kAllReduce || call.kind == CallKind::kAllGather ||
           call.kind == CallKind::kBroadcast;
  return description_;
}

}  // namespace distribute
