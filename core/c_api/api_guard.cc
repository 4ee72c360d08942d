#include "core/c_api/api_guard.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace distribute::c_api {
namespace {

std::string& LastError() {
  thread_local std::string message;
  return message;
}

}  // namespace

dist_status_t Record(absl::string_view function, const absl::Status& status) {
  std::string& message = LastError();
  if (status.ok()) {
    message.clear();
    return DIST_OK;
  }
  message = absl::StrCat(function, ": ", status.message());
  return static_cast<dist_status_t>(status.code());
}

absl::Status NullArgument(absl::string_view argument) {
  return absl::InvalidArgumentError(absl::StrCat(argument, " is NULL"));
}

const char* LastErrorMessage() { return LastError().c_str(); }

void SetLastErrorMessage(absl::string_view message) { LastError().assign(message.data(), message.size()); }

}  // namespace distribute::c_api
