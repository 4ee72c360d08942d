// Free loopback ports for the C++ tests that start servers or worker processes.
#ifndef DIST_TESTS_COMMON_FREE_PORTS_H_
#define DIST_TESTS_COMMON_FREE_PORTS_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "gtest/gtest.h"

namespace distribute::testing {

// `count` ports free on 127.0.0.1 a moment ago: bound to port 0 together (so they are
// distinct), then closed, as distrun does.
inline std::vector<int> FreePorts(int count) {
  std::vector<int> sockets;
  std::vector<int> ports;
  for (int i = 0; i < count; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    sockets.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : sockets) close(fd);
  return ports;
}

}  // namespace distribute::testing

#endif  // DIST_TESTS_COMMON_FREE_PORTS_H_
