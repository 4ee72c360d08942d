#include "core/gloo/coordination_store.h"

#include "absl/strings/str_cat.h"
#include "gloo/common/error.h"

namespace distribute {
namespace {

[[noreturn]] void Throw(const absl::Status& status) {
  throw gloo::IoException(std::string(status.message()));
}

}  // namespace

void CoordinationStore::set(const std::string& key, const std::vector<char>& data) {
  const absl::Status status =
      client_.Set(absl::StrCat(prefix_, key), absl::string_view(data.data(), data.size()));
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
