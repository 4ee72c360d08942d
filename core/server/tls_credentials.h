// TLS for the job's gRPC servers and the channels between them, through gRPC's own SSL
// credentials. Off unless a certificate is given, in the server or communication options
// or, for jobs a launcher starts, in the environment:
//   DIST_TLS_CERT  this task's certificate chain (PEM, leaf first); every task serves TLS
//                  with it and presents it as a client;
//   DIST_TLS_KEY   its private key (PEM, unencrypted);
//   DIST_TLS_CA    the CAs to trust (PEM). Set: a server requires every client to present
//                  a certificate they sign (mutual TLS), and a client checks the server's
//                  against them. Unset: a server asks clients for no certificate, and a
//                  client checks the server's against gRPC's default roots.
// A client checks that the server's certificate names the host it dials (the host of the
// task's address in the cluster; "localhost" is dialled as 127.0.0.1, so an IP SAN).
//
// The files are read whole, at most kMaxTlsFileBytes each, when a server starts, and
// checked with OpenSSL there, so that a wrong file is a clear error naming it at start
// rather than a channel that never connects. The job token still applies on top.
#ifndef DISTRIBUTE_CORE_SERVER_TLS_CREDENTIALS_H_
#define DISTRIBUTE_CORE_SERVER_TLS_CREDENTIALS_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include <memory>
#include <optional>
#include <string>

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>

#include "absl/status/statusor.h"
#include "core/util/tls_files.h"

namespace distribute {

inline constexpr char kTlsCertEnvironment[] = "DIST_TLS_CERT";
inline constexpr char kTlsKeyEnvironment[] = "DIST_TLS_KEY";
inline constexpr char kTlsCaEnvironment[] = "DIST_TLS_CA";
// Far above any real certificate chain or CA bundle (the Mozilla bundle is about 220 KiB).
inline constexpr size_t kMaxTlsFileBytes = size_t{1} << 20;

// A task's TLS identity and trust: the PEM texts of the files, read and checked.
struct TlsCredentials {
  std::string cert_chain;
  std::string private_key;
  std::string ca_certs;  // "": gRPC's default roots, and no client certificates asked for
  std::string trusted;   // for messages: "a CA in DIST_TLS_CA '/etc/ca.pem'"
};

// The TLS files to use: `configured` when it turns TLS on, else the DIST_TLS_* variables
// when any is set. InvalidArgument for a combination ValidateTlsFiles refuses, naming the
// options' arguments (cert_path, key_path, ca_path) or the variables.
absl::StatusOr<TlsFiles> ResolveTlsFiles(const TlsFiles& configured);

// Reads and checks the files ResolveTlsFiles picks; nullopt when TLS is off. Errors,
// each naming the file and where it was given: NotFound for a missing file;
// InvalidArgument for one that is not a regular file, cannot be read, holds more than
// kMaxTlsFileBytes, holds no PEM certificate (cert, CA) or no unencrypted PEM private key,
// or a key that does not belong to the certificate.
absl::StatusOr<std::optional<TlsCredentials>> LoadTlsCredentials(const TlsFiles& configured);

// What a server listens with: TLS, demanding client certificates when a CA is set, or
// plaintext for nullopt.
std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(const std::optional<TlsCredentials>& tls);
// What a channel dials with: TLS presenting this task's certificate, or plaintext.
std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const std::optional<TlsCredentials>& tls);

// gRPC reports a failed TLS handshake only as a peer it could not reach: the likely
// causes, to append to that error.
std::string TlsConnectHint(const TlsCredentials& tls);
// The same for a task without TLS whose chief's port accepts connections but never
// answered gRPC: the job probably uses TLS.
std::string PlaintextConnectHint(absl::string_view chief_address);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_TLS_CREDENTIALS_H_
