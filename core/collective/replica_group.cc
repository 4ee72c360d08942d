#include "core/collective/replica_group.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/collective/reduce_kernels.h"
#include "core/collective/replica_group_slot.h"
#include "core/tensor/concatenate.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

using replica_group_internal::kAlign;
using replica_group_internal::kMaxReplicas;
using replica_group_internal::RoundUp;
using replica_group_internal::SplitIntoPacks;

// `count` packs of about equal bytes over tensors [0, n).
std::vector<std::pair<size_t, size_t>> SplitEvenly(std::span<const Tensor> tensors, int32_t count) {
  size_t total = 0;
  for (const Tensor& t : tensors) total += t.byte_size();
  const size_t target = std::max<size_t>(1, RoundUp(total, static_cast<size_t>(count)) / count);
  return SplitIntoPacks(tensors, 0, tensors.size(), target);
}

}  // namespace

ReplicaGroup::ReplicaGroup(int32_t replicas, CrossDeviceOps ops, int32_t reduce_replica)
    : n_(replicas),
      ops_(std::move(ops)),
      reduce_replica_(reduce_replica),
      barrier_(replicas),
      slots_(static_cast<size_t>(replicas), nullptr),
      packs_(static_cast<size_t>(replicas)) {}

absl::Status ReplicaGroup::Publish(int32_t replica, const Slot& slot, const Deadline& deadline) {
  // What only this replica can check, it checks on its own inputs (once, not once per
  // replica); a failure is published in place of the call, so every replica reports it.
  absl::Status host_only;
  for (const Tensor& t : slot.inputs) {
    if (t.device().type != DeviceType::kCpu) {
      host_only = absl::InvalidArgumentError(absl::StrCat(
          "a tensor on ", t.device_name(), ": in-process collectives operate on host (CPU) tensors"));
      break;
    }
  }
  const Slot error_slot{CallKind::kError, ReduceOp::kSum, 0, {}, {}, nullptr, &host_only};
  slots_[replica] = host_only.ok() ? &slot : &error_slot;
  RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  absl::Status agreement = CheckAgreement();
  if (!agreement.ok()) {
    // Every replica computed the same error; meet once more so nobody reuses its slot
    // while another still reads it.
    RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  }
  return agreement;
}

absl::Status ReplicaGroup::CheckAgreement() const {
  // A replica that failed its own checks fails the call for everyone, with its reason.
  std::vector<std::string> failures;
  absl::StatusCode code = absl::StatusCode::kOk;
  for (int32_t q = 0; q < n_; ++q) {
    if (slots_[q]->kind != CallKind::kError) continue;
    if (code == absl::StatusCode::kOk) code = slots_[q]->error->code();
    failures.push_back(absl::StrCat("replica ", q, ": ", slots_[q]->error->message()));
  }
  if (!failures.empty()) return absl::Status(code, absl::StrJoin(failures, "; "));
  bool same = true;
  for (int32_t q = 1; q < n_ && same; ++q) same = slots_[q]->SameCallAs(*slots_[0]);
  if (same) return absl::OkStatus();
  // Group replicas by what they called, in order of first appearance.
  std::vector<std::pair<std::string, std::vector<int32_t>>> groups;
  for (int32_t q = 0; q < n_; ++q) {
    const std::string call = slots_[q]->Describe();
    auto it = std::find_if(groups.begin(), groups.end(), [&](auto& g) { return g.first == call; });
    if (it == groups.end()) {
      groups.push_back({call, {q}});
    } else {
      it->second.push_back(q);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "replicas disagree on the collective call: ",
      absl::StrJoin(groups, "; ", [](std::string* out, const auto& g) {
        absl::StrAppend(out, g.second.size() == 1 ? "replica " : "replicas ",
                        absl::StrJoin(g.second, ", "), " called ", g.first);
      })));
}

void ReplicaGroup::SharedMemoryReduce(int32_t replica, ReduceOp op, size_t first,
                                      size_t last) const {
  // Lay the tensors out one after another (each 64-byte aligned) in a virtual buffer and
  // give each replica one contiguous slice of it: every input byte is read once and every
  // output byte written once, by the replica owning the slice.
  size_t total = 0;
  for (size_t t = first; t < last; ++t) total = RoundUp(total, kAlign) + slots_[0]->inputs[t].byte_size();
  const size_t slice = RoundUp((total + n_ - 1) / n_, kAlign);
  const size_t lo = static_cast<size_t>(replica) * slice;
  const size_t hi = std::min(total, lo + slice);
  if (lo >= hi) return;
  const void* inputs[kMaxReplicas];
  void* outputs[kMaxReplicas];
  size_t offset = 0;
  for (size_t t = first; t < last && offset < hi; ++t) {
    offset = RoundUp(offset, kAlign);
    const Tensor& mine = slots_[0]->inputs[t];
    const size_t size = mine.byte_size();
    const size_t begin = std::max(offset, lo);
    const size_t end = std::min(offset + size, hi);
    if (begin < end) {
      for (int32_t q = 0; q < n_; ++q) {
        inputs[q] = slots_[q]->inputs[t].data();
        outputs[q] = slots_[q]->outputs[t].data();
      }
      const size_t element = DTypeSize(mine.dtype());
      ReduceRange(mine.dtype(), op, inputs, n_, outputs, n_, (begin - offset) / element,
                  (end - offset) / element, n_);
    }
    offset += size;
  }
}

absl::Status ReplicaGroup::ReduceToOne(int32_t replica, ReduceOp op, size_t first, size_t last,
                                       const Deadline& deadline) {
  const int32_t root = reduce_replica_;
  const void* inputs[kMaxReplicas];
  if (replica == root) {
    for (size_t t = first; t < last; ++t) {
      for (int32_t q = 0; q < n_; ++q) inputs[q] = slots_[q]->inputs[t].data();
      const Tensor& out = slots_[root]->outputs[t];
      void* output = out.data();
      ReduceRange(out.dtype(), op, inputs, n_, &output, 1, 0,
                  static_cast<size_t>(out.shape().num_elements()), n_);
    }
  }
  RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  if (replica != root) {
    for (size_t t = first; t < last; ++t) {
      const size_t bytes = slots_[root]->outputs[t].byte_size();
      if (bytes > 0) std::memcpy(slots_[replica]->outputs[t].data(), slots_[root]->outputs[t].data(), bytes);
    }
  }
  return barrier_.Arrive(replica, deadline);
}

absl::Status ReplicaGroup::HierarchicalReduce(int32_t replica, ReduceOp op, size_t first,
                                              size_t last, const Deadline& deadline) {
  // Each replica's partial results live in accumulator-typed scratch (float32 for the
  // 16-bit floats); pairs combine in a fixed binary tree; replica 0's total is copied out.
  const ReduceOp stage_op = op == ReduceOp::kMean ? ReduceOp::kSum : op;
  std::vector<std::shared_ptr<Buffer>>& mine = packs_[replica];
  mine.clear();
  const DeviceSpec host = DeviceSpec{}.WithDefaults();
  for (size_t t = first; t < last; ++t) {
    const Tensor& in = slots_[replica]->inputs[t];
    const size_t count = static_cast<size_t>(in.shape().num_elements());
    const DType acc = AccumulatorDType(in.dtype());
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> scratch,
                     Buffer::Allocate(host, count * DTypeSize(acc), false));
    ToAccumulator(in.dtype(), in.data(), scratch->data(), count);
    mine.push_back(std::move(scratch));
  }
  RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  for (int32_t stride = 1; stride < n_; stride *= 2) {
    if (replica % (2 * stride) == 0 && replica + stride < n_) {
      const auto& partner = packs_[replica + stride];
      for (size_t i = 0; i < mine.size(); ++i) {
        const Tensor& in = slots_[replica]->inputs[first + i];
        const void* pair[2] = {mine[i]->data(), partner[i]->data()};
        void* out = mine[i]->data();
        ReduceRange(AccumulatorDType(in.dtype()), stage_op, pair, 2, &out, 1, 0,
                    static_cast<size_t>(in.shape().num_elements()), 1);
      }
    }
    RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  }
  if (op == ReduceOp::kMean && replica == 0) {
    for (size_t i = 0; i < mine.size(); ++i) {
      const Tensor& in = slots_[0]->inputs[first + i];
      DivideInPlace(AccumulatorDType(in.dtype()), mine[i]->data(),
                    static_cast<size_t>(in.shape().num_elements()), n_);
    }
  }
  if (op == ReduceOp::kMean) RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  const auto& total = packs_[0];
  for (size_t i = 0; i < total.size(); ++i) {
    const Tensor& out = slots_[replica]->outputs[first + i];
    FromAccumulator(out.dtype(), total[i]->data(), out.data(),
                    static_cast<size_t>(out.shape().num_elements()));
  }
  return barrier_.Arrive(replica, deadline);
}

absl::Status ReplicaGroup::AllReduce(int32_t replica, ReduceOp op, std::span<const Tensor> inputs,
                                     std::span<const Tensor> outputs, const Deadline& deadline) {
  Slot slot{CallKind::kAllReduce, op, 0, inputs, outputs, nullptr};
  if (cross_worker_ != nullptr) {
    RETURN_IF_ERROR(PublishEverywhere(replica, slot, deadline));
    return MultiWorkerAllReduce(replica, op, inputs, deadline);
  }
  RETURN_IF_ERROR(Publish(replica, slot, deadline));
  switch (ops_.algorithm) {
    case AllReduceAlgorithm::kSharedMemory:
      for (auto [first, last] :
           SplitIntoPacks(inputs, 0, inputs.size(), static_cast<size_t>(ops_.bytes_per_pack))) {
        SharedMemoryReduce(replica, op, first, last);
        RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
      }
      if (inputs.empty()) RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
      return absl::OkStatus();
    case AllReduceAlgorithm::kReductionToOneDevice:
      RETURN_IF_ERROR(ReduceToOne(replica, op, 0, inputs.size(), deadline));
      return absl::OkStatus();
    case AllReduceAlgorithm::kHierarchicalCopy:
      for (auto [first, last] : SplitEvenly(inputs, ops_.num_packs)) {
        RETURN_IF_ERROR(HierarchicalReduce(replica, op, first, last, deadline));
      }
      if (inputs.empty()) RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
      return absl::OkStatus();
  }
  return absl::InternalError("unknown all-reduce algorithm");
}

absl::StatusOr<Tensor> ReplicaGroup::AllGather(int32_t replica, const Tensor& input, int32_t axis,
                                               const DeviceSpec& device, const Deadline& deadline) {
  Slot slot{CallKind::kAllGather, ReduceOp::kSum, axis, std::span<const Tensor>(&input, 1), {},
            nullptr};
  if (cross_worker_ != nullptr) {
    RETURN_IF_ERROR(PublishEverywhere(replica, slot, deadline));
    return MultiWorkerAllGather(replica, input, axis, device, deadline);
  }
  RETURN_IF_ERROR(Publish(replica, slot, deadline));
  const Shape& shape = input.shape();
  std::vector<int64_t> dims = shape.dims();
  int64_t gathered = 0;
  for (int32_t q = 0; q < n_; ++q) gathered += slots_[q]->inputs[0].shape().dim(axis);
  dims[static_cast<size_t>(axis)] = gathered;
  absl::StatusOr<Tensor> result = [&]() -> absl::StatusOr<Tensor> {
    ASSIGN_OR_RETURN(Shape out_shape, Shape::Make(dims));
    const size_t element = DTypeSize(input.dtype());
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                     Buffer::Allocate(device, static_cast<size_t>(out_shape.num_elements()) * element,
                                      false));
    // Row-major concatenation: for each index of the leading axes, each replica's block.
    int64_t outer = 1;
    for (int32_t d = 0; d < axis; ++d) outer *= shape.dim(d);
    std::vector<std::span<const char>> blocks;
    for (int32_t q = 0; q < n_; ++q) blocks.push_back(BytesOf(slots_[q]->inputs[0]));
    ConcatenateAlongAxis(blocks, outer, static_cast<char*>(buffer->data()));
    return Tensor::FromBuffer(input.dtype(), std::move(out_shape), std::move(buffer));
  }();
  RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  return result;
}

absl::StatusOr<Tensor> ReplicaGroup::Broadcast(int32_t replica, const Tensor& input, int32_t root,
                                               const DeviceSpec& device, const Deadline& deadline) {
  Slot slot{CallKind::kBroadcast, ReduceOp::kSum, root, std::span<const Tensor>(&input, 1), {},
            nullptr};
  if (cross_worker_ != nullptr) {
    RETURN_IF_ERROR(PublishEverywhere(replica, slot, deadline));
    return MultiWorkerBroadcast(replica, input, root, device, deadline);
  }
  RETURN_IF_ERROR(Publish(replica, slot, deadline));
  const Tensor& source = slots_[root]->inputs[0];
  absl::StatusOr<Tensor> result = [&]() -> absl::StatusOr<Tensor> {
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                     Buffer::Allocate(device, source.byte_size(), false));
    RETURN_IF_ERROR(CopyBytes(*buffer, *source.buffer(), source.byte_size()));
    return Tensor::FromBuffer(source.dtype(), source.shape(), std::move(buffer));
  }();
  RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  return result;
}

absl::Status ReplicaGroup::FailTogether(int32_t replica, const absl::Status& error,
                                        const Deadline& deadline) {
  Slot slot{CallKind::kError, ReduceOp::kSum, 0, {}, {}, nullptr, &error};
  const absl::Status status = cross_worker_ != nullptr ? PublishEverywhere(replica, slot, deadline)
                                                       : Publish(replica, slot, deadline);
  // Publish always fails here (CheckAgreement sees the error slot), unless the barrier did.
  return status.ok() ? error : status;
}

absl::StatusOr<std::shared_ptr<void>> ReplicaGroup::Merge(int32_t replica, const void* payload,
                                                          int32_t num_args, MergeFn fn,
                                                          const Deadline& deadline) {
  Slot slot{CallKind::kMerge, ReduceOp::kSum, num_args, {}, {}, payload};
  RETURN_IF_ERROR(Publish(replica, slot, deadline));
  if (replica == 0) {
    std::vector<const void*> payloads(static_cast<size_t>(n_));
    for (int32_t q = 0; q < n_; ++q) payloads[q] = slots_[q]->payload;
    absl::StatusOr<std::shared_ptr<void>> result = fn(payloads);
    merge_status_ = result.status();
    merge_result_ = result.ok() ? *std::move(result) : nullptr;
  }
  RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  // Read before the next collective's first barrier, after which replica 0 may overwrite.
  if (!merge_status_.ok()) return merge_status_;
  return merge_result_;
}

}  // namespace distribute
