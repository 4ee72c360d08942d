// Which workers may share memory: the same host, told apart by hostname, boot id and
// network namespace. The namespace is part of it because workers in different network
// namespaces are set apart on purpose (containers, the project's emulated hosts), and
// often cannot see each other's /dev/shm either. Equal identities are only the first
// test: ShmTransport also checks that every worker can open every other's segment.
#ifndef DISTRIBUTE_CORE_SHM_HOST_IDENTITY_H_
#define DISTRIBUTE_CORE_SHM_HOST_IDENTITY_H_

#include <string>

#include "absl/strings/string_view.h"

namespace distribute::shm {

// "hostname boot-id net:[inode]" (a part the system does not tell is left empty).
std::string HostIdentity();

// The machine (the running kernel, and with it the cores) of a HostIdentity: its boot id,
// whatever the hostname and network namespace; the whole identity when it has no boot id
// or is not in HostIdentity's form.
absl::string_view MachineOf(absl::string_view identity);

}  // namespace distribute::shm

#endif  // DISTRIBUTE_CORE_SHM_HOST_IDENTITY_H_
