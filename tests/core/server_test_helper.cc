// A task of a test cluster in its own process, for server_test's loss tests:
//   server_test_helper INDEX ADDRESS0 ADDRESS1 ...
// starts the server of worker INDEX of a cluster of workers at the given addresses (worker
// 0 is the chief), prints "ready" once it is connected, and then runs until its standard
// input closes (so it never outlives the test) or it is killed.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>

#include "core/cluster/cluster_spec.h"
#include "core/server/server.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: server_test_helper INDEX ADDRESS0 ADDRESS1 ...\n";
    return 2;
  }
  distribute::ClusterSpec cluster;
  for (int i = 2; i < argc; ++i) {
    if (absl::Status added = cluster.AddTask("worker", i - 2, argv[i]); !added.ok()) {
      std::cerr << added << "\n";
      return 2;
    }
  }
  if (absl::Status set = cluster.SetTask("worker", std::atoi(argv[1])); !set.ok()) {
    std::cerr << set << "\n";
    return 2;
  }
  distribute::Server::Options options;
  options.startup_timeout_ms = 20'000;
  options.heartbeat_timeout_ms = 60'000;  // the tests must see the connection close, not this
  absl::StatusOr<std::unique_ptr<distribute::Server>> server = distribute::Server::Start(cluster, options);
  if (!server.ok()) {
    std::cerr << server.status() << "\n";
    return 1;
  }
  std::cout << "ready" << std::endl;
  while (std::getchar() != EOF) {
  }
  return 0;
}
