// The job token: a secret every process of one job shares, which every request to a
// task's server carries (gRPC metadata "dist-job-token") and which the server checks in
// constant time before doing anything (DESIGN.md, "Reliability contract"). `distrun`
// draws a random one per job and hands it to every rank in DIST_JOB_TOKEN; a program
// started otherwise sets DIST_JOB_TOKEN itself, or the server option.
//
// A job without a token still runs when every task of its cluster is on a loopback
// address (only processes of this host can reach it), and says once on stderr that it is
// unauthenticated; on any other address it refuses to start unless the user opts out
// (DIST_ALLOW_UNAUTHENTICATED=1, or the server option).
//
// What the token does not do: it travels in clear unless TLS is on, so it keeps out
// strangers who can reach the ports, not those who can read the network.
#ifndef DISTRIBUTE_CORE_SERVER_JOB_TOKEN_H_
#define DISTRIBUTE_CORE_SERVER_JOB_TOKEN_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/cluster/cluster_spec.h"
#include "core/util/job_token_rules.h"

namespace distribute {

// The metadata key requests carry the token in (gRPC keys are lower case).
inline constexpr char kJobTokenMetadataKey[] = "dist-job-token";
inline constexpr char kJobTokenEnvironment[] = "DIST_JOB_TOKEN";
inline constexpr char kAllowUnauthenticatedEnvironment[] = "DIST_ALLOW_UNAUTHENTICATED";

// The token to use: `configured` when set, else DIST_JOB_TOKEN when set, else none ("").
absl::StatusOr<std::string> ResolveJobToken(const std::string& configured);

// A job without a token may run only on loopback addresses, unless `allow_unauthenticated`
// (or DIST_ALLOW_UNAUTHENTICATED=1): FailedPrecondition naming the first task that is
// not. When it may run, says once per process on stderr that it is unauthenticated.
absl::Status CheckUnauthenticatedJob(const ClusterSpec& cluster, bool allow_unauthenticated);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_SERVER_JOB_TOKEN_H_
