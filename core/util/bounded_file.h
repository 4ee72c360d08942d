// Reading a small file whole, with a bound on its size: what a configuration file named
// by a user (a certificate, a key) needs, so that a wrong path (a device, a huge file)
// gives a clear error instead of filling memory or blocking.
#ifndef DISTRIBUTE_CORE_UTIL_BOUNDED_FILE_H_
#define DISTRIBUTE_CORE_UTIL_BOUNDED_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distribute {

// The contents of the regular file at `path`, at most `max_bytes` of them. Errors, each
// naming `what` and the path: NotFound when nothing is there; InvalidArgument when it is
// not a regular file (a directory, a FIFO: never opened for reading, so a FIFO cannot
// block), cannot be read (the system's reason), or holds more than `max_bytes`.
absl::StatusOr<std::string> ReadBoundedFile(absl::string_view what, const std::string& path, size_t max_bytes);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_BOUNDED_FILE_H_
