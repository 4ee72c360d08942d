#include "core/collective/hierarchical_collective.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "core/collective/local_gather.h"
#include "core/collective/packing.h"
#include "core/kernels/reduce_kernels.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// Where each tensor's accumulators sit in the pack of partial results.
struct PackLayout {
  absl::InlinedVector<size_t, 4> offsets;  // a call of a few tensors allocates nothing
  size_t bytes = 0;
};

PackLayout LayoutOf(std::span<const Tensor> tensors) {
  PackLayout layout;
  for (const Tensor& t : tensors) {
    layout.bytes = RoundUp(layout.bytes, kPackAlign);
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

absl::Status HierarchicalCollective::TellOtherWorkers(int32_t replica, absl::Status published,
                                                      const Deadline& deadline) {
  if (!published.ok() && replica == 0 && !IsBarrierFailure(published)) {
    // The other workers' leaders are about to wait for this one.
    const absl::Status told = cross_worker_->Barrier(
        absl::StrCat("a call it could not make: ", published.message()), deadline);
    (void)told;  // the other workers fail on the mismatch; this one reports its own error
  }
  return published;
}

absl::Status HierarchicalCollective::FailTogether(int32_t replica, const absl::Status& error,
                                                  const Deadline& deadline) {
  const absl::Status status = TellOtherWorkers(
      replica, rendezvous().Publish(replica, PublishedCall::Failure(&error), error, deadline),
      deadline);
  return status.ok() ? error : status;
}

absl::Status HierarchicalCollective::AllReduce(int32_t replica, ReduceOp op,
                                               std::span<const Tensor> inputs,
                                               std::span<const Tensor> outputs,
                                               const Deadline& deadline) {
  const PublishedCall call{.kind = CallKind::kAllReduce, .op = op, .inputs = inputs, .outputs = outputs};
  RETURN_IF_ERROR(TellOtherWorkers(replica, Publish(replica, call, deadline), deadline));
  // Packs of at most bytes_per_pack, one cross-worker call each; an empty batch still
  // makes one, so that the workers check they agree on it.
  auto packs = SplitIntoPacks(inputs, 0, inputs.size(), static_cast<size_t>(bytes_per_pack_));
  if (packs.empty()) packs.emplace_back(0, 0);
  for (auto [first, last] : packs) {
    RETURN_IF_ERROR(AllReducePack(replica, op, first, last, deadline));
  }
  return absl::OkStatus();
}

absl::Status HierarchicalCollective::AllReducePack(int32_t replica, ReduceOp op,
                                                   size_t first_tensor, size_t last_tensor,
                                                   const Deadline& deadline) {
  const int32_t n = size();
  const LocalRendezvous& group = rendezvous();
  const size_t count = last_tensor - first_tensor;
  const PublishedCall& first = group.call(0);
  const std::span<const Tensor> tensors = first.inputs.subspan(first_tensor, count);
  auto input = [&](int32_t q, size_t t) -> const Tensor& { return group.call(q).inputs[first_tensor + t]; };
  auto output = [&](int32_t q, size_t t) -> const Tensor& { return group.call(q).outputs[first_tensor + t]; };
  const PackLayout layout = LayoutOf(tensors);
  if (n == 1 && count == 1 && AccumulatorDType(tensors[0].dtype()) == tensors[0].dtype()) {
    // One replica, one tensor already in accumulator precision: it is its own pack.
    void* out = output(0, 0).data();
    const Workers::Segment segment{tensors[0].dtype(),
                                   static_cast<size_t>(tensors[0].shape().num_elements()), 0,
                                   std::span<void* const>(&out, 1)};
    return cross_worker_->AllReduce(op, tensors[0].byte_size() > 0 ? tensors[0].data() : nullptr,
                                    layout.bytes, std::span<const Workers::Segment>(&segment, 1),
                                    cross_worker_->num_workers(), described_.Describe(first), deadline);
  }
  if (replica == 0) {
    cross_status_ = absl::OkStatus();
    if (pack_ == nullptr || pack_->size() < layout.bytes) {
      absl::StatusOr<std::shared_ptr<Buffer>> pack = Buffer::Allocate(
          DeviceSpec{}.WithDefaults(), std::max<size_t>(layout.bytes, kPackAlign), false);
      if (pack.ok()) {
        pack_ = *std::move(pack);
      } else {
        cross_status_ = pack.status();
      }
    }
  }
  RETURN_IF_ERROR(rendezvous().Arrive(replica, deadline));
  if (!cross_status_.ok()) return cross_status_;

  // Each replica reduces one contiguous slice of the pack (tensor by tensor) from every
  // local replica's input, in accumulator precision.
  const size_t slice = RoundUp((layout.bytes + n - 1) / n, kPackAlign);
  const size_t lo = static_cast<size_t>(replica) * slice;
  const size_t hi = std::min(layout.bytes, lo + slice);
  std::vector<const void*> sources(static_cast<size_t>(n));
  char* pack = static_cast<char*>(pack_->data());
  for (size_t t = 0; t < count && lo < hi; ++t) {
    const Tensor& mine = tensors[t];
    const size_t acc_size = DTypeSize(AccumulatorDType(mine.dtype()));
    const size_t begin_byte = layout.offsets[t];
    const size_t end_byte = begin_byte + static_cast<size_t>(mine.shape().num_elements()) * acc_size;
    const size_t begin = std::max(begin_byte, lo);
    const size_t end = std::min(end_byte, hi);
    if (begin >= end) continue;
    for (int32_t q = 0; q < n; ++q) sources[q] = input(q, t).data();
    ReduceRangeToAccumulator(mine.dtype(), op, sources.data(), n, pack + begin_byte,
                             (begin - begin_byte) / acc_size, (end - begin_byte) / acc_size);
  }
  RETURN_IF_ERROR(rendezvous().Arrive(replica, deadline));

  if (replica == 0) {
    std::vector<std::vector<void*>> outputs(count);
    std::vector<Workers::Segment> segments;
    for (size_t t = 0; t < count; ++t) {
      for (int32_t q = 0; q < n; ++q) outputs[t].push_back(output(q, t).data());
      segments.push_back(Workers::Segment{tensors[t].dtype(),
                                          static_cast<size_t>(tensors[t].shape().num_elements()),
                                          layout.offsets[t], outputs[t]});
    }
    const int64_t replicas_in_sync = int64_t{n} * cross_worker_->num_workers();
    cross_status_ = cross_worker_->AllReduce(op, pack, layout.bytes, segments, replicas_in_sync,
                                             described_.Describe(first), deadline);
  }
  RETURN_IF_ERROR(rendezvous().Arrive(replica, AfterCrossWorker(replica, deadline)));
  return cross_status_;
}

absl::StatusOr<Tensor> HierarchicalCollective::TakeCrossResult(int32_t replica,
                                                               const DeviceSpec& device,
                                                               const Deadline& deadline) {
  RETURN_IF_ERROR(rendezvous().Arrive(replica, AfterCrossWorker(replica, deadline)));
  // Replica 0 takes the result as it is (a buffer made for it, on its device), once the
  // others have copied it: a worker of one replica copies nothing here.
  const bool take = replica == 0 && cross_status_.ok();
  std::optional<absl::StatusOr<Tensor>> result;
  if (!take) {
    result = [&]() -> absl::StatusOr<Tensor> {
      RETURN_IF_ERROR(cross_status_);
      ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                       Buffer::Allocate(device, cross_result_->byte_size(), false));
      if (cross_result_->byte_size() > 0) {
        std::memcpy(buffer->data(), cross_result_->data(), cross_result_->byte_size());
      }
      return Tensor::FromBuffer(cross_result_->dtype(), cross_result_->shape(), std::move(buffer));
    }();
  }
  // Nobody may leave before every replica has copied: replica 0 reuses cross_result_. The
  // deadline may have passed in the cross-worker step: the copy has the grace too.
  RETURN_IF_ERROR(rendezvous().Arrive(replica, WithGrace(deadline)));
  if (replica == 0) {
    if (take) result = *std::move(cross_result_);
    cross_result_.reset();
  }
  return *std::move(result);
}

absl::StatusOr<Tensor> HierarchicalCollective::AllGather(int32_t replica, const Tensor& input,
                                                         int32_t axis, const DeviceSpec& device,
                                                         const Deadline& deadline) {
  const PublishedCall call{.kind = CallKind::kAllGather, .parameter = axis,
                           .inputs = std::span<const Tensor>(&input, 1)};
  RETURN_IF_ERROR(TellOtherWorkers(replica, Publish(replica, call, deadline), deadline));
  if (replica == 0) {
    // This worker's replicas concatenated along the axis, then the workers' blocks.
    cross_status_ = [&]() -> absl::Status {
      // One replica's input is this worker's block as it is. (Staging one over the caller's
      // own memory in the library's, as a broadcast's root does, measured slower than the
      // transport's rings for an all-gather: 17 against 11 us at 64 KiB.)
      const bool as_is = size() == 1;
      std::optional<Tensor> concatenated;
      if (!as_is) {
        ASSIGN_OR_RETURN(concatenated, ConcatenatePublished(rendezvous(), axis, DeviceSpec{}.WithDefaults()));
      }
      const Tensor& local = as_is ? input : *concatenated;
      // A new tensor on this replica's device: replica 0's result as it is.
      ASSIGN_OR_RETURN(cross_result_, cross_worker_->AllGatherAlongAxis(
                                          local, axis, described_.Describe(rendezvous().call(0)), deadline, device));
      return absl::OkStatus();
    }();
  }
  return TakeCrossResult(replica, device, deadline);
}

absl::StatusOr<Tensor> HierarchicalCollective::Broadcast(int32_t replica, const Tensor& input,
                                                         int32_t root, const DeviceSpec& device,
                                                         const Deadline& deadline) {
  const PublishedCall call{.kind = CallKind::kBroadcast, .parameter = root,
                           .inputs = std::span<const Tensor>(&input, 1)};
  RETURN_IF_ERROR(TellOtherWorkers(replica, Publish(replica, call, deadline), deadline));
  if (replica == 0) {
    cross_status_ = [&]() -> absl::Status {
      const int32_t root_worker = root / size();
      const std::string signature = described_.Describe(rendezvous().call(0));
      ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, Buffer::Allocate(device, input.byte_size(), false));
      const size_t bytes = input.byte_size();
      if (cross_worker_->worker() == root_worker) {
        const Tensor& local_root = rendezvous().call(root % size()).inputs[0];
        if (cross_worker_->WouldReadInPlace(bytes) && !cross_worker_->ReadInPlace(local_root.data(), bytes) &&
            cross_worker_->ReadInPlace(buffer->data(), bytes)) {
          // The caller's own memory: into the result first, which the peers read in place.
          std::memcpy(buffer->data(), local_root.data(), bytes);
          RETURN_IF_ERROR(cross_worker_->Broadcast(buffer->data(), bytes, root_worker, signature, deadline));
        } else {
          // Sent as it is (a broadcast only reads the root's bytes; in the library's memory
          // its peers copy it straight out of it) and copied into the result meanwhile.
          RETURN_IF_ERROR(cross_worker_->Broadcast(local_root.data(), bytes, root_worker, signature, deadline,
                                                   buffer->data()));
        }
      } else {
        RETURN_IF_ERROR(cross_worker_->Broadcast(buffer->data(), input.byte_size(), root_worker, signature, deadline));
      }
      ASSIGN_OR_RETURN(cross_result_, Tensor::FromBuffer(input.dtype(), input.shape(), std::move(buffer)));
      return absl::OkStatus();
    }();
  }
  return TakeCrossResult(replica, device, deadline);
}

}  // namespace distribute
