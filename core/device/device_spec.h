// A TensorFlow device name, parsed into its parts.
#ifndef DISTRIBUTE_CORE_DEVICE_DEVICE_SPEC_H_
#define DISTRIBUTE_CORE_DEVICE_DEVICE_SPEC_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace distribute {

enum class DeviceType : int32_t {
  kUnspecified = 0,
  kCpu = 1,
  kGpu = 2,
};

// "CPU", "GPU", or "" for kUnspecified.
absl::string_view DeviceTypeName(DeviceType type);

// The parts of "/job:J/replica:R/task:T/device:TYPE:INDEX". Absent numeric parts are -1,
// an absent job is "". An index of "*" is also -1.
struct DeviceSpec {
  std::string job;
  int32_t replica = -1;
  int32_t task = -1;
  DeviceType type = DeviceType::kUnspecified;
  int32_t index = -1;

  // Accepts the full form with any subset of parts in order, the short form "CPU:0",
  // the legacy "/cpu:0", and a type without index ("GPU"). Types are case-insensitive.
  static absl::StatusOr<DeviceSpec> Parse(absl::string_view name);

  // The canonical name: the parts that are set, in order, type in upper case; "" when
  // nothing is set.
  std::string ToString() const;

  // The local device this spec means inside one process: the type defaults to CPU and an
  // unspecified index to 0. Job, replica and task are kept.
  DeviceSpec WithDefaults() const;

  bool operator==(const DeviceSpec& other) const = default;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_DEVICE_DEVICE_SPEC_H_
