// The VariableHost of a ps task reached over its gRPC variable service
// (variable_grpc_service.h): how a worker of ParameterServerStrategy reads and updates the
// variables each ps task holds.
//
// Every call runs within the caller's deadline, as the deadline of its gRPC call, and none
// waits for a connection (gRPC's wait_for_ready is off), so a dead task fails fast; only
// WaitReady, for start-up, waits for the task to come up. What a caller sees:
//   - an error the service produced (the store's, a refused request) with its code and
//     message, as from a store in process; a refused job token as kUnauthenticated naming
//     the task;
//   - a task that cannot be reached or drops the call: kUnavailable, "parameter server ps:1
//     (127.0.0.1:2222) is unavailable: <gRPC's reason> (while reading variable 'w')";
//   - a missed deadline: kDeadlineExceeded, "parameter server ps:1 (127.0.0.1:2222) did not
//     answer within 500 ms (while adding to variable 'w')";
//   - an answer that breaks the protocol (variables.proto) or declares more than
//     max_tensor_bytes: kInternal naming the task; nothing is allocated for it first.
// A call the server turned away because all its threads were busy never reached the
// store, and is sent again (after 20 ms) until the deadline.
//
// Thread-safety: safe; calls share one channel and may run concurrently.
#ifndef DISTRIBUTE_CORE_SERVER_REMOTE_VARIABLE_HOST_H_
#define DISTRIBUTE_CORE_SERVER_REMOTE_VARIABLE_HOST_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/ps/variable_host.h"
#include "core/server/coordination_limits.h"
#include "core/server/variable_service_limits.h"
#include "core/util/tls_files.h"

namespace distribute {

struct RemoteVariableHostOptions {
  // The job token calls carry; empty: DIST_JOB_TOKEN from the environment, or none (as
  // Server::Options::job_token, so a worker passes its server's).
  std::string job_token;
  // TLS to the task (tls_credentials.h); none set: the DIST_TLS_* variables, or plaintext.
  TlsFiles tls;
  // The largest gRPC message either way: the ps task's Server::Options::max_message_bytes.
  size_t max_message_bytes = kDefaultMaxMessageBytes;
  // The most tensor bytes one call may send or accept (an update's arguments together):
  // the ps task's Server::Options::max_variable_request_bytes.
  uint64_t max_tensor_bytes = kDefaultMaxVariableRequestBytes;
};

// A host for ps task `task` ("ps:1", for messages) whose server listens at `address`
// ("host:port"; "localhost" is dialled as 127.0.0.1). Connects lazily: nothing is sent
// until the first call. kInvalidArgument for an empty task name, a malformed address or
// options out of range; the errors of LoadTlsCredentials for TLS files.
absl::StatusOr<std::unique_ptr<ps::VariableHost>> NewRemoteVariableHost(std::string task, std::string address,
                                                                        RemoteVariableHostOptions options);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_REMOTE_VARIABLE_HOST_H_
