// C entry points for MultiWorkerMirroredStrategy's communication options.
#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/util/status_macros.h"
#include "distribute/strategy.h"

using distribute::CommunicationOptions;
using distribute::c_api::CheckHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

// Checks a changed copy and stores it only when valid, so a rejected value changes nothing.
dist_status_t Change(const char* function, dist_communication_options_t* options,
                     absl::FunctionRef<void(CommunicationOptions&)> change) {
  return Guard(function, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(options, "options"));
    CommunicationOptions changed = options->options;
    change(changed);
    RETURN_IF_ERROR(changed.Validate());
    options->options = changed;
    return absl::OkStatus();
  });
}

}  // namespace

extern "C" {

dist_status_t dist_communication_options_create(dist_communication_options_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    *out = new dist_communication_options{};
    return absl::OkStatus();
  });
}

void dist_communication_options_destroy(dist_communication_options_t* options) { DestroyHandle(options); }

dist_status_t dist_communication_options_set_implementation(
    dist_communication_options_t* options, dist_communication_implementation_t implementation) {
  return Change(__func__, options, [&](CommunicationOptions& o) {
    o.implementation = static_cast<distribute::CommunicationImplementation>(implementation);
  });
}

dist_status_t dist_communication_options_set_shared_memory(dist_communication_options_t* options,
                                                           dist_shared_memory_t mode) {
  return Change(__func__, options,
                [&](CommunicationOptions& o) { o.shared_memory = static_cast<distribute::SharedMemoryMode>(mode); });
}

dist_status_t dist_communication_options_set_bytes_per_pack(dist_communication_options_t* options,
                                                            int64_t bytes_per_pack) {
  return Change(__func__, options, [&](CommunicationOptions& o) { o.bytes_per_pack = bytes_per_pack; });
}

dist_status_t dist_communication_options_set_timeout_ms(dist_communication_options_t* options,
                                                        int64_t timeout_ms) {
  return Change(__func__, options, [&](CommunicationOptions& o) { o.timeout_ms = timeout_ms; });
}

dist_status_t dist_communication_options_set_replicas_per_worker(
    dist_communication_options_t* options, int32_t replicas_per_worker) {
  return Change(__func__, options,
                [&](CommunicationOptions& o) { o.replicas_per_worker = replicas_per_worker; });
}

dist_status_t dist_communication_options_set_job_token(dist_communication_options_t* options,
                                                       const char* token) {
  return Change(__func__, options, [&](CommunicationOptions& o) { o.job_token = token ? token : ""; });
}

dist_status_t dist_communication_options_set_tls_files(dist_communication_options_t* options,
                                                       const char* cert_path, const char* key_path,
                                                       const char* ca_path) {
  return Change(__func__, options, [&](CommunicationOptions& o) {
    o.tls = distribute::TlsFiles{cert_path ? cert_path : "", key_path ? key_path : "", ca_path ? ca_path : ""};
  });
}

}  // extern "C"
