#include "core/util/tls_files.h"

#include "absl/strings/str_cat.h"

namespace distribute {

absl::Status ValidateTlsFiles(const TlsFiles& files, absl::string_view cert_name, absl::string_view key_name,
                              absl::string_view ca_name) {
  const std::pair<absl::string_view, const std::string*> paths[] = {
      {cert_name, &files.cert_path}, {key_name, &files.key_path}, {ca_name, &files.ca_path}};
  for (const auto& [name, path] : paths) {
    if (path->size() > kMaxTlsPathBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " is a path of ", path->size(), " bytes: expected at most ", kMaxTlsPathBytes));
    }
  }
  // Every task is a server as well as a client, so TLS needs an identity to serve with.
  if (files.cert_path.empty() != files.key_path.empty()) {
    const absl::string_view given = files.cert_path.empty() ? key_name : cert_name;
    const absl::string_view missing = files.cert_path.empty() ? cert_name : key_name;
    return absl::InvalidArgumentError(absl::StrCat(given, " is set but ", missing,
                                                   " is not: TLS needs a certificate and its private key"));
  }
  if (!files.ca_path.empty() && files.cert_path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        ca_name, " is set but ", cert_name, " and ", key_name,
        " are not: every task serves TLS, so it needs a certificate and its private key besides the CA"));
  }
  return absl::OkStatus();
}

}  // namespace distribute
