// What a job token (core/server/job_token.h) may look like, and how two are compared:
// plain string rules, here so that every layer holding a token (server options,
// communication options) checks it the same way.
#ifndef DISTRIBUTE_CORE_UTIL_JOB_TOKEN_RULES_H_
#define DISTRIBUTE_CORE_UTIL_JOB_TOKEN_RULES_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distribute {

// Bounds of a token: long enough to be a secret, short enough for one metadata entry.
inline constexpr size_t kMinJobTokenBytes = 16;
inline constexpr size_t kMaxJobTokenBytes = 1024;

// InvalidArgument unless `token` is empty (none) or 16 to 1024 printable ASCII characters
// without spaces (what gRPC metadata can carry); `source` names where it came from.
absl::Status ValidateJobToken(absl::string_view source, absl::string_view token);

// Whether `given` is `expected`, in time that depends only on their lengths.
bool JobTokenMatches(absl::string_view expected, absl::string_view given);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_JOB_TOKEN_RULES_H_
