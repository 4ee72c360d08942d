// What one worker sends another right after their transport connection opens, to prove it
// belongs to the job: HMAC-SHA256 keyed with the job token over the communicator's key
// prefix, the attempt and the two ranks. A connection from outside the job (a port scan,
// a misdirected client, a stray that raced the real peer to a listening port) cannot
// produce it, and a proof is good for one direction of one pair of one communicator only.
//
// A job without a token (loopback only, job_token.h) still runs the handshake with an
// empty key: it then tells the job's connections from strangers' that do not speak it.
#ifndef DISTRIBUTE_CORE_GLOO_HANDSHAKE_PROOF_H_
#define DISTRIBUTE_CORE_GLOO_HANDSHAKE_PROOF_H_

#include <array>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace distribute {

using HandshakeProof = std::array<unsigned char, 32>;

// The proof that `from` sends `to` on the connection set up under `key_prefix`.
HandshakeProof MakeHandshakeProof(absl::string_view job_token, absl::string_view key_prefix,
                                  int32_t from, int32_t to);

// Whether `received` is the proof `from` owes `to`, compared in constant time.
bool CheckHandshakeProof(const HandshakeProof& received, absl::string_view job_token,
                         absl::string_view key_prefix, int32_t from, int32_t to);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_GLOO_HANDSHAKE_PROOF_H_
