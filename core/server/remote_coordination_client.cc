#include "core/server/remote_coordination_client.h"


#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/sync_stream.h>

#include "absl/strings/str_cat.h"
#include "server/coordination.grpc.pb.h"  // generated
#include "core/server/coordination_limits.h"
#include "core/server/grpc_status.h"
#include "core/server/job_channel.h"
#include "core/server/peer_failure.h"
#include "core/util/mutex.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

namespace pb = ::distribute::coordination;
using std::chrono::milliseconds;

// Beyond the wait a Get or Barrier asks the service for, how long its answer may take to
// arrive before the call gives up on the service.
constexpr milliseconds kAnswerGrace{2000};
// A clean Disconnect must not hold up a Stop for long when the chief is stuck.
constexpr milliseconds kDisconnectTimeout{1000};
// How long Connect waits before it tries again after a service that is going away
// answered at once (the chief's previous server, during its shutdown grace).
constexpr milliseconds kConnectRetryDelay{50};

// When the answer to a Get or Barrier waiting until `deadline` is due. The wait is first
// clamped as the service clamps it, so that a far-off deadline cannot overflow.
Clock::time_point AnswerDue(const Deadline& deadline) {
  return std::min(deadline.when, Clock::now() + milliseconds(kMaxCoordinationWaitMs)) + kAnswerGrace;
}

// What is left of `deadline`, rounded up so that a wait never ends early.
int64_t RemainingMs(const Deadline& deadline) {
  const auto left = deadline.when - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  return std::chrono::ceil<milliseconds>(left).count();
}

}  // namespace

struct RemoteCoordinationClient::Impl {
  explicit Impl(Options o)
      : options(std::move(o)),
        chief(absl::StrCat("chief task ", options.chief_task, " at ", options.chief_address)) {}
  ~Impl() { Stop(); }

  // Every call proves it comes from the job (job_token.h).
  void Authenticate(grpc::ClientContext& context) const { AddJobToken(context, options.job_token); }

  // The end of one call: its status, and whether the service produced it.
  struct Outcome {
    grpc::Status status;
    bool from_service = false;
  };

  // Runs `rpc` (grpc::Status(grpc::ClientContext*)) until `deadline`, with a context that
  // Stop can cancel. A call the server turned away because its threads were all busy
  // (ServerThreadLimit: a burst of requests, maybe from strangers) never reached a handler,
  // so it is sent again, until the deadline.
  template <typename Rpc>
  Outcome Invoke(Clock::time_point deadline, bool wait_for_ready, Rpc&& rpc) ABSL_LOCKS_EXCLUDED(mu) {
    while (true) {
      Outcome outcome = InvokeOnce(deadline, wait_for_ready, rpc);
      if (!IsServerBusy(outcome.status, outcome.from_service)) return outcome;
      MutexLock lock(&mu);
      const Clock::time_point retry_at = Clock::now() + kServerBusyRetryDelay;
      if (retry_at >= deadline) return outcome;
      while (!stopping && Clock::now() < retry_at) cv.wait_until(lock.native(), retry_at);
      if (stopping) return outcome;
    }
  }

  template <typename Rpc>
  Outcome InvokeOnce(Clock::time_point deadline, bool wait_for_ready, Rpc& rpc) ABSL_LOCKS_EXCLUDED(mu) {
    grpc::ClientContext context;
    context.set_deadline(ToSystemClock(deadline));
    context.set_wait_for_ready(wait_for_ready);
    Authenticate(context);
    {
      MutexLock lock(&mu);
      if (stopping) return {grpc::Status(grpc::StatusCode::CANCELLED, "stopped"), false};
      calls.insert(&context);
    }
    grpc::Status status = rpc(&context);
    {
      MutexLock lock(&mu);
      calls.erase(&context);
    }
    const bool from_service = !status.ok() && IsServiceError(context);
    return {std::move(status), from_service};
  }

  // The caller's view of an outcome: the service's own errors as they are; a transport
  // failure explained, `what` naming the request and `allowed_ms` its time.
  absl::Status Result(absl::string_view what, const Outcome& outcome, int64_t allowed_ms)
      ABSL_LOCKS_EXCLUDED(mu) {
    if (outcome.status.ok()) return absl::OkStatus();
    if (outcome.from_service) return FromGrpcStatus(outcome.status);
    MutexLock lock(&mu);
    if (stopping) return Stopped();
    if (!chief_gone.ok()) return absl::UnavailableError(absl::StrCat(what, ": ", chief_gone.message()));
    if (outcome.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
      return absl::DeadlineExceededError(absl::StrCat(what, ": the coordination service on ", chief,
                                                      " did not answer within ", allowed_ms, " ms"));
    }
    const bool unreachable = outcome.status.error_code() == grpc::StatusCode::UNAVAILABLE;
    return absl::Status(static_cast<absl::StatusCode>(outcome.status.error_code()),
                        absl::StrCat(what, ": the call to the coordination service on ", chief,
                                     unreachable ? " could not be made: " : " failed: ",
                                     outcome.status.error_message()));
  }

  absl::Status Stopped() const {
    return absl::UnavailableError(absl::StrCat("the server of task ", options.task, " was stopped"));
  }

  // Records that the service is gone; the first peer failure unless one is known already.
  void MarkChiefGone(absl::string_view detail) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (!chief_gone.ok()) return;
    chief_gone = absl::UnavailableError(absl::StrCat("task ", options.chief_task,
                                                     " is unavailable: the coordination service on ",
                                                     chief, " is gone (", detail, ")"));
    if (peer_failure.ok()) peer_failure = chief_gone;
    cv.notify_all();
  }

  // The Watch stream, for the life of the client: the service's news about lost tasks,
  // and, when it breaks without a Stop, the news that the service itself is gone.
  void RunWatch() ABSL_LOCKS_EXCLUDED(mu) {
    grpc::ClientContext context;  // no deadline: Stop cancels it
    Authenticate(context);
    {
      MutexLock lock(&mu);
      if (stopping) {
        watch_ended = true;
        cv.notify_all();
        return;
      }
      calls.insert(&context);
    }
    pb::WatchRequest request;
    request.set_task(options.task);
    request.set_incarnation(options.incarnation);
    std::unique_ptr<grpc::ClientReader<pb::WatchEvent>> reader = stub->Watch(&context, request);
    pb::WatchEvent event;
    while (reader->Read(&event)) {
      MutexLock lock(&mu);
      if (event.has_ready()) watch_ready = true;
      if (event.has_task_lost() && peer_failure.ok()) {
        peer_failure = absl::UnavailableError(event.task_lost().message());
      }
      cv.notify_all();
    }
    const grpc::Status status = reader->Finish();
    MutexLock lock(&mu);
    calls.erase(&context);
    watch_ended = true;
    watch_end_final = !status.ok() && IsServiceError(context) && status.error_code() != grpc::StatusCode::UNAVAILABLE;
    watch_end = status.error_message().empty()
                    ? absl::StatusCodeToString(static_cast<absl::StatusCode>(status.error_code()))
                    : status.error_message();
    if (!stopping) MarkChiefGone(watch_end);
    cv.notify_all();
  }

  // Heartbeats every heartbeat_interval_ms; a chief that answers none of them for
  // heartbeat_timeout_ms (a stopped or hung process keeps its socket open, so the Watch
  // stream does not break) is gone.
  void RunHeartbeats() ABSL_LOCKS_EXCLUDED(mu) {
    const milliseconds interval(options.heartbeat_interval_ms);
    const milliseconds timeout(options.heartbeat_timeout_ms);
    pb::HeartbeatRequest request;
    request.set_task(options.task);
    request.set_incarnation(options.incarnation);
    Clock::time_point last_answer = Clock::now();
    while (true) {
      {
        MutexLock lock(&mu);
        const Clock::time_point until = Clock::now() + interval;
        while (!stopping && Clock::now() < until) cv.wait_until(lock.native(), until);
        if (stopping) return;
      }
      pb::HeartbeatResponse response;
      const Outcome outcome = Invoke(Clock::now() + timeout, false, [&](grpc::ClientContext* context) {
        return stub->Heartbeat(context, request, &response);
      });
      const Clock::time_point now = Clock::now();
      if (outcome.status.ok() || outcome.from_service) {
        last_answer = now;
      } else if (now - last_answer >= timeout) {
        MutexLock lock(&mu);
        if (!stopping) {
          MarkChiefGone(absl::StrCat(kNoHeartbeatAnswer, options.heartbeat_timeout_ms, " ms"));
        }
      }
    }
  }

  // Registers and opens the Watch stream, until `startup_deadline`. `retry` says whether
  // another attempt may succeed: the service answered that it is going away, or the
  // connection failed. Any other answer of the service (a wrong token, a task lost or
  // already registered) is final.
  absl::Status Join(Clock::time_point startup_deadline, bool* retry) ABSL_LOCKS_EXCLUDED(mu);

  void Stop() ABSL_LOCKS_EXCLUDED(mu) {
    std::call_once(stop_once, [this] {
      bool disconnect = false;
      {
        MutexLock lock(&mu);
        stopping = true;
        disconnect = registered && chief_gone.ok();
      }
      cv.notify_all();
      // Before the Watch stream closes, so the service never takes the close for a crash.
      if (disconnect) {
        grpc::ClientContext context;
        context.set_deadline(ToSystemClock(Clock::now() + kDisconnectTimeout));
        Authenticate(context);
        pb::DisconnectRequest request;
        request.set_task(options.task);
        request.set_incarnation(options.incarnation);
        pb::DisconnectResponse response;
        (void)stub->Disconnect(&context, request, &response);  // best effort: we are leaving
      }
      {
        MutexLock lock(&mu);
        for (grpc::ClientContext* call : calls) call->TryCancel();
      }
      if (watch_thread.joinable()) watch_thread.join();
      if (heartbeat_thread.joinable()) heartbeat_thread.join();
    });
  }

  const Options options;
  const std::string chief;  // "chief task worker:0 at 127.0.0.1:2222", for messages
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::CoordinationService::Stub> stub;

  Mutex mu;
  std::condition_variable cv;
  bool stopping ABSL_GUARDED_BY(mu) = false;
  bool registered ABSL_GUARDED_BY(mu) = false;
  bool watch_ready ABSL_GUARDED_BY(mu) = false;
  bool watch_ended ABSL_GUARDED_BY(mu) = false;
  std::string watch_end ABSL_GUARDED_BY(mu);      // why the Watch stream ended
  // The service ended the stream with its own answer (the task is lost, or watches
  // already), not by going away: trying again cannot help.
  bool watch_end_final ABSL_GUARDED_BY(mu) = false;
  absl::Status chief_gone ABSL_GUARDED_BY(mu);    // set once the service is gone
  absl::Status peer_failure ABSL_GUARDED_BY(mu);  // the first failure known
  std::set<grpc::ClientContext*> calls ABSL_GUARDED_BY(mu);  // in flight, for Stop to cancel
  std::thread watch_thread;
  std::thread heartbeat_thread;
  std::once_flag stop_once;
};

absl::Status RemoteCoordinationClient::Impl::Join(Clock::time_point startup_deadline, bool* retry) {
  *retry = false;
  const auto unreachable = [&](absl::string_view detail) {
    return absl::UnavailableError(absl::StrCat("could not reach the coordination service on ", chief,
                                               " within ", options.startup_timeout_ms, " ms (", detail, ")"));
  };
  pb::RegisterRequest request;
  request.set_task(options.task);
  request.set_incarnation(options.incarnation);
  pb::RegisterResponse response;
  // wait_for_ready: keep trying while nothing listens at the chief's address yet.
  const Outcome outcome = Invoke(startup_deadline, /*wait_for_ready=*/true, [&](grpc::ClientContext* context) {
    return stub->Register(context, request, &response);
  });
  if (outcome.from_service && outcome.status.error_code() != grpc::StatusCode::UNAVAILABLE) {
    const absl::Status status = FromGrpcStatus(outcome.status);
    return absl::Status(status.code(), absl::StrCat("the coordination service on ", chief, " refused task ",
                                                    options.task, ": ", status.message()));
  }
  if (!outcome.status.ok()) {
    // A service shutting down, or a connection to a server going away: the next server
    // on the address may be about to answer.
    *retry = outcome.status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED;
    return unreachable(outcome.status.error_message());
  }
  {
    MutexLock lock(&mu);
    registered = true;
  }

  watch_thread = std::thread([this] { RunWatch(); });
  MutexLock lock(&mu);
  while (!watch_ready && !watch_ended && Clock::now() < startup_deadline) cv.wait_until(lock.native(), startup_deadline);
  if (watch_ready) return absl::OkStatus();
  if (!watch_ended) return unreachable("its watch stream did not open");
  *retry = !watch_end_final;
  return unreachable(absl::StrCat("its watch stream ended: ", watch_end));
}

absl::StatusOr<std::unique_ptr<RemoteCoordinationClient>> RemoteCoordinationClient::Connect(
    Options options) {
  const Options& o = options;
  const std::shared_ptr<grpc::Channel> channel = NewJobChannel(o.chief_address, o.tls, o.max_message_bytes);

  // Each attempt starts afresh (its own watch and state) on the same channel, which
  // reconnects to whatever server listens at the address by then.
  const Clock::time_point startup_deadline = Clock::now() + milliseconds(o.startup_timeout_ms);
  while (true) {
    auto impl = std::make_unique<Impl>(options);
    impl->channel = channel;
    impl->stub = coordination::CoordinationService::NewStub(channel);
    bool retry = false;
    const absl::Status joined = impl->Join(startup_deadline, &retry);
    if (joined.ok()) {
      impl->heartbeat_thread = std::thread([p = impl.get()] { p->RunHeartbeats(); });
      return std::unique_ptr<RemoteCoordinationClient>(new RemoteCoordinationClient(std::move(impl)));
    }
    impl.reset();  // stops what the attempt started
    if (!retry || Clock::now() + kConnectRetryDelay >= startup_deadline) return joined;
    std::this_thread::sleep_for(kConnectRetryDelay);
  }
}

RemoteCoordinationClient::RemoteCoordinationClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RemoteCoordinationClient::~RemoteCoordinationClient() { Stop(); }

void RemoteCoordinationClient::Stop() { impl_->Stop(); }

const std::string& RemoteCoordinationClient::task_name() const { return impl_->options.task; }

absl::Status RemoteCoordinationClient::Set(absl::string_view key, absl::string_view value) {
  RETURN_IF_ERROR(CheckCoordinationKey("key", key));
  RETURN_IF_ERROR(CheckCoordinationValue(key, value.size(), MaxValueBytes(impl_->options.max_message_bytes)));
  pb::KeyValueSetRequest request;
  request.set_key(key.data(), key.size());
  request.set_value(value.data(), value.size());
  pb::KeyValueSetResponse response;
  const int64_t allowed_ms = impl_->options.heartbeat_timeout_ms;
  const Impl::Outcome outcome =
      impl_->Invoke(Clock::now() + milliseconds(allowed_ms), false, [&](grpc::ClientContext* context) {
        return impl_->stub->KeyValueSet(context, request, &response);
      });
  return impl_->Result(absl::StrCat("setting key ", QuotedKey(key)), outcome, allowed_ms);
}

absl::StatusOr<std::string> RemoteCoordinationClient::Get(absl::string_view key, const Deadline& deadline) {
  RETURN_IF_ERROR(CheckCoordinationKey("key", key));
  pb::KeyValueGetRequest request;
  request.set_key(key.data(), key.size());
  request.set_timeout_ms(RemainingMs(deadline));
  pb::KeyValueGetResponse response;
  const Impl::Outcome outcome =
      impl_->Invoke(AnswerDue(deadline), false, [&](grpc::ClientContext* context) {
        return impl_->stub->KeyValueGet(context, request, &response);
      });
  RETURN_IF_ERROR(impl_->Result(absl::StrCat("getting key ", QuotedKey(key)), outcome,
                                std::min(deadline.timeout_ms, kMaxCoordinationWaitMs) + kAnswerGrace.count()));
  return std::move(*response.mutable_value());
}

absl::Status RemoteCoordinationClient::Barrier(absl::string_view name, const Deadline& deadline) {
  RETURN_IF_ERROR(CheckCoordinationKey("barrier name", name));
  pb::BarrierRequest request;
  request.set_name(name.data(), name.size());
  request.set_task(impl_->options.task);
  request.set_timeout_ms(RemainingMs(deadline));
  pb::BarrierResponse response;
  const Impl::Outcome outcome =
      impl_->Invoke(AnswerDue(deadline), false, [&](grpc::ClientContext* context) {
        return impl_->stub->Barrier(context, request, &response);
      });
  return impl_->Result(absl::StrCat("barrier ", QuotedKey(name)), outcome,
                       std::min(deadline.timeout_ms, kMaxCoordinationWaitMs) + kAnswerGrace.count());
}

absl::Status RemoteCoordinationClient::PeerHealth() {
  MutexLock lock(&impl_->mu);
  if (!impl_->peer_failure.ok()) return impl_->peer_failure;
  if (impl_->stopping) return impl_->Stopped();
  return absl::OkStatus();
}

absl::Status RemoteCoordinationClient::WaitForPeerFailure(const Deadline& deadline) {
  MutexLock lock(&impl_->mu);
  while (true) {
    if (!impl_->peer_failure.ok()) return impl_->peer_failure;
    if (impl_->stopping) return impl_->Stopped();
    if (deadline.Expired()) return absl::OkStatus();
    impl_->cv.wait_until(lock.native(), deadline.when);
  }
}

}  // namespace distribute
