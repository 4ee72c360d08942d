#include "core/c_api/handle_tag.h"

#include <string>

namespace distribute::c_api {
namespace {

constexpr uint64_t kMarkerMask = 0xffff'ffff'ffff'0000ULL;

HandleType TypeOf(uint64_t tag) { return static_cast<HandleType>(tag & 0xff); }
HandleState StateOf(uint64_t tag) { return static_cast<HandleState>((tag >> 8) & 0xff); }

bool IsKnownType(uint64_t tag) {
  const uint64_t type = tag & 0xff;
  return type >= static_cast<uint64_t>(HandleType::kDevice) &&
         type <= static_cast<uint64_t>(HandleType::kClosureArgs);
}

bool IsKnownState(HandleState state) {
  return state == HandleState::kOwned || state == HandleState::kBorrowed ||
         state == HandleState::kDestroyed;
}

}  // namespace

absl::string_view HandleTypeName(HandleType type) {
  switch (type) {
    case HandleType::kDevice: return "dist_device_t";
    case HandleType::kValue: return "dist_value_t";
    case HandleType::kStrategy: return "dist_strategy_t";
    case HandleType::kContext: return "dist_context_t";
    case HandleType::kDataset: return "dist_dataset_t";
    case HandleType::kDistributedDataset: return "dist_distributed_dataset_t";
    case HandleType::kIterator: return "dist_iterator_t";
    case HandleType::kInputContext: return "dist_input_context_t";
    case HandleType::kInputOptions: return "dist_input_options_t";
    case HandleType::kCluster: return "dist_cluster_t";
    case HandleType::kServer: return "dist_server_t";
    case HandleType::kServerOptions: return "dist_server_options_t";
    case HandleType::kCrossDeviceOps: return "dist_cross_device_ops_t";
    case HandleType::kCommunicationOptions: return "dist_communication_options_t";
    case HandleType::kParameterServerOptions: return "dist_parameter_server_options_t";
    case HandleType::kCoordinator: return "dist_coordinator_t";
    case HandleType::kRemoteValue: return "dist_remote_value_t";
    case HandleType::kPerWorker: return "dist_per_worker_t";
    case HandleType::kClosureArgs: return "dist_closure_args_t";
  }
  return "an unknown handle type";
}

absl::Status WrongHandle(uint64_t tag, HandleType expected, absl::string_view argument) {
  const absl::string_view expected_name = HandleTypeName(expected);
  const std::string prefix = absl::StrCat("argument '", argument, "' ");
  if ((tag & kMarkerMask) != kHandleMarker || !IsKnownType(tag) || !IsKnownState(StateOf(tag))) {
    return absl::InvalidArgumentError(absl::StrCat(
        prefix, "is not a ", expected_name,
        " (not a handle of this library, or one destroyed long ago whose memory was reused)"));
  }
  const HandleType actual = TypeOf(tag);
  const HandleState state = StateOf(tag);
  if (actual != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "is not a ", expected_name, " (it is a ",
                     state == HandleState::kDestroyed ? "destroyed " : "", HandleTypeName(actual), ")"));
  }
  if (state == HandleState::kDestroyed) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "was destroyed (a ", expected_name, ")"));
  }
  // A live handle of the right type fails only where an owned one is required.
  return absl::InvalidArgumentError(absl::StrCat(
      prefix, "is a ", expected_name,
      " the library lent (a callback's argument), not one the caller owns and can give up"));
}

}  // namespace distribute::c_api
