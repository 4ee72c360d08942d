#include "core/c_api/value_args.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"

namespace distribute::c_api {

absl::StatusOr<std::vector<Value>> ValuesOf(const dist_value_t* const* handles, int32_t count,
                                            absl::string_view name) {
  if (count < 0) {
    return absl::InvalidArgumentError(absl::StrCat("num_", name, " is ", count, ": expected >= 0"));
  }
  if (count > 0 && handles == nullptr) return NullArgument(name);
  std::vector<Value> values;
  values.reserve(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    if (handles[i] == nullptr) return NullArgument(absl::StrCat(name, "[", i, "]"));
    values.push_back(handles[i]->value);
  }
  return values;
}

HandleArray::HandleArray(std::span<const Value> values) {
  for (const Value& value : values) {
    handles_.push_back(std::make_unique<dist_value>(value));
    pointers_.push_back(handles_.back().get());
  }
}

std::optional<Value> TakeValue(dist_value_t* handle) {
  if (handle == nullptr) return std::nullopt;
  std::optional<Value> value(std::move(handle->value));
  delete handle;
  return value;
}

absl::StatusCode CodeOf(dist_status_t code) {
  if (code <= DIST_OK || code > DIST_UNAUTHENTICATED) return absl::StatusCode::kUnknown;
  return static_cast<absl::StatusCode>(code);
}

absl::Status CallbackStatus(dist_status_t code, absl::string_view who) {
  const std::string message = LastErrorMessage();
  if (!message.empty()) return absl::Status(CodeOf(code), absl::StrCat(who, ": ", message));
  return absl::Status(CodeOf(code), absl::StrCat(who, " returned ", dist_status_name(code)));
}

}  // namespace distribute::c_api
