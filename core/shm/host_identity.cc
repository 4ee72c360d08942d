#include "core/shm/host_identity.h"

#include <limits.h>
#include <unistd.h>

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/util/bounded_file.h"

namespace distribute::shm {

std::string HostIdentity() {
  char hostname[HOST_NAME_MAX + 1] = {};
  if (gethostname(hostname, sizeof hostname - 1) != 0) hostname[0] = '\0';
  const absl::StatusOr<std::string> boot_id =
      ReadBoundedFile("the boot id", "/proc/sys/kernel/random/boot_id", 64);
  char network[64] = {};
  const ssize_t length = readlink("/proc/self/ns/net", network, sizeof network - 1);
  if (length < 0) network[0] = '\0';
  return absl::StrCat(hostname, " ", boot_id.ok() ? absl::StripAsciiWhitespace(*boot_id) : "", " ",
                      network);
}

absl::string_view MachineOf(absl::string_view identity) {
  const std::vector<absl::string_view> parts = absl::StrSplit(identity, ' ');
  return parts.size() == 3 && !parts[1].empty() ? parts[1] : identity;
}

}  // namespace distribute::shm
