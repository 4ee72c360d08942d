#include "core/server/listening_probe.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "core/cluster/cluster_spec.h"

namespace distribute {

bool AcceptsConnections(const std::string& address, std::chrono::milliseconds timeout) {
  const HostPort split = SplitTaskAddress(address);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(split.host.c_str(), split.port.c_str(), &hints, &found) != 0) return false;
  bool accepted = false;
  for (const addrinfo* candidate = found; candidate != nullptr && !accepted; candidate = candidate->ai_next) {
    const int fd = socket(candidate->ai_family, candidate->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          candidate->ai_protocol);
    if (fd < 0) continue;
    if (connect(fd, candidate->ai_addr, candidate->ai_addrlen) == 0) {
      accepted = true;
    } else if (errno == EINPROGRESS) {
      pollfd waiting{fd, POLLOUT, 0};
      int error = 0;
      socklen_t length = sizeof error;
      accepted = poll(&waiting, 1, static_cast<int>(timeout.count())) == 1 &&
                 getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0 && error == 0;
    }
    close(fd);
  }
  freeaddrinfo(found);
  return accepted;
}

}  // namespace distribute
