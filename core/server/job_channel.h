// What every client of another task's server in the job does the same way (the
// coordination client, the variable host): the channel it dials, the token its calls
// carry, the clock its deadlines are set in, and how it recognises a call the server
// turned away before running it. Only the gRPC translation units include this header.
#ifndef DISTRIBUTE_CORE_SERVER_JOB_CHANNEL_H_
#define DISTRIBUTE_CORE_SERVER_JOB_CHANNEL_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>
#include <grpcpp/support/status.h>

#include "core/server/tls_credentials.h"
#include "core/util/deadline.h"

namespace distribute {

// How long a call the server turned away for lack of threads waits before it is sent again.
inline constexpr std::chrono::milliseconds kServerBusyRetryDelay{20};

// A channel to the server at `address` (dialled as given): messages of at most
// `max_message_bytes` both ways, TLS when `tls` is set, and a reconnect backoff of 100 ms
// to 1 s instead of gRPC's 1 s growing to 2 minutes, so that a client that started before
// the server (a worker before its chief or ps tasks) does not lag behind it.
std::shared_ptr<grpc::Channel> NewJobChannel(const std::string& address, const std::optional<TlsCredentials>& tls,
                                             size_t max_message_bytes);

// Makes a call prove it comes from the job (job_token.h); nothing for a job without one.
void AddJobToken(grpc::ClientContext& context, const std::string& job_token);

// `when` on the system clock, which gRPC's deadlines are set in.
std::chrono::system_clock::time_point ToSystemClock(Clock::time_point when);

// Whether a failed call is gRPC's sync server answering RESOURCE_EXHAUSTED "Server
// Threadpool Exhausted" (its text, from grpc's server_cc.cc) because its thread bound was
// reached: no handler saw the call, so it changed nothing and may be sent again.
// `from_service`: the error carried the service's own mark (grpc_status.h).
bool IsServerBusy(const grpc::Status& status, bool from_service);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_JOB_CHANNEL_H_
