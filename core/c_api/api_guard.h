// The one way a C entry point runs core code: catch everything, record the thread-local
// error message prefixed with the function name, and map absl::Status to dist_status_t.
#ifndef DISTRIBUTE_CORE_C_API_API_GUARD_H_
#define DISTRIBUTE_CORE_C_API_API_GUARD_H_

#include <exception>
#include <new>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "core/c_api/handle_tag.h"
#include "distribute/status.h"

namespace distribute::c_api {

// This thread's last error message ("" after a successful call).
const char* LastErrorMessage();

// Records `status` as this thread's last error (cleared when OK) and returns its code.
dist_status_t Record(absl::string_view function, const absl::Status& status);

// Replaces this thread's last error message with `message` (a callback's own, through
// dist_set_last_error_message).
void SetLastErrorMessage(absl::string_view message);

// Clears this thread's last error before a C callback runs, so that CallbackStatus reports
// the callback's own message and never a stale one.
inline void ClearLastError() { Record("", absl::OkStatus()); }

// InvalidArgument "<argument> is NULL" for a required pointer.
absl::Status NullArgument(absl::string_view argument);

// Runs `body` (returning absl::Status) with every exception turned into a status.
template <typename Body>
dist_status_t Guard(absl::string_view function, Body&& body) noexcept {
  try {
    return Record(function, body());
  } catch (const std::bad_alloc&) {
    return Record(function, absl::ResourceExhaustedError("out of memory"));
  } catch (const std::exception& e) {
    return Record(function, absl::InternalError(e.what()));
  } catch (...) {
    return Record(function, absl::InternalError("unknown exception"));
  }
}

// Sets an out-parameter to its empty value before the body runs, so failures never leave
// it half-written.
template <typename T>
void ClearOut(T* out) {
  if (out != nullptr) *out = T{};
}

// A read-only accessor: checks the handle (handle_tag.h) and the out-parameter, then lets
// `read(const Handle&, T&)` (returning absl::Status) fill the output.
template <typename Handle, typename T, typename Read>
dist_status_t Accessor(absl::string_view function, const Handle* handle, absl::string_view handle_arg,
                       T* out, absl::string_view out_arg, Read&& read) noexcept {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    if (absl::Status checked = CheckHandle(handle, handle_arg); !checked.ok()) return checked;
    if (out == nullptr) return NullArgument(out_arg);
    return read(*handle, *out);
  });
}

}  // namespace distribute::c_api

#endif  // DISTRIBUTE_CORE_C_API_API_GUARD_H_
