// How an error message quotes a string that came from outside the library (a name, a
// path, an address, a key): escaped, so that the message stays one printable line, and
// cut to a bounded prefix, so that a 1 MiB argument does not come back as a 1 MiB message
// (and is not copied again into every message that wraps it).
#ifndef DISTRIBUTE_CORE_UTIL_QUOTE_H_
#define DISTRIBUTE_CORE_UTIL_QUOTE_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace distribute {

// The most bytes of a quoted string a message shows.
inline constexpr size_t kMaxQuotedBytes = 256;

// 'text' with C escapes for quotes, backslashes and bytes outside printable ASCII; when
// `text` is longer than `max_bytes`, its first `max_bytes` bytes, an ellipsis and the full
// length: 'abc...' (1048576 bytes). The result is at most 4 * max_bytes + 32 bytes.
std::string Quoted(absl::string_view text, size_t max_bytes = kMaxQuotedBytes);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_QUOTE_H_
