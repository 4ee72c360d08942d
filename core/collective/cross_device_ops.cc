#include "core/collective/cross_device_ops.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/device/device_spec.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<CrossDeviceOps> CrossDeviceOps::ReductionToOneDevice(std::string device) {
  if (!device.empty()) RETURN_IF_ERROR(DeviceSpec::Parse(device).status());
  CrossDeviceOps ops;
  ops.algorithm = AllReduceAlgorithm::kReductionToOneDevice;
  ops.reduce_device = std::move(device);
  return ops;
}

absl::StatusOr<CrossDeviceOps> CrossDeviceOps::HierarchicalCopy(int32_t num_packs) {
  if (num_packs < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_packs is ", num_packs, ": expected at least 1"));
  }
  CrossDeviceOps ops;
  ops.algorithm = AllReduceAlgorithm::kHierarchicalCopy;
  ops.num_packs = num_packs;
  return ops;
}

absl::StatusOr<CrossDeviceOps> CrossDeviceOps::SharedMemory(int64_t bytes_per_pack) {
  if (bytes_per_pack < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bytes_per_pack is ", bytes_per_pack, ": expected a positive size, or 0 to choose"));
  }
  CrossDeviceOps ops;
  ops.algorithm = AllReduceAlgorithm::kSharedMemory;
  ops.bytes_per_pack = bytes_per_pack == 0 ? kDefaultBytesPerPack : bytes_per_pack;
  return ops;
}

absl::StatusOr<CrossDeviceOps> CrossDeviceOps::NcclAllReduce(int32_t num_packs) {
  if (num_packs < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_packs is ", num_packs, ": expected 0 (no packing) or more"));
  }
  CrossDeviceOps ops;
  ops.algorithm = AllReduceAlgorithm::kNcclAllReduce;
  ops.num_packs = num_packs;
  return ops;
}

}  // namespace distribute
