// libdistribute_cuda.so.0: the CUDA plugin. It links the CUDA runtime and NCCL so that
// libdistribute itself never does; the core loads it with dlopen on first GPU use and reads
// the table below. Only the runtime API is used: a driver-API call would add a NEEDED
// libcuda.so.1 and make dlopen fail on machines without a driver (notes/toolchain.md).
#include "core/cuda/plugin_entries.h"
#include "core/device/gpu_plugin_api.h"

namespace distribute::gpu_plugin {
namespace {

const dist_gpu_plugin_v1 kPlugin = {
    .struct_size = sizeof(dist_gpu_plugin_v1),
    .abi_version = DIST_GPU_PLUGIN_ABI_VERSION,
    .device_count = DeviceCount,
    .allocate = Allocate,
    .release = Release,
    .copy = Copy,
    .zero = Zero,
    .stream_create = StreamCreate,
    .stream_destroy = StreamDestroy,
    .stream_query = StreamQuery,
    .copy_async = CopyAsync,
    .host_allocate_pinned = HostAllocatePinned,
    .host_release_pinned = HostReleasePinned,
    .reduce = Reduce,
    .enable_peer_access = EnablePeerAccess,
    .comm_unique_id = CommUniqueId,
    .comm_init_all = CommInitAll,
    .comm_init_rank = CommInitRank,
    .comm_status = CommStatus,
    .comm_abort = CommAbort,
    .comm_destroy = CommDestroy,
    .all_reduce = AllReduce,
    .all_gather = AllGather,
    .broadcast = Broadcast,
    .difference = Difference,
};

}  // namespace
}  // namespace distribute::gpu_plugin

extern "C" __attribute__((visibility("default"))) const dist_gpu_plugin_v1* dist_gpu_plugin_get(void) {
  return &distribute::gpu_plugin::kPlugin;
}
