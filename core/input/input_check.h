// Argument checks shared by the transformations.
#ifndef DISTRIBUTE_CORE_INPUT_INPUT_CHECK_H_
#define DISTRIBUTE_CORE_INPUT_INPUT_CHECK_H_

#include "absl/status/status.h"
#include "core/input/dataset.h"

namespace distribute {

inline absl::Status CheckInput(const DatasetPtr& input) {
  if (input == nullptr) return absl::InvalidArgumentError("input is null: expected a dataset");
  return absl::OkStatus();
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_INPUT_INPUT_CHECK_H_
