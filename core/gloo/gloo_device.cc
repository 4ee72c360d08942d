#include "core/gloo/gloo_device.h"

#include <limits.h>
#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gloo/transport/tcp/device.h"

namespace distribute {

absl::StatusOr<std::shared_ptr<gloo::transport::Device>> CreateGlooDevice(const std::string& hostname,
                                                                          bool background_loop) {
  // Debian's Gloo reads the result of getaddrinfo without checking that it succeeded: a
  // host it cannot resolve crashes the process there. Resolved here first, it is an error.
  // (A name that stops resolving in the microseconds between the two lookups still would.)
  // An empty host is this machine's name, as Gloo takes it.
  std::string host = hostname;
  if (host.empty()) {
    char name[HOST_NAME_MAX + 1] = {};
    if (gethostname(name, sizeof name - 1) != 0) {
      return absl::UnavailableError(absl::StrCat("cannot open the Gloo transport: this machine has no name (",
                                                 std::strerror(errno), ")"));
    }
    host = name;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rv = getaddrinfo(host.c_str(), nullptr, &hints, &found); rv != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot open the Gloo transport on '", host, "': ", gai_strerror(rv)));
  }
  freeaddrinfo(found);
  gloo::transport::tcp::attr attr;
  attr.hostname = host;
  std::shared_ptr<gloo::transport::Device> device;
  std::string error;
  auto create = [&] {
    try {
      device = gloo::transport::tcp::CreateDevice(attr);
    } catch (const std::exception& e) {
      error = e.what();
    }
  };
  if (!background_loop) {
    create();
  } else {
    // Linux keeps a niceness per thread and a new thread starts with its creator's; an
    // unprivileged thread cannot take a priority back, so a thread of its own lowers its
    // priority and creates the device (and with it the loop), and then ends.
    try {
      std::thread maker([&] {
        // Where a sandbox refuses it, the loop runs at the caller's priority: slower when
        // oversubscribed, never wrong.
        (void)setpriority(PRIO_PROCESS, 0, kBackgroundLoopNice);
        create();
      });
      maker.join();
    } catch (const std::system_error& e) {
      error = absl::StrCat("cannot start a thread: ", e.what());
    }
  }
  if (device == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot open the Gloo transport on '", host, "': ", error));
  }
  return device;
}

}  // namespace distribute
