#include "core/collective/published_call.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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
  auto shapes = [&](bool skip_axis) {
    return absl::StrJoin(inputs, ", ", [&](std::string* out, const Tensor& t) {
      std::vector<std::string> dims;
      for (int32_t d = 0; d < t.shape().rank(); ++d) {
        dims.push_back(skip_axis && d == parameter ? "*" : absl::StrCat(t.shape().dim(d)));
      }
      absl::StrAppend(out, DTypeName(t.dtype()), "[", absl::StrJoin(dims, ", "), "]");
    });
  };
  switch (kind) {
    case CallKind::kAllReduce:
      return absl::StrCat("all_reduce(", ReduceOpName(op), ") of ", inputs.size(), " tensor(s) ",
                          shapes(false));
    case CallKind::kAllGather:
      return absl::StrCat("all_gather(axis ", parameter, ") of ", shapes(true));
    case CallKind::kBroadcast:
      return absl::StrCat("broadcast(from replica ", parameter, ") of ", shapes(false));
    case CallKind::kMerge:
      return absl::StrCat("merge_call with ", parameter, " argument(s)");
    case CallKind::kError:
      return absl::StrCat("a collective it could not take part in (", error->message(), ")");
  }
  return "unknown call";
}

}  // namespace distribute
