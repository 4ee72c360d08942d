#include "core/server/pem_check.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace distribute {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Certificate = std::unique_ptr<X509, X509Free>;
using PrivateKey = std::unique_ptr<EVP_PKEY, KeyFree>;

// A read-only view of `pem` (at most a few MiB: the files are bounded when read).
Bio Reader(absl::string_view pem) { return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()))); }

// OpenSSL's reason for the last failure, and an empty error queue: this thread's queue is
// shared with gRPC's own use of OpenSSL, which must not see our leftovers.
std::string TakeOpenSslReason() {
  const unsigned long code = ERR_peek_last_error();
  const char* reason = code == 0 ? nullptr : ERR_reason_error_string(code);
  ERR_clear_error();
  return reason == nullptr ? std::string("no detail") : std::string(reason);
}

bool IsEndOfInput() {
  const unsigned long code = ERR_peek_last_error();
  return ERR_GET_LIB(code) == ERR_LIB_PEM && ERR_GET_REASON(code) == PEM_R_NO_START_LINE;
}

// Never asked for a passphrase on the terminal: an encrypted key is an error.
int RefusePassphrase(char* /*buffer*/, int /*size*/, int /*writing*/, void* /*user_data*/) { return -1; }

}  // namespace

absl::Status CheckCertificatesPem(absl::string_view what, absl::string_view pem) {
  const Bio bio = Reader(pem);
  if (bio == nullptr) return absl::ResourceExhaustedError(absl::StrCat(what, ": ", TakeOpenSslReason()));
  int count = 0;
  while (Certificate(PEM_read_bio_X509(bio.get(), nullptr, RefusePassphrase, nullptr)) != nullptr) ++count;
  if (count > 0 && IsEndOfInput()) {
    ERR_clear_error();
    return absl::OkStatus();
  }
  if (count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\"): OpenSSL says ",
                     TakeOpenSslReason()));
  }
  return absl::InvalidArgumentError(absl::StrCat(what, ": certificate ", count + 1,
                                                 " does not parse: OpenSSL says ", TakeOpenSslReason()));
}

absl::Status CheckPrivateKeyPem(absl::string_view what, absl::string_view key_pem, absl::string_view cert_what,
                                absl::string_view cert_pem) {
  const Bio key_bio = Reader(key_pem);
  const Bio cert_bio = Reader(cert_pem);
  if (key_bio == nullptr || cert_bio == nullptr) {
    return absl::ResourceExhaustedError(absl::StrCat(what, ": ", TakeOpenSslReason()));
  }
  const PrivateKey key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, RefusePassphrase, nullptr));
  if (key == nullptr) {
    const std::string reason = TakeOpenSslReason();
    if (absl::StrContains(key_pem, "ENCRYPTED")) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " holds an encrypted private key: expected an unencrypted one (gRPC takes no passphrase)"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(what, " holds no PEM private key (\"-----BEGIN PRIVATE KEY-----\"): OpenSSL says ", reason));
  }
  const Certificate leaf(PEM_read_bio_X509(cert_bio.get(), nullptr, RefusePassphrase, nullptr));
  if (leaf == nullptr || X509_check_private_key(leaf.get(), key.get()) != 1) {
    TakeOpenSslReason();
    return absl::InvalidArgumentError(
        absl::StrCat(what, " holds a private key that does not belong to the certificate of ", cert_what,
                     " (the first one of its chain)"));
  }
  return absl::OkStatus();
}

}  // namespace distribute
