#include "core/backend/transport_factory.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/gloo/gloo_transport.h"
#include "core/shm/shm_transport.h"
#include "core/util/spin.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<TransportKind> ChooseTransport(const CommunicationOptions& options,
                                              DeviceType device_type) {
  // GPU replicas' collectives run on NCCL (core/gpu); this transport carries what their
  // workers exchange on the host (cross-replica reductions, variables' initial values).
  if (device_type == DeviceType::kCpu && options.implementation == CommunicationImplementation::kNccl) {
    return absl::FailedPreconditionError(
        "communication implementation NCCL needs GPU replicas; this strategy's replicas are CPU "
        "devices (use AUTO or RING)");
  }
  ASSIGN_OR_RETURN(const SharedMemoryMode shared_memory, options.ResolveSharedMemory());
  switch (shared_memory) {
    case SharedMemoryMode::kOn: return TransportKind::kSharedMemory;
    case SharedMemoryMode::kOff: return TransportKind::kGlooTcp;
    case SharedMemoryMode::kAuto: break;
  }
  return TransportKind::kSharedMemoryOnOneHost;
}

namespace {

// Gloo's transport. `hosts` is every worker's host identity, in rank order, when the
// caller has it; otherwise the workers tell each other theirs first: where the callers and
// loops of this machine's workers outnumber its cores, Gloo's event loop runs in the
// background (gloo_device.h).
absl::StatusOr<std::unique_ptr<Transport>> ConnectGloo(const TransportRequest& request,
                                                       std::vector<std::string> hosts,
                                                       const Deadline& deadline) {
  const int32_t workers = static_cast<int32_t>(request.task_names.size());
  if (hosts.empty()) {
    RETURN_IF_ERROR(
        shm::AllOnOneHost(*request.coordination, request.key_prefix, request.rank, workers, deadline, &hosts)
            .status());
  }
  // During a transfer every worker keeps two threads busy: the caller and Gloo's loop.
  // The workers of a machine are taken to share one set of cores (as distrun starts them):
  // this process's.
  const bool background_loop = Oversubscribed(2 * WorkersOnMachineOf(hosts, request.rank));
  ASSIGN_OR_RETURN(std::unique_ptr<GlooTransport> gloo,
                   GlooTransport::Connect(*request.coordination, absl::StrCat(request.key_prefix, "gloo/"),
                                          request.rank, request.task_names, request.listen_host,
                                          request.job_token, deadline, background_loop));
  return std::unique_ptr<Transport>(std::move(gloo));
}

// `refusal`, once every worker has reached it too: the chief, whose process ends with its
// refusal, must not take the coordination service away from a worker still reading
// what it needs to refuse as well.
absl::Status Refuse(const TransportRequest& request, absl::Status refusal, const Deadline& deadline) {
  (void)request.coordination->Barrier(absl::StrCat(request.key_prefix, "shm/refused"), deadline);
  return refusal;
}

// The shared-memory transport, or (when it is not required) Gloo's where the workers
// cannot share memory: on several hosts, or with /dev/shm apart.
absl::StatusOr<std::unique_ptr<Transport>> ConnectSharedMemory(const TransportRequest& request,
                                                               bool required, const Deadline& deadline) {
  const std::string& prefix = request.key_prefix;
  const int32_t workers = static_cast<int32_t>(request.task_names.size());
  std::vector<std::string> hosts;
  ASSIGN_OR_RETURN(const bool one_host, shm::AllOnOneHost(*request.coordination, prefix, request.rank,
                                                          workers, deadline, &hosts));
  if (!one_host) {
    if (!required) return ConnectGloo(request, hosts, deadline);
    std::vector<std::string> where;
    for (int32_t w = 0; w < workers; ++w) {
      where.push_back(absl::StrCat(request.task_names[w], " on \"", hosts[w], "\""));
    }
    return Refuse(request, absl::FailedPreconditionError(absl::StrCat(
        "shared memory between the workers was required, but they are not on one host (or more than 64 "
        "share it): ", absl::StrJoin(where, ", "))), deadline);
  }
  absl::StatusOr<std::unique_ptr<shm::ShmTransport>> shared =
      shm::ShmTransport::Connect(*request.coordination, prefix, request.rank, request.task_names, deadline);
  if (shared.ok()) return std::unique_ptr<Transport>(*std::move(shared));
  // Every worker saw the same refusal (ShmTransport agrees on it): all fall back alike.
  if (absl::IsFailedPrecondition(shared.status())) {
    if (!required) return ConnectGloo(request, hosts, deadline);
    return Refuse(request, shared.status(), deadline);
  }
  return shared.status();
}

}  // namespace

int32_t WorkersOnMachineOf(std::span<const std::string> hosts, int32_t rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= hosts.size()) return 1;
  // "hostname boot-id net:[inode]": the boot id names the running kernel, and with it the
  // cores, whatever the hostname and network namespace; without one, the whole identity.
  auto machine = [](const std::string& host) -> absl::string_view {
    const std::vector<absl::string_view> parts = absl::StrSplit(host, ' ');
    return parts.size() == 3 && !parts[1].empty() ? parts[1] : absl::string_view(host);
  };
  const absl::string_view mine = machine(hosts[static_cast<size_t>(rank)]);
  return static_cast<int32_t>(
      std::count_if(hosts.begin(), hosts.end(), [&](const std::string& host) { return machine(host) == mine; }));
}

absl::StatusOr<std::unique_ptr<Transport>> ConnectTransport(TransportKind kind,
                                                            const TransportRequest& request,
                                                            const Deadline& deadline) {
  switch (kind) {
    case TransportKind::kSharedMemory:
      return ConnectSharedMemory(request, true, deadline);
    case TransportKind::kSharedMemoryOnOneHost:
      return ConnectSharedMemory(request, false, deadline);
    case TransportKind::kGlooTcp:
      return ConnectGloo(request, {}, deadline);
  }
  return absl::InternalError(absl::StrCat("unknown transport kind ", static_cast<int32_t>(kind)));
}

}  // namespace distribute
