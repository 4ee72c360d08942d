#include "core/input/input_options.h"

#include "absl/strings/str_cat.h"
#include "core/util/status_macros.h"

namespace distribute {

absl::StatusOr<InputReplicationMode> InputReplicationModeFromInt(int32_t value) {
  switch (value) {
    case static_cast<int32_t>(InputReplicationMode::kPerWorker):
      return InputReplicationMode::kPerWorker;
    case static_cast<int32_t>(InputReplicationMode::kPerReplica):
      return InputReplicationMode::kPerReplica;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "replication mode ", value, " is unknown: expected PER_WORKER (1) or PER_REPLICA (2)"));
  }
}

absl::StatusOr<PartialBatchSplit> PartialBatchSplitFromInt(int32_t value) {
  switch (value) {
    case static_cast<int32_t>(PartialBatchSplit::kInOrder):
      return PartialBatchSplit::kInOrder;
    case static_cast<int32_t>(PartialBatchSplit::kEven):
      return PartialBatchSplit::kEven;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "partial batch split ", value, " is unknown: expected IN_ORDER (0) or EVEN (1)"));
  }
}

absl::StatusOr<AutoShardPolicy> AutoShardPolicyFromInt(int32_t value) {
  switch (value) {
    case static_cast<int32_t>(AutoShardPolicy::kOff):
      return AutoShardPolicy::kOff;
    case static_cast<int32_t>(AutoShardPolicy::kAuto):
      return AutoShardPolicy::kAuto;
    case static_cast<int32_t>(AutoShardPolicy::kFile):
      return AutoShardPolicy::kFile;
    case static_cast<int32_t>(AutoShardPolicy::kData):
      return AutoShardPolicy::kData;
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "auto-shard policy ", value, " is unknown: expected OFF (0), AUTO (1), FILE (2) or DATA (3)"));
  }
}

absl::string_view AutoShardPolicyName(AutoShardPolicy policy) {
  switch (policy) {
    case AutoShardPolicy::kOff:
      return "OFF";
    case AutoShardPolicy::kAuto:
      return "AUTO";
    case AutoShardPolicy::kFile:
      return "FILE";
    case AutoShardPolicy::kData:
      return "DATA";
  }
  return "unknown";
}

absl::Status ValidateInputOptions(const InputOptions& options) {
  if (options.prefetch_depth < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("prefetch depth is ", options.prefetch_depth, ": expected >= 0"));
  }
  RETURN_IF_ERROR(
      InputReplicationModeFromInt(static_cast<int32_t>(options.replication_mode)).status());
  RETURN_IF_ERROR(AutoShardPolicyFromInt(static_cast<int32_t>(options.auto_shard_policy)).status());
  RETURN_IF_ERROR(
      PartialBatchSplitFromInt(static_cast<int32_t>(options.partial_batch_split)).status());
  return absl::OkStatus();
}

}  // namespace distribute
