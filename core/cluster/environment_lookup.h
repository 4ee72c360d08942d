// Where the cluster resolvers read their environment: the process's by default, a map in
// tests (so that tests never race on setenv).
#ifndef DISTRIBUTE_CORE_CLUSTER_ENVIRONMENT_LOOKUP_H_
#define DISTRIBUTE_CORE_CLUSTER_ENVIRONMENT_LOOKUP_H_

#include <cstdlib>
#include <functional>
#include <optional>
#include <string>

namespace distribute {

// The value of variable `name`, or nullopt when it is unset.
using EnvironmentLookup = std::function<std::optional<std::string>(const char* name)>;

inline std::optional<std::string> ProcessEnvironment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_CLUSTER_ENVIRONMENT_LOOKUP_H_
