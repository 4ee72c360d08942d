// C entry points for cross-device ops.
#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/util/status_macros.h"
#include "distribute/cross_device_ops.h"

using distribute::CrossDeviceOps;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

dist_status_t NewOps(const char* function, dist_cross_device_ops_t** out,
                     absl::FunctionRef<absl::StatusOr<CrossDeviceOps>()> make) {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(CrossDeviceOps ops, make());
    *out = new dist_cross_device_ops(std::move(ops));
    return absl::OkStatus();
  });
}

}  // namespace

extern "C" {

dist_status_t dist_cross_device_ops_create_reduction_to_one_device(const char* device,
                                                                   dist_cross_device_ops_t** out) {
  return NewOps(__func__, out, [&] { return CrossDeviceOps::ReductionToOneDevice(device ? device : ""); });
}

dist_status_t dist_cross_device_ops_create_hierarchical_copy(int32_t num_packs,
                                                             dist_cross_device_ops_t** out) {
  return NewOps(__func__, out, [&] { return CrossDeviceOps::HierarchicalCopy(num_packs); });
}

dist_status_t dist_cross_device_ops_create_shared_memory(int64_t bytes_per_pack,
                                                         dist_cross_device_ops_t** out) {
  return NewOps(__func__, out, [&] { return CrossDeviceOps::SharedMemory(bytes_per_pack); });
}

dist_status_t dist_cross_device_ops_create_nccl_all_reduce(int32_t num_packs,
                                                          dist_cross_device_ops_t** out) {
  return NewOps(__func__, out, [&] { return CrossDeviceOps::NcclAllReduce(num_packs); });
}

dist_status_t dist_cross_device_ops_kind(const dist_cross_device_ops_t* ops,
                                         dist_cross_device_ops_kind_t* out_kind) {
  return distribute::c_api::Accessor(__func__, ops, "ops", out_kind, "out_kind",
                                     [](const dist_cross_device_ops& o, dist_cross_device_ops_kind_t& kind) {
                                       kind = static_cast<dist_cross_device_ops_kind_t>(o.ops.algorithm);
                                       return absl::OkStatus();
                                     });
}

void dist_cross_device_ops_destroy(dist_cross_device_ops_t* ops) { DestroyHandle(ops); }

}  // extern "C"
