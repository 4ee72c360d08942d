// tf.distribute.experimental.CommunicationOptions: how MultiWorkerMirroredStrategy's
// collectives run between workers, and how many replicas each worker runs.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_COMMUNICATION_OPTIONS_H_
#define DISTRIBUTE_CORE_COLLECTIVE_COMMUNICATION_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/util/tls_files.h"

namespace distribute {

enum class CommunicationImplementation : int32_t {
  kAuto = 0,  // Gloo for CPU workers (NCCL for GPUs once GPU replicas exist)
  kRing = 1,  // Gloo's TCP transport
  kNccl = 2,  // GPUs only
};

// Whether workers on one host exchange their bytes through shared memory (the shm
// transport) instead of TCP.
enum class SharedMemoryMode : int32_t {
  kAuto = 0,  // kSharedMemoryEnv when set, else shared memory when every worker is on this host
  kOn = 1,    // required: start-up fails when the workers are on several hosts
  kOff = 2,   // never: TCP even on one host
};

// The environment variable that sets the shared-memory mode when the options do not:
// "auto", "on" or "off".
inline constexpr char kSharedMemoryEnv[] = "DIST_SHARED_MEMORY";

// The environment variable that says whether this worker's large tensors live where the
// other workers of its host read them in place ("on", the default) or stay in private
// memory ("off": every worker of the host then goes through the transport's rings).
inline constexpr char kSharedTensorsEnv[] = "DIST_SHARED_TENSORS";
// kSharedTensorsEnv's answer: true unless it says "off" (a value that is not "on", "off"
// or empty is kInvalidArgument naming it).
absl::StatusOr<bool> SharedTensorsFromEnvironment();

// The environment variable that sets the replicas per worker when the options do not.
inline constexpr char kReplicasPerWorkerEnv[] = "DIST_REPLICAS_PER_WORKER";

struct CommunicationOptions {
  // A week bounds the deadline arithmetic far from overflow.
  static constexpr int64_t kMaxTimeoutMs = int64_t{7} * 24 * 3600 * 1000;

  CommunicationImplementation implementation = CommunicationImplementation::kAuto;
  // Upper bound of one fused all-reduce's pack; 0: the strategy's default.
  int64_t bytes_per_pack = 0;
  // The deadline of every collective and of start-up; 0: the strategy's default (60 s).
  int64_t timeout_ms = 0;
  // This worker's replicas; 0: kReplicasPerWorkerEnv when set, else 1 (TF's default).
  int32_t replicas_per_worker = 0;
  SharedMemoryMode shared_memory = SharedMemoryMode::kAuto;
  // The job's secret for its servers (core/server/job_token.h); "": DIST_JOB_TOKEN.
  std::string job_token;
  // TLS for the strategy's server (core/server/tls_credentials.h); none: DIST_TLS_*.
  TlsFiles tls;

  absl::Status Validate() const;
  // timeout_ms, or `default_ms` when it is 0.
  int64_t TimeoutMsOr(int64_t default_ms) const { return timeout_ms > 0 ? timeout_ms : default_ms; }
  // The replica count this worker runs, resolving the default (reads the environment).
  absl::StatusOr<int32_t> ResolveReplicasPerWorker() const;
  // The shared-memory mode in force, resolving kAuto through kSharedMemoryEnv (a value
  // there that is not auto, on or off is kInvalidArgument naming it).
  absl::StatusOr<SharedMemoryMode> ResolveSharedMemory() const;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_COMMUNICATION_OPTIONS_H_
