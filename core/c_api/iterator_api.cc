// C entry points for iterators (over plain and distributed datasets alike).
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/util/status_macros.h"
#include "distribute/dataset.h"

using distribute::Value;
using distribute::c_api::CheckHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

void ClearOuts(dist_value_t** outs, int32_t count) {
  if (outs == nullptr) return;
  for (int32_t i = 0; i < count; ++i) outs[i] = nullptr;
}

// The next element, after checking the arguments.
absl::StatusOr<bool> Next(dist_iterator_t* iterator, dist_value_t** outs, int32_t count,
                          std::vector<Value>* values) {
  RETURN_IF_ERROR(CheckHandle(iterator, "iterator"));
  const int32_t components = iterator->iterator->num_components();
  if (count != components) {
    return absl::InvalidArgumentError(absl::StrCat("count is ", count, ": the dataset's elements have ",
                                                   components, " components"));
  }
  if (count > 0 && outs == nullptr) return NullArgument("outs");
  return iterator->iterator->GetNext(values);
}

absl::Status Store(std::vector<Value>& values, dist_value_t** outs, int32_t count) {
  if (values.size() != static_cast<size_t>(count)) {
    return absl::InternalError(absl::StrCat("the iterator produced ", values.size(),
                                            " components, expected ", count));
  }
  for (int32_t i = 0; i < count; ++i) outs[i] = new dist_value(std::move(values[static_cast<size_t>(i)]));
  return absl::OkStatus();
}

}  // namespace

extern "C" {

dist_status_t dist_iterator_get_next(dist_iterator_t* iterator, dist_value_t** outs,
                                     int32_t count) {
  ClearOuts(outs, count);
  return Guard(__func__, [&]() -> absl::Status {
    std::vector<Value> values;
    ASSIGN_OR_RETURN(const bool has_value, Next(iterator, outs, count, &values));
    if (!has_value) return absl::OutOfRangeError("end of the dataset");
    return Store(values, outs, count);
  });
}

dist_status_t dist_iterator_get_next_as_optional(dist_iterator_t* iterator, dist_value_t** outs,
                                                 int32_t count, int32_t* out_has_value) {
  ClearOuts(outs, count);
  ClearOut(out_has_value);
  return Guard(__func__, [&]() -> absl::Status {
    if (out_has_value == nullptr) return NullArgument("out_has_value");
    std::vector<Value> values;
    ASSIGN_OR_RETURN(const bool has_value, Next(iterator, outs, count, &values));
    if (!has_value) return absl::OkStatus();
    RETURN_IF_ERROR(Store(values, outs, count));
    *out_has_value = 1;
    return absl::OkStatus();
  });
}

void dist_iterator_destroy(dist_iterator_t* iterator) { DestroyHandle(iterator); }

}  // extern "C"
