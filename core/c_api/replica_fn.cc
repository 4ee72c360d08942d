#include "core/c_api/replica_fn.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/current_context_handle.h"
#include "core/c_api/handles.h"
#include "core/c_api/value_args.h"

namespace distribute::c_api {

absl::Status CallReplicaFn(dist_replica_fn fn, void* user_data, ReplicaContext& context,
                           std::span<const Value> args, std::span<std::optional<Value>> results) {
  HandleArray handles(args);
  std::vector<dist_value_t*> outs(results.size(), nullptr);
  dist_context context_handle(&context);
  context_handle.MarkBorrowed();
  dist_status_t code;
  {
    ScopedCurrentContextHandle current(&context_handle);
    ClearLastError();
    code = fn(&context_handle, handles.data(), handles.size(), outs.data(),
              static_cast<int32_t>(outs.size()), user_data);
  }
  const std::string who = absl::StrCat("replica ", context.replica_id());
  std::vector<std::optional<Value>> taken;
  const absl::Status slots = TakeValues(std::span<dist_value_t*>(outs), "results", taken);
  std::move(taken.begin(), taken.end(), results.begin());
  if (code != DIST_OK) return CallbackStatus(code, who);
  if (!slots.ok()) return absl::InvalidArgumentError(absl::StrCat(who, ": ", slots.message()));
  return absl::OkStatus();
}

}  // namespace distribute::c_api
