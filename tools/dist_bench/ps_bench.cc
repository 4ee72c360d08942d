// dist-bench-ps (run as `dist-bench --parameter-server`): the latency and throughput of a
// ps task's variable service on loopback, next to the raw gRPC unary round trip of the
// same payload bytes, measured in the same run.
//
// In one process it starts a chief and a ps task (core Server objects, job token on) and
// reaches the ps task through NewRemoteVariableHost, as a worker of ParameterServerStrategy
// does. For float32 variables of 8 B to --max-bytes (powers of 4, and the maximum), it
// times Read and AssignAdd (median of repeated calls) and, over a channel made the same
// way, the Ping RPC carrying the same bytes: to the server (beside AssignAdd, which sends
// them) and back from it (beside Read, which receives them). The ratio columns say what the
// variable service costs beyond moving the bytes: chunking into 4 MiB messages, streaming,
// the store's copy and lock.
//
// A second table times a variable split into 2 shards over 2 ps tasks, read and added to as
// ParameterServerStrategy does (PsVariableStorage: the two tasks' shards sent at once),
// next to the same calls made one shard after another through the same hosts (the
// reference, and what the strategy did before).
//
// A third table times a training step's accesses to 4 such variables: read and updated
// in one batch (one call per ps task) next to the same variables one after another.
//
// It links the C++ core directly, to time the hosts and the storage beneath the C API; a
// program cannot link the core and libdistribute both (their gRPC protocols would be
// registered twice). Timings are a report: exit 0 when every call succeeded and the final
// values are exact, 1 otherwise, 2 on bad flags.
#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <netinet/in.h>
#include <random>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "server/variables.grpc.pb.h"  // generated
#include "core/ps/partitioner.h"
#include "core/ps/placement.h"
#include "core/ps/sharded_tensor.h"
#include "core/ps/variable_host.h"
#include "core/server/job_channel.h"
#include "core/server/remote_variable_host.h"
#include "core/server/server.h"
#include "core/backend/parameter_servers.h"
#include "core/strategy/ps_variable_batch.h"
#include "core/strategy/ps_variable_storage.h"

namespace {

using distribute::Clock;
using distribute::Deadline;
using distribute::DType;
using distribute::Tensor;
namespace pb = ::distribute::variables;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kDefaultMaxBytes = 64 * kMiB;
constexpr int64_t kQuickMaxBytes = kMiB;
constexpr int64_t kCallTimeoutMs = 120'000;

[[noreturn]] void Fail(const std::string& what) {
  std::fflush(stdout);
  std::fprintf(stderr, "dist-bench --parameter-server: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& status, const std::string& what) {
  if (!status.ok()) Fail(absl::StrCat(what, " failed: ", status.ToString()));
}

[[noreturn]] void Usage(const char* problem) {
  if (problem != nullptr) std::fprintf(stderr, "dist-bench --parameter-server: %s\n", problem);
  std::fprintf(problem != nullptr ? stderr : stdout,
               "usage: dist-bench --parameter-server [--quick] [--max-bytes N]\n"
               "  --quick        stop at 1 MiB and time fewer calls (for CI)\n"
               "  --max-bytes N  largest variable in bytes (8 to 256 MiB; default 64 MiB;\n"
               "                 suffixes K, M allowed)\n");
  std::exit(problem != nullptr ? 2 : 0);
}

struct Options {
  bool quick = false;
  int64_t max_bytes = kDefaultMaxBytes;
};

Options ParseArgs(int argc, char** argv) {
  Options options;
  bool max_given = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") Usage(nullptr);
    if (arg == "--quick") {
      options.quick = true;
    } else if (arg == "--max-bytes" && i + 1 < argc) {
      char* end = nullptr;
      const long long value = std::strtoll(argv[++i], &end, 10);
      const long long scale = *end == 'K' || *end == 'k' ? kKiB : *end == 'M' || *end == 'm' ? kMiB : 1;
      if (scale != 1) ++end;
      if (*end != '\0' || value < 1 || value > 256 * kMiB / scale || value * scale < 8) {
        Usage(("bad --max-bytes value '" + std::string(argv[i]) + "'").c_str());
      }
      options.max_bytes = value * scale;
      max_given = true;
    } else {
      Usage(("unknown argument '" + arg + "'").c_str());
    }
  }
  if (options.quick && !max_given) options.max_bytes = kQuickMaxBytes;
  return options;
}

// A loopback port free a moment ago.
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Fail("could not find a free loopback port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

std::string RandomToken() {
  std::random_device device;
  std::string token = "dist-bench-ps-";
  for (int i = 0; i < 4; ++i) token += absl::StrCat(absl::Hex(device(), absl::kZeroPad8));
  return token;
}

// The sizes timed: 8 B, then powers of 4, then the maximum.
std::vector<int64_t> Sizes(int64_t max_bytes) {
  std::vector<int64_t> sizes;
  for (int64_t size = 8; size <= max_bytes; size *= 4) sizes.push_back(size);
  if (sizes.back() != max_bytes && max_bytes % 4 == 0) sizes.push_back(max_bytes);
  return sizes;
}

std::string FormatBytes(int64_t bytes) {
  if (bytes >= kMiB && bytes % kMiB == 0) return absl::StrCat(bytes / kMiB, " MiB");
  if (bytes >= kKiB && bytes % kKiB == 0) return absl::StrCat(bytes / kKiB, " KiB");
  return absl::StrCat(bytes, " B");
}

// The median, in microseconds, of `call` timed repeatedly: at least `min_calls` times and
// until `budget` is spent (at most 2000 calls).
template <typename Call>
double MedianUs(int min_calls, std::chrono::milliseconds budget, Call&& call) {
  call();  // warm-up: connections, first-touch of buffers
  std::vector<double> us;
  const Clock::time_point stop = Clock::now() + budget;
  while (us.size() < 2000 && (us.size() < static_cast<size_t>(min_calls) || Clock::now() < stop)) {
    const Clock::time_point start = Clock::now();
    call();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
  }
  std::sort(us.begin(), us.end());
  const size_t n = us.size();
  return n % 2 == 1 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
}

Tensor Ones(int64_t count) {
  Tensor::Description desc;
  desc.dtype = static_cast<int32_t>(DType::kFloat32);
  const int64_t dims[] = {count};
  desc.dims = dims;
  absl::StatusOr<Tensor> tensor = Tensor::Create(desc, nullptr);
  Check(tensor.status(), "allocating a tensor");
  auto* data = static_cast<float*>(tensor->data());
  std::fill(data, data + count, 1.0f);
  return *std::move(tensor);
}

// Element 0 and the last element of `value` (float32) both equal `expected`.
void CheckEnds(const Tensor& value, float expected, const std::string& what) {
  const auto* data = static_cast<const float*>(value.data());
  const size_t count = value.byte_size() / 4;
  if (data[0] != expected || data[count - 1] != expected) {
    Fail(absl::StrCat(what, " holds ", data[0], ", expected ", expected));
  }
}

// A worker's view of ps tasks 0 and 1 (at `ps0` and `ps1`), as ParameterServerStrategy
// builds it, with round-robin placement.
std::shared_ptr<distribute::ParameterServers> TwoTasks(const std::string& ps0, const std::string& ps1,
                                                       const distribute::RemoteVariableHostOptions& host_options) {
  auto servers = std::make_shared<distribute::ParameterServers>();
  servers->timeout_ms.store(kCallTimeoutMs);
  for (const auto& [task, address] : {std::pair<std::string, std::string>{"ps:0", ps0}, {"ps:1", ps1}}) {
    absl::StatusOr<std::unique_ptr<distribute::ps::VariableHost>> host =
        distribute::NewRemoteVariableHost(task, address, host_options);
    Check(host.status(), "making a variable host");
    Check((*host)->WaitReady(Deadline::AfterMs(kCallTimeoutMs)), "waiting for a ps task");
    servers->hosts.push_back(*std::move(host));
  }
  absl::StatusOr<std::unique_ptr<distribute::ps::Placement>> placement =
      distribute::ps::Placement::Create(2, distribute::ps::PlacementPolicy::kRoundRobin);
  Check(placement.status(), "making the placement");
  servers->placement = *std::move(placement);
  return servers;
}

// A new variable `name` holding `initial`, in 2 shards.
std::unique_ptr<distribute::PsVariableStorage> ShardedVariable(
    const std::shared_ptr<distribute::ParameterServers>& servers, const std::string& name, const Tensor& initial) {
  distribute::ps::VariableDeclaration declaration;
  declaration.name = name;
  declaration.shape = initial.shape();
  declaration.partitioner = distribute::ps::Partitioner::FixedSize(2);
  absl::StatusOr<distribute::ps::VariablePlacement> declared = servers->placement->Declare(declaration);
  Check(declared.status(), "declaring a sharded variable");
  auto storage = std::make_unique<distribute::PsVariableStorage>(servers, *std::move(declared));
  Check(storage->CreateIfAbsent(initial).status(), "creating a sharded variable");
  return storage;
}

// The third table: a training step's accesses, 4 variables of 2 shards each (the demo's
// model), read and updated in one batch (one call per ps task: ps_variable_batch.h) next
// to the same variables read and updated one after another (each variable's shards at
// once: the single-variable calls).
void BatchTable(const Options& options, const std::string& ps0, const std::string& ps1,
                const distribute::RemoteVariableHostOptions& host_options, int min_calls,
                std::chrono::milliseconds budget) {
  constexpr int kVariables = 4;
  const std::shared_ptr<distribute::ParameterServers> servers = TwoTasks(ps0, ps1, host_options);
  std::printf("#\n# %d variables of 2 shards each on 2 ps tasks; median us per step of all %d; batch = one call\n"
              "# per ps task (dist_variables_read / _apply_update), each = every variable's call in turn (the\n"
              "# reference, and what a program makes without the batch calls); size = each variable's bytes\n",
              kVariables, kVariables);
  std::printf("#%11s %10s %10s %7s %10s %10s %7s\n", "size", "read(us)", "each_read", "ratio", "sgd(us)", "each_sgd",
              "ratio");
  const distribute::ps::Hyperparameters minus_one = {{"learning_rate", -1.0}};  // sgd then adds its argument
  for (const int64_t bytes : Sizes(std::min<int64_t>(options.max_bytes, 16 * kMiB))) {
    if (bytes < 16) continue;
    const Tensor ones = Ones(bytes / 4);
    std::vector<std::unique_ptr<distribute::PsVariableStorage>> owned;
    std::vector<distribute::PsVariableStorage*> variables;
    for (int v = 0; v < kVariables; ++v) {
      owned.push_back(ShardedVariable(servers, absl::StrCat("batch", bytes, "_", v), ones));
      variables.push_back(owned.back().get());
    }
    const std::vector<std::vector<Tensor>> arguments(kVariables, std::vector<Tensor>{ones});
    int64_t adds = 0;
    const double read_us = MedianUs(min_calls, budget, [&] {
      Check(distribute::ReadPsVariables(variables).status(), "the batch read");
    });
    const double each_read_us = MedianUs(min_calls, budget, [&] {
      for (distribute::PsVariableStorage* variable : variables) Check(variable->Read().status(), "a Read");
    });
    const double sgd_us = MedianUs(min_calls, budget, [&] {
      Check(distribute::ApplyPsUpdates(variables, arguments, "sgd", minus_one), "the batch update");
      ++adds;
    });
    const double each_sgd_us = MedianUs(min_calls, budget, [&] {
      for (distribute::PsVariableStorage* variable : variables) {
        Check(variable->ApplyUpdate("sgd", arguments.front(), minus_one), "an update");
      }
      ++adds;
    });
    absl::StatusOr<std::vector<Tensor>> values = distribute::ReadPsVariables(variables);
    Check(values.status(), "the final batch read");
    for (int v = 0; v < kVariables; ++v) {
      CheckEnds((*values)[static_cast<size_t>(v)], static_cast<float>(1 + adds), absl::StrCat("batch variable ", v));
    }
    std::printf(" %11s %10.1f %10.1f %7.2f %10.1f %10.1f %7.2f\n", FormatBytes(bytes).c_str(), read_us, each_read_us,
                read_us / each_read_us, sgd_us, each_sgd_us, sgd_us / each_sgd_us);
    std::fflush(stdout);
  }
}

// The second table: a variable in 2 shards over ps tasks 0 and 1.
void ShardedTable(const Options& options, const std::string& ps0, const std::string& ps1,
                  const distribute::RemoteVariableHostOptions& host_options, int min_calls,
                  std::chrono::milliseconds budget) {
  const std::shared_ptr<distribute::ParameterServers> servers = TwoTasks(ps0, ps1, host_options);
  std::printf("#\n# a variable in 2 shards on 2 ps tasks; median us per call; sequential = each shard's call\n"
              "# in turn through the same hosts (the reference)\n");
  std::printf("#%11s %10s %10s %7s %10s %10s %7s\n", "size", "read(us)", "seq_read", "ratio", "add(us)", "seq_add",
              "ratio");
  for (const int64_t bytes : Sizes(options.max_bytes)) {
    if (bytes < 16) continue;  // two shards of at least one float each
    const Tensor ones = Ones(bytes / 4);
    const std::string name = absl::StrCat("sharded", bytes);
    const std::unique_ptr<distribute::PsVariableStorage> sharded = ShardedVariable(servers, name, ones);
    distribute::PsVariableStorage& storage = *sharded;
    const distribute::ps::VariablePlacement* declared = &storage.placement();
    const distribute::ps::ShardLayout& layout = *declared->layout;
    const auto host_of = [&](size_t i) -> distribute::ps::VariableHost& {
      return *servers->hosts[static_cast<size_t>(declared->shards[i].task)];
    };

    int64_t adds = 0;
    const double read_us = MedianUs(min_calls, budget, [&] { Check(storage.Read().status(), "Read"); });
    const double seq_read_us = MedianUs(min_calls, budget, [&] {
      const Deadline deadline = Deadline::AfterMs(kCallTimeoutMs);
      std::vector<Tensor> read;
      for (size_t i = 0; i < declared->shards.size(); ++i) {
        absl::StatusOr<Tensor> part = host_of(i).Read(declared->shards[i].name, deadline);
        Check(part.status(), "Read of a shard");
        read.push_back(*std::move(part));
      }
      Check(distribute::ps::ConcatenateShards(read, layout).status(), "concatenating");
    });
    const double add_us = MedianUs(min_calls, budget, [&] {
      Check(storage.AssignAdd(ones), "AssignAdd");
      ++adds;
    });
    const double seq_add_us = MedianUs(min_calls, budget, [&] {
      const Deadline deadline = Deadline::AfterMs(kCallTimeoutMs);
      absl::StatusOr<std::vector<Tensor>> split = distribute::ps::SplitIntoShards(ones, layout);
      Check(split.status(), "splitting");
      for (size_t i = 0; i < declared->shards.size(); ++i) {
        Check(host_of(i).AssignAdd(declared->shards[i].name, (*split)[i], deadline), "AssignAdd of a shard");
      }
      ++adds;
    });
    absl::StatusOr<Tensor> value = storage.Read();
    Check(value.status(), "the final Read");
    CheckEnds(*value, static_cast<float>(1 + adds), name);
    std::printf(" %11s %10.1f %10.1f %7.2f %10.1f %10.1f %7.2f\n", FormatBytes(bytes).c_str(), read_us, seq_read_us,
                read_us / seq_read_us, add_us, seq_add_us, add_us / seq_add_us);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Options options = ParseArgs(argc, argv);
  const std::string token = RandomToken();
  // Room for the raw round trip of the largest payload in one message; the variable
  // service still moves tensors in 4 MiB chunks.
  const size_t max_message_bytes = static_cast<size_t>(options.max_bytes + kMiB);

  const std::string chief_address = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
  const std::string ps_address = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
  const std::string ps1_address = absl::StrCat("127.0.0.1:", FreeLoopbackPort());
  distribute::Server::Options server_options;
  server_options.job_token = token;
  server_options.max_message_bytes = max_message_bytes;
  std::vector<std::unique_ptr<distribute::Server>> servers;
  for (const auto& [job, index] : {std::pair<const char*, int>{"worker", 0}, {"ps", 0}, {"ps", 1}}) {
    distribute::ClusterSpec cluster;
    Check(cluster.AddTask("worker", 0, chief_address), "adding the chief");
    Check(cluster.AddTask("ps", 0, ps_address), "adding ps task 0");
    Check(cluster.AddTask("ps", 1, ps1_address), "adding ps task 1");
    Check(cluster.SetTask(job, index), "setting the task");
    absl::StatusOr<std::unique_ptr<distribute::Server>> server = distribute::Server::Start(cluster, server_options);
    Check(server.status(), absl::StrCat("starting the ", job, " ", index, " server"));
    servers.push_back(*std::move(server));
  }

  distribute::RemoteVariableHostOptions host_options;
  host_options.job_token = token;
  host_options.max_message_bytes = max_message_bytes;
  absl::StatusOr<std::unique_ptr<distribute::ps::VariableHost>> made =
      distribute::NewRemoteVariableHost("ps:0", ps_address, host_options);
  Check(made.status(), "making the variable host");
  distribute::ps::VariableHost& host = **made;
  Check(host.WaitReady(Deadline::AfterMs(kCallTimeoutMs)), "waiting for the ps task");

  // The raw unary round trip, on a channel made as the host makes its own.
  auto stub = pb::VariableService::NewStub(distribute::NewJobChannel(ps_address, std::nullopt, max_message_bytes));
  const auto ping = [&](const pb::PingRequest& request) {
    grpc::ClientContext context;
    distribute::AddJobToken(context, token);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(kCallTimeoutMs));
    pb::PingResponse response;
    const grpc::Status status = stub->Ping(&context, request, &response);
    if (!status.ok()) Fail(absl::StrCat("Ping failed: ", status.error_message()));
    if (response.payload().size() != request.reply_bytes()) Fail("Ping answered the wrong number of bytes");
  };

  const int min_calls = options.quick ? 3 : 10;
  const std::chrono::milliseconds budget(options.quick ? 50 : 400);
  std::printf("# dist-bench --parameter-server: a ps task's variable service on loopback (distribute core)\n");
  std::printf("# hardware threads: %u, max bytes: %" PRId64 "%s, tensors in chunks of 4 MiB, job token on\n",
              std::thread::hardware_concurrency(), options.max_bytes, options.quick ? " (--quick)" : "");
  std::printf("# median us per call; raw = one gRPC unary Ping carrying the same bytes (up: request, down: reply)\n");
  std::printf("#%11s %10s %10s %7s %10s %10s %7s %10s %10s\n", "size", "read(us)", "raw_down", "ratio", "add(us)",
              "raw_up", "ratio", "read_GB/s", "add_GB/s");
  for (const int64_t bytes : Sizes(options.max_bytes)) {
    const std::string name = absl::StrCat("v", bytes);
    const Tensor ones = Ones(bytes / 4);
    Check(host.CreateIfAbsent(name, ones, Deadline::AfterMs(kCallTimeoutMs)).status(), "CreateIfAbsent");
    int64_t adds = 0;
    const double read_us = MedianUs(min_calls, budget, [&] {
      Check(host.Read(name, Deadline::AfterMs(kCallTimeoutMs)).status(), "Read");
    });
    const double add_us = MedianUs(min_calls, budget, [&] {
      Check(host.AssignAdd(name, ones, Deadline::AfterMs(kCallTimeoutMs)), "AssignAdd");
      ++adds;
    });
    pb::PingRequest down;
    down.set_reply_bytes(static_cast<uint64_t>(bytes));
    const double down_us = MedianUs(min_calls, budget, [&] { ping(down); });
    pb::PingRequest up;
    up.mutable_payload()->resize(static_cast<size_t>(bytes), 'x');
    const double up_us = MedianUs(min_calls, budget, [&] { ping(up); });

    // Every add landed: each element is 1 + the number of adds (exact in float32 here).
    absl::StatusOr<Tensor> value = host.Read(name, Deadline::AfterMs(kCallTimeoutMs));
    Check(value.status(), "the final Read");
    CheckEnds(*value, static_cast<float>(1 + adds), name);
    std::printf(" %11s %10.1f %10.1f %7.2f %10.1f %10.1f %7.2f %10.3f %10.3f\n", FormatBytes(bytes).c_str(), read_us,
                down_us, read_us / down_us, add_us, up_us, add_us / up_us,
                static_cast<double>(bytes) / read_us / 1e3, static_cast<double>(bytes) / add_us / 1e3);
    std::fflush(stdout);
  }
  ShardedTable(options, ps_address, ps1_address, host_options, min_calls, budget);
  BatchTable(options, ps_address, ps1_address, host_options, min_calls, budget);
  return 0;
}
