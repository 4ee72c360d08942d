#include "core/cluster/statefulset_resolver.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "absl/strings/str_cat.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

bool AllDigits(const std::string& text) {
  return !text.empty() && text.size() <= 9 &&
         std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// A setting: the caller's value, else the first environment variable of `names` set.
absl::StatusOr<std::pair<std::string, std::string>> Setting(const std::string& given, const char* what,
                                                            std::initializer_list<const char*> names,
                                                            const EnvironmentLookup& environment) {
  if (!given.empty()) return std::make_pair(std::string(what), given);
  std::string tried;
  for (const char* name : names) {
    if (std::optional<std::string> value = environment(name); value.has_value() && !value->empty()) {
      return std::make_pair(std::string(name), *value);
    }
    absl::StrAppend(&tried, tried.empty() ? "" : " or ", name);
  }
  return absl::NotFoundError(absl::StrCat("no ", what, ": pass it, or set ", tried, " in the pod's environment"));
}

absl::StatusOr<int32_t> Count(int32_t given, const char* what, const char* variable, int32_t fallback,
                              int32_t max, const EnvironmentLookup& environment) {
  if (given < 0 || given > max) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", given, " (1 to ", max, ")"));
  }
  if (given > 0) return given;
  std::optional<std::string> value = environment(variable);
  if (!value.has_value() || value->empty()) {
    if (fallback > 0) return fallback;
    return absl::NotFoundError(absl::StrCat("no ", what, ": pass it, or set ", variable, " in the pod's environment"));
  }
  if (!AllDigits(*value) || std::stoll(*value) < 1 || std::stoll(*value) > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(variable, " is ", Quoted(*value), ": a number from 1 to ", max, " was expected"));
  }
  return static_cast<int32_t>(std::stoll(*value));
}

}  // namespace

absl::StatusOr<ClusterSpec> ClusterSpecFromStatefulSet(const StatefulSetSettings& settings,
                                                       const EnvironmentLookup& environment) {
  ASSIGN_OR_RETURN(const auto pod, Setting(settings.pod_name, "pod_name", {"POD_NAME", "HOSTNAME"}, environment));
  ASSIGN_OR_RETURN(const auto service, Setting(settings.service, "service", {"DIST_K8S_SERVICE"}, environment));
  ASSIGN_OR_RETURN(const int32_t replicas, Count(settings.replicas, "replicas", "DIST_K8S_REPLICAS", 0,
                                                 kMaxStatefulSetReplicas, environment));
  ASSIGN_OR_RETURN(const int32_t port, Count(settings.port, "port", "DIST_K8S_PORT", kDefaultStatefulSetPort, 65535,
                                             environment));

  // "<set>-<ordinal>": the ordinal is decimal, without leading zeros.
  const std::string& name = pod.second;
  const size_t dash = name.rfind('-');
  const std::string ordinal_text = dash == std::string::npos ? "" : name.substr(dash + 1);
  if (dash == std::string::npos || dash == 0 || !AllDigits(ordinal_text) ||
      (ordinal_text.size() > 1 && ordinal_text[0] == '0')) {
    return absl::InvalidArgumentError(absl::StrCat(pod.first, " is ", Quoted(name),
                                                   ": a StatefulSet pod name \"<set>-<ordinal>\" was expected"));
  }
  const int64_t ordinal = std::stoll(ordinal_text);
  if (ordinal >= replicas) {
    return absl::InvalidArgumentError(absl::StrCat(pod.first, " ", Quoted(name), " is pod ", ordinal,
                                                   " but the StatefulSet has ", replicas, " replicas"));
  }
  const std::string set = name.substr(0, dash);

  ClusterSpec spec;
  for (int32_t i = 0; i < replicas; ++i) {
    const std::string address = absl::StrCat(set, "-", i, ".", service.second, ":", port);
    absl::Status added = spec.AddTask("worker", i, address);
    if (!added.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("the address of pod ", i, " made from ", pod.first, " and ",
                                                     service.first, ": ", added.message()));
    }
  }
  RETURN_IF_ERROR(spec.SetTask("worker", ordinal));
  return spec;
}

}  // namespace distribute
