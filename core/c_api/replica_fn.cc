#include "core/c_api/replica_fn.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handles.h"
#include "core/c_api/value_args.h"

namespace distribute::c_api {

absl::Status CallReplicaFn(dist_replica_fn fn, void* user_data, ReplicaContext& context,
                           std::span<const Value> args, std::span<std::optional<Value>> results) {
  HandleArray handles(args);
  std::vector<dist_value_t*> outs(results.size(), nullptr);
  ClearLastError();
  const dist_status_t code = fn(Wrap(&context), handles.data(), handles.size(), outs.data(),
                                static_cast<int32_t>(outs.size()), user_data);
  for (size_t s = 0; s < outs.size(); ++s) results[s] = TakeValue(outs[s]);
  if (code == DIST_OK) return absl::OkStatus();
  return CallbackStatus(code, absl::StrCat("replica ", context.replica_id()));
}

}  // namespace distribute::c_api
