// Converting arrays of value handles at the C boundary, both ways, with messages that
// name the argument.
#ifndef DISTRIBUTE_CORE_C_API_VALUE_ARGS_H_
#define DISTRIBUTE_CORE_C_API_VALUE_ARGS_H_

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/c_api/handles.h"
#include "core/values/value.h"
#include "distribute/status.h"

namespace distribute::c_api {

// The values behind `handles` (count entries; NULL allowed when count is 0), each checked
// to be a live dist_value_t.
absl::StatusOr<std::vector<Value>> ValuesOf(const dist_value_t* const* handles, int32_t count,
                                            absl::string_view name);

// For the calls that take a batch of variables (dist_variables_read, ..._apply_update):
// InvalidArgument unless 1 <= count <= DIST_MAX_BATCH_VARIABLES;
absl::Status CheckBatchCount(int32_t count);
// `status` naming the entry it concerns: "variables[2]: <message>".
absl::Status EntryError(int32_t index, const absl::Status& status);

// Handles for `values` that the library lends to a callback (marked borrowed, so the
// callback can neither destroy them nor hand them back as results), and their array.
class HandleArray {
 public:
  explicit HandleArray(std::span<const Value> values);
  const dist_value_t* const* data() const { return pointers_.data(); }
  // For callbacks that write the lent tensors in place (registered update functions).
  dist_value_t* const* mutable_data() const { return pointers_.data(); }
  int32_t size() const { return static_cast<int32_t>(pointers_.size()); }

 private:
  std::vector<std::unique_ptr<dist_value>> handles_;
  std::vector<dist_value_t*> pointers_;
};

// Takes ownership of a value a callback stored in `slot` (NULL: nothing), and destroys
// the handle. A handle the callback does not own (borrowed, destroyed, of another type)
// is left alone and is InvalidArgument naming `slot`.
absl::StatusOr<std::optional<Value>> TakeValue(dist_value_t* handle, absl::string_view slot);

// TakeValue for every slot (named "<slot_name>[i]"), each set to NULL: all of them, even
// after a bad one, so that nothing the callback owned leaks. Returns the first slot's
// error; `values` gets one entry per slot.
absl::Status TakeValues(std::span<dist_value_t*> slots, absl::string_view slot_name,
                        std::vector<std::optional<Value>>& values);

// What a callback that returned `code` and stored `produced` in its out-parameter `slot`
// gives: its failure (the value, if any, is dropped), a bad handle in the slot, or the value.
absl::StatusOr<std::optional<Value>> TakeCallbackResult(dist_status_t code, dist_value_t* produced,
                                                        absl::string_view who,
                                                        absl::string_view slot);

// The status a C callback returned, with this thread's last error message (set by the
// dist_ call that failed inside the callback) or a generic one naming `who`.
absl::Status CallbackStatus(dist_status_t code, absl::string_view who);

// A status code from a C callback as an absl code (an unknown number becomes UNKNOWN).
absl::StatusCode CodeOf(dist_status_t code);

}  // namespace distribute::c_api

#endif  // DISTRIBUTE_CORE_C_API_VALUE_ARGS_H_
