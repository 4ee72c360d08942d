#include "core/server/connection_limiter.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"

namespace distribute {
namespace {

// One socket accepted on a watched port.
struct Accepted {
  int fd = -1;
  uint64_t cookie = 0;  // SO_COOKIE: the socket's identity, which a reused fd number lacks
  std::string peer;     // the peer's IP address, as bytes
  std::string endpoint; // and its port: what a call's peer string names
  int64_t first_seen = 0;  // steady-clock nanoseconds of the scan that first saw it
  bool proven = false;     // a call on it carried the job's token
};

// The most proven endpoints remembered between two scans (each scan forgets those no
// longer connected): a token holder's flood cannot grow it without bound.
constexpr size_t kMaxProvenEndpoints = size_t{1} << 16;

// The longest a scan that sees the same descriptors as the last skips its per-socket calls.
constexpr std::chrono::seconds kFullScanInterval{1};

// How long a new connection counts as about to prove the token (its TLS and HTTP/2
// handshake and first call, slow on a loaded machine) before it ranks with those that
// never did.
constexpr std::chrono::seconds kProofGrace{1};

// The port of an IPv4 or IPv6 socket address; 0 for any other family.
int PortOf(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  if (address.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  return 0;
}

// The IP address alone: an IPv4 peer seen through an IPv6 socket (::ffff:a.b.c.d) counts
// as that IPv4 address.
std::string PeerKey(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    const in_addr& ip = reinterpret_cast<const sockaddr_in&>(address).sin_addr;
    return std::string(reinterpret_cast<const char*>(&ip), sizeof(ip));
  }
  const in6_addr& ip = reinterpret_cast<const sockaddr_in6&>(address).sin6_addr;
  if (IN6_IS_ADDR_V4MAPPED(&ip)) return std::string(reinterpret_cast<const char*>(&ip) + 12, 4);
  return std::string(reinterpret_cast<const char*>(&ip), sizeof(ip));
}

// "ip bytes" + 2 port bytes.
std::string EndpointKey(const std::string& ip, int port) {
  std::string key = ip;
  key.push_back(static_cast<char>(port >> 8));
  key.push_back(static_cast<char>(port & 0xff));
  return key;
}

bool CookieOf(int fd, uint64_t* cookie) {
  socklen_t length = sizeof(*cookie);
  return getsockopt(fd, SOL_SOCKET, SO_COOKIE, cookie, &length) == 0;
}

// The process's open file descriptors (a readdir of /proc/self/fd, no call per fd).
std::vector<int> OpenDescriptors() {
  std::vector<int> fds;
  DIR* directory = opendir("/proc/self/fd");
  if (directory == nullptr) return fds;
  const int directory_fd = dirfd(directory);
  while (const dirent* entry = readdir(directory)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const int fd = std::atoi(entry->d_name);
    if (fd != directory_fd) fds.push_back(fd);
  }
  closedir(directory);
  std::sort(fds.begin(), fds.end());
  return fds;
}

// The connected sockets among `fds` whose local port is in `ports`, by port.
std::map<int, std::vector<Accepted>> FindAccepted(const std::vector<int>& fds, const std::set<int>& ports) {
  std::map<int, std::vector<Accepted>> found;
  for (const int fd : fds) {
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    // Not a socket (ENOTSOCK, or closed since), or not one of the watched ports.
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) != 0) continue;
    const int port = PortOf(local);
    if (port == 0 || ports.count(port) == 0) continue;
    int listening = 0;
    length = sizeof(listening);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) != 0 || listening != 0) continue;
    sockaddr_storage peer{};
    length = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) continue;
    Accepted accepted;
    accepted.fd = fd;
    if (!CookieOf(fd, &accepted.cookie)) continue;
    accepted.peer = PeerKey(peer);
    accepted.endpoint = EndpointKey(accepted.peer, PortOf(peer));
    found[port].push_back(std::move(accepted));
  }
  return found;
}

// The process's one scanner of watched ports.
class Scanner {
 public:
  // Never destroyed: servers may stop during static destruction. Its thread runs only
  // while a port is watched, so nothing of it runs once every server stopped.
  static Scanner& Get() {
    static Scanner* scanner = new Scanner;
    return *scanner;
  }

  // A registration's id: a server that stopped unregisters its own watch only, not that
  // of a later server on the same port.
  uint64_t Add(int port, ConnectionLimits limits) {
    std::lock_guard<std::mutex> lifecycle(lifecycle_);
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t id = ++registrations_;
    ports_[port] = Watched{id, limits, {}, {}, 0};
    if (!thread_.joinable()) {
      stopping_ = false;
      thread_ = std::thread([this] { Run(); });
    }
    return id;
  }

  void Remove(int port, uint64_t id) {
    std::lock_guard<std::mutex> lifecycle(lifecycle_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto watched = ports_.find(port);
      if (watched != ports_.end() && watched->second.id == id) ports_.erase(watched);
      if (!ports_.empty()) return;
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void NoteProven(std::string endpoint) {
    std::lock_guard<std::mutex> lock(mu_);
    if (proven_.size() < kMaxProvenEndpoints) proven_.insert(std::move(endpoint));
  }

  int64_t Cut(int port, uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto watched = ports_.find(port);
    return watched == ports_.end() || watched->second.id != id ? 0 : watched->second.cut;
  }

 private:
  struct Watched {
    uint64_t id = 0;
    ConnectionLimits limits;
    std::map<uint64_t, int64_t> first_seen;  // cookie: when a scan first saw it
    std::set<uint64_t> shut;                  // cookies already shut down, until gRPC closes them
    int64_t cut = 0;
  };

  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, kConnectionScanInterval, [this] { return stopping_; })) {
      std::set<int> ports;
      for (const auto& [port, watched] : ports_) ports.insert(port);
      lock.unlock();  // the scan's system calls run without the lock
      // A process with many files pays one call per descriptor only when its set of
      // descriptors changed (every accepted connection adds one), or once a second (a
      // connection that took the number of one just closed).
      std::vector<int> fds = OpenDescriptors();
      const auto now = std::chrono::steady_clock::now();
      if (fds == last_fds_ && now - last_full_scan_ < kFullScanInterval) {
        lock.lock();
        continue;
      }
      last_fds_ = std::move(fds);
      last_full_scan_ = now;
      std::map<int, std::vector<Accepted>> found = FindAccepted(last_fds_, ports);
      lock.lock();
      scan_time_ = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
      std::set<std::string> connected;
      for (auto& [port, accepted] : found) {
        for (Accepted& socket : accepted) {
          socket.proven = proven_.count(socket.endpoint) != 0;
          connected.insert(socket.endpoint);
        }
        auto watched = ports_.find(port);
        if (watched != ports_.end()) Enforce(watched->second, accepted);
      }
      std::erase_if(proven_, [&](const std::string& endpoint) { return connected.count(endpoint) == 0; });
    }
  }

  // Shuts down the connections beyond the caps: first those that never proved the token
  // within the grace, then new ones still in it, then proven ones; among each the
  // newest first. Forgets sockets that are gone.
  void Enforce(Watched& watched, std::vector<Accepted>& accepted) {
    std::set<uint64_t> present;
    for (Accepted& socket : accepted) {
      present.insert(socket.cookie);
      socket.first_seen = watched.first_seen.emplace(socket.cookie, scan_time_).first->second;
    }
    std::erase_if(watched.first_seen, [&](const auto& entry) { return present.count(entry.first) == 0; });
    std::erase_if(watched.shut, [&](uint64_t cookie) { return present.count(cookie) == 0; });
    const int64_t grace_start =
        scan_time_ - std::chrono::duration_cast<std::chrono::nanoseconds>(kProofGrace).count();
    const auto rank = [&](const Accepted& socket) {
      if (socket.proven) return 0;
      return socket.first_seen > grace_start ? 1 : 2;
    };
    std::sort(accepted.begin(), accepted.end(), [&](const Accepted& a, const Accepted& b) {
      if (rank(a) != rank(b)) return rank(a) < rank(b);
      return a.first_seen != b.first_seen ? a.first_seen < b.first_seen : a.fd < b.fd;
    });
    std::map<std::string, int64_t> per_peer;
    int64_t total = 0;
    for (const Accepted& socket : accepted) {
      if (watched.shut.count(socket.cookie) != 0) continue;
      int64_t& from_peer = per_peer[socket.peer];
      if (from_peer < watched.limits.max_connections_per_peer && total < watched.limits.max_connections) {
        ++from_peer;
        ++total;
        continue;
      }
      // The fd may have been closed and reused since the scan: only the same socket is cut.
      uint64_t cookie = 0;
      if (!CookieOf(socket.fd, &cookie) || cookie != socket.cookie) continue;
      shutdown(socket.fd, SHUT_RDWR);
      watched.shut.insert(socket.cookie);
      ++watched.cut;
    }
  }

  std::mutex lifecycle_;  // orders starting and joining the thread
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int, Watched> ports_;
  std::set<std::string> proven_;  // endpoints (EndpointKey) that made an authenticated call
  bool stopping_ = false;
  int64_t scan_time_ = 0;  // steady-clock nanoseconds of the scan being enforced
  uint64_t registrations_ = 0;
  // The scanning thread's own: the descriptors its last full scan saw, and when.
  std::vector<int> last_fds_;
  std::chrono::steady_clock::time_point last_full_scan_;
  std::thread thread_;
};

}  // namespace

int64_t OpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return int64_t{1} << 20;
  return static_cast<int64_t>(limit.rlim_cur);
}

ConnectionLimits DefaultConnectionLimits(size_t tasks) {
  const int64_t quarter = std::max<int64_t>(OpenFileLimit() / 4, 16);
  ConnectionLimits limits;
  limits.max_connections = std::min(std::max<int64_t>(1024, 4 * static_cast<int64_t>(tasks)), quarter);
  limits.max_connections_per_peer = std::min<int64_t>(256, limits.max_connections);
  return limits;
}

void ConnectionLimiter::NoteAuthenticatedPeer(absl::string_view grpc_peer) {
  // "ipv4:127.0.0.1:5000" or "ipv6:[::1]:5000".
  std::string ip_text;
  absl::string_view port_text;
  if (absl::ConsumePrefix(&grpc_peer, "ipv4:")) {
    const size_t colon = grpc_peer.rfind(':');
    if (colon == absl::string_view::npos) return;
    ip_text = std::string(grpc_peer.substr(0, colon));
    port_text = grpc_peer.substr(colon + 1);
  } else if (absl::ConsumePrefix(&grpc_peer, "ipv6:[")) {
    const size_t close = grpc_peer.rfind("]:");
    if (close == absl::string_view::npos) return;
    ip_text = std::string(grpc_peer.substr(0, close));
    port_text = grpc_peer.substr(close + 2);
  } else {
    return;
  }
  int port = 0;
  if (!absl::SimpleAtoi(port_text, &port) || port <= 0 || port > 65535) return;
  sockaddr_storage address{};
  if (inet_pton(AF_INET, ip_text.c_str(), &reinterpret_cast<sockaddr_in&>(address).sin_addr) == 1) {
    address.ss_family = AF_INET;
  } else if (inet_pton(AF_INET6, ip_text.c_str(), &reinterpret_cast<sockaddr_in6&>(address).sin6_addr) == 1) {
    address.ss_family = AF_INET6;
  } else {
    return;
  }
  Scanner::Get().NoteProven(EndpointKey(PeerKey(address), port));
}

std::unique_ptr<ConnectionLimiter> ConnectionLimiter::Watch(int port, ConnectionLimits limits) {
  const uint64_t id = Scanner::Get().Add(port, limits);
  return std::unique_ptr<ConnectionLimiter>(new ConnectionLimiter(port, id));
}

ConnectionLimiter::~ConnectionLimiter() { Scanner::Get().Remove(port_, id_); }

int64_t ConnectionLimiter::cut() const { return Scanner::Get().Cut(port_, id_); }

}  // namespace distribute
