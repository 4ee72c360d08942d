#include "core/backend/collective_backend.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/collective/hierarchical_collective.h"
#include "core/collective/local_all_reduce.h"
#include "core/collective/local_collective.h"
#include "core/device/local_devices.h"
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
  // A device that holds no replica: reduce on the first replica's thread, which reads
  // every replica's memory anyway (all in-process devices share host memory).
  return 0;
}

// The kind of device every replica is on: backends serve one kind.
absl::StatusOr<DeviceType> ReplicaDeviceType(const std::vector<DeviceSpec>& devices) {
  if (devices.empty()) return absl::InvalidArgumentError("a strategy needs at least one replica");
  for (const DeviceSpec& device : devices) {
    if (device.type != DeviceType::kCpu) {
      return absl::FailedPreconditionError(absl::StrCat(
          "device ", device.ToString(),
          ": strategies replicate over CPU devices in this version; GPU replicas need the NCCL "
          "collectives, which are not built yet"));
    }
  }
  return DeviceType::kCpu;
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
  // The cross-worker packs follow the CommunicationOptions (TF's bytes_per_pack).
  const int64_t bytes_per_pack = request.communication.bytes_per_pack > 0
                                     ? request.communication.bytes_per_pack
                                     : CrossDeviceOps::kDefaultBytesPerPack;
  auto collective =
      std::make_unique<HierarchicalCollective>(replicas, runtime->cross_worker, bytes_per_pack);
  return std::make_unique<CollectiveBackend>(std::move(collective), std::move(runtime));
}

}  // namespace distribute
