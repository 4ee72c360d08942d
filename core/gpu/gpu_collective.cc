#include "core/gpu/gpu_collective.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/tensor/concatenate.h"
#include "core/device/gpu_runtime.h"
#include "core/server/peer_failure.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

int32_t GpuOrHost(const DeviceSpec& device) {
  return device.type == DeviceType::kGpu ? device.index : DIST_GPU_HOST_DEVICE;
}

// What each rank contributes to the agreement all-gather of a job.
struct CallDigest {
  uint64_t digest;
  uint32_t failed;
  uint32_t reserved;
};

// FNV-1a of the call's description: equal calls give equal digests on every worker.
uint64_t DigestOf(const std::string& text) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
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
  const auto n = static_cast<int32_t>(devices.size());
  auto collective = std::unique_ptr<GpuCollective>(new GpuCollective(n, std::make_shared<SingleWorker>()));
  ASSIGN_OR_RETURN(collective->gpus_, GpuReplicas::Create(devices, collective->workers_.get()));
  collective->all_reduce_ = MakeGpuAllReduce(ops, n, reduce_replica);
  return collective;
}

absl::StatusOr<std::unique_ptr<GpuCollective>> GpuCollective::CreateForJob(
    const std::vector<DeviceSpec>& devices, std::unique_ptr<NcclCommunicators> comms,
    std::shared_ptr<Workers> workers, CoordinationClient* coordination) {
  const auto n = static_cast<int32_t>(devices.size());
  auto collective = std::unique_ptr<GpuCollective>(new GpuCollective(n, std::move(workers)));
  GpuCollective& self = *collective;
  ASSIGN_OR_RETURN(self.gpus_, GpuReplicas::Create(devices, self.workers_.get(), std::move(comms)));
  self.all_reduce_ = std::make_unique<NcclAllReduce>(
      PackPolicy{.bytes_per_pack = CrossDeviceOps::kDefaultBytesPerPack}, n);
  const auto ranks = static_cast<size_t>(self.gpus_->job_replicas());
  for (const DeviceSpec& device : devices) {
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> send, Buffer::Allocate(device, sizeof(CallDigest), false));
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> recv, Buffer::Allocate(device, ranks * sizeof(CallDigest), false));
    self.agree_send_.push_back(std::move(send));
    self.agree_recv_.push_back(std::move(recv));
  }
  if (coordination != nullptr) {
    self.gpus_->SetExplainer([coordination](const absl::Status& cause) {
      const absl::Status peer = coordination->PeerHealth();
      return PeerDied(peer) ? peer : cause;
    });
    self.watcher_ = std::make_unique<PeerDeathWatcher>(*coordination, [&self](const absl::Status& death) {
      // A lost worker never joins the collectives its peers wait in: stop them all.
      self.Abort(self.gpus_->Fail(death));
    });
  }
  return collective;
}

GpuCollective::GpuCollective(int32_t replicas, std::shared_ptr<Workers> workers)
    : Collective(replicas), workers_(std::move(workers)) {}

GpuCollective::~GpuCollective() {
  if (watcher_ != nullptr) watcher_->Stop();
}

absl::Status GpuCollective::CheckLocalInputs(std::span<const Tensor> /*inputs*/) const {
  return absl::OkStatus();
}

absl::Status GpuCollective::PublishAndRun(int32_t replica, const PublishedCall& call,
                                          const Deadline& deadline,
                                          absl::FunctionRef<absl::Status()> work) {
  RETURN_IF_ERROR(gpus_->failure());  // stopped for good: every replica sees the same cause
  const absl::Status published = Publish(replica, call, deadline);
  if (in_job()) {
    // The other workers' ranks wait for this worker's in the agreement all-gather, whether
    // this worker's replicas agreed among themselves or not.
    absl::Status agreed = AgreeAcrossWorkers(replica, call, !published.ok(), deadline);
    if (!published.ok()) return published;
    if (!agreed.ok()) {
      rendezvous().Abort(agreed);
      return agreed;
    }
  }
  RETURN_IF_ERROR(published);
  absl::Status status = work();
  if (!status.ok()) rendezvous().Abort(status);
  return status;
}

absl::Status GpuCollective::AgreeAcrossWorkers(int32_t replica, const PublishedCall& call, bool failed,
                                               const Deadline& deadline) {
  const GpuRuntime& gpu = GpuRuntime::Get();
  const auto r = static_cast<size_t>(replica);
  const int32_t device = gpus_->gpu(replica);
  const std::string mine = failed ? "a failed call" : call.Describe();
  const CallDigest digest{DigestOf(mine), failed ? 1u : 0u, 0u};
  const auto ranks = static_cast<size_t>(gpus_->job_replicas());
  std::vector<CallDigest> all(ranks);
  auto exchange = [&]() -> absl::Status {
    RETURN_IF_ERROR(gpu.Copy(device, agree_send_[r]->data(), DIST_GPU_HOST_DEVICE, &digest, sizeof digest));
    return gpus_->comms().Use(replica, [&](void* comm) {
      return gpu.AllGather(comm, gpus_->stream(replica), agree_send_[r]->data(), agree_recv_[r]->data(),
                           sizeof(CallDigest));
    });
  };
  if (absl::Status queued = exchange(); !queued.ok()) return gpus_->Fail(queued);
  RETURN_IF_ERROR(gpus_->Wait(replica, deadline, "the workers' agreement on a collective"));
  RETURN_IF_ERROR(gpu.Copy(DIST_GPU_HOST_DEVICE, all.data(), device, agree_recv_[r]->data(),
                           ranks * sizeof(CallDigest)));
  if (failed) return absl::OkStatus();  // this worker reports its own error
  std::vector<int32_t> failed_workers;
  std::vector<int32_t> other_workers;
  const int32_t local = size();
  for (size_t k = 0; k < ranks; ++k) {
    const int32_t worker = static_cast<int32_t>(k) / local;
    if (all[k].failed == 0 && all[k].digest == digest.digest) continue;
    std::vector<int32_t>& list = all[k].failed != 0 ? failed_workers : other_workers;
    if (list.empty() || list.back() != worker) list.push_back(worker);
  }
  if (!failed_workers.empty()) {
    return absl::AbortedError(absl::StrCat(
        "worker(s) ", absl::StrJoin(failed_workers, ", "), " could not take part in ", mine,
        " (their replicas failed a check or disagreed among themselves: see their errors)"));
  }
  if (!other_workers.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the workers disagree on a collective: worker ", workers_->worker(), " called ", mine,
        ", worker(s) ", absl::StrJoin(other_workers, ", "),
        " called something else (every worker must make the same calls in the same order)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> GpuCollective::OnReplicaGpu(int32_t replica, const Tensor& input) const {
  return input.PlacedOn(gpus_->device(replica));
}

absl::Status GpuCollective::AllReduce(int32_t replica, ReduceOp op, std::span<const Tensor> inputs,
                                      std::span<const Tensor> outputs, const Deadline& deadline) {
  // The algorithms read every input on its replica's GPU: copy the others there first.
  std::vector<Tensor> staged(inputs.begin(), inputs.end());
  for (Tensor& t : staged) {
    absl::StatusOr<Tensor> copy = OnReplicaGpu(replica, t);
    if (!copy.ok()) return FailTogether(replica, copy.status(), deadline);
    t = *std::move(copy);
  }
  const PublishedCall call{.kind = CallKind::kAllReduce, .op = op, .inputs = staged, .outputs = outputs};
  return PublishAndRun(replica, call, deadline, [&]() -> absl::Status {
    if (size() == 1 && !in_job()) {  // nothing to combine: the result is the input
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

absl::StatusOr<Tensor> GpuCollective::GatherAcrossWorkers(int32_t axis, const Deadline& deadline) {
  // Replica 0: this worker's inputs on the host, in replica order, then every worker's
  // (CrossWorker checks that they agree). Uneven lengths along the axis are fine.
  std::vector<Tensor> host;
  for (int32_t q = 0; q < size(); ++q) {
    ASSIGN_OR_RETURN(Tensor t, rendezvous().call(q).inputs[0].OnHost());
    host.push_back(std::move(t));
  }
  const Shape& shape = host.front().shape();
  Dims dims = shape.dims();
  int64_t rows = 0;
  for (const Tensor& t : host) rows += t.shape().dim(axis);
  dims[static_cast<size_t>(axis)] = rows;
  ASSIGN_OR_RETURN(Shape local_shape, Shape::Make(dims));
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                   Buffer::Allocate(DeviceSpec{}.WithDefaults(),
                                    static_cast<size_t>(local_shape.num_elements()) * DTypeSize(host.front().dtype()),
                                    false));
  int64_t outer = 1;
  for (int32_t d = 0; d < axis; ++d) outer *= shape.dim(d);
  std::vector<std::span<const char>> blocks;
  for (const Tensor& t : host) blocks.push_back(BytesOf(t));
  ConcatenateAlongAxis(blocks, outer, static_cast<char*>(buffer->data()));
  ASSIGN_OR_RETURN(Tensor local, Tensor::FromBuffer(host.front().dtype(), std::move(local_shape), std::move(buffer)));
  Dims signature_dims = shape.dims();
  signature_dims[static_cast<size_t>(axis)] = -1;
  return workers_->AllGatherAlongAxis(local, axis,
                                      absl::StrCat("all-gather(axis ", axis, ") of ", DTypeName(local.dtype()),
                                                   "[", absl::StrJoin(signature_dims, ", "), "]"),
                                      deadline);
}

absl::StatusOr<Tensor> GpuCollective::AllGather(int32_t replica, const Tensor& input, int32_t axis,
                                                const DeviceSpec& device, const Deadline& deadline) {
  const PublishedCall call{.kind = CallKind::kAllGather, .parameter = axis,
                           .inputs = std::span<const Tensor>(&input, 1)};
  absl::StatusOr<Tensor> result;
  RETURN_IF_ERROR(PublishAndRun(replica, call, deadline, [&]() -> absl::Status {
    if (in_job()) {
      // Through the host: the workers' lengths along the axis may differ, which NCCL's
      // all-gather (equal blocks) cannot express.
      if (replica == 0) {
        gathered_ = GatherAcrossWorkers(axis, deadline);
      }
      RETURN_IF_ERROR(rendezvous().Arrive(replica, deadline));  // replica 0's result is there
      RETURN_IF_ERROR(gathered_.status());
      ASSIGN_OR_RETURN(result, gathered_->CopyTo(device.ToString()));
      return rendezvous().Arrive(replica, deadline);  // nobody replaces it while others copy
    }
    const Tensor& first = rendezvous().call(0).inputs[0];
    Dims dims = first.shape().dims();
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
    const GpuRuntime& gpu = GpuRuntime::Get();
    if (in_job()) {
      // NCCL's broadcast from rank `root` (root counts every replica of the job).
      ASSIGN_OR_RETURN(const Tensor source, OnReplicaGpu(replica, input));
      ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                       Buffer::Allocate(gpus_->device(replica), source.byte_size(), false));
      absl::Status queued = gpus_->comms().Use(replica, [&](void* comm) {
        return gpu.Broadcast(comm, gpus_->stream(replica), source.data(), buffer->data(),
                             source.byte_size(), root);
      });
      if (!queued.ok()) return gpus_->Fail(queued);
      RETURN_IF_ERROR(gpus_->Wait(replica, deadline, "an NCCL broadcast"));
      ASSIGN_OR_RETURN(Tensor copy, Tensor::FromBuffer(source.dtype(), source.shape(), std::move(buffer)));
      if (device == gpus_->device(replica)) {
        result = std::move(copy);
        return absl::OkStatus();
      }
      ASSIGN_OR_RETURN(result, copy.CopyTo(device.ToString()));
      return absl::OkStatus();
    }
    const Tensor& source = rendezvous().call(root).inputs[0];
    ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, Buffer::Allocate(device, source.byte_size(), false));
    absl::Status queued = gpu.CopyAsync(GpuOrHost(device), buffer->data(), GpuOrHost(source.device()),
                                        source.data(), source.byte_size(), gpus_->gpu(replica),
                                        gpus_->stream(replica));
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
  // In a job the other workers wait for this worker's ranks in the agreement: tell them.
  if (in_job()) AgreeAcrossWorkers(replica, PublishedCall::Failure(&error), true, deadline).IgnoreError();
  // Publish always fails here (the agreement check sees the failure), unless a wait did.
  return status.ok() ? error : status;
}

}  // namespace distribute
