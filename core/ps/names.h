// Names on a parameter server: variables, their shards ("w/part_0") and slots ("w/m"),
// and update functions. Every one of them may arrive from the network later, so each is
// checked where it enters: non-empty, at most kMaxPsNameBytes, printable ASCII.
#ifndef DISTRIBUTE_CORE_PS_NAMES_H_
#define DISTRIBUTE_CORE_PS_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distribute::ps {

// The longest name of anything here. Derived names (shards, slots) obey it too: a
// declaration whose shard or slot names would be longer is refused when it is made.
inline constexpr size_t kMaxPsNameBytes = 1024;

// InvalidArgument unless `name` is 1 to kMaxPsNameBytes bytes of printable ASCII (0x20 to
// 0x7e); `what` says what it names ("variable name", "function name").
absl::Status CheckPsName(absl::string_view what, absl::string_view name);

// `name` quoted for a one-line message, cut after 64 bytes (names may be long).
std::string QuotedName(absl::string_view name);

// TF's name of shard `index` of a partitioned variable: "<name>/part_<index>".
std::string ShardName(absl::string_view name, int64_t index);

// TF2's name of a slot variable (OptimizerV2.add_slot): "<variable>/<slot>", e.g. "w/m".
std::string SlotName(absl::string_view variable, absl::string_view slot);

}  // namespace distribute::ps

#endif  // DISTRIBUTE_CORE_PS_NAMES_H_
