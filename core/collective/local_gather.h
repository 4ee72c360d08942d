// The gather step both in-process collectives share: every local replica's published
// input concatenated along an axis, in replica order.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_LOCAL_GATHER_H_
#define DISTRIBUTE_CORE_COLLECTIVE_LOCAL_GATHER_H_

#include "absl/status/statusor.h"
#include "core/collective/local_rendezvous.h"
#include "core/device/device_spec.h"
#include "core/tensor/tensor.h"

namespace distribute {

// The published inputs (one tensor per replica; dimensions other than `axis` agree)
// concatenated along `axis`, as a new tensor on `device`.
absl::StatusOr<Tensor> ConcatenatePublished(const LocalRendezvous& group, int32_t axis,
                                            const DeviceSpec& device);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_LOCAL_GATHER_H_
