#include "core/collective/collective.h"

#include "absl/strings/str_cat.h"

namespace distribute {

absl::Status Collective::CheckLocalInputs(std::span<const Tensor> inputs) const {
  for (const Tensor& t : inputs) {
    if (t.device().type != DeviceType::kCpu) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a tensor on ", t.device_name(), ": in-process collectives operate on host (CPU) tensors"));
    }
  }
  return absl::OkStatus();
}

absl::Status Collective::Publish(int32_t replica, const PublishedCall& call,
                                 const Deadline& deadline) {
  // A failed local check is published in place of the call, so every replica fails it.
  return rendezvous_.Publish(replica, call, CheckLocalInputs(call.inputs), deadline);
}

}  // namespace distribute
