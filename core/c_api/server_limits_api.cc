// C entry points for the bounds of a task's server (dist_server_options_set_limit/get_limit):
// one table row per DIST_SERVER_LIMIT_* constant, naming the Server::Options field, its
// range and how it is read and written.
#include <climits>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handles.h"
#include "core/server/coordination_limits.h"
#include "core/server/server.h"
#include "core/server/variable_service_limits.h"
#include "core/util/status_macros.h"
#include "distribute/server.h"

using distribute::Server;
using distribute::c_api::CheckHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

struct LimitField {
  dist_server_limit_t id;
  const char* name;
  int64_t min;
  int64_t max;
  int64_t (*get)(const Server::Options&);
  void (*set)(Server::Options&, int64_t);
};

constexpr int64_t kDayMs = distribute::kMaxCoordinationWaitMs;
constexpr int64_t kAny = INT64_MAX;

#define DIST_LIMIT_FIELD(id, field, min, max)                                                    \
  LimitField {                                                                                   \
    id, #field, min, max, [](const Server::Options& o) { return static_cast<int64_t>(o.field); }, \
        [](Server::Options& o, int64_t v) { o.field = static_cast<decltype(o.field)>(v); }        \
  }

const LimitField kLimitFields[] = {
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_CONNECTIONS, max_connections, 0, distribute::kMaxConnectionsCap),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_CONNECTIONS_PER_PEER, max_connections_per_peer, 0,
                     distribute::kMaxConnectionsCap),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION, max_streams_per_connection, 1, INT_MAX),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_CONNECTION_IDLE_TIMEOUT_MS, connection_idle_timeout_ms, 1, kDayMs),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_HANDSHAKE_TIMEOUT_MS, handshake_timeout_ms, 1, kDayMs),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_STREAM_IDLE_TIMEOUT_MS, stream_idle_timeout_ms, 1, kDayMs),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_MESSAGE_BYTES, max_message_bytes,
                     static_cast<int64_t>(distribute::kMinMaxMessageBytes), INT_MAX),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_STORE_BYTES, max_store_bytes, 1, kAny),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_STORE_KEYS, max_store_keys, 1, kAny),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_BARRIERS, max_barriers, 1, kAny),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_PENDING_WAITS, max_pending_waits, 0,
                     static_cast<int64_t>(distribute::kMaxPendingWaits)),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_VARIABLE_BYTES, max_variable_bytes, 1, kAny),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_VARIABLES, max_variables, 1, distribute::kMaxVariablesPerTask),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_VARIABLE_REQUEST_BYTES, max_variable_request_bytes, 1, kAny),
    DIST_LIMIT_FIELD(DIST_SERVER_LIMIT_MAX_VARIABLE_INFLIGHT_BYTES, max_variable_inflight_bytes, 1, kAny),
};

#undef DIST_LIMIT_FIELD

absl::StatusOr<const LimitField*> FindLimit(dist_server_limit_t limit) {
  for (const LimitField& field : kLimitFields) {
    if (field.id == limit) return &field;
  }
  return absl::InvalidArgumentError(absl::StrCat("limit is ", limit, ": expected one of the DIST_SERVER_LIMIT_* constants (1 to ",
                                                 std::size(kLimitFields), ")"));
}

}  // namespace

extern "C" {

dist_status_t dist_server_options_set_limit(dist_server_options_t* options, dist_server_limit_t limit,
                                            int64_t value) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(options, "options"));
    ASSIGN_OR_RETURN(const LimitField* field, FindLimit(limit));
    if (value < field->min || value > field->max) {
      return absl::InvalidArgumentError(absl::StrCat(field->name, " (limit ", limit, ") cannot be ", value,
                                                     ": expected ", field->min, " to ", field->max));
    }
    field->set(options->options, value);
    return absl::OkStatus();
  });
}

dist_status_t dist_server_options_get_limit(const dist_server_options_t* options, dist_server_limit_t limit,
                                            int64_t* out_value) {
  ClearOut(out_value);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(options, "options"));
    if (out_value == nullptr) return NullArgument("out_value");
    ASSIGN_OR_RETURN(const LimitField* field, FindLimit(limit));
    *out_value = field->get(options->options);
    return absl::OkStatus();
  });
}

}  // extern "C"
