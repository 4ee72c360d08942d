#include "core/server/tls_credentials.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/server/pem_check.h"
#include "core/util/bounded_file.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

// Where the three files were given, for messages.
struct TlsFileNames {
  const char* cert;
  const char* key;
  const char* ca;
};
constexpr TlsFileNames kOptionNames{"cert_path", "key_path", "ca_path"};
constexpr TlsFileNames kEnvironmentNames{kTlsCertEnvironment, kTlsKeyEnvironment, kTlsCaEnvironment};

std::string Environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

TlsFiles FromEnvironment() {
  return TlsFiles{Environment(kTlsCertEnvironment), Environment(kTlsKeyEnvironment), Environment(kTlsCaEnvironment)};
}

bool AnySet(const TlsFiles& files) {
  return !files.cert_path.empty() || !files.key_path.empty() || !files.ca_path.empty();
}

// "DIST_TLS_CERT '/etc/node.pem'"
std::string Describe(const char* name, const std::string& path) { return absl::StrCat(name, " '", path, "'"); }

}  // namespace

absl::StatusOr<TlsFiles> ResolveTlsFiles(const TlsFiles& configured) {
  if (AnySet(configured)) {
    RETURN_IF_ERROR(ValidateTlsFiles(configured, kOptionNames.cert, kOptionNames.key, kOptionNames.ca));
    return configured;
  }
  TlsFiles from_environment = FromEnvironment();
  RETURN_IF_ERROR(
      ValidateTlsFiles(from_environment, kEnvironmentNames.cert, kEnvironmentNames.key, kEnvironmentNames.ca));
  return from_environment;
}

absl::StatusOr<std::optional<TlsCredentials>> LoadTlsCredentials(const TlsFiles& configured) {
  ASSIGN_OR_RETURN(const TlsFiles files, ResolveTlsFiles(configured));
  if (!files.enabled()) return std::optional<TlsCredentials>();
  const TlsFileNames& names = AnySet(configured) ? kOptionNames : kEnvironmentNames;
  TlsCredentials tls;
  const std::string cert = Describe(names.cert, files.cert_path);
  const std::string key = Describe(names.key, files.key_path);
  ASSIGN_OR_RETURN(tls.cert_chain, ReadBoundedFile(names.cert, files.cert_path, kMaxTlsFileBytes));
  RETURN_IF_ERROR(CheckCertificatesPem(cert, tls.cert_chain));
  ASSIGN_OR_RETURN(tls.private_key, ReadBoundedFile(names.key, files.key_path, kMaxTlsFileBytes));
  RETURN_IF_ERROR(CheckPrivateKeyPem(key, tls.private_key, cert, tls.cert_chain));
  if (files.ca_path.empty()) {
    tls.trusted = "a CA among gRPC's default roots";
  } else {
    const std::string ca = Describe(names.ca, files.ca_path);
    ASSIGN_OR_RETURN(tls.ca_certs, ReadBoundedFile(names.ca, files.ca_path, kMaxTlsFileBytes));
    RETURN_IF_ERROR(CheckCertificatesPem(ca, tls.ca_certs));
    tls.trusted = absl::StrCat("a CA in ", ca);
  }
  return std::optional<TlsCredentials>(std::move(tls));
}

std::shared_ptr<grpc::ServerCredentials> ServerCredentialsFor(const std::optional<TlsCredentials>& tls) {
  if (!tls.has_value()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(tls->ca_certs.empty()
                                                ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                                : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = tls->ca_certs;
  options.pem_key_cert_pairs.push_back({tls->private_key, tls->cert_chain});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ChannelCredentialsFor(const std::optional<TlsCredentials>& tls) {
  if (!tls.has_value()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = tls->ca_certs;  // "": gRPC's default roots
  options.pem_private_key = tls->private_key;
  options.pem_cert_chain = tls->cert_chain;
  return grpc::SslCredentials(options);
}

std::string TlsConnectHint(const TlsCredentials& tls) {
  return absl::StrCat("; this task uses TLS, so the chief must serve TLS too, with a certificate signed by ",
                      tls.trusted, " that names the host this task dials, and, if the chief has a CA, this "
                      "task's certificate must be signed by it");
}

std::string PlaintextConnectHint(absl::string_view chief_address) {
  return absl::StrCat("; a server listens at ", chief_address, " but did not answer this task, which uses no TLS: "
                      "if the job uses TLS, give this task its certificate, key and CA too (DIST_TLS_CERT, "
                      "DIST_TLS_KEY and DIST_TLS_CA, or the options' set_tls_files)");
}

}  // namespace distribute
