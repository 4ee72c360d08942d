#include "core/ps/builtin_updates.h"

#include "core/util/status_macros.h"

namespace distribute::ps {

absl::Status RegisterBuiltinUpdates(FunctionRegistry& registry) {
  RETURN_IF_ERROR(registry.RegisterBuiltin(kSgdUpdate, SgdUpdate()));
  RETURN_IF_ERROR(registry.RegisterBuiltin(kMomentumUpdate, MomentumUpdate(false)));
  RETURN_IF_ERROR(registry.RegisterBuiltin(kNesterovMomentumUpdate, MomentumUpdate(true)));
  RETURN_IF_ERROR(registry.RegisterBuiltin(kAdagradUpdate, AdagradUpdate()));
  return registry.RegisterBuiltin(kAdamUpdate, AdamUpdate());
}

}  // namespace distribute::ps
