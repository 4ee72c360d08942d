// Slurm's compact lists, as its environment gives them to every task:
// - a hostlist, "node[01-04,07],gpu5,rack[1-2]-n[1-2]": comma-separated items, each a name
//   with zero or more bracket groups of numbers and ranges; a range keeps the zero padding
//   of its first number ("01-04" is 01 02 03 04), several groups multiply out left to
//   right (rack1-n1 rack1-n2 rack2-n1 rack2-n2), order is kept and nothing is deduplicated;
// - a tasks-per-node list, "2(x3),1": counts, each optionally repeated "(xN)" times.
// Both come from the environment of a job, so they are bounded: at most kMaxSlurmHosts
// entries in all, numbers of at most 9 digits. Errors are kInvalidArgument saying what is
// wrong and where ("SLURM_JOB_NODELIST: unclosed '[' at byte 4 of 'node[01-04'").
#ifndef DISTRIBUTE_CORE_CLUSTER_SLURM_HOSTLIST_H_
#define DISTRIBUTE_CORE_CLUSTER_SLURM_HOSTLIST_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distribute {

inline constexpr size_t kMaxSlurmHosts = 65536;

// The host names of `hostlist`; `what` names the source in errors ("SLURM_JOB_NODELIST").
absl::StatusOr<std::vector<std::string>> ExpandSlurmHostlist(absl::string_view what, absl::string_view hostlist);

// The task count of each node of `spec` ("2(x3),1" -> 2 2 2 1); every count >= 1.
absl::StatusOr<std::vector<int32_t>> ExpandSlurmTasksPerNode(absl::string_view what, absl::string_view spec);

}  // namespace distribute

#endif  // DISTRIBUTE_CORE_CLUSTER_SLURM_HOSTLIST_H_
