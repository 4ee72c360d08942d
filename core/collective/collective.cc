#include "core/collective/collective.h"

#include "absl/strings/str_cat.h"

namespace distribute {

absl::Status Collective::Publish(int32_t replica, const PublishedCall& call,
                                 const Deadline& deadline) {
  // What only this replica can check, it checks on its own inputs (once, not once per
  // replica); the rendezvous publishes a failure in place of the call.
  absl::Status host_only;
  for (const Tensor& t : call.inputs) {
    if (t.device().type != DeviceType::kCpu) {
      host_only = absl::InvalidArgumentError(absl::StrCat(
          "a tensor on ", t.device_name(), ": in-process collectives operate on host (CPU) tensors"));
      break;
    }
  }
  return rendezvous_.Publish(replica, call, host_only, deadline);
}

}  // namespace distribute
