#include "core/backend/collective_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/collective/hierarchical_collective.h"
#include "core/collective/local_all_reduce.h"
#include "core/collective/local_collective.h"
#include "core/device/local_devices.h"
#include "core/gpu/gpu_collective.h"
#include "core/gpu/nccl_bootstrap.h"
#include "core/server/server.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// The replica that reduces for ReductionToOneDevice: the one on the requested device, or 0.
absl::StatusOr<int32_t> ReduceReplica(const CrossDeviceOps& ops, const std::vector<DeviceSpec>& devices) {
  if (ops.algorithm != AllReduceAlgorithm::kReductionToOneDevice || ops.reduce_device.empty()) {
    return 0;
  }
  ASSIGN_OR_RETURN(DeviceSpec spec, DeviceSpec::Parse(ops.reduce_device));
  ASSIGN_OR_RETURN(DeviceSpec resolved, ResolveLocalDevice(spec));
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] == resolved) return static_cast<int32_t>(i);
  }
  // A device that holds no replica: reduce on the first replica's device (for CPU
  // replicas every device shares host memory; TF's would copy there and back).
  return 0;
}

// The kind of device every replica is on: backends serve one kind.
absl::StatusOr<DeviceType> ReplicaDeviceType(const std::vector<DeviceSpec>& devices) {
  if (devices.empty()) return absl::InvalidArgumentError("a strategy needs at least one replica");
  const DeviceType type = devices.front().type;
  for (const DeviceSpec& device : devices) {
    if (device.type != type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "replicas on ", devices.front().ToString(), " and ", device.ToString(),
          ": a strategy's replicas are all CPU devices or all GPUs"));
    }
  }
  return type;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CollectiveBackend>> CreateCollectiveBackend(
    const BackendRequest& request) {
  const auto replicas = static_cast<int32_t>(request.devices.size());
  if (replicas > kMaxLocalReplicas) {
    return absl::InvalidArgumentError(absl::StrCat(replicas, " replicas in one process: at most ",
                                                   kMaxLocalReplicas));
  }
  ASSIGN_OR_RETURN(const DeviceType device_type, ReplicaDeviceType(request.devices));
  if (device_type == DeviceType::kCpu &&
      request.ops.algorithm == AllReduceAlgorithm::kNcclAllReduce) {
    return absl::FailedPreconditionError(
        "NcclAllReduce reduces between GPUs; this strategy's replicas are CPU devices (use "
        "the shared-memory, ReductionToOneDevice or HierarchicalCopy cross-device ops)");
  }
  if (device_type == DeviceType::kGpu && request.cluster == nullptr) {
    ASSIGN_OR_RETURN(const int32_t reduce_replica, ReduceReplica(request.ops, request.devices));
    ASSIGN_OR_RETURN(std::unique_ptr<GpuCollective> collective,
                     GpuCollective::Create(request.devices, request.ops, reduce_replica));
    return std::make_unique<CollectiveBackend>(std::move(collective), nullptr);
  }
  if (request.cluster == nullptr) {
    ASSIGN_OR_RETURN(const int32_t reduce_replica, ReduceReplica(request.ops, request.devices));
    return std::make_unique<CollectiveBackend>(
        std::make_unique<LocalCollective>(replicas,
                                          MakeLocalAllReduce(request.ops, replicas, reduce_replica)),
        nullptr);
  }
  ASSIGN_OR_RETURN(std::shared_ptr<MultiWorkerRuntime> runtime,
                   ConnectWorkers(*request.cluster, request.communication, device_type, replicas,
                                  request.timeout_ms));
  if (device_type == DeviceType::kGpu) {
    // One NCCL communicator over every GPU of the job, bootstrapped through the chief's
    // key-value store; the transport above carries the host side.
    CoordinationClient& coordination = runtime->server->coordination();
    const NcclJob job{&coordination, runtime->key_prefix, runtime->cross_worker->worker(),
                      runtime->cross_worker->num_workers()};
    std::vector<int32_t> gpus;
    for (const DeviceSpec& device : request.devices) gpus.push_back(device.index);
    ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicators> comms,
                     ConnectNcclJob(job, gpus, Deadline::AfterMs(request.timeout_ms)));
    ASSIGN_OR_RETURN(std::unique_ptr<GpuCollective> collective,
                     GpuCollective::CreateForJob(request.devices, std::move(comms),
                                                 runtime->cross_worker, &coordination));
    return std::make_unique<CollectiveBackend>(std::move(collective), std::move(runtime));
  }
  // The cross-worker packs follow the CommunicationOptions (TF's bytes_per_pack).
  const int64_t bytes_per_pack = request.communication.bytes_per_pack > 0
                                     ? request.communication.bytes_per_pack
                                     : CrossDeviceOps::kDefaultBytesPerPack;
  auto collective =
      std::make_unique<HierarchicalCollective>(replicas, runtime->cross_worker, bytes_per_pack);
  return std::make_unique<CollectiveBackend>(std::move(collective), std::move(runtime));
}

}  // namespace distribute
