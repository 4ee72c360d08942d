#include "core/collective/published_call.h"

#include "absl/strings/str_cat.h"

namespace distribute {

bool PublishedCall::SameCallAs(const PublishedCall& other) const {
  if (kind != other.kind || op != other.op || parameter != other.parameter ||
      inputs.size() != other.inputs.size()) {
    return false;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& a = inputs[i];
    const Tensor& b = other.inputs[i];
    if (a.dtype() != b.dtype() || a.shape().rank() != b.shape().rank()) return false;
    for (int32_t d = 0; d < a.shape().rank(); ++d) {
      if ((kind != CallKind::kAllGather || d != parameter) && a.shape().dim(d) != b.shape().dim(d)) {
        return false;
      }
    }
  }
  return true;
}

std::string PublishedCall::Describe() const {
  // Built into one string (no string per dimension): across workers every call's header
  // carries it, so it is on the path of every small cross-worker all-reduce.
  std::string out;
  out.reserve(64);
  auto append_shapes = [&](bool skip_axis) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = inputs[i];
      if (i > 0) out.append(", ");
      absl::StrAppend(&out, DTypeName(t.dtype()), "[");
      for (int32_t d = 0; d < t.shape().rank(); ++d) {
        if (d > 0) out.append(", ");
        if (skip_axis && d == parameter) {
          out.push_back('*');
        } else {
          absl::StrAppend(&out, t.shape().dim(d));
        }
      }
      out.push_back(']');
    }
  };
  switch (kind) {
    case CallKind::kAllReduce:
      absl::StrAppend(&out, "all_reduce(", ReduceOpName(op), ") of ", inputs.size(), " tensor(s) ");
      append_shapes(false);
      return out;
    case CallKind::kAllGather:
      absl::StrAppend(&out, "all_gather(axis ", parameter, ") of ");
      append_shapes(true);
      return out;
    case CallKind::kBroadcast:
      absl::StrAppend(&out, "broadcast(from replica ", parameter, ") of ");
      append_shapes(false);
      return out;
    case CallKind::kMerge:
      return absl::StrCat("merge_call with ", parameter, " argument(s)");
    case CallKind::kError:
      return absl::StrCat("a collective it could not take part in (", error->message(), ")");
  }
  return "unknown call";
}

}  // namespace distribute
