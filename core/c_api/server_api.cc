// C entry points for a task's server and the coordination service.
#include <cstdint>
#include <span>
#include <string>
#include <utility>

#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/coordinator/worker_closure_host.h"
#include "core/util/job_token_rules.h"
#include "core/server/coordination_limits.h"
#include "core/server/server.h"
#include "core/tensor/tensor.h"
#include "core/util/deadline.h"
#include "core/util/status_macros.h"
#include "core/util/tls_files.h"
#include "distribute/server.h"

using distribute::Deadline;
using distribute::Server;
using distribute::Tensor;
using distribute::c_api::Accessor;
using distribute::c_api::CheckHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

// The setters share one shape: check the handle and the value, then store it.
template <typename Store>
dist_status_t SetTimeout(const char* function, dist_server_options_t* options, const char* name,
                         int64_t value_ms, Store store) {
  return Guard(function, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(options, "options"));
    RETURN_IF_ERROR(Server::Options::CheckTimeoutMs(name, value_ms));
    store(options->options, value_ms);
    return absl::OkStatus();
  });
}

// A 1-D uint8 host tensor holding `bytes`.
absl::StatusOr<Tensor> BytesTensor(const std::string& bytes) {
  const int64_t dims[1] = {static_cast<int64_t>(bytes.size())};
  return Tensor::Create(Tensor::Description{static_cast<int32_t>(distribute::DType::kUInt8),
                                            std::span<const int64_t>(dims), bytes.size(), "CPU:0"},
                        bytes.data());
}

}  // namespace

extern "C" {

dist_status_t dist_server_options_create(dist_server_options_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    *out = new dist_server_options{};
    return absl::OkStatus();
  });
}

void dist_server_options_destroy(dist_server_options_t* options) { DestroyHandle(options); }

dist_status_t dist_server_options_set_startup_timeout_ms(dist_server_options_t* options, int64_t timeout_ms) {
  return SetTimeout(__func__, options, "timeout_ms", timeout_ms,
                    [](Server::Options& o, int64_t v) { o.startup_timeout_ms = v; });
}

dist_status_t dist_server_options_set_heartbeat_interval_ms(dist_server_options_t* options,
                                                            int64_t interval_ms) {
  return SetTimeout(__func__, options, "interval_ms", interval_ms,
                    [](Server::Options& o, int64_t v) { o.heartbeat_interval_ms = v; });
}

dist_status_t dist_server_options_set_heartbeat_timeout_ms(dist_server_options_t* options,
                                                           int64_t timeout_ms) {
  return SetTimeout(__func__, options, "timeout_ms", timeout_ms,
                    [](Server::Options& o, int64_t v) { o.heartbeat_timeout_ms = v; });
}

dist_status_t dist_server_options_set_job_token(dist_server_options_t* options, const char* token) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(options, "options"));
    const std::string value = token ? token : "";
    RETURN_IF_ERROR(distribute::ValidateJobToken("token", value));
    options->options.job_token = value;
    return absl::OkStatus();
  });
}

dist_status_t dist_server_options_set_allow_unauthenticated(dist_server_options_t* options,
                                                            int32_t allow) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(options, "options"));
    if (allow != 0 && allow != 1) {
      return absl::InvalidArgumentError(absl::StrCat("allow is ", allow, ": expected 0 or 1"));
    }
    options->options.allow_unauthenticated = allow == 1;
    return absl::OkStatus();
  });
}

dist_status_t dist_server_options_set_tls_files(dist_server_options_t* options, const char* cert_path,
                                               const char* key_path, const char* ca_path) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(options, "options"));
    distribute::TlsFiles files{cert_path ? cert_path : "", key_path ? key_path : "", ca_path ? ca_path : ""};
    RETURN_IF_ERROR(distribute::ValidateTlsFiles(files, "cert_path", "key_path", "ca_path"));
    options->options.tls = std::move(files);
    return absl::OkStatus();
  });
}

dist_status_t dist_server_create(const dist_cluster_t* cluster, const dist_server_options_t* options,
                                 dist_server_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(cluster, "cluster"));
    RETURN_IF_ERROR(distribute::c_api::CheckOptionalHandle(options, "options"));
    if (out == nullptr) return NullArgument("out");
    Server::Options server_options = options == nullptr ? Server::Options{} : options->options;
    // A worker task of a job with ps tasks runs the coordinator's closures (coordinator.h).
    server_options.closure_host_factory = distribute::coordinator::NewWorkerClosureHost;
    ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Start(cluster->spec, server_options));
    *out = new dist_server{std::move(server)};
    return absl::OkStatus();
  });
}

dist_status_t dist_server_port(const dist_server_t* server, int32_t* out_port) {
  return Accessor(__func__, server, "server", out_port, "out_port", [](const dist_server& s, int32_t& port) {
    port = s.server->port();
    return absl::OkStatus();
  });
}

dist_status_t dist_server_stop(dist_server_t* server) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(server, "server"));
    server->server->Stop();
    return absl::OkStatus();
  });
}

dist_status_t dist_server_join(dist_server_t* server) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(server, "server"));
    server->server->Join();
    return absl::OkStatus();
  });
}

void dist_server_destroy(dist_server_t* server) { DestroyHandle(server); }

dist_status_t dist_server_key_value_set(dist_server_t* server, const char* key, const void* value,
                                        size_t size) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(server, "server"));
    if (key == nullptr) return NullArgument("key");
    if (value == nullptr && size > 0) return NullArgument("value");
    return server->server->KeyValueSet(key, value, size);
  });
}

dist_status_t dist_server_key_value_get(dist_server_t* server, const char* key, int64_t timeout_ms,
                                        dist_value_t** out_value) {
  ClearOut(out_value);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(server, "server"));
    if (key == nullptr) return NullArgument("key");
    if (out_value == nullptr) return NullArgument("out_value");
    RETURN_IF_ERROR(distribute::CheckWaitTimeoutMs("timeout_ms", timeout_ms));
    ASSIGN_OR_RETURN(const std::string bytes,
                     server->server->coordination().Get(key, Deadline::AfterMs(timeout_ms)));
    ASSIGN_OR_RETURN(Tensor tensor, BytesTensor(bytes));
    *out_value = new dist_value(distribute::Value(std::move(tensor)));
    return absl::OkStatus();
  });
}

dist_status_t dist_server_barrier(dist_server_t* server, const char* name, int64_t timeout_ms) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(server, "server"));
    if (name == nullptr) return NullArgument("name");
    RETURN_IF_ERROR(distribute::CheckWaitTimeoutMs("timeout_ms", timeout_ms));
    return server->server->coordination().Barrier(name, Deadline::AfterMs(timeout_ms));
  });
}

dist_status_t dist_server_peer_health(dist_server_t* server) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(server, "server"));
    return server->server->coordination().PeerHealth();
  });
}

}  // extern "C"
