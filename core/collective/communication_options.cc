#include "core/collective/communication_options.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace distribute {

absl::Status CommunicationOptions::Validate() const {
  switch (implementation) {
    case CommunicationImplementation::kAuto:
    case CommunicationImplementation::kRing:
    case CommunicationImplementation::kNccl:
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "implementation ", static_cast<int32_t>(implementation),
          " is unknown: expected AUTO (0), RING (1) or NCCL (2)"));
  }
  if (bytes_per_pack < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes_per_pack is ", bytes_per_pack, ": expected >= 0 (0: the default)"));
  }
  // A week bounds the deadline arithmetic far from overflow.
  if (!std::isfinite(timeout_seconds) || timeout_seconds < 0 || timeout_seconds > 7 * 24 * 3600.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "timeout_seconds is ", timeout_seconds, ": expected 0 (the default) or a positive number "
                                                "of seconds up to a week"));
  }
  return absl::OkStatus();
}

}  // namespace distribute
