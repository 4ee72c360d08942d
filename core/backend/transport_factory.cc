#include "core/backend/transport_factory.h"

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/backend/worker_place.h"
#include "core/gloo/gloo_transport.h"
#include "core/server/watched_get.h"
#include "core/shm/shm_transport.h"
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

// `refusal`, once every worker has reached it too: the chief, whose process ends with its
// refusal, must not take the coordination service away from a worker still reading
// what it needs to refuse as well.
absl::Status Refuse(const TransportRequest& request, absl::Status refusal, const Deadline& deadline) {
  (void)request.coordination->Barrier(absl::StrCat(request.key_prefix, "transport/refused"), deadline);
  return refusal;
}

absl::string_view KindName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kGlooTcp: return "TCP (shared memory off)";
    case TransportKind::kSharedMemory: return "shared memory (on)";
    case TransportKind::kSharedMemoryOnOneHost: return "shared memory on one host, else TCP (auto)";
  }
  return "an unknown transport";
}

// "kind cpus host" (TakeCensus): the host identity, which has spaces of its own, comes last.
absl::StatusOr<std::pair<int32_t, WorkerPlace>> ParseCensusEntry(absl::string_view entry) {
  const std::vector<absl::string_view> parts = absl::StrSplit(entry, absl::MaxSplits(' ', 2));
  int32_t kind = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &kind)) {
    return absl::InvalidArgumentError("not \"kind cpus host\"");
  }
  ASSIGN_OR_RETURN(CpuSet cpus, ParseCpuList(parts[1]));
  return std::make_pair(kind, WorkerPlace{std::string(parts[2]), cpus});
}

// Every worker's place (worker_place.h), in rank order, once every worker has said where
// it runs and which transport its options chose. Workers whose choices end in different
// transports (TransportChoicesAgree) would wait for each other there until the deadline
// (the shared-memory mode comes from each process's own options and DIST_SHARED_MEMORY):
// all of them refuse at once instead, naming every worker's choice.
absl::StatusOr<std::vector<WorkerPlace>> TakeCensus(const TransportRequest& request, TransportKind kind,
                                                    const Deadline& deadline) {
  const auto key = [&](int32_t rank) { return absl::StrCat(request.key_prefix, "transport/census/", rank); };
  const WorkerPlace here = ThisWorkerPlace();
  RETURN_IF_ERROR(request.coordination->Set(
      key(request.rank), absl::StrCat(static_cast<int32_t>(kind), " ", FormatCpuList(here.cpus), " ", here.host)));
  std::vector<WorkerPlace> places;
  std::vector<std::string> hosts;
  std::vector<TransportKind> kinds;
  std::vector<std::string> choices;
  for (int32_t w = 0; w < static_cast<int32_t>(request.task_names.size()); ++w) {
    ASSIGN_OR_RETURN(const std::string entry, WatchedGet(*request.coordination, key(w), deadline));
    absl::StatusOr<std::pair<int32_t, WorkerPlace>> theirs = ParseCensusEntry(entry);
    if (!theirs.ok()) {
      // Every worker reads the same entry: all refuse alike.
      return Refuse(request, absl::FailedPreconditionError(absl::StrCat(
          "task ", request.task_names[w], " sent a transport census entry this library cannot read (",
          theirs.status().message(), "): is every worker running the same version?")), deadline);
    }
    kinds.push_back(static_cast<TransportKind>(theirs->first));
    choices.push_back(absl::StrCat(request.task_names[w], " ", KindName(kinds.back())));
    hosts.push_back(theirs->second.host);
    places.push_back(std::move(theirs->second));
  }
  if (!TransportChoicesAgree(kinds, hosts)) {
    return Refuse(request, absl::FailedPreconditionError(absl::StrCat(
        "the workers chose different cross-worker transports (",  absl::StrJoin(choices, ", "),
        "); give every worker the same shared-memory mode (communication options or DIST_SHARED_MEMORY)")),
                  deadline);
  }
  return places;
}

// Gloo's transport. Where the busy threads of the workers that share this worker's cores
// outnumber them, Gloo's event loop runs in the background (gloo_device.h).
absl::StatusOr<std::unique_ptr<Transport>> ConnectGloo(const TransportRequest& request,
                                                       std::span<const WorkerPlace> places,
                                                       const Deadline& deadline) {
  // During a transfer every worker keeps two threads busy: the caller and Gloo's loop.
  const bool background_loop = BusyThreadsOutnumberCores(places, request.rank, 2);
  ASSIGN_OR_RETURN(std::unique_ptr<GlooTransport> gloo,
                   GlooTransport::Connect(*request.coordination, absl::StrCat(request.key_prefix, "gloo/"),
                                          request.rank, request.task_names, request.listen_host,
                                          request.job_token, deadline, background_loop));
  return std::unique_ptr<Transport>(std::move(gloo));
}

// During a shared-memory transfer a worker keeps one thread busy: the caller (the
// transport's watcher sleeps until a task dies).
constexpr int32_t kShmBusyThreadsPerWorker = 1;

// The shared-memory transport, or (when it is not required) Gloo's where the workers
// cannot share memory: on several hosts, or with /dev/shm apart.
absl::StatusOr<std::unique_ptr<Transport>> ConnectSharedMemory(const TransportRequest& request,
                                                               std::span<const WorkerPlace> places,
                                                               bool required, const Deadline& deadline) {
  std::vector<std::string> hosts;
  for (const WorkerPlace& place : places) hosts.push_back(place.host);
  if (!shm::AllOnOneHost(hosts)) {
    if (!required) return ConnectGloo(request, places, deadline);
    std::vector<std::string> where;
    for (size_t w = 0; w < hosts.size(); ++w) {
      where.push_back(absl::StrCat(request.task_names[w], " on \"", hosts[w], "\""));
    }
    return Refuse(request, absl::FailedPreconditionError(absl::StrCat(
        "shared memory between the workers was required, but they are not on one host (or more than 64 "
        "share it): ", absl::StrJoin(where, ", "))), deadline);
  }
  absl::StatusOr<std::unique_ptr<shm::ShmTransport>> shared =
      shm::ShmTransport::Connect(*request.coordination, request.key_prefix, request.rank, request.task_names, deadline,
                                 BusyThreadsOutnumberCores(places, request.rank, kShmBusyThreadsPerWorker),
                                 request.share_tensors);
  if (shared.ok()) return std::unique_ptr<Transport>(*std::move(shared));
  // Every worker saw the same refusal (ShmTransport agrees on it): all fall back alike.
  if (absl::IsFailedPrecondition(shared.status())) {
    if (!required) return ConnectGloo(request, places, deadline);
    return Refuse(request, shared.status(), deadline);
  }
  return shared.status();
}

}  // namespace

bool TransportChoicesAgree(std::span<const TransportKind> kinds, std::span<const std::string> hosts) {
  // "auto" where the workers are not all on one host is Gloo's TCP, whatever the others chose.
  const bool one_host = shm::AllOnOneHost(hosts);
  const auto effective = [&](TransportKind kind) {
    return kind == TransportKind::kSharedMemoryOnOneHost && !one_host ? TransportKind::kGlooTcp : kind;
  };
  return std::all_of(kinds.begin(), kinds.end(),
                     [&](TransportKind kind) { return effective(kind) == effective(kinds.front()); });
}

absl::StatusOr<std::unique_ptr<Transport>> ConnectTransport(TransportKind kind,
                                                            const TransportRequest& request,
                                                            const Deadline& deadline) {
  ASSIGN_OR_RETURN(const std::vector<WorkerPlace> places, TakeCensus(request, kind, deadline));
  switch (kind) {
    case TransportKind::kSharedMemory:
      return ConnectSharedMemory(request, places, true, deadline);
    case TransportKind::kSharedMemoryOnOneHost:
      return ConnectSharedMemory(request, places, false, deadline);
    case TransportKind::kGlooTcp:
      return ConnectGloo(request, places, deadline);
  }
  return absl::InternalError(absl::StrCat("unknown transport kind ", static_cast<int32_t>(kind)));
}

}  // namespace distribute
