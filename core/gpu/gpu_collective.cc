#include "core/gpu/gpu_collective.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

int32_t GpuOrHost(const DeviceSpec& device) {
  return device.type == DeviceType::kGpu ? device.index : DIST_GPU_HOST_DEVICE;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GpuCollective>> GpuCollective::Create(
    const std::vector<DeviceSpec>& devices, const CrossDeviceOps& ops, int32_t reduce_replica) {
  // One reduction kernel reads every replica's input (the plugin's limit, one per GPU).
  if (ops.algorithm == AllReduceAlgorithm::kReductionToOneDevice &&
      devices.size() > DIST_GPU_REDUCE_MAX_INPUTS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ReductionToOneDevice over ", devices.size(), " GPUs: at most ",
        DIST_GPU_REDUCE_MAX_INPUTS, " (use NcclAllReduce or HierarchicalCopy)"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<GpuReplicas> gpus, GpuReplicas::Create(devices));
  auto all_reduce = MakeGpuAllReduce(ops, static_cast<int32_t>(devices.size()), reduce_replica);
  return std::unique_ptr<GpuCollective>(new GpuCollective(std::move(gpus), std::move(all_reduce)));
}

GpuCollective::GpuCollective(std::unique_ptr<GpuReplicas> gpus,
                             std::unique_ptr<GpuAllReduce> all_reduce)
    : Collective(gpus->size()), gpus_(std::move(gpus)), all_reduce_(std::move(all_reduce)) {}

absl::Status GpuCollective::CheckLocalInputs(std::span<const Tensor> /*inputs*/) const {
  return absl::OkStatus();
}

absl::Status GpuCollective::PublishAndRun(int32_t replica, const PublishedCall& call,
                                          const Deadline& deadline,
                                          absl::FunctionRef<absl::Status()> work) {
  RETURN_IF_ERROR(gpus_->failure());  // stopped for good: every replica sees the same cause
  RETURN_IF_ERROR(Publish(replica, call, deadline));
  absl::Status status = work();
  if (!status.ok()) rendezvous().Abort(status);
  return status;
}

absl::Status GpuCollective::AllReduce(int32_t replica, ReduceOp op, std::span<const Tensor> inputs,
                                      std::span<const Tensor> outputs, const Deadline& deadline) {
  // The algorithms read every input on its replica's GPU: copy the others there first.
  const DeviceSpec& device = gpus_->device(replica);
  std::vector<Tensor> staged(inputs.begin(), inputs.end());
  for (Tensor& t : staged) {
    if (t.device() == device) continue;
    absl::StatusOr<Tensor> copy = t.CopyTo(device.ToString());
    if (!copy.ok()) return FailTogether(replica, copy.status(), deadline);
    t = *std::move(copy);
  }
  const PublishedCall call{.kind = CallKind::kAllReduce, .op = op, .inputs = staged, .outputs = outputs};
  return PublishAndRun(replica, call, deadline, [&]() -> absl::Status {
    if (size() == 1) {  // nothing to combine: the result is the input
      for (size_t t = 0; t < staged.size(); ++t) {
        if (outputs[t].data() == staged[t].data()) continue;
        RETURN_IF_ERROR(CopyBytes(*outputs[t].buffer(), *staged[t].buffer(), staged[t].byte_size()));
      }
      return absl::OkStatus();
    }
    return all_reduce_->Run(*gpus_, rendezvous(), replica, op, deadline);
  });
}

absl::Status GpuCollective::GatherInto(int32_t replica, int32_t axis, const Tensor& out,
                                       const Deadline& deadline) {
  // Row-major concatenation: for each index of the leading axes, each replica's block.
  const Shape& shape = rendezvous().call(0).inputs[0].shape();
  int64_t outer = 1;
  for (int32_t d = 0; d < axis; ++d) outer *= shape.dim(d);
  size_t row = 0;  // bytes of one leading index in the output
  for (int32_t q = 0; q < size(); ++q) {
    const Tensor& in = rendezvous().call(q).inputs[0];
    row += outer > 0 ? in.byte_size() / static_cast<size_t>(outer) : 0;
  }
  const GpuRuntime& gpu = GpuRuntime::Get();
  const int32_t stream_device = gpus_->gpu(replica);
  auto queue = [&]() -> absl::Status {
    for (int64_t o = 0; o < outer; ++o) {
      size_t offset = static_cast<size_t>(o) * row;
      for (int32_t q = 0; q < size(); ++q) {
        const Tensor& in = rendezvous().call(q).inputs[0];
        const size_t block = in.byte_size() / static_cast<size_t>(outer);
        RETURN_IF_ERROR(gpu.CopyAsync(GpuOrHost(out.device()), static_cast<char*>(out.data()) + offset,
                                      GpuOrHost(in.device()),
                                      static_cast<const char*>(in.data()) + static_cast<size_t>(o) * block,
                                      block, stream_device, gpus_->stream(replica)));
        offset += block;
      }
    }
    return absl::OkStatus();
  };
  if (absl::Status queued = queue(); !queued.ok()) return gpus_->Fail(queued);
  return gpus_->Wait(replica, deadline, "an all-gather");
}

absl::StatusOr<Tensor> GpuCollective::AllGather(int32_t replica, const Tensor& input, int32_t axis,
                                                const DeviceSpec& device, const Deadline& deadline) {
  const PublishedCall call{.kind = CallKind::kAllGather, .parameter = axis,
                           .inputs = std::span<const Tensor>(&input, 1)};
  absl::StatusOr<Tensor> result;
  RETURN_IF_ERROR(PublishAndRun(replica, call, deadline, [&]() -> absl::Status {
    const Tensor& first = rendezvous().call(0).inputs[0];
    std::vector<int64_t> dims = first.shape().dims();
    int64_t gathered = 0;
    for (int32_t q = 0; q < size(); ++q) gathered += rendezvous().call(q).inputs[0].shape().dim(axis);
    dims[static_cast<size_t>(axis)] = gathered;
    ASSIGN_OR_RETURN(Shape shape, Shape::Make(dims));
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                     Buffer::Allocate(device, static_cast<size_t>(shape.num_elements()) * DTypeSize(first.dtype()),
                                      false));
    ASSIGN_OR_RETURN(result, Tensor::FromBuffer(first.dtype(), std::move(shape), std::move(buffer)));
    RETURN_IF_ERROR(GatherInto(replica, axis, *result, deadline));
    // Nobody leaves (and reuses its input) before every replica has copied.
    return rendezvous().Arrive(replica, deadline);
  }));
  return result;
}

absl::StatusOr<Tensor> GpuCollective::Broadcast(int32_t replica, const Tensor& input, int32_t root,
                                                const DeviceSpec& device, const Deadline& deadline) {
  const PublishedCall call{.kind = CallKind::kBroadcast, .parameter = root,
                           .inputs = std::span<const Tensor>(&input, 1)};
  absl::StatusOr<Tensor> result;
  RETURN_IF_ERROR(PublishAndRun(replica, call, deadline, [&]() -> absl::Status {
    const Tensor& source = rendezvous().call(root).inputs[0];
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, Buffer::Allocate(device, source.byte_size(), false));
    absl::Status queued = GpuRuntime::Get().CopyAsync(
        GpuOrHost(device), buffer->data(), GpuOrHost(source.device()), source.data(),
        source.byte_size(), gpus_->gpu(replica), gpus_->stream(replica));
    if (!queued.ok()) return gpus_->Fail(queued);
    RETURN_IF_ERROR(gpus_->Wait(replica, deadline, "a broadcast"));
    ASSIGN_OR_RETURN(result, Tensor::FromBuffer(source.dtype(), source.shape(), std::move(buffer)));
    return rendezvous().Arrive(replica, deadline);
  }));
  return result;
}

absl::Status GpuCollective::FailTogether(int32_t replica, const absl::Status& error,
                                         const Deadline& deadline) {
  const absl::Status status =
      rendezvous().Publish(replica, PublishedCall::Failure(&error), error, deadline);
  // Publish always fails here (the agreement check sees the failure), unless a wait did.
  return status.ok() ? error : status;
}

}  // namespace distribute
