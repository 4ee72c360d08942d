#include "core/gloo/coordination_store.h"

#include <sys/socket.h>
#include <netinet/in.h>

#include <cstring>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gloo/common/error.h"

namespace distribute {
namespace {

// Gloo 0.5 publishes a worker's pair addresses under its rank ("0", "1", ...) as, per
// peer, a sockaddr_storage and a sequence number, copied whole from a structure of which
// only the address's own length was written: the rest is stack garbage (pointers that
// would tell a reader where this process's stack is). Zeroed before it leaves.
constexpr size_t kGlooAddressBytes = sizeof(sockaddr_storage) + sizeof(int64_t);

std::vector<char> ScrubbedAddresses(const std::string& key, const std::vector<char>& data) {
  if (key.empty() || !absl::c_all_of(key, absl::ascii_isdigit) || data.size() % kGlooAddressBytes != 0) {
    return data;
  }
  std::vector<char> scrubbed = data;
  for (size_t at = 0; at < scrubbed.size(); at += kGlooAddressBytes) {
    sa_family_t family = 0;
    std::memcpy(&family, scrubbed.data() + at, sizeof(family));
    const size_t used = family == AF_INET ? sizeof(sockaddr_in) : family == AF_INET6 ? sizeof(sockaddr_in6) : 0;
    if (used == 0) continue;  // not an address this knows: left as it is
    std::memset(scrubbed.data() + at + used, 0, sizeof(sockaddr_storage) - used);
  }
  return scrubbed;
}

[[noreturn]] void Throw(const absl::Status& status) {
  throw gloo::IoException(std::string(status.message()));
}

}  // namespace

void CoordinationStore::set(const std::string& key, const std::vector<char>& data) {
  const std::vector<char> value = ScrubbedAddresses(key, data);
  const absl::Status status =
      client_.Set(absl::StrCat(prefix_, key), absl::string_view(value.data(), value.size()));
  if (!status.ok()) Throw(status);
}

std::vector<char> CoordinationStore::get(const std::string& key) {
  absl::StatusOr<std::string> value =
      client_.Get(absl::StrCat(prefix_, key), Deadline::AfterMs(timeout_.count()));
  if (!value.ok()) Throw(value.status());
  return std::vector<char>(value->begin(), value->end());
}

void CoordinationStore::wait(const std::vector<std::string>& keys,
                             const std::chrono::milliseconds& timeout) {
  const Deadline deadline = Deadline::AfterMs(timeout.count());
  for (const std::string& key : keys) {
    absl::StatusOr<std::string> value = client_.Get(absl::StrCat(prefix_, key), deadline);
    if (!value.ok()) Throw(value.status());
  }
}

}  // namespace distribute
