// C entry points for ParameterServerStrategy's placement options.
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"

#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/ps/partitioner.h"
#include "core/util/status_macros.h"
#include "distribute/parameter_server.h"

using distribute::c_api::CheckHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;
using distribute::ps::Partitioner;

namespace {

// Stores `partitioner` once its arguments check out, so a rejected one changes nothing.
dist_status_t SetPartitioner(const char* function, dist_parameter_server_options_t* options,
                             std::optional<Partitioner> partitioner) {
  return Guard(function, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(options, "options"));
    if (partitioner.has_value()) {
      RETURN_IF_ERROR(distribute::ps::CheckPartitioner(*partitioner));
      if (partitioner->kind == distribute::ps::PartitionerKind::kFixedSize &&
          partitioner->num_shards > distribute::ps::kMaxShards) {
        return absl::InvalidArgumentError(absl::StrCat(
            distribute::ps::PartitionerName(*partitioner), ": at most ",
            distribute::ps::kMaxShards, " shards"));
      }
    }
    options->partitioner = std::move(partitioner);
    return absl::OkStatus();
  });
}

}  // namespace

extern "C" {

dist_status_t dist_parameter_server_options_create(dist_parameter_server_options_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    *out = new dist_parameter_server_options{};
    return absl::OkStatus();
  });
}

void dist_parameter_server_options_destroy(dist_parameter_server_options_t* options) {
  DestroyHandle(options);
}

dist_status_t dist_parameter_server_options_set_placement(dist_parameter_server_options_t* options,
                                                          dist_placement_policy_t policy) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(options, "options"));
    if (policy != DIST_PLACEMENT_ROUND_ROBIN && policy != DIST_PLACEMENT_GREEDY_BYTES) {
      return absl::InvalidArgumentError(absl::StrCat(
          "placement policy ", policy, " is not DIST_PLACEMENT_ROUND_ROBIN (0) or "
          "DIST_PLACEMENT_GREEDY_BYTES (1)"));
    }
    options->placement = static_cast<distribute::ps::PlacementPolicy>(policy);
    return absl::OkStatus();
  });
}

dist_status_t dist_parameter_server_options_set_fixed_shards(dist_parameter_server_options_t* options,
                                                             int64_t num_shards, int32_t axis) {
  return SetPartitioner(__func__, options, Partitioner::FixedSize(num_shards, axis));
}

dist_status_t dist_parameter_server_options_set_min_max_shards(
    dist_parameter_server_options_t* options, int64_t max_partitions, int32_t axis,
    int64_t min_slice_size) {
  return SetPartitioner(__func__, options, Partitioner::MinMax(max_partitions, axis, min_slice_size));
}

dist_status_t dist_parameter_server_options_set_max_shard_bytes(
    dist_parameter_server_options_t* options, int64_t max_shard_bytes, int32_t axis,
    int64_t max_shards) {
  return SetPartitioner(__func__, options,
                        Partitioner::VariableAxisSize(max_shard_bytes, axis, max_shards));
}

dist_status_t dist_parameter_server_options_clear_partitioner(dist_parameter_server_options_t* options) {
  return SetPartitioner(__func__, options, std::nullopt);
}

}  // extern "C"
