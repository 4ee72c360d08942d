// The one place that picks the cross-worker transport from data: the communication
// options' implementation and shared-memory mode and the replicas' device kind. Gloo's TCP
// transport carries CPU workers on several hosts, the shared-memory transport those on one
// host; NCCL for GPU workers is added here as their peer, without touching any collective
// algorithm.
#ifndef DISTRIBUTE_CORE_BACKEND_TRANSPORT_FACTORY_H_
#define DISTRIBUTE_CORE_BACKEND_TRANSPORT_FACTORY_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/collective/communication_options.h"
#include "core/collective/transport.h"
#include "core/device/device_spec.h"
#include "core/server/coordination_client.h"
#include "core/util/deadline.h"

namespace distribute {

enum class TransportKind : int32_t {
  kGlooTcp = 1,
  kSharedMemory = 2,            // required (SharedMemoryMode::kOn)
  kSharedMemoryOnOneHost = 3,   // when every worker shares this host (and its /dev/shm), else Gloo
};

// The transport for workers whose replicas are on `device_type` devices, as `options`
// asks; a combination that cannot work (NCCL for CPU replicas) is kFailedPrecondition,
// before anything connects.
absl::StatusOr<TransportKind> ChooseTransport(const CommunicationOptions& options,
                                              DeviceType device_type);

// Where a worker's transport meets its peers.
struct TransportRequest {
  CoordinationClient* coordination;  // the rendezvous store (the chief's key-value store)
  std::string key_prefix;            // the same on every worker, new for every transport
  int32_t rank;
  std::vector<std::string> task_names;  // every worker, in rank order
  std::string listen_host;              // this worker's host
  std::string job_token;                // what the transport's handshake proves ("" for none)
  // Over shared memory: whether this worker's large tensors go where its peers read them
  // in place (SharedTensorsFromEnvironment).
  bool share_tensors = true;
};

// Whether workers that chose `kinds` (one per worker, in rank order), with these host
// identities (shm::HostIdentity), end in one transport: the same kind, where "auto"
// (kSharedMemoryOnOneHost) counts as kGlooTcp unless every worker is on one host. "on" and
// "auto" never agree: where shared memory cannot be set up, "auto" goes on over TCP
// while "on" refuses.
bool TransportChoicesAgree(std::span<const TransportKind> kinds, std::span<const std::string> hosts);

// Connects this worker to every other one (until `deadline`, naming the tasks that did
// not connect). Every worker first says which host it is on and which `kind` it chose,
// through the coordination service: workers whose choices do not agree
// (TransportChoicesAgree) all fail at once with kFailedPrecondition naming every choice; for
// kSharedMemoryOnOneHost all reach the same choice from the hosts. The workers also say
// which CPUs they may run on: Gloo's transport runs its event loop in the background where
// the workers that share this worker's cores, two busy threads each (the caller and the
// loop), outnumber them (worker_place.h, core/gloo/gloo_device.h), and shared memory's
// waiters yield their core instead of spinning where those workers, one busy thread each,
// outnumber them.
absl::StatusOr<std::unique_ptr<Transport>> ConnectTransport(TransportKind kind,
                                                            const TransportRequest& request,
                                                            const Deadline& deadline);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_BACKEND_TRANSPORT_FACTORY_H_
