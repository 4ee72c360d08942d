// The choice of in-process all-reduce algorithm (tf.distribute.CrossDeviceOps), as data:
// a strategy holds one and its LocalCollective runs the algorithm it names (MakeLocalAllReduce).
#ifndef DISTRIBUTE_CORE_COLLECTIVE_CROSS_DEVICE_OPS_H_
#define DISTRIBUTE_CORE_COLLECTIVE_CROSS_DEVICE_OPS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace distribute {

enum class AllReduceAlgorithm : int32_t {
  kReductionToOneDevice = 1,
  kHierarchicalCopy = 2,
  kSharedMemory = 3,
  kNcclAllReduce = 4,  // GPU replicas only
};

struct CrossDeviceOps {
  static constexpr int64_t kDefaultBytesPerPack = 4 << 20;

  AllReduceAlgorithm algorithm = AllReduceAlgorithm::kSharedMemory;
  // ReductionToOneDevice: the device name to reduce on ("" = the first replica's).
  std::string reduce_device;
  // HierarchicalCopy and NcclAllReduce: how many packs the tensors are split into (0, for
  // NcclAllReduce: no packing).
  int32_t num_packs = 1;
  // SharedMemory: the largest pack small tensors are fused into per rendezvous.
  int64_t bytes_per_pack = kDefaultBytesPerPack;

  static absl::StatusOr<CrossDeviceOps> ReductionToOneDevice(std::string device);
  static absl::StatusOr<CrossDeviceOps> HierarchicalCopy(int32_t num_packs);
  static absl::StatusOr<CrossDeviceOps> SharedMemory(int64_t bytes_per_pack);
  static absl::StatusOr<CrossDeviceOps> NcclAllReduce(int32_t num_packs);
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_CROSS_DEVICE_OPS_H_
