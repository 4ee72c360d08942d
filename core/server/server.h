// The in-process server of one task of a cluster (tf.distribute.Server): a gRPC server on
// the address the cluster spec gives the task, and the task's handle on the cluster's
// coordination service. The chief's server hosts that service and talks to it in process;
// every other task's server connects to the chief's, registers, watches for peer failures
// and sends heartbeats (remote_coordination_client.h).
//
// How a lost task is noticed: a task whose process dies closes its Watch stream, and the
// chief marks it lost within about 100 ms; a task that stops answering (SIGSTOP, a hung
// host) is lost after heartbeat_timeout_ms. Either way every other task hears of it on its
// own Watch stream. A chief that dies breaks every Watch stream: every task then reports
// the chief as gone.
//
// A task of the "ps" job (TF's convention) also hosts the variable service
// (variable_grpc_service.h) in front of a VariableStore of its own, which lives as long as
// the server: workers reach it through remote_variable_host.h.
//
// Thread-safety: safe; Stop and Join may be called from any thread, any number of times.
#ifndef DISTRIBUTE_CORE_SERVER_SERVER_H_
#define DISTRIBUTE_CORE_SERVER_SERVER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/cluster/cluster_spec.h"
#include "core/ps/variable_store.h"
#include "core/server/closure_host.h"
#include "core/server/coordination_client.h"
#include "core/server/coordination_limits.h"
#include "core/server/variable_service_limits.h"
#include "core/util/tls_files.h"

namespace distribute {

// The defaults of Server::Options's connection bounds.
inline constexpr int64_t kDefaultMaxStreamsPerConnection = 128;
inline constexpr int64_t kDefaultConnectionIdleTimeoutMs = 120'000;
inline constexpr int64_t kDefaultHandshakeTimeoutMs = 10'000;
// The most either connection cap may be set to.
inline constexpr int64_t kMaxConnectionsCap = int64_t{1} << 20;

class Server {
 public:
  struct Options {
    // How long a task waits for the chief's coordination service at start.
    int64_t startup_timeout_ms = 60000;
    // How often a task tells the chief it is alive.
    int64_t heartbeat_interval_ms = 500;
    // A task (or chief) silent for this long is lost; longer than the interval.
    int64_t heartbeat_timeout_ms = 10000;
    // The largest gRPC message, either direction; bounds values in the key-value store.
    size_t max_message_bytes = kDefaultMaxMessageBytes;
    // The secret every request between the job's servers carries (job_token.h); empty:
    // DIST_JOB_TOKEN from the environment, or none.
    std::string job_token;
    // Run without a token on non-loopback addresses (also DIST_ALLOW_UNAUTHENTICATED=1).
    bool allow_unauthenticated = false;
    // TLS for this task's server and its channel to the chief (tls_credentials.h); none
    // set: the DIST_TLS_* variables, or plaintext.
    TlsFiles tls;
    // The chief's coordination service caps (coordination_limits.h): the key-value
    // store's bytes and keys, the barriers, and the waits of other tasks pending at once
    // (0: the default for the cluster's size, DefaultMaxPendingWaits). The gRPC server's
    // threads are bounded to match (ServerThreadLimit).
    size_t max_store_bytes = kDefaultMaxStoreBytes;
    size_t max_store_keys = kDefaultMaxStoreKeys;
    size_t max_barriers = kDefaultMaxBarriers;
    size_t max_pending_waits = 0;
    // On a ps task: the bounds of its variable store (bytes and count of variables and
    // slots together; past them a creation is ResourceExhausted), the most tensor bytes
    // one request to its variable service may carry (what one call may make the server
    // buffer; workers' RemoteVariableHostOptions::max_tensor_bytes should match), and the
    // most all its requests in flight hold together (at least one request's bound).
    uint64_t max_variable_bytes = DefaultMaxVariableBytes();
    int64_t max_variables = ps::VariableStoreLimits{}.max_variables;
    uint64_t max_variable_request_bytes = kDefaultMaxVariableRequestBytes;
    uint64_t max_variable_inflight_bytes = DefaultMaxVariableInflightBytes();
    // A variable-service request stream that sends nothing for this long is cancelled.
    int64_t stream_idle_timeout_ms = kDefaultStreamIdleTimeoutMs;
    // The connections the server keeps (connection_limiter.h): at most this many in total
    // and from one peer IP address (0: DefaultConnectionLimits for the cluster's size),
    // the newest beyond them cut; at most max_streams_per_connection calls at once on one
    // connection (a client's further calls wait for a free one); a connection without a
    // call for connection_idle_timeout_ms, or whose TLS/HTTP2 handshake takes longer
    // than handshake_timeout_ms, closed (a client of the job reconnects when it next calls).
    int64_t max_connections = 0;
    int64_t max_connections_per_peer = 0;
    int64_t max_streams_per_connection = kDefaultMaxStreamsPerConnection;
    int64_t connection_idle_timeout_ms = kDefaultConnectionIdleTimeoutMs;
    int64_t handshake_timeout_ms = kDefaultHandshakeTimeoutMs;
    // On a worker task (not the chief) of a cluster with ps tasks: what runs the
    // coordinator's closures (closure_host.h); empty: no closure service.
    ClosureHostFactory closure_host_factory;

    // InvalidArgument naming the first option out of range.
    absl::Status Validate() const;
    // InvalidArgument unless 1 <= value_ms <= kMaxCoordinationWaitMs; `name` names it.
    static absl::Status CheckTimeoutMs(absl::string_view name, int64_t value_ms);
  };

  // Starts the server of the cluster's current task: binds the task's address (a host of
  // "localhost" binds 127.0.0.1) and, on any task but the chief, connects to the chief's
  // coordination service, waiting up to startup_timeout_ms for it.
  // Errors: kFailedPrecondition without a current task, or without a job token on a
  // non-loopback address (job_token.h); kInvalidArgument for bad options, a malformed
  // token or a cluster without a chief; kNotFound / kInvalidArgument for a TLS file that
  // is missing, unreadable, too large or not the PEM expected (naming it, before anything
  // listens); kUnauthenticated when the chief's service refuses this task's token;
  // kAlreadyExists when a live incarnation of this task is registered there already
  // (coordination_service.h, "Registration"); kUnavailable when the address cannot be
  // bound (the message says why, e.g. "Address already in use") or the chief cannot be
  // reached in time (naming the chief task and its address; with TLS on, also what the
  // chief's TLS must be, since a failed handshake looks the same).
  static absl::StatusOr<std::unique_ptr<Server>> Start(const ClusterSpec& cluster, const Options& options);

  ~Server();  // Stop() and Join()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // "worker:1": the task this server runs.
  const std::string& task_name() const;
  bool is_chief() const;
  // The port the server listens on.
  int port() const;
  // The job token this server's requests carry and check ("" for none): the secret the
  // cross-worker transport's handshake proves knowledge of.
  const std::string& job_token() const;

  // This task's coordination client; it lives as long as the server. After Stop its calls
  // fail with kUnavailable.
  CoordinationClient& coordination();

  // The variables a ps task's server holds (what its variable service fronts), living as
  // long as the server; nullptr on a task of any other job.
  ps::VariableStore* variable_store();

  // Stores `size` bytes at `value` under `key` in the coordination service's key-value
  // store. A size above what one value may hold (Options::max_message_bytes less the
  // request's overhead) is InvalidArgument before a byte is read.
  absl::Status KeyValueSet(absl::string_view key, const void* value, size_t size);

  // On the chief: its coordination service registers no more tasks (they are told it is
  // shutting down, and retry until they find the next server on this address); the tasks
  // connected carry on. Call it before the last barrier of a job after which the chief's
  // server stops, so that a task going on to the next job can never join this one.
  // No-op on other tasks.
  void StopAcceptingTasks();

  // Disconnects from the coordination service cleanly (or, on the chief, shuts it down,
  // releasing every waiter), then shuts the gRPC server down, cancelling calls still in
  // flight after a short grace. Idempotent; a concurrent second call waits for the first.
  void Stop();
  // Blocks until Stop has been called (by any thread) and has completed.
  void Join();

  struct Impl;  // the gRPC side, defined in the .cc

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_SERVER_H_
