#include "cluster_env.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace distrun {

bool FindFreeLoopbackPorts(int count, std::vector<uint16_t>* ports, std::string* error) {
  ports->clear();
  std::vector<int> sockets;
  bool ok = true;
  for (int i = 0; i < count; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      *error = std::string("socket: ") + std::strerror(errno);
      ok = false;
      break;
    }
    sockets.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      *error = std::string("binding a free port on 127.0.0.1: ") + std::strerror(errno);
      ok = false;
      break;
    }
    ports->push_back(ntohs(addr.sin_port));
  }
  for (int fd : sockets) close(fd);
  if (!ok) ports->clear();
  return ok;
}

std::string TfConfigJson(const std::vector<uint16_t>& ports, int rank) {
  std::string json = "{\"cluster\": {\"worker\": [";
  for (size_t i = 0; i < ports.size(); ++i) {
    if (i > 0) json += ", ";
    json += "\"127.0.0.1:" + std::to_string(ports[i]) + "\"";
  }
  json += "]}, \"task\": {\"type\": \"worker\", \"index\": " + std::to_string(rank) + "}}";
  return json;
}

std::vector<std::string> WorkerEnvironment(char* const* base, const std::vector<uint16_t>& ports,
                                           int rank, int replicas_per_worker) {
  static const char* const kOwned[] = {"TF_CONFIG=", "DIST_RANK=", "DIST_WORLD_SIZE=",
                                       "DIST_REPLICAS_PER_WORKER="};
  std::vector<std::string> env;
  for (char* const* entry = base; entry != nullptr && *entry != nullptr; ++entry) {
    bool owned = false;
    for (const char* prefix : kOwned) {
      if (std::strncmp(*entry, prefix, std::strlen(prefix)) == 0) owned = true;
    }
    if (!owned) env.emplace_back(*entry);
  }
  env.push_back("TF_CONFIG=" + TfConfigJson(ports, rank));
  env.push_back("DIST_RANK=" + std::to_string(rank));
  env.push_back("DIST_WORLD_SIZE=" + std::to_string(ports.size()));
  env.push_back("DIST_REPLICAS_PER_WORKER=" + std::to_string(replicas_per_worker));
  return env;
}

}  // namespace distrun
