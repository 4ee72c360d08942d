#include "core/gloo/gloo_connect.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/gloo/coordination_store.h"
#include "core/gloo/gloo_device.h"
#include "core/gloo/handshake_proof.h"
#include "core/server/peer_failure.h"
#include "core/server/watched_get.h"
#include "core/util/mutex.h"
#include "core/util/status_macros.h"
#include "gloo/common/error.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"
#include "gloo/transport/unbound_buffer.h"
#include "gloo/types.h"

namespace distribute {
namespace {

// The slot of the handshake's messages, apart from Gloo's collectives' (0x01-0x08) and
// the transport's exchanges (0x40).
constexpr uint8_t kHandshakeSlotPrefix = 0x41;
// How long the first attempt may take before the workers give up on it and try again on
// fresh ports; each later attempt may take twice as long. A worker whose peer gave up
// before connecting to it waits out its attempt (Gloo's accept cannot be interrupted), so
// the first window is short; connecting takes 10-30 ms on a quiet machine, and a loaded
// one that needs longer gets it on the next attempt.
constexpr int64_t kFirstAttemptMs = 2000;
// Attempts before giving up: more than one stranger in a row is not bad luck.
constexpr int kMaxAttempts = 5;
constexpr char kVerdictOk[] = "ok";
constexpr char kHandshakeDone[] = "done";
constexpr char kGaveUp[] = "another worker gave up on this connection attempt";

std::string WakeKey(const std::string& attempt_prefix, int32_t rank) {
  return absl::StrCat(attempt_prefix, "wake/", rank);
}
std::string VerdictKey(const std::string& attempt_prefix, int32_t rank) {
  return absl::StrCat(attempt_prefix, "verdict/", rank);
}

// The handshake over a freshly connected mesh: each worker sends each other one its proof
// and checks the one it receives. A watcher releases the waits when another worker gives
// up on the attempt (it sets this worker's wake key), since a stranger that took a port
// sends nothing and would hold this worker until the attempt's deadline.
absl::Status Handshake(gloo::Context& context, const GlooMeshRequest& request,
                       const std::string& attempt_prefix, const Deadline& attempt_deadline) {
  const int32_t size = static_cast<int32_t>(request.task_names.size());
  const uint64_t slot = gloo::Slot::build(kHandshakeSlotPrefix, 0);
  std::vector<HandshakeProof> sent(static_cast<size_t>(size));
  std::vector<HandshakeProof> received(static_cast<size_t>(size));
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> receives(static_cast<size_t>(size));
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> sends(static_cast<size_t>(size));
  for (int32_t peer = 0; peer < size; ++peer) {
    if (peer == request.rank) continue;
    const auto p = static_cast<size_t>(peer);
    sent[p] = MakeHandshakeProof(request.job_token, attempt_prefix, request.rank, peer);
    receives[p] = context.createUnboundBuffer(received[p].data(), received[p].size());
    receives[p]->recv(peer, slot, 0, received[p].size());
    sends[p] = context.createUnboundBuffer(sent[p].data(), sent[p].size());
    sends[p]->send(peer, slot, 0, sent[p].size());
  }

  Mutex mu;
  bool finished = false;  // guarded by mu: the buffers are not to be touched any more
  std::thread watcher([&] {
    absl::StatusOr<std::string> wake =
        request.coordination->Get(WakeKey(attempt_prefix, request.rank), attempt_deadline);
    if (wake.ok() && *wake == kHandshakeDone) return;
    MutexLock lock(&mu);
    if (finished) return;
    for (auto* buffers : {&receives, &sends}) {
      for (auto& buffer : *buffers) {
        if (buffer == nullptr) continue;
        buffer->abortWaitRecv();
        buffer->abortWaitSend();
      }
    }
  });
  // Releases the watcher (setting its key) and joins it, however the handshake ends.
  struct Finish {
    const GlooMeshRequest& request;
    const std::string& attempt_prefix;
    Mutex& mu;
    bool& finished;
    std::thread& watcher;
    ~Finish() {
      {
        MutexLock lock(&mu);
        finished = true;
      }
      (void)request.coordination->Set(WakeKey(attempt_prefix, request.rank), kHandshakeDone);
      watcher.join();
    }
  } finish{request, attempt_prefix, mu, finished, watcher};

  for (int32_t peer = 0; peer < size; ++peer) {
    if (peer == request.rank) continue;
    const auto p = static_cast<size_t>(peer);
    if (!receives[p]->waitRecv(attempt_deadline.RemainingAtLeast1Ms())) {
      return absl::AbortedError(kGaveUp);
    }
    if (!CheckHandshakeProof(received[p], request.job_token, attempt_prefix, peer, request.rank)) {
      return absl::PermissionDeniedError(absl::StrCat(
          "the connection that should come from ", request.task_names[p],
          " did not prove that it belongs to the job (a stranger reached this worker's transport "
          "port first, or the workers do not share the job token)"));
    }
  }
  for (int32_t peer = 0; peer < size; ++peer) {
    if (peer == request.rank) continue;
    if (!sends[static_cast<size_t>(peer)]->waitSend(attempt_deadline.RemainingAtLeast1Ms())) {
      return absl::AbortedError(kGaveUp);
    }
  }
  return absl::OkStatus();
}

// One attempt: Gloo's full mesh on fresh ports under `attempt_prefix`, then the handshake.
// An error here is the attempt's, to be agreed on and retried.
absl::StatusOr<std::shared_ptr<gloo::Context>> Attempt(const GlooMeshRequest& request,
                                                       const std::shared_ptr<gloo::transport::Device>& device,
                                                       const std::string& attempt_prefix, int attempt,
                                                       const Deadline& deadline) {
  const Deadline attempt_deadline = deadline.Within(kFirstAttemptMs << attempt);
  try {
    const int32_t size = static_cast<int32_t>(request.task_names.size());
    auto context = std::make_shared<gloo::rendezvous::Context>(request.rank, size);
    context->setTimeout(attempt_deadline.RemainingAtLeast1Ms());
    CoordinationStore store(*request.coordination, attempt_prefix, attempt_deadline.RemainingAtLeast1Ms());
    std::shared_ptr<gloo::transport::Device> shared_device = device;
    context->connectFullMesh(store, shared_device);
    RETURN_IF_ERROR(Handshake(*context, request, attempt_prefix, attempt_deadline));
    return std::shared_ptr<gloo::Context>(std::move(context));
  } catch (const std::exception& e) {
    return absl::UnavailableError(e.what());
  }
}

// Whether every worker's attempt succeeded: each says how its own went and reads the
// others' verdicts. A worker that failed first wakes every other one's handshake.
// OK: all succeeded. kAborted: some attempt failed (the message says whose and why), try
// again. Anything else: give up (a task died, the deadline passed).
absl::Status Agree(const GlooMeshRequest& request, const std::string& attempt_prefix,
                   const absl::Status& mine, const Deadline& deadline) {
  CoordinationClient& coordination = *request.coordination;
  const int32_t size = static_cast<int32_t>(request.task_names.size());
  if (!mine.ok()) {
    for (int32_t peer = 0; peer < size; ++peer) {
      if (peer != request.rank) RETURN_IF_ERROR(coordination.Set(WakeKey(attempt_prefix, peer), "retry"));
    }
  }
  RETURN_IF_ERROR(coordination.Set(VerdictKey(attempt_prefix, request.rank),
                                   mine.ok() ? kVerdictOk : std::string(mine.message())));
  bool have_cause = !mine.ok() && !absl::IsAborted(mine);
  absl::Status first_failure =
      mine.ok() ? absl::OkStatus()
                : absl::AbortedError(absl::StrCat(request.task_names[static_cast<size_t>(request.rank)],
                                                  ": ", mine.message()));
  for (int32_t peer = 0; peer < size; ++peer) {
    if (peer == request.rank) continue;
    // Watched, so that a peer that died is named rather than waited for.
    absl::StatusOr<std::string> verdict = WatchedGet(coordination, VerdictKey(attempt_prefix, peer), deadline);
    if (absl::IsDeadlineExceeded(verdict.status())) {
      return absl::DeadlineExceededError(absl::StrCat(
          "task ", request.task_names[static_cast<size_t>(peer)], " did not finish connecting in time"));
    }
    if (!verdict.ok()) return verdict.status();
    // The failure to report is a cause, not a worker's "another worker gave up".
    if (*verdict != kVerdictOk && !have_cause) {
      first_failure = absl::AbortedError(
          absl::StrCat(request.task_names[static_cast<size_t>(peer)], ": ", *verdict));
      have_cause = *verdict != kGaveUp;
    }
  }
  return first_failure;
}

}  // namespace

absl::StatusOr<std::shared_ptr<gloo::Context>> ConnectGlooMesh(const GlooMeshRequest& request,
                                                               const Deadline& deadline) {
  ASSIGN_OR_RETURN(std::shared_ptr<gloo::transport::Device> device,
                   CreateGlooDevice(request.hostname, request.background_loop));
  absl::Status last;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    const std::string attempt_prefix = absl::StrCat(request.key_prefix, "try", attempt, "/");
    absl::StatusOr<std::shared_ptr<gloo::Context>> context =
        Attempt(request, device, attempt_prefix, attempt, deadline);
    if (absl::Status peer = request.coordination->PeerHealth(); !peer.ok()) {
      return absl::UnavailableError(
          absl::StrCat("connecting the workers' Gloo transport failed: ", peer.message()));
    }
    const absl::Status agreed = Agree(request, attempt_prefix, context.status(), deadline);
    if (agreed.ok()) return context;
    if (!absl::IsAborted(agreed)) {
      return absl::Status(agreed.code(), absl::StrCat("connecting the workers' Gloo transport (",
                                                      request.key_prefix, ") failed: ", agreed.message()));
    }
    last = agreed;
    if (deadline.Expired()) break;
  }
  const std::string message = absl::StrCat("connecting the workers' Gloo transport (", request.key_prefix,
                                            ") failed: ", last.message());
  return deadline.Expired() || absl::StrContains(last.message(), "imed out")
             ? absl::DeadlineExceededError(message)
             : absl::UnavailableError(message);
}

}  // namespace distribute
