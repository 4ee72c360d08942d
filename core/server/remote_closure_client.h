// The gRPC ClosureClient (closure_client.h): the coordinator's channel to one worker
// task's closure service, carrying the job token (and TLS when set).
#ifndef DISTRIBUTE_CORE_SERVER_REMOTE_CLOSURE_CLIENT_H_
#define DISTRIBUTE_CORE_SERVER_REMOTE_CLOSURE_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/server/closure_client.h"
#include "core/util/tls_files.h"

namespace distribute {

struct RemoteClosureClientOptions {
  std::string job_token;  // "" for none
  TlsFiles tls;           // none set: plaintext
  size_t max_message_bytes = size_t{4} << 20;
};

// A client of the worker task `task` ("worker:1") at `address` ("localhost:1234"). Makes
// no call: a worker that is not up yet fails the first call as a lost one.
// InvalidArgument for a bad address or TLS files.
absl::StatusOr<std::unique_ptr<ClosureClient>> NewRemoteClosureClient(
    const std::string& task, const std::string& address, const RemoteClosureClientOptions& options);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_REMOTE_CLOSURE_CLIENT_H_
