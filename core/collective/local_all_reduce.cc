#include "core/collective/local_all_reduce.h"

namespace distribute {

std::unique_ptr<LocalAllReduce> MakeLocalAllReduce(const CrossDeviceOps& ops, int32_t replicas,
                                                   int32_t reduce_replica) {
  switch (ops.algorithm) {
    case AllReduceAlgorithm::kReductionToOneDevice:
      return std::make_unique<ReductionToOneDevice>(reduce_replica);
    case AllReduceAlgorithm::kHierarchicalCopy:
      return std::make_unique<HierarchicalCopyAllReduce>(ops.num_packs, replicas);
    case AllReduceAlgorithm::kSharedMemory:
    case AllReduceAlgorithm::kNcclAllReduce:  // refused for CPU replicas by core/backend
      break;
  }
  return std::make_unique<SharedMemoryAllReduce>(ops.bytes_per_pack);
}

}  // namespace distribute
