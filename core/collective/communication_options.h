// tf.distribute.experimental.CommunicationOptions: how MultiWorkerMirroredStrategy's
// collectives run between workers.
#ifndef DISTRIBUTE_CORE_COLLECTIVE_COMMUNICATION_OPTIONS_H_
#define DISTRIBUTE_CORE_COLLECTIVE_COMMUNICATION_OPTIONS_H_

#include <cstdint>

#include "absl/status/status.h"

namespace distribute {

enum class CommunicationImplementation : int32_t {
  kAuto = 0,  // Gloo for CPU workers (NCCL for GPUs once GPU replicas exist)
  kRing = 1,  // Gloo's TCP transport
  kNccl = 2,  // GPUs only
};

struct CommunicationOptions {
  CommunicationImplementation implementation = CommunicationImplementation::kAuto;
  // Upper bound of one fused all-reduce's pack; 0: the strategy's default.
  int64_t bytes_per_pack = 0;
  // The deadline of every collective and of start-up; 0: the strategy's default (60 s).
  double timeout_seconds = 0;

  absl::Status Validate() const;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_COLLECTIVE_COMMUNICATION_OPTIONS_H_
