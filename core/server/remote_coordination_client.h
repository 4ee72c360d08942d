// The coordination client of every task but the chief: gRPC calls to the chief's
// coordination service, a Watch stream on which the service pushes peer failures (and
// whose break means the chief is gone), and heartbeats in the background.
//
// Every call has a deadline: a Get or Barrier the wait it asks for plus a grace for the
// answer to travel, anything else heartbeat_timeout_ms (a chief that answers nothing for
// that long counts as gone). Stop cancels every call in flight.
//
// Thread-safety: safe, as CoordinationClient.
#ifndef DISTRIBUTE_CORE_SERVER_REMOTE_COORDINATION_CLIENT_H_
#define DISTRIBUTE_CORE_SERVER_REMOTE_COORDINATION_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "core/server/coordination_client.h"
#include "core/server/tls_credentials.h"

namespace distribute {

class RemoteCoordinationClient final : public CoordinationClient {
 public:
  struct Options {
    std::string task;  // this task, "worker:1"
    uint64_t incarnation = 0;
    std::string chief_task;     // "worker:0"
    std::string chief_address;  // what to dial, "127.0.0.1:2222"
    int64_t startup_timeout_ms = 60000;
    int64_t heartbeat_interval_ms = 500;
    int64_t heartbeat_timeout_ms = 10000;
    size_t max_message_bytes = 0;
    std::string job_token;  // sent with every call ("": none)
    std::optional<TlsCredentials> tls;  // nullopt: plaintext
  };

  // Waits up to startup_timeout_ms for the chief's service, registers, opens the Watch
  // stream and starts the heartbeats. Until that deadline it retries while nothing listens
  // at the chief's address yet, and against a server that is going away (a service that
  // answers it is shutting down or registers no more tasks, a connection that breaks, a
  // Watch stream that ends without the service's own refusal): back-to-back jobs reuse the
  // chief's address, and the previous job's server may still be there.
  // kUnavailable naming the chief task and its address when it cannot be reached in time;
  // the service's refusal (kUnauthenticated, kAlreadyExists, kFailedPrecondition, ...)
  // at once, naming the chief.
  static absl::StatusOr<std::unique_ptr<RemoteCoordinationClient>> Connect(Options options);

  ~RemoteCoordinationClient() override;  // Stop()

  // Disconnects cleanly (so the service does not take this for a crash), cancels every
  // call in flight and joins the background threads. Later calls fail with kUnavailable.
  // Idempotent; bounded by a one-second deadline on the Disconnect call.
  void Stop();

  const std::string& task_name() const override;
  absl::Status Set(absl::string_view key, absl::string_view value) override;
  absl::StatusOr<std::string> Get(absl::string_view key, const Deadline& deadline) override;
  absl::Status Barrier(absl::string_view name, const Deadline& deadline) override;
  absl::Status PeerHealth() override;
  absl::Status WaitForPeerFailure(const Deadline& deadline) override;

  struct Impl;  // the gRPC side, defined in the .cc

 private:
  explicit RemoteCoordinationClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_REMOTE_COORDINATION_CLIENT_H_
