// The all-reduce algorithms that run on the plugin's reduction kernel instead of NCCL:
// ReductionToOneDevice and HierarchicalCopy (gpu_all_reduce.h), and the factory.
#include <algorithm>

#include "core/device/gpu_runtime.h"
#include "core/gpu/gpu_all_reduce.h"
#include "core/gpu/gpu_kernel_reduce.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// Every replica copies `total[t]` (on replica `root`'s GPU) into its outputs, then all meet
// so that the root's memory is not reused while another replica still reads it.
absl::Status CopyOut(GpuReplicas& gpus, LocalRendezvous& group, int32_t replica, int32_t root,
                     const std::vector<const void*>& total, const Deadline& deadline) {
  RETURN_IF_ERROR(group.Arrive(replica, deadline));  // the totals are final
  if (replica != root) {
    const std::span<const Tensor> outputs = group.call(replica).outputs;
    for (size_t t = 0; t < outputs.size(); ++t) {
      if (absl::Status s = GpuRuntime::Get().CopyAsync(
              gpus.gpu(replica), outputs[t].data(), gpus.gpu(root), total[t],
              outputs[t].byte_size(), gpus.gpu(replica), gpus.stream(replica));
          !s.ok()) {
        return gpus.Fail(s);
      }
    }
    RETURN_IF_ERROR(gpus.Wait(replica, deadline, "copying an all-reduce's result"));
  }
  return group.Arrive(replica, deadline);
}

}  // namespace

absl::Status GpuReductionToOneDevice::Run(GpuReplicas& gpus, LocalRendezvous& group,
                                          int32_t replica, ReduceOp op,
                                          const Deadline& deadline) {
  const int32_t n = group.size();
  const std::span<const Tensor> totals = group.call(root_).outputs;
  if (replica == root_) {
    const std::span<const Tensor> mine = group.call(replica).inputs;
    size_t largest = 0;
    for (const Tensor& t : mine) largest = std::max(largest, ScratchBytes(t.byte_size()));
    char* scratch = nullptr;
    if (largest > 0) {
      ASSIGN_OR_RETURN(void* memory, gpus.Scratch(replica, largest * static_cast<size_t>(n)));
      scratch = static_cast<char*>(memory);
    }
    auto queue = [&]() -> absl::Status {
      for (size_t t = 0; t < mine.size(); ++t) {
        // The stream runs in order: each tensor reuses the scratch.
        RETURN_IF_ERROR(QueueReduceToOne(
            gpus, replica, op, [&](int32_t q) -> const Tensor& { return group.call(q).inputs[t]; }, totals[t],
            scratch));
      }
      return absl::OkStatus();
    };
    if (absl::Status queued = queue(); !queued.ok()) return gpus.Fail(queued);
    RETURN_IF_ERROR(gpus.Wait(replica, deadline, "a reduction to one device"));
  }
  std::vector<const void*> total;
  for (const Tensor& t : totals) total.push_back(t.data());
  return CopyOut(gpus, group, replica, root_, total, deadline);
}

absl::Status GpuHierarchicalCopy::Run(GpuReplicas& gpus, LocalRendezvous& group, int32_t replica,
                                      ReduceOp op, const Deadline& deadline) {
  // Pairs combine in a binary tree (stride 1, 2, 4, ...); replica q's running partial lives
  // in its output once q has reduced (its output is its own to overwrite), in its input
  // before. Every replica runs the same schedule, so each knows where its partner's is.
  const int32_t n = group.size();
  const std::span<const Tensor> mine = group.call(replica).inputs;
  size_t bytes = 0;  // room for a partner's partial where peers cannot read in place
  for (const Tensor& t : mine) bytes += ScratchBytes(t.byte_size());
  char* scratch = nullptr;
  if (bytes > 0) {
    ASSIGN_OR_RETURN(void* memory, gpus.Scratch(replica, bytes));
    scratch = static_cast<char*>(memory);
  }
  bool reduced = false;  // whether this replica's partial is in its output
  for (int32_t stride = 1; stride < n; stride *= 2) {
    if (replica % (2 * stride) == 0 && replica + stride < n) {
      const int32_t partner = replica + stride;
      // The partner reduced at stride 1 (and so holds its partial in its output) unless it
      // had no partner there itself.
      const bool partner_reduced = stride > 1 && partner + 1 < n;
      const bool divide = op == ReduceOp::kMean && 2 * stride >= n;
      auto queue = [&]() -> absl::Status {
        char* next = scratch;
        for (size_t t = 0; t < mine.size(); ++t) {
          const Tensor& out = group.call(replica).outputs[t];
          const Tensor& theirs = partner_reduced ? group.call(partner).outputs[t]
                                                 : group.call(partner).inputs[t];
          const void* pair[2] = {reduced ? out.data() : mine[t].data(), nullptr};
          ASSIGN_OR_RETURN(pair[1], Readable(gpus, replica, partner, theirs, &next));
          RETURN_IF_ERROR(GpuRuntime::Get().Reduce(
              gpus.gpu(replica), gpus.stream(replica), static_cast<int32_t>(out.dtype()),
              static_cast<int32_t>(op == ReduceOp::kMean ? ReduceOp::kSum : op), pair, 2,
              out.data(), static_cast<size_t>(out.shape().num_elements()), divide ? n : 1));
        }
        return absl::OkStatus();
      };
      if (absl::Status queued = queue(); !queued.ok()) return gpus.Fail(queued);
      RETURN_IF_ERROR(gpus.Wait(replica, deadline, "a hierarchical-copy reduction"));
      reduced = true;
    }
    RETURN_IF_ERROR(group.Arrive(replica, deadline));  // this level's partials are final
  }
  std::vector<const void*> total;
  for (const Tensor& t : group.call(0).outputs) total.push_back(t.data());
  return CopyOut(gpus, group, replica, 0, total, deadline);
}

std::unique_ptr<GpuAllReduce> MakeGpuAllReduce(const CrossDeviceOps& ops, int32_t replicas,
                                               int32_t reduce_replica) {
  switch (ops.algorithm) {
    case AllReduceAlgorithm::kReductionToOneDevice:
      return std::make_unique<GpuReductionToOneDevice>(reduce_replica);
    case AllReduceAlgorithm::kHierarchicalCopy:
      return std::make_unique<GpuHierarchicalCopy>();
    case AllReduceAlgorithm::kNcclAllReduce:
      return std::make_unique<NcclAllReduce>(PackPolicy{.num_packs = ops.num_packs}, replicas);
    case AllReduceAlgorithm::kSharedMemory:
      break;
  }
  return std::make_unique<NcclAllReduce>(PackPolicy{.bytes_per_pack = ops.bytes_per_pack}, replicas);
}

}  // namespace distribute
