#include "core/server/job_token.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace distribute {
namespace {

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;
}

bool EnvironmentAllowsUnauthenticated() {
  const char* value = std::getenv(kAllowUnauthenticatedEnvironment);
  return value != nullptr && std::string(value) == "1";
}

}  // namespace

absl::StatusOr<std::string> ResolveJobToken(const std::string& configured) {
  if (!configured.empty()) {
    if (absl::Status valid = ValidateJobToken("the job token", configured); !valid.ok()) return valid;
    return configured;
  }
  const char* from_environment = std::getenv(kJobTokenEnvironment);
  if (from_environment == nullptr) return std::string();
  if (absl::Status valid = ValidateJobToken(kJobTokenEnvironment, from_environment); !valid.ok()) {
    return valid;
  }
  return std::string(from_environment);
}

absl::Status CheckUnauthenticatedJob(const ClusterSpec& cluster, bool allow_unauthenticated) {
  if (!allow_unauthenticated && !EnvironmentAllowsUnauthenticated()) {
    for (const ClusterTask& task : cluster.tasks()) {
      if (!IsLoopbackHost(ListenHost(task.address))) {
        return absl::FailedPreconditionError(absl::StrCat(
            "task ", task.name(), " is at ", task.address, ", which is not a loopback address, and "
            "the job has no job token: set ", kJobTokenEnvironment, " (the same secret in every "
            "process; distrun sets one) or the server option, or set ", kAllowUnauthenticatedEnvironment,
            "=1 to run unauthenticated"));
      }
    }
  }
  static std::once_flag warned;
  std::call_once(warned, [] {
    std::fprintf(stderr,
                 "distribute: this job runs without a job token (%s): any process that can reach "
                 "its servers' ports can talk to them\n",
                 kJobTokenEnvironment);
  });
  return absl::OkStatus();
}

}  // namespace distribute
