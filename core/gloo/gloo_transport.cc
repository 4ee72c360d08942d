#include "core/gloo/gloo_transport.h"

#include <algorithm>
#include <chrono>
#include <exception>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/gloo/gloo_connect.h"
#include "core/gloo/sigpipe_guard.h"
#include "core/server/transport_failure.h"
#include "core/util/status_macros.h"
#include "gloo/common/error.h"
#include "gloo/context.h"
#include "gloo/transport/unbound_buffer.h"
#include "gloo/types.h"

namespace distribute {
namespace {

// The slot prefix of point-to-point exchanges, apart from Gloo's collectives' (0x01-0x08).
constexpr uint8_t kExchangeSlotPrefix = 0x40;

}  // namespace

absl::StatusOr<std::unique_ptr<GlooTransport>> GlooTransport::Connect(
    CoordinationClient& coordination, const std::string& key_prefix, int32_t rank,
    std::vector<std::string> task_names, const std::string& hostname, const std::string& job_token,
    const Deadline& deadline, bool background_loop) {
  const int32_t size = static_cast<int32_t>(task_names.size());
  if (rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " is not in 0..", size - 1));
  }
  SigpipeGuard guard;  // Gloo's loop thread, created here, inherits the blocked SIGPIPE
  const GlooMeshRequest request{&coordination, key_prefix, rank, task_names,
                                hostname, job_token, background_loop};
  ASSIGN_OR_RETURN(std::shared_ptr<gloo::Context> context, ConnectGlooMesh(request, deadline));
  return std::unique_ptr<GlooTransport>(
      new GlooTransport(coordination, rank, std::move(task_names), std::move(context)));
}

GlooTransport::GlooTransport(CoordinationClient& coordination, int32_t rank,
                                   std::vector<std::string> task_names,
                                   std::shared_ptr<gloo::Context> context)
    : coordination_(coordination),
      rank_(rank),
      task_names_(std::move(task_names)),
      context_(std::move(context)),
      watcher_(coordination, [this](const absl::Status&) { ReleaseWaits(); }) {}

GlooTransport::~GlooTransport() {
  watcher_.Stop();
  // Closing the pairs may write to a dead peer.
  SigpipeGuard guard;
  context_.reset();
}

void GlooTransport::ReleaseWaits() {
  MutexLock lock(&pending_mu_);
  peer_died_ = true;
  for (gloo::transport::UnboundBuffer* buffer : pending_) {
    buffer->abortWaitSend();
    buffer->abortWaitRecv();
  }
}

absl::Status GlooTransport::Fail(const char* what, const std::string& error,
                                 const Deadline& deadline) {
  // A timed-out Gloo wait has closed every connection of this context already; either way
  // the context is unusable now.
  const bool timed_out = absl::StrContains(error, "Timed out");
  failure_ = ExplainTransportFailure(coordination_, what, error, timed_out, deadline,
                                     [&] { context_.reset(); });
  return failure_;
}

template <typename Op>
absl::Status GlooTransport::Call(const char* what, const Deadline& deadline, Op op) {
  if (!failure_.ok()) {
    return absl::Status(failure_.code(),
                        absl::StrCat("the workers' communicator failed earlier: ", failure_.message()));
  }
  SigpipeGuard guard;
  try {
    op(next_tag_++, deadline.RemainingAtLeast1Ms());
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return Fail(what, e.what(), deadline);
  }
}

absl::Status GlooTransport::Exchange(std::span<const Transfer> sends,
                                        std::span<const Transfer> receives,
                                        const Deadline& deadline, const OnReceived& on_received) {
  for (const Transfer& t : receives) {
    if (t.relay != nullptr) {
      return absl::InvalidArgumentError("Gloo's transport does not relay messages (Transport::relays)");
    }
  }
  absl::Status stopped;  // the error on_received ended the exchange with
  const absl::Status status = Call("exchange", deadline, [&](uint32_t tag, std::chrono::milliseconds) {
    const uint64_t slot = gloo::Slot::build(kExchangeSlotPrefix, tag);  // + channel
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> posted_receives;
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> posted_sends;
    // Unregistered before the buffers die, however this ends.
    struct Unregister {
      GlooTransport* self;
      ~Unregister() {
        MutexLock lock(&self->pending_mu_);
        self->pending_.clear();
      }
    } unregister{this};
    // Empty messages travel too: a receive posted with room to spare cannot tell that
    // nothing is coming.
    char nothing = 0;
    auto post = [&](const Transfer& t, bool send) {
      void* data = t.bytes > 0 ? t.data : &nothing;
      auto& posted = send ? posted_sends : posted_receives;
      posted.push_back(context_->createUnboundBuffer(data, t.bytes));
      const uint64_t channel_slot = slot + static_cast<uint64_t>(t.channel);
      if (send) {
        posted.back()->send(t.peer, channel_slot, 0, t.bytes);
      } else {
        posted.back()->recv(t.peer, channel_slot, 0, t.bytes);
      }
      MutexLock lock(&pending_mu_);
      if (peer_died_) throw gloo::IoException("a task died (the coordination service says so)");
      pending_.push_back(posted.back().get());
    };
    for (const Transfer& t : receives) post(t, false);
    for (const Transfer& t : sends) post(t, true);
    for (size_t i = 0; i < posted_receives.size(); ++i) {
      if (!posted_receives[i]->waitRecv(deadline.RemainingAtLeast1Ms())) {
        throw gloo::IoException("a wait for a peer was released: a task died");
      }
      if (on_received) {
        absl::StatusOr<std::vector<Transfer>> more = on_received(i);
        if (!more.ok()) {
          stopped = more.status();
          return;
        }
        for (const Transfer& t : *more) post(t, true);
      }
    }
    for (auto& buffer : posted_sends) {
      if (!buffer->waitSend(deadline.RemainingAtLeast1Ms())) {
        throw gloo::IoException("a wait for a peer was released: a task died");
      }
    }
  });
  if (!status.ok() || stopped.ok()) return status;
  // Transfers were left in flight: this communicator cannot be used again.
  SigpipeGuard guard;
  context_.reset();
  failure_ = stopped;
  return stopped;
}

}  // namespace distribute
