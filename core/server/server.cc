#include "core/server/server.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <random>
#include <system_error>
#include <utility>
#include <vector>

#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/impl/service_type.h>

#include "absl/strings/str_cat.h"
#include "core/server/closure_grpc_service.h"
#include "core/server/connection_limiter.h"
#include "core/server/coordination_service.h"
#include "core/server/grpc_services.h"
#include "core/server/job_token.h"
#include "core/server/local_coordination_client.h"
#include "core/server/remote_coordination_client.h"
#include "core/server/listening_probe.h"
#include "core/server/tls_credentials.h"
#include "core/server/variable_grpc_service.h"
#include "core/util/mutex.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// How long Stop lets calls still in flight finish before gRPC cancels them. Every handler
// is released by then (the service shut down, or polls for cancellation), so this only
// bounds a straggler.
constexpr std::chrono::milliseconds kShutdownGrace{200};

// Why listening on `address` fails (gRPC only says that it did), or "" when it now works.
std::string ListenProblem(const std::string& address) {
  const HostPort split = SplitTaskAddress(address);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = getaddrinfo(split.host.c_str(), split.port.c_str(), &hints, &found); rc != 0) {
    return absl::StrCat("cannot resolve '", split.host, "': ", gai_strerror(rc));
  }
  std::string problem;
  for (addrinfo* candidate = found; candidate != nullptr && problem.empty(); candidate = candidate->ai_next) {
    const int fd = socket(candidate->ai_family, candidate->ai_socktype | SOCK_CLOEXEC, candidate->ai_protocol);
    if (fd < 0) {
      problem = std::generic_category().message(errno);
      continue;
    }
    const int one = 1;  // as gRPC does, so that a closed connection in TIME_WAIT is no obstacle
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, candidate->ai_addr, candidate->ai_addrlen) != 0 || listen(fd, 1) != 0) {
      problem = std::generic_category().message(errno);
    }
    close(fd);
  }
  freeaddrinfo(found);
  return problem;
}

// A gRPC argument in milliseconds (an int): Validate bounds every timeout by a day.
int ClampedMs(int64_t value_ms) { return static_cast<int>(std::min<int64_t>(value_ms, INT_MAX)); }

uint64_t NewIncarnation() {
  std::random_device device;
  const uint64_t value = (uint64_t{device()} << 32) ^ device();
  return value == 0 ? 1 : value;
}

}  // namespace

absl::Status Server::Options::CheckTimeoutMs(absl::string_view name, int64_t value_ms) {
  if (value_ms >= 1 && value_ms <= kMaxCoordinationWaitMs) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(name, " is ", value_ms, " ms: expected 1 to ",
                                                 kMaxCoordinationWaitMs, " ms (a day)"));
}

absl::Status Server::Options::Validate() const {
  RETURN_IF_ERROR(CheckTimeoutMs("startup_timeout_ms", startup_timeout_ms));
  RETURN_IF_ERROR(CheckTimeoutMs("heartbeat_interval_ms", heartbeat_interval_ms));
  RETURN_IF_ERROR(CheckTimeoutMs("heartbeat_timeout_ms", heartbeat_timeout_ms));
  if (heartbeat_timeout_ms <= heartbeat_interval_ms) {
    return absl::InvalidArgumentError(absl::StrCat(
        "heartbeat_timeout_ms (", heartbeat_timeout_ms, ") must be longer than heartbeat_interval_ms (",
        heartbeat_interval_ms, "), or live tasks would be declared lost"));
  }
  if (max_message_bytes < kMinMaxMessageBytes || max_message_bytes > size_t{INT_MAX}) {
    return absl::InvalidArgumentError(absl::StrCat("max_message_bytes is ", max_message_bytes,
                                                   ": expected ", kMinMaxMessageBytes, " to ", INT_MAX));
  }
  if (max_store_bytes == 0 || max_store_keys == 0 || max_barriers == 0) {
    return absl::InvalidArgumentError(absl::StrCat("max_store_bytes (", max_store_bytes, "), max_store_keys (",
                                                   max_store_keys, ") and max_barriers (", max_barriers,
                                                   ") must be at least 1"));
  }
  if (max_pending_waits > kMaxPendingWaits) {
    return absl::InvalidArgumentError(absl::StrCat("max_pending_waits is ", max_pending_waits,
                                                   ": expected 0 (the default) to ", kMaxPendingWaits));
  }
  if (max_variable_bytes == 0 || max_variable_request_bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat("max_variable_bytes (", max_variable_bytes,
                                                   ") and max_variable_request_bytes (", max_variable_request_bytes,
                                                   ") must be at least 1"));
  }
  if (max_connections < 0 || max_connections > kMaxConnectionsCap || max_connections_per_peer < 0 ||
      max_connections_per_peer > kMaxConnectionsCap) {
    return absl::InvalidArgumentError(absl::StrCat("max_connections (", max_connections,
                                                   ") and max_connections_per_peer (", max_connections_per_peer,
                                                   ") must be 0 (the default) to ", kMaxConnectionsCap));
  }
  if (max_streams_per_connection < 1 || max_streams_per_connection > INT_MAX) {
    return absl::InvalidArgumentError(absl::StrCat("max_streams_per_connection is ", max_streams_per_connection,
                                                   ": expected 1 to ", INT_MAX));
  }
  RETURN_IF_ERROR(CheckTimeoutMs("connection_idle_timeout_ms", connection_idle_timeout_ms));
  RETURN_IF_ERROR(CheckTimeoutMs("handshake_timeout_ms", handshake_timeout_ms));
  RETURN_IF_ERROR(CheckTimeoutMs("stream_idle_timeout_ms", stream_idle_timeout_ms));
  if (max_variable_inflight_bytes < max_variable_request_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_variable_inflight_bytes (", max_variable_inflight_bytes, ") is less than max_variable_request_bytes (",
        max_variable_request_bytes, "): the largest request allowed could never be received"));
  }
  if (max_variables < 1 || max_variables > kMaxVariablesPerTask) {
    return absl::InvalidArgumentError(absl::StrCat("max_variables is ", max_variables, ": expected 1 to ",
                                                   kMaxVariablesPerTask));
  }
  return absl::OkStatus();
}

struct Server::Impl {
  std::string task;
  std::string job_token;
  size_t max_value_bytes = 0;
  bool chief = false;
  int port = 0;
  // Declared in the order they must be built; destroyed in reverse.
  std::unique_ptr<CoordinationService> service;  // on the chief
  std::unique_ptr<grpc::Service> coordination_grpc;
  std::unique_ptr<grpc::Service> task_grpc;
  std::unique_ptr<ps::VariableStore> variables;  // on a ps task
  std::unique_ptr<grpc::Service> variable_grpc;
  std::unique_ptr<ClosureHost> closure_host;  // on a worker task, with a factory
  std::unique_ptr<grpc::Service> closure_grpc;
  std::unique_ptr<grpc::Server> grpc_server;
  std::unique_ptr<ConnectionLimiter> connections;  // stops watching before the server goes
  std::unique_ptr<CoordinationClient> client;
  RemoteCoordinationClient* remote = nullptr;  // `client`, on every other task

  std::once_flag stop_once;
  Mutex mu;
  std::condition_variable cv;
  bool stopped ABSL_GUARDED_BY(mu) = false;
};

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ClusterSpec& cluster, const Options& options) {
  RETURN_IF_ERROR(options.Validate());
  if (!cluster.has_task()) {
    return absl::FailedPreconditionError(
        "the cluster has no current task: a server runs one task of the cluster (set it with SetTask or "
        "TF_CONFIG's \"task\")");
  }
  ASSIGN_OR_RETURN(const ClusterTask self, cluster.current_task());
  ASSIGN_OR_RETURN(const ClusterTask chief, cluster.chief());
  ASSIGN_OR_RETURN(const std::string token, ResolveJobToken(options.job_token));
  if (token.empty()) RETURN_IF_ERROR(CheckUnauthenticatedJob(cluster, options.allow_unauthenticated));
  ASSIGN_OR_RETURN(std::optional<TlsCredentials> tls, LoadTlsCredentials(options.tls));
  const std::string* address = &self.address;

  auto impl = std::make_unique<Impl>();
  impl->task = self.name();
  impl->job_token = token;
  impl->max_value_bytes = MaxValueBytes(options.max_message_bytes);
  impl->chief = chief.job == self.job && chief.index == self.index;
  const std::string chief_name = chief.name();
  const uint64_t incarnation = NewIncarnation();
  const size_t cluster_tasks = cluster.tasks().size();
  const size_t max_pending_waits =
      options.max_pending_waits != 0 ? options.max_pending_waits : DefaultMaxPendingWaits(cluster_tasks);

  if (impl->chief) {
    CoordinationService::Options service_options;
    for (const ClusterTask& task : cluster.tasks()) service_options.tasks.push_back(task.name());
    for (const ClusterTask& task : cluster.workers()) service_options.barrier_tasks.push_back(task.name());
    // A parameter-server job's worker tasks only serve the coordinator, which re-queues a
    // lost worker's closures and uses it again once it is restarted.
    if (!cluster.tasks(Job::kPs).empty()) {
      for (const ClusterTask& task : cluster.tasks(Job::kWorker)) {
        if (task.name() != impl->task) service_options.recoverable_tasks.push_back(task.name());
      }
    }
    service_options.heartbeat_timeout_ms = options.heartbeat_timeout_ms;
    service_options.max_value_bytes = MaxValueBytes(options.max_message_bytes);
    service_options.max_store_bytes = options.max_store_bytes;
    service_options.max_store_keys = options.max_store_keys;
    service_options.max_barriers = options.max_barriers;
    service_options.max_pending_waits = max_pending_waits;
    impl->service = std::make_unique<CoordinationService>(std::move(service_options));
    RETURN_IF_ERROR(impl->service->Register(impl->task, incarnation, /*expects_heartbeats=*/false));
    impl->coordination_grpc = NewCoordinationGrpcService(impl->service.get(), token);
  }
  impl->task_grpc = NewTaskGrpcService(impl->task, token);
  if (self.job == Job::kPs) {
    impl->variables = std::make_unique<ps::VariableStore>(
        ps::VariableStoreLimits{options.max_variable_bytes, options.max_variables});
    impl->variable_grpc = NewVariableGrpcService(
        impl->variables.get(),
        VariableServiceOptions{token, options.max_message_bytes, options.max_variable_request_bytes,
                               options.max_variable_inflight_bytes, options.stream_idle_timeout_ms});
  }

  if (self.job == Job::kWorker && !impl->chief && options.closure_host_factory &&
      !cluster.tasks(Job::kPs).empty()) {
    ClosureHostContext host_context{cluster, token, options.tls, incarnation};
    ASSIGN_OR_RETURN(impl->closure_host, options.closure_host_factory(host_context));
    impl->closure_grpc = NewClosureGrpcService(impl->closure_host.get(), token, incarnation);
  }

  const std::string listen_address = DialAddress(*address);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen_address, ServerCredentialsFor(tls), &impl->port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  // gRPC sets SO_REUSEPORT on Linux by default: two servers could then share one port and
  // a task would never learn that its address is taken.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // The connection bounds gRPC keeps itself; the caps on their count are the limiter's.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(options.max_streams_per_connection));
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, ClampedMs(options.connection_idle_timeout_ms));
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, ClampedMs(options.handshake_timeout_ms));
  // One thread per call in flight (the sync server's model), so the threads are bounded
  // by what the service lets pend; past the bound gRPC answers RESOURCE_EXHAUSTED.
  grpc::ResourceQuota quota(absl::StrCat("server of task ", impl->task));
  const int service_threads =
      (impl->variable_grpc ? kVariableServiceThreads : 0) + (impl->closure_grpc ? kClosureServiceThreads : 0);
  quota.SetMaxThreads(service_threads + (impl->chief ? ServerThreadLimit(cluster_tasks, max_pending_waits)
                                                     : ServerThreadLimit(0, 0)));
  builder.SetResourceQuota(quota);
  builder.RegisterService(impl->task_grpc.get());
  if (impl->coordination_grpc) builder.RegisterService(impl->coordination_grpc.get());
  if (impl->variable_grpc) builder.RegisterService(impl->variable_grpc.get());
  if (impl->closure_grpc) builder.RegisterService(impl->closure_grpc.get());
  impl->grpc_server = builder.BuildAndStart();
  if (impl->grpc_server == nullptr || impl->port == 0) {
    std::string problem = ListenProblem(listen_address);
    if (problem.empty()) problem = "gRPC could not listen there";
    impl->grpc_server.reset();
    return absl::UnavailableError(absl::StrCat("task ", impl->task, " cannot listen on ", listen_address,
                                               " (its address in the cluster spec is ", *address,
                                               "): ", problem));
  }

  ConnectionLimits connection_limits = DefaultConnectionLimits(cluster_tasks);
  if (options.max_connections != 0) connection_limits.max_connections = options.max_connections;
  if (options.max_connections_per_peer != 0) connection_limits.max_connections_per_peer = options.max_connections_per_peer;
  impl->connections = ConnectionLimiter::Watch(impl->port, connection_limits);

  if (impl->chief) {
    impl->client = std::make_unique<LocalCoordinationClient>(impl->service.get(), impl->task);
  } else {
    RemoteCoordinationClient::Options client_options;
    client_options.task = impl->task;
    client_options.incarnation = incarnation;
    client_options.chief_task = chief_name;
    client_options.chief_address = DialAddress(chief.address);
    client_options.startup_timeout_ms = options.startup_timeout_ms;
    client_options.heartbeat_interval_ms = options.heartbeat_interval_ms;
    client_options.heartbeat_timeout_ms = options.heartbeat_timeout_ms;
    client_options.max_message_bytes = options.max_message_bytes;
    client_options.job_token = token;
    client_options.tls = tls;
    absl::StatusOr<std::unique_ptr<RemoteCoordinationClient>> client =
        RemoteCoordinationClient::Connect(std::move(client_options));
    if (!client.ok()) {
      impl->grpc_server->Shutdown(std::chrono::system_clock::now());
      impl->grpc_server->Wait();
      if (tls.has_value() && absl::IsUnavailable(client.status())) {
        return absl::UnavailableError(absl::StrCat(client.status().message(), TlsConnectHint(*tls)));
      }
      // gRPC reports a plaintext task meeting a TLS chief as a deadline too: when the
      // chief's port answers, that is the likely cause.
      if (absl::IsUnavailable(client.status()) &&
          AcceptsConnections(DialAddress(chief.address), std::chrono::milliseconds(500))) {
        return absl::UnavailableError(absl::StrCat(client.status().message(), PlaintextConnectHint(chief.address)));
      }
      return client.status();
    }
    impl->remote = client->get();
    impl->client = std::move(*client);
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  Stop();
  Join();
}

const std::string& Server::task_name() const { return impl_->task; }
bool Server::is_chief() const { return impl_->chief; }
int Server::port() const { return impl_->port; }
const std::string& Server::job_token() const { return impl_->job_token; }
CoordinationClient& Server::coordination() { return *impl_->client; }
ps::VariableStore* Server::variable_store() { return impl_->variables.get(); }

absl::Status Server::KeyValueSet(absl::string_view key, const void* value, size_t size) {
  // Checked before the bytes are viewed: a size beyond any value (up to SIZE_MAX) must
  // neither be read nor make a string_view.
  RETURN_IF_ERROR(CheckCoordinationValue(key, size, impl_->max_value_bytes));
  return impl_->client->Set(key, absl::string_view(size > 0 ? static_cast<const char*>(value) : "", size));
}

void Server::StopAcceptingTasks() {
  if (impl_->service != nullptr) impl_->service->CloseRegistrations();
}

void Server::Stop() {
  std::call_once(impl_->stop_once, [this] {
    if (impl_->remote != nullptr) impl_->remote->Stop();
    if (impl_->service != nullptr) impl_->service->Shutdown();
    impl_->grpc_server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
    impl_->grpc_server->Wait();
    {
      MutexLock lock(&impl_->mu);
      impl_->stopped = true;
    }
    impl_->cv.notify_all();
  });
}

void Server::Join() {
  MutexLock lock(&impl_->mu);
  while (!impl_->stopped) impl_->cv.wait(lock.native());
}

}  // namespace distribute
