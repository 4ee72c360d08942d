#include "core/collective/local_collective.h"

#include <vector>

#include "core/collective/local_gather.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::Status LocalCollective::AllReduce(int32_t replica, ReduceOp op,
                                        std::span<const Tensor> inputs,
                                        std::span<const Tensor> outputs, const Deadline& deadline) {
  const PublishedCall call{.kind = CallKind::kAllReduce, .op = op, .inputs = inputs, .outputs = outputs};
  ASSIGN_OR_RETURN(const bool done,
                   rendezvous().PublishAllReduce(replica, call, CheckLocalInputs(inputs),
                                                 all_reduce_->ReducesInReplicaOrder(), deadline));
  if (done) return absl::OkStatus();
  return all_reduce_->Run(rendezvous(), replica, op, deadline);
}

absl::StatusOr<Tensor> LocalCollective::AllGather(int32_t replica, const Tensor& input,
                                                  int32_t axis, const DeviceSpec& device,
                                                  const Deadline& deadline) {
  const PublishedCall call{.kind = CallKind::kAllGather, .parameter = axis,
                           .inputs = std::span<const Tensor>(&input, 1)};
  RETURN_IF_ERROR(Publish(replica, call, deadline));
  absl::StatusOr<Tensor> result = ConcatenatePublished(rendezvous(), axis, device);
  // Nobody leaves (and reuses its input) before every replica has copied.
  RETURN_IF_ERROR(rendezvous().Arrive(replica, deadline));
  return result;
}

absl::StatusOr<Tensor> LocalCollective::Broadcast(int32_t replica, const Tensor& input,
                                                  int32_t root, const DeviceSpec& device,
                                                  const Deadline& deadline) {
  const PublishedCall call{.kind = CallKind::kBroadcast, .parameter = root,
                           .inputs = std::span<const Tensor>(&input, 1)};
  RETURN_IF_ERROR(Publish(replica, call, deadline));
  const Tensor& source = rendezvous().call(root).inputs[0];
  absl::StatusOr<Tensor> result = [&]() -> absl::StatusOr<Tensor> {
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                     Buffer::Allocate(device, source.byte_size(), false));
    RETURN_IF_ERROR(CopyBytes(*buffer, *source.buffer(), source.byte_size()));
    return Tensor::FromBuffer(source.dtype(), source.shape(), std::move(buffer));
  }();
  RETURN_IF_ERROR(rendezvous().Arrive(replica, deadline));
  return result;
}

absl::Status LocalCollective::FailTogether(int32_t replica, const absl::Status& error,
                                           const Deadline& deadline) {
  const absl::Status status =
      rendezvous().Publish(replica, PublishedCall::Failure(&error), error, deadline);
  // Publish always fails here (the agreement check sees the failure), unless a wait did.
  return status.ok() ? error : status;
}

}  // namespace distribute
