#include "core/gloo/handshake_proof.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace distribute {

HandshakeProof MakeHandshakeProof(absl::string_view job_token, absl::string_view key_prefix,
                                  int32_t from, int32_t to) {
  // NUL separators: no prefix and rank pair can spell another's message.
  const std::string message =
      absl::StrCat("distribute transport handshake v1", absl::string_view("\0", 1), key_prefix,
                   absl::string_view("\0", 1), from, absl::string_view("\0", 1), to);
  HandshakeProof proof{};
  unsigned int length = 0;
  static const char kNoKey = 0;  // HMAC wants a non-null key even when empty
  HMAC(EVP_sha256(), job_token.empty() ? &kNoKey : job_token.data(), static_cast<int>(job_token.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), proof.data(), &length);
  return proof;
}

bool CheckHandshakeProof(const HandshakeProof& received, absl::string_view job_token,
                         absl::string_view key_prefix, int32_t from, int32_t to) {
  const HandshakeProof expected = MakeHandshakeProof(job_token, key_prefix, from, to);
  return CRYPTO_memcmp(received.data(), expected.data(), expected.size()) == 0;
}

}  // namespace distribute
