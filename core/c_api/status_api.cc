// C entry points: status names, the thread-local error message, the version.
#include <cstring>

#include "absl/strings/string_view.h"
#include "core/c_api/api_guard.h"
#include "distribute/status.h"
#include "distribute/version.h"

extern "C" {

const char* dist_status_name(dist_status_t code) {
  switch (code) {
    case DIST_OK: return "OK";
    case DIST_CANCELLED: return "CANCELLED";
    case DIST_UNKNOWN: return "UNKNOWN";
    case DIST_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case DIST_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case DIST_NOT_FOUND: return "NOT_FOUND";
    case DIST_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case DIST_PERMISSION_DENIED: return "PERMISSION_DENIED";
    case DIST_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case DIST_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case DIST_ABORTED: return "ABORTED";
    case DIST_OUT_OF_RANGE: return "OUT_OF_RANGE";
    case DIST_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case DIST_INTERNAL: return "INTERNAL";
    case DIST_UNAVAILABLE: return "UNAVAILABLE";
    case DIST_DATA_LOSS: return "DATA_LOSS";
    case DIST_UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "UNKNOWN_STATUS_CODE";
  }
}

const char* dist_last_error_message(void) { return distribute::c_api::LastErrorMessage(); }

void dist_set_last_error_message(const char* message) {
  if (message == nullptr) {
    distribute::c_api::SetLastErrorMessage("");
    return;
  }
  // Bounded before anything is copied: strnlen never reads past the limit.
  size_t length = strnlen(message, DIST_MAX_ERROR_MESSAGE_BYTES + 1);
  if (length > DIST_MAX_ERROR_MESSAGE_BYTES) {
    length = DIST_MAX_ERROR_MESSAGE_BYTES;
    // Back off to the start of a UTF-8 character (continuation bytes are 10xxxxxx).
    while (length > 0 && (static_cast<unsigned char>(message[length]) & 0xC0) == 0x80) --length;
  }
  distribute::c_api::SetLastErrorMessage(absl::string_view(message, length));
}

const char* dist_version(void) { return DIST_VERSION_STRING; }

int32_t dist_version_number(void) { return DIST_VERSION_NUMBER; }

}  // extern "C"
