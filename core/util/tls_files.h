// Where a task's TLS identity and trust come from: three PEM file paths, as the server
// options, the communication options and the environment (DIST_TLS_CERT, DIST_TLS_KEY,
// DIST_TLS_CA) give them. Plain path rules, here so that every layer holding them checks
// them the same way; the files themselves are read when a server starts
// (core/server/tls_credentials.h).
#ifndef DISTRIBUTE_CORE_UTIL_TLS_FILES_H_
#define DISTRIBUTE_CORE_UTIL_TLS_FILES_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distribute {

// Longer paths than Linux's PATH_MAX cannot name a file anyway.
inline constexpr size_t kMaxTlsPathBytes = 4096;

struct TlsFiles {
  std::string cert_path;  // this task's certificate chain, leaf first
  std::string key_path;   // the private key of that certificate, unencrypted
  std::string ca_path;    // the CAs to trust; set: peers must present certificates they sign

  // TLS is on when a certificate is given (Validate makes a key come with it).
  bool enabled() const { return !cert_path.empty(); }
  bool operator==(const TlsFiles&) const = default;
};

// InvalidArgument unless the paths are all empty (no TLS), or a certificate and a key are
// both given (with or without a CA), each at most kMaxTlsPathBytes. `cert_name`,
// `key_name` and `ca_name` name the three where they came from (arguments, variables).
absl::Status ValidateTlsFiles(const TlsFiles& files, absl::string_view cert_name, absl::string_view key_name,
                              absl::string_view ca_name);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_UTIL_TLS_FILES_H_
