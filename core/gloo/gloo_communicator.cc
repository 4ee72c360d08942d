#include "core/gloo/gloo_communicator.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/gloo/coordination_store.h"
#include "core/gloo/sigpipe_guard.h"
#include "gloo/allgather.h"
#include "gloo/allgatherv.h"
#include "gloo/broadcast.h"
#include "gloo/common/error.h"
#include "gloo/rendezvous/context.h"
#include "gloo/transport/tcp/device.h"
#include "gloo/transport/unbound_buffer.h"
#include "gloo/types.h"

namespace distribute {
namespace {

std::chrono::milliseconds Remaining(const Deadline& deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline.when - Clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

// The slot prefix of point-to-point exchanges, apart from Gloo's collectives' (0x01-0x08).
constexpr uint8_t kExchangeSlotPrefix = 0x40;

// How long a transport error waits for the coordination service to name the lost task:
// it learns of a dead process from its closed connection within a few hundred ms.
constexpr int64_t kNameLostTaskMs = 1500;
// The same wait when the call's own deadline is due within it: how long past the deadline
// the transport error may still be blamed on a lost task rather than on the timeout.
constexpr int64_t kNameLostNearDeadlineMs = 500;

// Whether a peer failure is a departure rather than a crash: the chief shutting its
// coordination service down (its server stopped; the message is the service's, see
// coordination_service.cc), which it does when it gives up too.
bool LeftOnPurpose(const absl::Status& peer) {
  return absl::StrContains(peer.message(), "coordination service is shutting down");
}

}  // namespace

absl::StatusOr<std::unique_ptr<GlooCommunicator>> GlooCommunicator::Connect(
    CoordinationClient& coordination, const std::string& key_prefix, int32_t rank,
    std::vector<std::string> task_names, const std::string& hostname, const Deadline& deadline) {
  const int32_t size = static_cast<int32_t>(task_names.size());
  if (rank < 0 || rank >= size) {
    return absl::InvalidArgumentError(absl::StrCat("rank ", rank, " is not in 0..", size - 1));
  }
  SigpipeGuard guard;  // Gloo's loop thread, created here, inherits the blocked SIGPIPE
  try {
    gloo::transport::tcp::attr attr;
    attr.hostname = hostname;
    std::shared_ptr<gloo::transport::Device> device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
    context->setTimeout(Remaining(deadline));
    CoordinationStore store(coordination, key_prefix, Remaining(deadline));
    context->connectFullMesh(store, device);
    return std::unique_ptr<GlooCommunicator>(
        new GlooCommunicator(coordination, rank, std::move(task_names), std::move(context)));
  } catch (const std::exception& e) {
    absl::Status peer = coordination.PeerHealth();
    if (!peer.ok()) {
      return absl::UnavailableError(
          absl::StrCat("connecting the workers' Gloo transport failed: ", peer.message()));
    }
    const bool timed_out = deadline.Expired() || absl::StrContains(e.what(), "imeout") ||
                           absl::StrContains(e.what(), "imed out");
    const std::string message =
        absl::StrCat("connecting the workers' Gloo transport (", key_prefix, ") failed: ", e.what());
    return timed_out ? absl::DeadlineExceededError(message) : absl::UnavailableError(message);
  }
}

GlooCommunicator::GlooCommunicator(CoordinationClient& coordination, int32_t rank,
                                   std::vector<std::string> task_names,
                                   std::shared_ptr<gloo::Context> context)
    : coordination_(coordination),
      rank_(rank),
      task_names_(std::move(task_names)),
      context_(std::move(context)) {}

GlooCommunicator::~GlooCommunicator() {
  // Closing the pairs may write to a dead peer.
  SigpipeGuard guard;
  context_.reset();
}

absl::Status GlooCommunicator::Fail(const char* what, const std::string& error,
                                    const Deadline& deadline) {
  const bool timed_out = absl::StrContains(error, "Timed out") || deadline.Expired();
  if (timed_out) {
    // Gloo has closed every connection of this context (a timed-out wait signals all its
    // pairs): survivors whose own deadlines come a moment later see a closed connection
    // and no lost task, and time out too (below).
    failure_ = absl::DeadlineExceededError(absl::StrCat(
        what, " across workers timed out after ", deadline.timeout_ms,
        " ms (a worker stopped responding): ", error));
    return failure_;
  }
  // Close every connection now: a survivor still waiting on this worker learns at once
  // that the communicator is gone, instead of waiting for its deadline.
  context_.reset();
  // Wait to hear which task was lost; when this call's own deadline is near, only a short
  // while past it (see below).
  const Clock::time_point now = Clock::now();
  const Clock::time_point naming_until =
      std::min(now + std::chrono::milliseconds(kNameLostTaskMs),
               std::max(deadline.when, now + std::chrono::milliseconds(kNameLostNearDeadlineMs)));
  const absl::Status peer = coordination_.WaitForPeerFailure(Deadline{naming_until, kNameLostTaskMs});
  if ((peer.ok() || LeftOnPurpose(peer)) && deadline.when <= naming_until) {
    // No task died or stopped, and this call's deadline has come: a peer whose wait on
    // the same silent worker timed out a moment earlier closed its connections (Gloo closes
    // them all on a timeout), and maybe left. This call has timed out as well.
    std::this_thread::sleep_until(deadline.when);
    failure_ = absl::DeadlineExceededError(absl::StrCat(
        what, " across workers timed out after ", deadline.timeout_ms,
        " ms (a worker stopped responding; a peer whose wait timed out first closed its "
        "connections): ", error));
    return failure_;
  }
  failure_ = absl::UnavailableError(
      peer.ok() ? absl::StrCat(what, " across workers failed: lost the connection to a peer: ", error)
                : absl::StrCat(what, " across workers failed: ", peer.message(), " (", error, ")"));
  return failure_;
}

template <typename Op>
absl::Status GlooCommunicator::Call(const char* what, const Deadline& deadline, Op op) {
  if (!failure_.ok()) {
    return absl::Status(failure_.code(),
                        absl::StrCat("the workers' communicator failed earlier: ", failure_.message()));
  }
  SigpipeGuard guard;
  try {
    op(next_tag_++, Remaining(deadline));
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return Fail(what, e.what(), deadline);
  }
}

absl::Status GlooCommunicator::AllGather(const void* in, size_t bytes, void* out,
                                         const Deadline& deadline) {
  return Call("all-gather", deadline, [&](uint32_t tag, std::chrono::milliseconds timeout) {
    gloo::AllgatherOptions options(context_);
    options.setInput(const_cast<char*>(static_cast<const char*>(in)), bytes);
    options.setOutput(static_cast<char*>(out), bytes * task_names_.size());
    options.setTag(tag);
    options.setTimeout(timeout);
    gloo::allgather(options);
  });
}

absl::Status GlooCommunicator::AllGatherV(const void* in, std::span<const size_t> bytes, void* out,
                                          const Deadline& deadline) {
  return Call("all-gather", deadline, [&](uint32_t tag, std::chrono::milliseconds timeout) {
    gloo::AllgathervOptions options(context_);
    options.setInput(const_cast<char*>(static_cast<const char*>(in)), bytes[rank_]);
    options.setOutput(static_cast<char*>(out), std::vector<size_t>(bytes.begin(), bytes.end()));
    options.setTag(tag);
    options.setTimeout(timeout);
    gloo::allgatherv(options);
  });
}

absl::Status GlooCommunicator::Broadcast(void* data, size_t bytes, int32_t root,
                                         const Deadline& deadline) {
  return Call("broadcast", deadline, [&](uint32_t tag, std::chrono::milliseconds timeout) {
    gloo::BroadcastOptions options(context_);
    if (rank_ == root) options.setInput(static_cast<char*>(data), bytes);
    options.setOutput(static_cast<char*>(data), bytes);
    options.setRoot(root);
    options.setTag(tag);
    options.setTimeout(timeout);
    gloo::broadcast(options);
  });
}

absl::Status GlooCommunicator::Exchange(std::span<const Transfer> sends,
                                        std::span<const Transfer> receives,
                                        const Deadline& deadline) {
  return Call("exchange", deadline, [&](uint32_t tag, std::chrono::milliseconds timeout) {
    const uint64_t slot = gloo::Slot::build(kExchangeSlotPrefix, tag);  // + channel
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> posted_receives;
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> posted_sends;
    // Empty messages travel too: a receive posted with room to spare cannot tell that
    // nothing is coming.
    char nothing = 0;
    for (const Transfer& t : receives) {
      void* data = t.bytes > 0 ? t.data : &nothing;
      posted_receives.push_back(context_->createUnboundBuffer(data, t.bytes));
      posted_receives.back()->recv(t.peer, slot + static_cast<uint64_t>(t.channel), 0, t.bytes);
    }
    for (const Transfer& t : sends) {
      void* data = t.bytes > 0 ? t.data : &nothing;
      posted_sends.push_back(context_->createUnboundBuffer(data, t.bytes));
      posted_sends.back()->send(t.peer, slot + static_cast<uint64_t>(t.channel), 0, t.bytes);
    }
    (void)timeout;
    for (auto& buffer : posted_receives) buffer->waitRecv(Remaining(deadline));
    for (auto& buffer : posted_sends) buffer->waitSend(Remaining(deadline));
  });
}

}  // namespace distribute
