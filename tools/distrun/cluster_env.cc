#include "cluster_env.h"

#include <arpa/inet.h>
#include <fcntl.h>
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

namespace {

void AppendJob(const char* name, const std::vector<uint16_t>& ports, std::string* json) {
  *json += "\"";
  *json += name;
  *json += "\": [";
  for (size_t i = 0; i < ports.size(); ++i) {
    if (i > 0) *json += ", ";
    *json += "\"127.0.0.1:" + std::to_string(ports[i]) + "\"";
  }
  *json += "]";
}

}  // namespace

std::string TfConfigJson(const ClusterPorts& ports, TaskId task) {
  std::string json = "{\"cluster\": {";
  AppendJob("worker", ports.workers, &json);
  if (!ports.ps.empty()) {
    json += ", ";
    AppendJob("ps", ports.ps, &json);
  }
  json += "}, \"task\": {\"type\": \"";
  json += task.ps ? "ps" : "worker";
  json += "\", \"index\": " + std::to_string(task.index) + "}}";
  return json;
}

std::vector<std::string> TaskEnvironment(char* const* base, const ClusterPorts& ports,
                                         TaskId task, int replicas_per_worker,
                                         const std::string& job_token) {
  static const char* const kOwned[] = {"TF_CONFIG=", "DIST_RANK=", "DIST_WORLD_SIZE=",
                                       "DIST_REPLICAS_PER_WORKER=", "DIST_JOB_TOKEN="};
  std::vector<std::string> env;
  for (char* const* entry = base; entry != nullptr && *entry != nullptr; ++entry) {
    bool owned = false;
    for (const char* prefix : kOwned) {
      if (std::strncmp(*entry, prefix, std::strlen(prefix)) == 0) owned = true;
    }
    if (!owned) env.emplace_back(*entry);
  }
  env.push_back("TF_CONFIG=" + TfConfigJson(ports, task));
  if (!task.ps) env.push_back("DIST_RANK=" + std::to_string(task.index));
  env.push_back("DIST_WORLD_SIZE=" + std::to_string(ports.workers.size()));
  env.push_back("DIST_REPLICAS_PER_WORKER=" + std::to_string(replicas_per_worker));
  env.push_back("DIST_JOB_TOKEN=" + job_token);
  return env;
}

bool JobToken(char* const* base, std::string* token, std::string* error) {
  static const char kPrefix[] = "DIST_JOB_TOKEN=";
  for (char* const* entry = base; entry != nullptr && *entry != nullptr; ++entry) {
    if (std::strncmp(*entry, kPrefix, sizeof kPrefix - 1) == 0 && (*entry)[sizeof kPrefix - 1] != '\0') {
      *token = *entry + sizeof kPrefix - 1;
      return true;
    }
  }
  unsigned char bytes[32];
  const int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  const bool read_all = fd >= 0 && read(fd, bytes, sizeof bytes) == static_cast<ssize_t>(sizeof bytes);
  if (fd >= 0) close(fd);
  if (!read_all) {
    *error = std::string("cannot read /dev/urandom for the job token: ") + std::strerror(errno);
    return false;
  }
  static const char kHex[] = "0123456789abcdef";
  token->clear();
  for (unsigned char b : bytes) {
    token->push_back(kHex[b >> 4]);
    token->push_back(kHex[b & 15]);
  }
  return true;
}

}  // namespace distrun
