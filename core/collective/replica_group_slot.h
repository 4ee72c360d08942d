// Internal to the replica group's implementation files: what one replica publishes for a
// collective call, and the layout helpers they share.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_REPLICA_GROUP_SLOT_H_
#define DISTRIBUTE_CORE_COLLECTIVE_REPLICA_GROUP_SLOT_H_

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/collective/replica_group.h"

namespace distribute {
namespace replica_group_internal {

enum class CallKind { kAllReduce, kAllGather, kBroadcast, kMerge, kError };

inline constexpr size_t kAlign = 64;
inline constexpr int32_t kMaxReplicas = 1024;

inline size_t RoundUp(size_t value, size_t to) { return (value + to - 1) / to * to; }

// Tensors [first, last) split into consecutive packs of at most `bytes` each (a tensor
// larger than that is a pack of its own).
inline std::vector<std::pair<size_t, size_t>> SplitIntoPacks(std::span<const Tensor> tensors,
                                                      size_t first, size_t last, size_t bytes) {
  std::vector<std::pair<size_t, size_t>> packs;
  size_t start = first;
  size_t filled = 0;
  for (size_t t = first; t < last; ++t) {
    const size_t size = tensors[t].byte_size();
    if (t > start && filled + size > bytes) {
      packs.emplace_back(start, t);
      start = t;
      filled = 0;
    }
    filled += size;
  }
  if (start < last) packs.emplace_back(start, last);
  return packs;
}

}  // namespace replica_group_internal

using replica_group_internal::CallKind;

struct ReplicaGroup::Slot {
  CallKind kind;
  ReduceOp op = ReduceOp::kSum;
  int32_t parameter = 0;  // axis for all-gather, root for broadcast, arg count for merge
  std::span<const Tensor> inputs;
  std::span<const Tensor> outputs;
  const void* payload = nullptr;
  const absl::Status* error = nullptr;  // kError: why this replica cannot take part

  // Whether `other` is the same call (cheap: no strings; the axis of an all-gather may
  // differ in length).
  bool SameCallAs(const Slot& other) const {
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

  // What the call looks like, for the error that names the replicas when they disagree.
  std::string Describe() const {
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
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_REPLICA_GROUP_SLOT_H_
