#include "core/collective/communication_options.h"

#include <cstdlib>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/device/local_devices.h"
#include "core/util/job_token_rules.h"
#include "core/util/quote.h"

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
  switch (shared_memory) {
    case SharedMemoryMode::kAuto:
    case SharedMemoryMode::kOn:
    case SharedMemoryMode::kOff:
      break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "shared memory mode ", static_cast<int32_t>(shared_memory),
          " is unknown: expected AUTO (0), ON (1) or OFF (2)"));
  }
  if (bytes_per_pack < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes_per_pack is ", bytes_per_pack, ": expected >= 0 (0: the default)"));
  }
  if (timeout_ms < 0 || timeout_ms > kMaxTimeoutMs) {
    return absl::InvalidArgumentError(absl::StrCat("timeout_ms is ", timeout_ms,
                                                   ": expected 0 (the default) or 1 to ",
                                                   kMaxTimeoutMs, " (a week)"));
  }
  if (absl::Status token = ValidateJobToken("job_token", job_token); !token.ok()) return token;
  if (absl::Status files = ValidateTlsFiles(tls, "cert_path", "key_path", "ca_path"); !files.ok()) return files;
  if (replicas_per_worker < 0 || replicas_per_worker > kMaxLogicalCpuDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("replicas_per_worker is ", replicas_per_worker, ": expected 0 (the default) or 1 to ",
                     kMaxLogicalCpuDevices));
  }
  return absl::OkStatus();
}

absl::StatusOr<int32_t> CommunicationOptions::ResolveReplicasPerWorker() const {
  if (replicas_per_worker > 0) return replicas_per_worker;
  const char* env = std::getenv(kReplicasPerWorkerEnv);
  if (env == nullptr) return 1;  // TF's MultiWorkerMirroredStrategy: one replica per worker
  int32_t count = 0;
  if (!absl::SimpleAtoi(env, &count) || count < 1 || count > kMaxLogicalCpuDevices) {
    return absl::InvalidArgumentError(absl::StrCat(kReplicasPerWorkerEnv, " is ", Quoted(env),
                                                   ": expected an integer from 1 to ",
                                                   kMaxLogicalCpuDevices));
  }
  return count;
}

absl::StatusOr<bool> SharedTensorsFromEnvironment() {
  const char* env = std::getenv(kSharedTensorsEnv);
  if (env == nullptr) return true;
  const std::string value = env;
  if (value == "on" || value.empty()) return true;
  if (value == "off") return false;
  return absl::InvalidArgumentError(absl::StrCat(kSharedTensorsEnv, " is ", Quoted(env), ": expected on or off"));
}

absl::StatusOr<SharedMemoryMode> CommunicationOptions::ResolveSharedMemory() const {
  if (shared_memory != SharedMemoryMode::kAuto) return shared_memory;
  const char* env = std::getenv(kSharedMemoryEnv);
  if (env == nullptr) return SharedMemoryMode::kAuto;
  const std::string value = env;
  if (value == "auto" || value.empty()) return SharedMemoryMode::kAuto;
  if (value == "on") return SharedMemoryMode::kOn;
  if (value == "off") return SharedMemoryMode::kOff;
  return absl::InvalidArgumentError(
      absl::StrCat(kSharedMemoryEnv, " is ", Quoted(env), ": expected auto, on or off"));
}

}  // namespace distribute
