// Parses PEM texts with OpenSSL before gRPC is handed them: gRPC takes any bytes and only
// fails later, as a server that does not start or a channel that never connects, without
// saying which file was wrong. `what` names the text in errors ("DIST_TLS_CERT
// '/etc/node.pem'").
#ifndef DISTRIBUTE_CORE_SERVER_PEM_CHECK_H_
#define DISTRIBUTE_CORE_SERVER_PEM_CHECK_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distribute {

// InvalidArgument unless `pem` holds one or more PEM certificates and nothing that looks
// like a broken one.
absl::Status CheckCertificatesPem(absl::string_view what, absl::string_view pem);

// InvalidArgument unless `key_pem` holds an unencrypted PEM private key (an encrypted one
// is refused, never prompted for) that belongs to the first certificate of `cert_pem`
// (named `cert_what`).
absl::Status CheckPrivateKeyPem(absl::string_view what, absl::string_view key_pem, absl::string_view cert_what,
                                absl::string_view cert_pem);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_PEM_CHECK_H_
