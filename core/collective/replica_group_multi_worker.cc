// The replica group's collectives when it spans several workers: the replicas of this
// process combine their values in shared memory, replica 0 makes the cross-worker step
// (CrossWorker, over Gloo), and every replica then reads the result.
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/collective/reduce_kernels.h"
#include "core/collective/replica_group.h"
#include "core/collective/replica_group_slot.h"
#include "core/tensor/concatenate.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

using replica_group_internal::kAlign;
using replica_group_internal::RoundUp;

// Where each tensor's accumulators sit in the pack of partial results.
struct PackLayout {
  std::vector<size_t> offsets;
  size_t bytes = 0;
};

PackLayout LayoutOf(std::span<const Tensor> tensors) {
  PackLayout layout;
  for (const Tensor& t : tensors) {
    layout.bytes = RoundUp(layout.bytes, kAlign);
    layout.offsets.push_back(layout.bytes);
    layout.bytes += static_cast<size_t>(t.shape().num_elements()) * DTypeSize(AccumulatorDType(t.dtype()));
  }
  return layout;
}

// Replica 0's cross-worker step ends by the collective's deadline, but a moment after the
// other replicas' wait for it would (it notices the expiry, or names a lost task first).
// They wait for it that much longer, so that every replica reports its status (a timeout
// across workers, the lost task) rather than a local "replica 0 did not arrive". This
// never delays the caller: replica 0 is the thread that called run.
constexpr std::chrono::milliseconds kCrossWorkerGrace{5000};

Deadline WithGrace(const Deadline& deadline) {
  return Deadline{deadline.when + kCrossWorkerGrace, deadline.timeout_ms + kCrossWorkerGrace.count()};
}

Deadline AfterCrossWorker(int32_t replica, const Deadline& deadline) {
  return replica == 0 ? deadline : WithGrace(deadline);
}

bool IsBarrierFailure(const absl::Status& status) {
  return status.code() == absl::StatusCode::kDeadlineExceeded ||
         status.code() == absl::StatusCode::kAborted || status.code() == absl::StatusCode::kCancelled;
}

}  // namespace

absl::Status ReplicaGroup::PublishEverywhere(int32_t replica, const Slot& slot,
                                             const Deadline& deadline) {
  const absl::Status status = Publish(replica, slot, deadline);
  if (!status.ok() && replica == 0 && !IsBarrierFailure(status)) {
    // Tell the other workers, whose leaders are about to wait for this one.
    const absl::Status told = cross_worker_->Barrier(
        absl::StrCat("a call it could not make: ", status.message()), deadline);
    (void)told;  // the other workers fail on the mismatch; this one reports its own error
  }
  return status;
}

absl::Status ReplicaGroup::MultiWorkerAllReduce(int32_t replica, ReduceOp op,
                                                std::span<const Tensor> inputs,
                                                const Deadline& deadline) {
  // Packs of at most bytes_per_pack (CommunicationOptions), one cross-worker call each;
  // an empty batch still makes one, so that the workers check they agree on it.
  auto packs = replica_group_internal::SplitIntoPacks(inputs, 0, inputs.size(),
                                                      static_cast<size_t>(ops_.bytes_per_pack));
  if (packs.empty()) packs.emplace_back(0, 0);
  for (auto [first, last] : packs) {
    RETURN_IF_ERROR(MultiWorkerAllReducePack(replica, op, first, last, deadline));
  }
  return absl::OkStatus();
}

absl::Status ReplicaGroup::MultiWorkerAllReducePack(int32_t replica, ReduceOp op, size_t first_tensor,
                                                    size_t last_tensor, const Deadline& deadline) {
  const size_t count = last_tensor - first_tensor;
  const Slot& first = *slots_[0];
  const std::span<const Tensor> tensors = first.inputs.subspan(first_tensor, count);
  auto input = [&](int32_t q, size_t t) -> const Tensor& { return slots_[q]->inputs[first_tensor + t]; };
  auto output = [&](int32_t q, size_t t) -> const Tensor& { return slots_[q]->outputs[first_tensor + t]; };
  const PackLayout layout = LayoutOf(tensors);
  if (n_ == 1 && count == 1 && AccumulatorDType(tensors[0].dtype()) == tensors[0].dtype()) {
    // One replica, one tensor already in accumulator precision: it is its own pack.
    void* out = output(0, 0).data();
    const CrossWorker::Segment segment{tensors[0].dtype(),
                                       static_cast<size_t>(tensors[0].shape().num_elements()), 0,
                                       std::span<void* const>(&out, 1)};
    return cross_worker_->AllReduce(op, tensors[0].byte_size() > 0 ? tensors[0].data() : nullptr,
                                    layout.bytes, std::span<const CrossWorker::Segment>(&segment, 1),
                                    cross_worker_->num_workers(), first.Describe(), deadline);
  }
  if (replica == 0) {
    cross_status_ = absl::OkStatus();
    if (pack_ == nullptr || pack_->size() < layout.bytes) {
      absl::StatusOr<std::shared_ptr<Buffer>> pack =
          Buffer::Allocate(DeviceSpec{}.WithDefaults(), std::max<size_t>(layout.bytes, kAlign), false);
      if (pack.ok()) {
        pack_ = *std::move(pack);
      } else {
        cross_status_ = pack.status();
      }
    }
  }
  RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));
  if (!cross_status_.ok()) return cross_status_;

  // Each replica reduces one contiguous slice of the pack (tensor by tensor) from every
  // local replica's input, in accumulator precision.
  const size_t slice = RoundUp((layout.bytes + n_ - 1) / n_, kAlign);
  const size_t lo = static_cast<size_t>(replica) * slice;
  const size_t hi = std::min(layout.bytes, lo + slice);
  std::vector<const void*> sources(static_cast<size_t>(n_));
  char* pack = static_cast<char*>(pack_->data());
  for (size_t t = 0; t < count && lo < hi; ++t) {
    const Tensor& mine = tensors[t];
    const size_t acc_size = DTypeSize(AccumulatorDType(mine.dtype()));
    const size_t begin_byte = layout.offsets[t];
    const size_t end_byte = begin_byte + static_cast<size_t>(mine.shape().num_elements()) * acc_size;
    const size_t begin = std::max(begin_byte, lo);
    const size_t end = std::min(end_byte, hi);
    if (begin >= end) continue;
    for (int32_t q = 0; q < n_; ++q) sources[q] = input(q, t).data();
    ReduceRangeToAccumulator(mine.dtype(), op, sources.data(), n_, pack + begin_byte,
                             (begin - begin_byte) / acc_size, (end - begin_byte) / acc_size);
  }
  RETURN_IF_ERROR(barrier_.Arrive(replica, deadline));

  if (replica == 0) {
    std::vector<std::vector<void*>> outputs(count);
    std::vector<CrossWorker::Segment> segments;
    for (size_t t = 0; t < count; ++t) {
      for (int32_t q = 0; q < n_; ++q) outputs[t].push_back(output(q, t).data());
      segments.push_back(CrossWorker::Segment{tensors[t].dtype(),
                                              static_cast<size_t>(tensors[t].shape().num_elements()),
                                              layout.offsets[t], outputs[t]});
    }
    const int64_t replicas_in_sync = int64_t{n_} * cross_worker_->num_workers();
    cross_status_ = cross_worker_->AllReduce(op, pack, layout.bytes, segments, replicas_in_sync,
                                             first.Describe(), deadline);
  }
  RETURN_IF_ERROR(barrier_.Arrive(replica, AfterCrossWorker(replica, deadline)));
  return cross_status_;
}

absl::StatusOr<Tensor> ReplicaGroup::TakeCrossResult(int32_t replica, const DeviceSpec& device,
                                                     const Deadline& deadline) {
  RETURN_IF_ERROR(barrier_.Arrive(replica, AfterCrossWorker(replica, deadline)));
  absl::StatusOr<Tensor> result = [&]() -> absl::StatusOr<Tensor> {
    RETURN_IF_ERROR(cross_status_);
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                     Buffer::Allocate(device, cross_result_->byte_size(), false));
    if (cross_result_->byte_size() > 0) {
      std::memcpy(buffer->data(), cross_result_->data(), cross_result_->byte_size());
    }
    return Tensor::FromBuffer(cross_result_->dtype(), cross_result_->shape(), std::move(buffer));
  }();
  // Nobody may leave before every replica has copied: replica 0 reuses cross_result_. The
  // deadline may have passed in the cross-worker step: the copy has the grace too.
  RETURN_IF_ERROR(barrier_.Arrive(replica, WithGrace(deadline)));
  return result;
}

absl::StatusOr<Tensor> ReplicaGroup::MultiWorkerAllGather(int32_t replica, const Tensor& input,
                                                          int32_t axis, const DeviceSpec& device,
                                                          const Deadline& deadline) {
  if (replica == 0) {
    cross_status_ = [&]() -> absl::Status {
      // This worker's replicas concatenated along the axis, then the workers' blocks.
      const Shape& shape = input.shape();
      const size_t element = DTypeSize(input.dtype());
      int64_t outer = 1;
      for (int32_t d = 0; d < axis; ++d) outer *= shape.dim(d);
      int64_t inner = 1;
      for (int32_t d = axis + 1; d < shape.rank(); ++d) inner *= shape.dim(d);
      int64_t local_rows = 0;
      for (int32_t q = 0; q < n_; ++q) local_rows += slots_[q]->inputs[0].shape().dim(axis);
      const size_t local_bytes = static_cast<size_t>(outer * local_rows * inner) * element;
      ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                       Buffer::Allocate(DeviceSpec{}.WithDefaults(), local_bytes, false));
      std::vector<std::span<const char>> blocks;
      for (int32_t q = 0; q < n_; ++q) blocks.push_back(BytesOf(slots_[q]->inputs[0]));
      ConcatenateAlongAxis(blocks, outer, static_cast<char*>(buffer->data()));
      ASSIGN_OR_RETURN(Shape local_shape, Shape::Make([&] {
        std::vector<int64_t> dims = shape.dims();
        dims[static_cast<size_t>(axis)] = local_rows;
        return dims;
      }()));
      ASSIGN_OR_RETURN(Tensor local_tensor,
                       Tensor::FromBuffer(input.dtype(), std::move(local_shape), std::move(buffer)));
      ASSIGN_OR_RETURN(cross_result_, cross_worker_->AllGatherAlongAxis(
                                          local_tensor, axis, slots_[0]->Describe(), deadline));
      return absl::OkStatus();
    }();
  }
  return TakeCrossResult(replica, device, deadline);
}

absl::StatusOr<Tensor> ReplicaGroup::MultiWorkerBroadcast(int32_t replica, const Tensor& input,
                                                          int32_t root, const DeviceSpec& device,
                                                          const Deadline& deadline) {
  if (replica == 0) {
    cross_status_ = [&]() -> absl::Status {
      const int32_t root_worker = root / n_;
      const Tensor& local_root = slots_[root % n_]->inputs[0];
      ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                       Buffer::Allocate(DeviceSpec{}.WithDefaults(), input.byte_size(), false));
      if (cross_worker_->worker() == root_worker && input.byte_size() > 0) {
        std::memcpy(buffer->data(), local_root.data(), input.byte_size());
      }
      RETURN_IF_ERROR(cross_worker_->Broadcast(buffer->data(), input.byte_size(), root_worker,
                                               slots_[0]->Describe(), deadline));
      ASSIGN_OR_RETURN(cross_result_, Tensor::FromBuffer(input.dtype(), input.shape(), std::move(buffer)));
      return absl::OkStatus();
    }();
  }
  return TakeCrossResult(replica, device, deadline);
}

}  // namespace distribute
