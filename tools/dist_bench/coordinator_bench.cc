// dist-bench-coordinator (run as `dist-bench --coordinator`): what scheduling a closure
// costs, next to a raw gRPC unary round trip to the same worker measured in the same run.
//
// In one process it starts a ps task and 3 worker tasks (core Server objects on loopback,
// job token on, each worker hosting the closure service as dist_server_create makes it),
// the chief's ParameterServerStrategy and, for 1, 2 and 3 workers, a coordinator over them
// (a cluster with that many worker tasks). The function scheduled is empty (registered in
// the process's closure registry). It reports:
//   raw      the median of the closure service's Ping RPC (an empty unary call carrying the
//            job token) to worker 0, over the client the coordinator uses;
//   latency  the median of schedule + fetch of one closure at a time;
//   thruput  closures per second when N are scheduled and then joined.
// Timings are a report: exit 0 when every closure succeeded, 1 otherwise, 2 on bad flags.
// It links the C++ core directly (a program cannot link the core and libdistribute both:
// their gRPC protocols would be registered twice).
#include <algorithm>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/coordinator/closure_registry.h"
#include "core/coordinator/coordinator.h"
#include "core/coordinator/worker_closure_host.h"
#include "core/server/remote_closure_client.h"
#include "core/server/server.h"
#include "core/strategy/strategy.h"

namespace distribute {
namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kToken = "dist-bench-coordinator-token-0123456789";

[[noreturn]] void Fail(const std::string& what) {
  std::fprintf(stderr, "dist-bench --coordinator: %s\n", what.c_str());
  std::exit(1);
}

// `count` distinct free loopback ports (every socket open until all are chosen).
std::vector<int> FreePorts(int count) {
  std::vector<int> fds;
  std::vector<int> ports;
  for (int i = 0; i < count; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(addr);
    if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
      Fail("no free loopback port");
    }
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  return ports;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A job of `workers` worker tasks (their servers started by the caller's ports), one ps
// task and the chief.
ClusterSpec Cluster(const std::vector<int>& ports, int workers, const std::string& job, int index) {
  ClusterSpec cluster;
  (void)cluster.AddTask("chief", 0, absl::StrCat("127.0.0.1:", ports[0]));
  for (int w = 0; w < workers; ++w) (void)cluster.AddTask("worker", w, absl::StrCat("127.0.0.1:", ports[1 + w]));
  (void)cluster.AddTask("ps", 0, absl::StrCat("127.0.0.1:", ports[4]));
  (void)cluster.SetTask(job, index);
  return cluster;
}

struct Row {
  int workers = 0;
  double raw_us = 0;
  double latency_us = 0;
  double per_second = 0;
};

Row Measure(int workers, int latency_calls, int throughput_calls) {
  const std::vector<int> ports = FreePorts(5);
  Server::Options options;
  options.job_token = kToken;
  options.closure_host_factory = coordinator::NewWorkerClosureHost;
  std::vector<std::unique_ptr<Server>> servers(static_cast<size_t>(workers) + 1);
  std::vector<std::thread> starting;
  for (int t = 0; t <= workers; ++t) {
    starting.emplace_back([&, t] {
      const ClusterSpec cluster = t == workers ? Cluster(ports, workers, "ps", 0) : Cluster(ports, workers, "worker", t);
      absl::StatusOr<std::unique_ptr<Server>> server = Server::Start(cluster, options);
      if (!server.ok()) Fail(absl::StrCat("a server: ", server.status().ToString()));
      servers[static_cast<size_t>(t)] = *std::move(server);
    });
  }
  CommunicationOptions communication;
  communication.job_token = kToken;
  communication.timeout_ms = 30000;
  communication.replicas_per_worker = 1;
  const ClusterSpec chief = Cluster(ports, workers, "chief", 0);
  absl::StatusOr<std::shared_ptr<Strategy>> strategy =
      Strategy::CreateParameterServer(&chief, communication, ps::PlacementPolicy::kRoundRobin, std::nullopt);
  for (std::thread& t : starting) t.join();
  if (!strategy.ok()) Fail(absl::StrCat("the strategy: ", strategy.status().ToString()));
  absl::StatusOr<std::unique_ptr<coordinator::Coordinator>> made = coordinator::Coordinator::Create(*strategy);
  if (!made.ok()) Fail(absl::StrCat("the coordinator: ", made.status().ToString()));
  std::unique_ptr<coordinator::Coordinator> coordinator = *std::move(made);
  Row row;
  row.workers = workers;
  // The raw round trip: the closure service's Ping over the same kind of client.
  RemoteClosureClientOptions client_options;
  client_options.job_token = kToken;
  absl::StatusOr<std::unique_ptr<ClosureClient>> client =
      NewRemoteClosureClient("worker:0", absl::StrCat("127.0.0.1:", ports[1]), client_options);
  if (!client.ok()) Fail(client.status().ToString());
  std::vector<double> raw;
  for (int i = 0; i < latency_calls + 20; ++i) {
    closures::PingResponse response;
    const Clock::time_point start = Clock::now();
    if (absl::Status pinged = (*client)->Ping(&response, Deadline::AfterMs(30000)); !pinged.ok()) {
      Fail(pinged.ToString());
    }
    if (i >= 20) raw.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  row.raw_us = Median(raw);
  const coordinator::ClosureArguments none;
  std::vector<double> latency;
  for (int i = 0; i < latency_calls + 20; ++i) {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::shared_ptr<coordinator::RemoteValue>> value = coordinator->Schedule("bench/empty", none);
    if (!value.ok()) Fail(value.status().ToString());
    if (absl::Status fetched = (*value)->Fetch().status(); !fetched.ok()) Fail(fetched.ToString());
    if (i >= 20) latency.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  row.latency_us = Median(latency);
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < throughput_calls; ++i) {
    if (absl::Status scheduled = coordinator->Schedule("bench/empty", none).status(); !scheduled.ok()) {
      Fail(scheduled.ToString());
    }
  }
  if (absl::Status joined = coordinator->Join(); !joined.ok()) Fail(joined.ToString());
  row.per_second = throughput_calls / std::chrono::duration<double>(Clock::now() - start).count();
  coordinator.reset();
  strategy->reset();
  for (std::unique_ptr<Server>& server : servers) server.reset();
  return row;
}

}  // namespace
}  // namespace distribute

int main(int argc, char** argv) {
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else {
      std::fprintf(stderr, "usage: dist-bench-coordinator [--quick]\n");
      return 2;
    }
  }
  (void)distribute::coordinator::Closures().Register(
      "closure function", "bench/empty",
      [](const std::shared_ptr<distribute::Strategy>&, const distribute::coordinator::ClosureArguments&)
          -> absl::StatusOr<std::optional<distribute::Tensor>> { return std::optional<distribute::Tensor>(); },
      nullptr);
  const int latency_calls = quick ? 50 : 500;
  const int throughput_calls = quick ? 200 : 5000;
  std::printf("# dist-bench --coordinator: scheduled closures on loopback (distribute core), job token on\n");
  std::printf("# hardware threads: %u; an empty registered function; %d latency calls, %d closures per throughput run\n",
              std::thread::hardware_concurrency(), latency_calls, throughput_calls);
  std::printf("# raw: median us of one gRPC unary Ping to worker 0; latency: median us of schedule + fetch;\n");
  std::printf("# ratio = latency / raw; thruput: closures/s scheduled back to back, then joined\n");
  std::printf("#%7s %10s %12s %7s %12s %16s\n", "workers", "raw(us)", "latency(us)", "ratio", "thruput(/s)",
              "raw-bound(/s/wk)");
  for (int workers = 1; workers <= 3; ++workers) {
    const distribute::Row row = distribute::Measure(workers, latency_calls, throughput_calls);
    std::printf(" %7d %10.1f %12.1f %7.2f %12.0f %16.0f\n", row.workers, row.raw_us, row.latency_us,
                row.latency_us / row.raw_us, row.per_second, 1e6 / row.raw_us);
    std::fflush(stdout);
  }
  return 0;
}
