// A failed system call as an absl::Status: the code says what kind of failure it was
// (a missing file is kNotFound, a full disk kResourceExhausted), the message what was
// being done and the system's words for errno.
#ifndef DISTRIBUTE_CORE_UTIL_ERRNO_STATUS_H_
#define DISTRIBUTE_CORE_UTIL_ERRNO_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distribute {

absl::StatusCode CodeForErrno(int error);

// "<what>: <strerror(error)>" with CodeForErrno(error).
absl::Status ErrnoStatus(int error, absl::string_view what);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_ERRNO_STATUS_H_
