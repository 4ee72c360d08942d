// Saving and restoring a strategy's variables in the safetensors format.
#ifndef DISTRIBUTE_CORE_STRATEGY_CHECKPOINT_H_
#define DISTRIBUTE_CORE_STRATEGY_CHECKPOINT_H_

#include <string>

#include "absl/status/status.h"
#include "core/strategy/strategy.h"

namespace distribute {

// Every live variable of `strategy` under its name, with its cross-replica value
// (SyncOnRead variables aggregated).
absl::Status SaveVariables(Strategy& strategy, const std::string& path);

// Every live variable of `strategy` from the file; all are checked (present, dtype,
// shape) before any is written, so a bad file changes nothing.
absl::Status RestoreVariables(Strategy& strategy, const std::string& path);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_STRATEGY_CHECKPOINT_H_
