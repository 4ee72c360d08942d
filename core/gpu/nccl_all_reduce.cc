#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "core/gpu/gpu_all_reduce.h"
#include "core/util/status_macros.h"

namespace distribute {

NcclAllReduce::NcclAllReduce(PackPolicy policy, int32_t replicas)
    : policy_(policy), host_inputs_(static_cast<size_t>(replicas)) {}

absl::Status NcclAllReduce::Run(GpuReplicas& gpus, LocalRendezvous& group, int32_t replica,
                                ReduceOp op, const Deadline& deadline) {
  const GpuRuntime& gpu = GpuRuntime::Get();
  const std::span<const Tensor> inputs = group.call(replica).inputs;
  const std::span<const Tensor> outputs = group.call(replica).outputs;
  const NcclPlan plan = PlanNcclPacks(inputs, policy_);
  const int32_t device = gpus.gpu(replica);
  void* const stream = gpus.stream(replica);
  // MEAN is NCCL's SUM and then a division on the device (its ncclAvg would divide each
  // rank's share before summing, which rounds differently).
  const ReduceOp stage_op = op == ReduceOp::kMean ? ReduceOp::kSum : op;
  char* scratch = nullptr;
  if (plan.scratch_bytes > 0) {
    ASSIGN_OR_RETURN(void* memory, gpus.Scratch(replica, plan.scratch_bytes));
    scratch = static_cast<char*>(memory);
  }
  std::vector<size_t> on_host;
  // Any failure to queue leaves the other replicas' kernels waiting for this one: stop them.
  auto queue = [&]() -> absl::Status {
    for (const NcclPack& pack : plan.packs) {
      if (!HasNcclType(pack.dtype)) {
        on_host.insert(on_host.end(), pack.tensors.begin(), pack.tensors.end());
        continue;
      }
      const bool fused = pack.tensors.size() > 1;
      void* result = fused ? scratch + pack.scratch_offset : outputs[pack.tensors[0]].data();
      const void* source = fused ? result : inputs[pack.tensors[0]].data();
      if (fused) {
        size_t offset = 0;
        for (size_t t : pack.tensors) {
          RETURN_IF_ERROR(gpu.CopyAsync(device, static_cast<char*>(result) + offset, device,
                                        inputs[t].data(), inputs[t].byte_size(), device, stream));
          offset += inputs[t].byte_size();
        }
      }
      RETURN_IF_ERROR(gpus.comms().Use(replica, [&](void* comm) {
        return gpu.AllReduce(comm, stream, source, result, pack.elements,
                             static_cast<int32_t>(pack.dtype), static_cast<int32_t>(stage_op));
      }));
      if (op == ReduceOp::kMean) {
        const void* sum = result;
        RETURN_IF_ERROR(gpu.Reduce(device, stream, static_cast<int32_t>(pack.dtype),
                                   static_cast<int32_t>(ReduceOp::kSum), &sum, 1, result,
                                   pack.elements, gpus.job_replicas()));
      }
      if (fused) {
        size_t offset = 0;
        for (size_t t : pack.tensors) {
          RETURN_IF_ERROR(gpu.CopyAsync(device, outputs[t].data(), device,
                                        static_cast<char*>(result) + offset,
                                        outputs[t].byte_size(), device, stream));
          offset += outputs[t].byte_size();
        }
      }
    }
    return absl::OkStatus();
  };
  if (absl::Status queued = queue(); !queued.ok()) return gpus.Fail(queued);
  RETURN_IF_ERROR(gpus.Wait(replica, deadline, "an NCCL all-reduce"));
  // Every replica has the same dtypes (the rendezvous checked), so all take this step or none.
  if (!on_host.empty()) RETURN_IF_ERROR(ReduceOnHost(gpus, group, replica, op, on_host, deadline));
  return absl::OkStatus();
}

absl::Status NcclAllReduce::ReduceOnHost(GpuReplicas& gpus, LocalRendezvous& group,
                                         int32_t replica, ReduceOp op,
                                         const std::vector<size_t>& tensors,
                                         const Deadline& deadline) {
  // Every replica stages its inputs in host memory; replica 0 reduces them with the other
  // workers' (the CPU collectives' order and arithmetic); every replica copies the result.
  const GpuRuntime& gpu = GpuRuntime::Get();
  const PublishedCall& mine = group.call(replica);
  std::vector<std::vector<char>>& staged = host_inputs_[static_cast<size_t>(replica)];
  staged.resize(tensors.size());
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& in = mine.inputs[tensors[k]];
    staged[k].resize(in.byte_size());
    RETURN_IF_ERROR(gpu.Copy(DIST_GPU_HOST_DEVICE, staged[k].data(), gpus.gpu(replica), in.data(),
                             in.byte_size()));
  }
  RETURN_IF_ERROR(group.Arrive(replica, deadline));
  const int32_t n = group.size();
  if (replica == 0) {
    host_results_.resize(tensors.size());
    host_status_ = absl::OkStatus();
    std::vector<const void*> sources(static_cast<size_t>(n));
    for (size_t k = 0; k < tensors.size() && host_status_.ok(); ++k) {
      const Tensor& out = mine.outputs[tensors[k]];
      for (int32_t q = 0; q < n; ++q) sources[static_cast<size_t>(q)] = host_inputs_[static_cast<size_t>(q)][k].data();
      host_results_[k].resize(out.byte_size());
      host_status_ = gpus.workers().AllReduceLocal(
          op, out.dtype(), sources.data(), n, static_cast<size_t>(out.shape().num_elements()),
          host_results_[k].data(), gpus.job_replicas(),
          absl::StrCat("all-reduce(", ReduceOpName(op), ") of ", DTypeName(out.dtype()), out.shape().ToString(),
                       " on the host"),
          deadline);
    }
  }
  RETURN_IF_ERROR(group.Arrive(replica, deadline));  // replica 0's results are final
  RETURN_IF_ERROR(host_status_);
  for (size_t k = 0; k < tensors.size(); ++k) {
    const Tensor& out = mine.outputs[tensors[k]];
    RETURN_IF_ERROR(gpu.Copy(gpus.gpu(replica), out.data(), DIST_GPU_HOST_DEVICE,
                             host_results_[k].data(), out.byte_size()));
  }
  // Nobody reuses the staging buffers while another replica still reads them.
  return group.Arrive(replica, deadline);
}

}  // namespace distribute
