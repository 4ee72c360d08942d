// distribute C++ wrapper — a task's server (distribute/server.h): ServerOptions and Server,
// which hosts the job's coordination service on the chief, the variable service on ps
// tasks and the closure service on workers, and gives every task the job's key-value store
// and barriers. Each owns its C handle, is move-only, and destroys it with the object.
#ifndef DISTRIBUTE_CPP_SERVER_HPP_
#define DISTRIBUTE_CPP_SERVER_HPP_

#include <cstddef>
#include <cstdint>
#include <string>

#include "distribute/cpp/options.hpp"
#include "distribute/cpp/status.hpp"
#include "distribute/cpp/value.hpp"
#include "distribute/distribute.h"

namespace dist {

// How a server starts and watches its peers (dist_server_options_t).
class ServerOptions : public detail::Owned<dist_server_options_t, dist_server_options_destroy> {
 public:
  using Owned::Owned;
  static Result<ServerOptions> create() {
    return detail::make_owned<ServerOptions, dist_server_options_t>(dist_server_options_create);
  }
  Status set_startup_timeout_ms(int64_t timeout_ms) {
    return Status::FromCall(dist_server_options_set_startup_timeout_ms(get(), timeout_ms));
  }
  Status set_heartbeat_interval_ms(int64_t interval_ms) {
    return Status::FromCall(dist_server_options_set_heartbeat_interval_ms(get(), interval_ms));
  }
  Status set_heartbeat_timeout_ms(int64_t timeout_ms) {
    return Status::FromCall(dist_server_options_set_heartbeat_timeout_ms(get(), timeout_ms));
  }
  // 16 to 1024 printable characters, the same in every process; null: DIST_JOB_TOKEN.
  Status set_job_token(const char* token) {
    return Status::FromCall(dist_server_options_set_job_token(get(), token));
  }
  Status set_allow_unauthenticated(bool allow) {
    return Status::FromCall(dist_server_options_set_allow_unauthenticated(get(), allow ? 1 : 0));
  }
  // PEM files (certificate chain, its key, the CA; all null: the DIST_TLS_* variables).
  Status set_tls_files(const char* cert_path, const char* key_path, const char* ca_path) {
    return Status::FromCall(dist_server_options_set_tls_files(get(), cert_path, key_path, ca_path));
  }
  // One bound of the server (a DIST_SERVER_LIMIT_* constant; server.h gives each range and
  // default). Out of range, or a limit the library does not know: INVALID_ARGUMENT naming
  // it, and nothing changes.
  Status set_limit(dist_server_limit_t limit, int64_t value) {
    return Status::FromCall(dist_server_options_set_limit(get(), limit, value));
  }
  // The bound these options give: what was set, else its default (0 for the connection
  // caps and pending waits, whose defaults follow the cluster).
  Result<int64_t> limit(dist_server_limit_t limit) const {
    return detail::call_out<int64_t>(dist_server_options_get_limit,
                                     static_cast<const dist_server_options_t*>(get()), limit);
  }
};

// The server of this process's task of a cluster (dist_server_t). Every call may come from
// any thread; the destructor (which stops the server) needs the others to have returned.
class Server : public detail::Owned<dist_server_t, dist_server_destroy> {
 public:
  using Owned::Owned;
  // Starts the server of `cluster`'s current task (a ps task serves variables, a worker
  // task closures, the chief the job's coordination service).
  static Result<Server> create(const Cluster& cluster, const ServerOptions* options = nullptr) {
    return detail::make_owned<Server, dist_server_t>(
        dist_server_create, static_cast<const dist_cluster_t*>(cluster.get()),
        static_cast<const dist_server_options_t*>(options ? options->get() : nullptr));
  }
  Result<int32_t> port() const {
    return detail::call_out<int32_t>(dist_server_port, static_cast<const dist_server_t*>(get()));
  }
  // Stops it (idempotent, about a second at most); join() then returns.
  Status stop() { return Status::FromCall(dist_server_stop(get())); }
  // Waits, without a deadline, until stop() has stopped it (TensorFlow's Server.join()).
  Status join() { return Status::FromCall(dist_server_join(get())); }

  // The job's key-value store: `size` bytes under `key`, and the bytes under a key, waiting
  // up to `timeout_ms` for some task to set it (0: only look).
  Status key_value_set(const char* key, const void* value, size_t size) {
    return Status::FromCall(dist_server_key_value_set(get(), key, value, size));
  }
  Status key_value_set(const char* key, const std::string& value) {
    return key_value_set(key, value.data(), value.size());
  }
  Result<std::string> key_value_get(const char* key, int64_t timeout_ms) {
    dist_value_t* raw = nullptr;
    const dist_status_t code = dist_server_key_value_get(get(), key, timeout_ms, &raw);
    if (code != DIST_OK) return Status::FromCall(code);
    const Value bytes = Value::adopt(raw);
    Result<Span<uint8_t>> data = bytes.data<uint8_t>();
    if (!data) return data.status();
    return std::string(reinterpret_cast<const char*>(data->data()), data->size());
  }
  // Waits until every worker task (the chief included) arrives at barrier `name`.
  Status barrier(const char* name, int64_t timeout_ms) {
    return Status::FromCall(dist_server_barrier(get(), name, timeout_ms));
  }
  // OK while every task is known to be alive; else UNAVAILABLE naming the first one lost.
  Status peer_health() { return Status::FromCall(dist_server_peer_health(get())); }
};

}  // namespace dist

#endif  // DISTRIBUTE_CPP_SERVER_HPP_
