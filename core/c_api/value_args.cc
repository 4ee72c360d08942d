#include "core/c_api/value_args.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/util/status_macros.h"
#include "distribute/variable.h"

namespace distribute::c_api {

absl::Status CheckBatchCount(int32_t count) {
  if (count >= 1 && count <= DIST_MAX_BATCH_VARIABLES) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("count is ", count, ": expected 1 to ", DIST_MAX_BATCH_VARIABLES, " variables"));
}

absl::Status EntryError(int32_t index, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat("variables[", index, "]: ", status.message()));
}

absl::StatusOr<std::vector<Value>> ValuesOf(const dist_value_t* const* handles, int32_t count,
                                            absl::string_view name) {
  if (count < 0) {
    return absl::InvalidArgumentError(absl::StrCat("num_", name, " is ", count, ": expected >= 0"));
  }
  if (count > 0 && handles == nullptr) return NullArgument(name);
  std::vector<Value> values;
  values.reserve(static_cast<size_t>(count));
  for (int32_t i = 0; i < count; ++i) {
    RETURN_IF_ERROR(CheckHandle(handles[i], absl::StrCat(name, "[", i, "]")));
    values.push_back(handles[i]->value);
  }
  return values;
}

HandleArray::HandleArray(std::span<const Value> values) {
  for (const Value& value : values) {
    handles_.push_back(std::make_unique<dist_value>(value));
    handles_.back()->MarkBorrowed();
    pointers_.push_back(handles_.back().get());
  }
}

absl::StatusOr<std::optional<Value>> TakeValue(dist_value_t* handle, absl::string_view slot) {
  if (handle == nullptr) return std::nullopt;
  RETURN_IF_ERROR(CheckOwnedHandle(handle, slot));
  std::optional<Value> value(std::move(handle->value));
  DestroyHandle(handle);
  return value;
}

absl::Status TakeValues(std::span<dist_value_t*> slots, absl::string_view slot_name,
                        std::vector<std::optional<Value>>& values) {
  values.assign(slots.size(), std::nullopt);
  absl::Status first_error;
  for (size_t i = 0; i < slots.size(); ++i) {
    absl::StatusOr<std::optional<Value>> taken =
        TakeValue(slots[i], absl::StrCat(slot_name, "[", i, "]"));
    slots[i] = nullptr;
    if (taken.ok()) {
      values[i] = *std::move(taken);
    } else if (first_error.ok()) {
      first_error = taken.status();
    }
  }
  return first_error;
}

absl::StatusOr<std::optional<Value>> TakeCallbackResult(dist_status_t code, dist_value_t* produced,
                                                        absl::string_view who,
                                                        absl::string_view slot) {
  absl::StatusOr<std::optional<Value>> taken = TakeValue(produced, slot);
  if (code != DIST_OK) return CallbackStatus(code, who);
  if (!taken.ok()) return absl::InvalidArgumentError(absl::StrCat(who, ": ", taken.status().message()));
  return taken;
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
