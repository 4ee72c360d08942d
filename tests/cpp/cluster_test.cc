// Servers, ParameterServerStrategy and the coordinator through the wrapper (cpp/server.hpp,
// cpp/parameter_server.hpp, cpp/coordinator.hpp): a one-task job's key-value store and
// barrier, the options' refusals, the server's bounds (set_limit / limit), a local-mode
// ParameterServerStrategy whose sharded variable takes a lambda registered as an update
// function (its arithmetic computed here), and a job in this process (a ps task, a worker
// task whose server runs C++ closures, the chief's strategy and coordinator on free
// loopback ports): closures that add to a ps variable and return twice their argument, a
// closure's error at fetch and join, and a per-worker dataset read by closures until its end.
//
// Suites named ServerTest* and CoordinatorTest* run gRPC servers: the ThreadSanitizer
// preset leaves them out, as the C and core suites of servers (CMakePresets.json); the
// others here run none and stay in.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "distribute/distribute.hpp"

namespace {

// `n` distinct loopback ports free a moment ago (held together while they are picked).
std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  return ports;
}

// Whether ClosureArgs::add accepts an A.
template <class A, class = void>
struct CanAddToClosureArgs : std::false_type {};
template <class A>
struct CanAddToClosureArgs<A, std::void_t<decltype(std::declval<dist::ClosureArgs&>().add(std::declval<const A&>()))>>
    : std::true_type {};

std::string Loopback(int port) { return "127.0.0.1:" + std::to_string(port); }

void ClearJobEnvironment() {
  unsetenv("TF_CONFIG");
  unsetenv("DIST_JOB_TOKEN");
}

TEST(ServerTestCpp, OptionsRefuseWhatTheCApiRefuses) {
  dist::ServerOptions options = dist::ServerOptions::create().value();
  EXPECT_TRUE(options.set_startup_timeout_ms(5000).ok());
  EXPECT_EQ(options.set_startup_timeout_ms(0).code(), DIST_INVALID_ARGUMENT);
  EXPECT_TRUE(options.set_heartbeat_interval_ms(100).ok());
  EXPECT_TRUE(options.set_heartbeat_timeout_ms(5000).ok());
  EXPECT_EQ(options.set_heartbeat_timeout_ms(-1).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(options.set_job_token("short").code(), DIST_INVALID_ARGUMENT);
  EXPECT_TRUE(options.set_job_token("a-job-token-of-enough-length").ok());
  EXPECT_TRUE(options.set_allow_unauthenticated(false).ok());
  EXPECT_EQ(options.set_tls_files("cert.pem", nullptr, nullptr).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::ServerOptions().set_job_token(nullptr).code(), DIST_INVALID_ARGUMENT);  // empty handle
}

// The server's bounds (set_limit / limit): each default and range as server.h documents
// them, written out here (the memory-dependent ones within their bounds), refusals that
// name the bound and change nothing, and unknown limits. No server runs (TSan keeps it).
TEST(ServerOptionsTestCpp, LimitsHaveTheirDocumentedDefaultsAndRanges) {
  struct Row {
    dist_server_limit_t limit;
    const char* name;
    int64_t default_value, min, max;
  };
  constexpr int64_t kDayMs = 86400000, kInt32Max = INT32_MAX, kAny = INT64_MAX;
  const Row rows[] = {
      {DIST_SERVER_LIMIT_MAX_CONNECTIONS, "max_connections", 0, 0, int64_t{1} << 20},
      {DIST_SERVER_LIMIT_MAX_CONNECTIONS_PER_PEER, "max_connections_per_peer", 0, 0, int64_t{1} << 20},
      {DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION, "max_streams_per_connection", 128, 1, kInt32Max},
      {DIST_SERVER_LIMIT_CONNECTION_IDLE_TIMEOUT_MS, "connection_idle_timeout_ms", 120000, 1, kDayMs},
      {DIST_SERVER_LIMIT_HANDSHAKE_TIMEOUT_MS, "handshake_timeout_ms", 10000, 1, kDayMs},
      {DIST_SERVER_LIMIT_STREAM_IDLE_TIMEOUT_MS, "stream_idle_timeout_ms", 10000, 1, kDayMs},
      {DIST_SERVER_LIMIT_MAX_MESSAGE_BYTES, "max_message_bytes", int64_t{4} << 20, 10240, kInt32Max},
      {DIST_SERVER_LIMIT_MAX_STORE_BYTES, "max_store_bytes", int64_t{64} << 20, 1, kAny},
      {DIST_SERVER_LIMIT_MAX_STORE_KEYS, "max_store_keys", 65536, 1, kAny},
      {DIST_SERVER_LIMIT_MAX_BARRIERS, "max_barriers", 16384, 1, kAny},
      {DIST_SERVER_LIMIT_MAX_PENDING_WAITS, "max_pending_waits", 0, 0, 65536},
      {DIST_SERVER_LIMIT_MAX_VARIABLES, "max_variables", int64_t{1} << 20, 1, int64_t{1} << 22},
      {DIST_SERVER_LIMIT_MAX_VARIABLE_REQUEST_BYTES, "max_variable_request_bytes", int64_t{1} << 30, 1, kAny},
  };
  dist::ServerOptions options = dist::ServerOptions::create().value();
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    EXPECT_EQ(options.limit(row.limit).value(), row.default_value);
    for (const int64_t v : {row.min, row.max}) {
      ASSERT_TRUE(options.set_limit(row.limit, v).ok());
      EXPECT_EQ(options.limit(row.limit).value(), v);
    }
    // Out of range: INVALID_ARGUMENT naming the bound and the value; the last value stays.
    const dist::Status below = options.set_limit(row.limit, row.min - 1);
    EXPECT_EQ(below.code(), DIST_INVALID_ARGUMENT);
    const std::string expected = std::string(row.name) + " (limit " + std::to_string(row.limit) + ") cannot be " +
                                 std::to_string(row.min - 1);
    EXPECT_NE(below.message().find(expected), std::string::npos) << below.to_string();
    if (row.max < kAny) {
      const dist::Status above = options.set_limit(row.limit, row.max + 1);
      EXPECT_EQ(above.code(), DIST_INVALID_ARGUMENT);
      EXPECT_NE(above.message().find(row.name), std::string::npos) << above.to_string();
    }
    EXPECT_EQ(options.limit(row.limit).value(), row.max);
  }
  const int64_t variable_bytes = options.limit(DIST_SERVER_LIMIT_MAX_VARIABLE_BYTES).value();
  EXPECT_TRUE(variable_bytes >= 1 && variable_bytes <= (int64_t{16} << 30)) << variable_bytes;
  const int64_t inflight = options.limit(DIST_SERVER_LIMIT_MAX_VARIABLE_INFLIGHT_BYTES).value();
  EXPECT_TRUE(inflight >= (int64_t{1} << 30) && inflight <= (int64_t{4} << 30)) << inflight;
}

TEST(ServerOptionsTestCpp, LimitsReadBackAndRefuseUnknownOnes) {
  dist::ServerOptions options = dist::ServerOptions::create().value();
  EXPECT_EQ(options.limit(DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION).value(), 128);
  EXPECT_EQ(options.limit(DIST_SERVER_LIMIT_HANDSHAKE_TIMEOUT_MS).value(), 10000);
  EXPECT_EQ(options.limit(DIST_SERVER_LIMIT_MAX_STORE_KEYS).value(), 65536);
  ASSERT_TRUE(options.set_limit(DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION, 7).ok());
  EXPECT_EQ(options.limit(DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION).value(), 7);
  const dist::Status zero = options.set_limit(DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION, 0);
  EXPECT_EQ(zero.code(), DIST_INVALID_ARGUMENT);
  EXPECT_NE(zero.message().find("max_streams_per_connection"), std::string::npos) << zero.to_string();
  EXPECT_EQ(options.limit(DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION).value(), 7);  // unchanged

  for (const dist_server_limit_t unknown : {0, 16, -1}) {
    const std::string needle = "limit is " + std::to_string(unknown);
    const dist::Status set = options.set_limit(unknown, 5);
    EXPECT_EQ(set.code(), DIST_INVALID_ARGUMENT);
    EXPECT_NE(set.message().find(needle), std::string::npos) << set.to_string();
    const dist::Result<int64_t> got = options.limit(unknown);
    EXPECT_EQ(got.status().code(), DIST_INVALID_ARGUMENT);
    EXPECT_NE(got.status().message().find(needle), std::string::npos) << got.status().to_string();
  }
  const dist::Status unknown = options.set_limit(0, 5);
  EXPECT_NE(unknown.message().find("dist_server_options_set_limit: limit is 0"), std::string::npos)
      << unknown.to_string();
  EXPECT_EQ(dist::ServerOptions().set_limit(DIST_SERVER_LIMIT_MAX_BARRIERS, 5).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::ServerOptions().limit(DIST_SERVER_LIMIT_MAX_BARRIERS).status().code(), DIST_INVALID_ARGUMENT);
}

// The store's byte cap set through the wrapper bounds a running chief's store.
TEST(ServerTestCpp, ALimitTakesEffectInTheServer) {
  ClearJobEnvironment();
  const int port = FreePorts(1)[0];
  dist::Cluster cluster = dist::Cluster::create().value();
  ASSERT_TRUE(cluster.add_task("worker", 0, Loopback(port).c_str()).ok());
  ASSERT_TRUE(cluster.set_task("worker", 0).ok());
  dist::ServerOptions options = dist::ServerOptions::create().value();
  ASSERT_TRUE(options.set_startup_timeout_ms(5000).ok());
  ASSERT_TRUE(options.set_limit(DIST_SERVER_LIMIT_MAX_STORE_BYTES, 100).ok());
  dist::Result<dist::Server> made = dist::Server::create(cluster, &options);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  dist::Server server = std::move(*made);
  const std::string value(60, 'x');
  ASSERT_TRUE(server.key_value_set("a", value).ok());  // 1 + 60 bytes
  const dist::Status refused = server.key_value_set("b", value);
  EXPECT_EQ(refused.code(), DIST_RESOURCE_EXHAUSTED);
  EXPECT_NE(refused.message().find("max_store_bytes"), std::string::npos) << refused.to_string();
}

TEST(ServerTestCpp, AOneTaskJobKeepsKeysAndPassesBarriers) {
  ClearJobEnvironment();
  const int port = FreePorts(1)[0];
  dist::Cluster cluster = dist::Cluster::create().value();
  ASSERT_TRUE(cluster.add_task("chief", 0, Loopback(port).c_str()).ok());
  ASSERT_TRUE(cluster.set_task("chief", 0).ok());
  dist::Result<dist::Server> made = dist::Server::create(cluster);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  dist::Server server = std::move(*made);
  EXPECT_EQ(server.port().value(), port);
  ASSERT_TRUE(server.key_value_set("greeting", std::string("hello\0there", 11)).ok());
  EXPECT_EQ(server.key_value_get("greeting", 0).value(), std::string("hello\0there", 11));
  const dist::Result<std::string> missing = server.key_value_get("never-set", 0);
  EXPECT_EQ(missing.status().code(), DIST_DEADLINE_EXCEEDED);
  EXPECT_NE(missing.status().message().find("never-set"), std::string::npos) << missing.status().to_string();
  EXPECT_EQ(server.key_value_set("", "x").code(), DIST_INVALID_ARGUMENT);
  EXPECT_TRUE(server.barrier("everyone", 5000).ok());  // the chief is every worker task here
  EXPECT_TRUE(server.peer_health().ok());
  EXPECT_TRUE(server.stop().ok());
  EXPECT_TRUE(server.join().ok());  // returns once stopped
  // A second server for the same task cannot listen where the first did... nor with no task.
  dist::Cluster taskless = dist::Cluster::create().value();
  ASSERT_TRUE(taskless.add_task("chief", 0, Loopback(port).c_str()).ok());
  EXPECT_EQ(dist::Server::create(taskless).status().code(), DIST_FAILED_PRECONDITION);
}

// scaled_add: variable += scale * argument, and slot "calls" counts the updates; records how
// many tensors (the variable and its slot) each call received.
struct ScaledAdd {
  std::shared_ptr<std::atomic<int>> live;
  std::shared_ptr<std::atomic<int>> tensors_seen;
  ScaledAdd(std::shared_ptr<std::atomic<int>> l, std::shared_ptr<std::atomic<int>> t)
      : live(std::move(l)), tensors_seen(std::move(t)) {
    ++*live;
  }
  ScaledAdd(const ScaledAdd& other) : live(other.live), tensors_seen(other.tensors_seen) { ++*live; }
  ~ScaledAdd() { --*live; }
  dist::Status operator()(dist::Args variables, dist::Args args, dist::Hyperparameters hyperparameters) const {
    tensors_seen->store(variables.size());
    if (hyperparameters.find(nullptr).ok()) return dist::Status(DIST_INTERNAL, "a null name was found");
    dist::Result<double> scale = hyperparameters.find("scale");
    if (!scale) return scale.status();
    dist::Result<dist::Span<float>> value = variables[0].data<float>();
    dist::Result<dist::Span<float>> calls = variables[1].data<float>();
    dist::Result<dist::Span<float>> delta = args[0].data<float>();
    if (!value || !calls || !delta) return dist::Status(DIST_INTERNAL, "no data");
    for (size_t i = 0; i < value->size(); ++i) {
      (*value)[i] += static_cast<float>(*scale) * (*delta)[i];
      (*calls)[i] += 1.0f;
    }
    return dist::Status();
  }
};

TEST(ParameterServerCppTest, ALambdaUpdatesAShardedVariableWhereItLives) {
  ClearJobEnvironment();
  auto live = std::make_shared<std::atomic<int>>(0);
  auto seen = std::make_shared<std::atomic<int>>(0);
  dist::UpdateFunctionSignature signature;
  signature.slot_names = {"calls"};
  signature.slot_initial_values = {0.0};
  signature.hyperparameter_names = {"scale"};
  signature.hyperparameter_defaults = {1.0};
  ASSERT_TRUE(dist::register_update_function("cpp_scaled_add", ScaledAdd(live, seen), signature).ok());
  EXPECT_EQ(live->load(), 1);  // the registry's copy
  EXPECT_TRUE(dist::is_update_function_registered("cpp_scaled_add").value());
  // A name in use is refused, and the refused copy destroyed.
  EXPECT_EQ(dist::register_update_function("cpp_scaled_add", ScaledAdd(live, seen), signature).code(),
            DIST_ALREADY_EXISTS);
  EXPECT_EQ(live->load(), 1);
  dist::UpdateFunctionSignature lopsided = signature;
  lopsided.hyperparameter_defaults = {};
  EXPECT_EQ(dist::register_update_function("cpp_lopsided", ScaledAdd(live, seen), lopsided).code(),
            DIST_INVALID_ARGUMENT);

  dist::ParameterServerOptions options = dist::ParameterServerOptions::create().value();
  ASSERT_TRUE(options.set_placement(DIST_PLACEMENT_GREEDY_BYTES).ok());
  EXPECT_EQ(options.set_placement(7).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(options.set_fixed_shards(0).code(), DIST_INVALID_ARGUMENT);
  ASSERT_TRUE(options.set_min_max_shards(4).ok());
  ASSERT_TRUE(options.set_max_shard_bytes(1024).ok());
  ASSERT_TRUE(options.clear_partitioner().ok());
  ASSERT_TRUE(options.set_fixed_shards(2).ok());
  dist::Result<dist::Strategy> made = dist::parameter_server_strategy(nullptr, nullptr, &options);
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  dist::Strategy strategy = std::move(*made);
  EXPECT_EQ(strategy.kind().value(), DIST_STRATEGY_PARAMETER_SERVER);
  dist::Value w;
  {
    dist::Scope scope = strategy.scope().value();
    w = dist::variable(dist::tensor<float>({1, 2, 3, 4, 5}, {5}).value(), DIST_SYNC_AUTO, DIST_AGGREGATION_SUM,
                       "cpp_w")
            .value();
  }
  EXPECT_EQ(dist::num_shards(w).value(), 2);
  EXPECT_EQ(dist::shard_task(w, 1).value(), 0);  // local mode: one parameter device
  EXPECT_EQ(dist::shard_task(w, 2).status().code(), DIST_OUT_OF_RANGE);

  const dist::Value delta = dist::tensor<float>({10, 20, 30, 40, 50}, {5}).value();
  const char* scale_name[] = {"scale"};
  const double half[] = {0.5};
  ASSERT_TRUE(dist::apply_update(w, "cpp_scaled_add", {delta}, scale_name, half).ok());
  EXPECT_EQ(seen->load(), 2);  // the shard and its slot
  ASSERT_TRUE(dist::apply_update(w, "cpp_scaled_add", {delta}).ok());  // the default scale, 1
  std::vector<float> expected;
  for (float x : {1.0f, 2.0f, 3.0f, 4.0f, 5.0f}) expected.push_back(x + 0.5f * 10 * x + 10 * x);
  dist::Value read = w.read().value();
  dist::Span<float> got = read.data<float>().value();
  EXPECT_EQ(std::vector<float>(got.data(), got.data() + got.size()), expected);
  // The built-in sgd: w -= learning_rate * gradient.
  const char* lr_name[] = {"learning_rate"};
  const double lr[] = {0.1};
  ASSERT_TRUE(dist::apply_update(w, "sgd", {delta}, lr_name, lr).ok());
  dist::Value after = w.read().value();
  EXPECT_FLOAT_EQ(after.data<float>().value()[0], expected[0] - 0.1f * 10);
  // Refusals: an unknown function, an argument count, a lopsided list of numbers.
  EXPECT_EQ(dist::apply_update(w, "cpp_no_such_update", {delta}).code(), DIST_NOT_FOUND);
  EXPECT_EQ(dist::apply_update(w, "cpp_scaled_add", {}).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::apply_update(w, "cpp_scaled_add", {delta}, scale_name, {}).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::num_shards(delta).status().code(), DIST_INVALID_ARGUMENT);

  // The batches: w and a second variable read and updated at once.
  dist::Value b;
  {
    dist::Scope scope = strategy.scope().value();
    b = dist::variable(dist::tensor<float>({100, 200}, {2}).value(), DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, "cpp_b")
            .value();
  }
  const float w_before = w.read().value().data<float>().value()[4];
  dist::Result<std::vector<dist::Value>> both = dist::read_variables({w, b, w});
  ASSERT_TRUE(both.ok()) << both.status().to_string();
  ASSERT_EQ(both->size(), 3u);
  EXPECT_EQ((*both)[0].data<float>().value()[4], w_before);
  EXPECT_EQ((*both)[1].data<float>().value()[1], 200.0f);
  EXPECT_EQ((*both)[2].data<float>().value()[4], w_before);
  const dist::Value b_delta = dist::tensor<float>({4, 8}, {2}).value();
  const double quarter[] = {0.25};
  ASSERT_TRUE(dist::apply_updates({w, b}, "sgd", {{delta}, {b_delta}}, lr_name, quarter).ok());
  EXPECT_FLOAT_EQ(w.read().value().data<float>().value()[4], w_before - 0.25f * 50);
  EXPECT_FLOAT_EQ(b.read().value().data<float>().value()[0], 100.0f - 0.25f * 4);
  EXPECT_FLOAT_EQ(b.read().value().data<float>().value()[1], 200.0f - 0.25f * 8);
  // Refusals: rows that do not match the variables, a lopsided row, a tensor as a variable.
  EXPECT_EQ(dist::apply_updates({w, b}, "sgd", {{delta}}, lr_name, quarter).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::apply_updates({w, b}, "sgd", {{delta}, {b_delta, b_delta}}, lr_name, quarter).code(),
            DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::apply_updates({w, delta}, "sgd", {{delta}, {delta}}, lr_name, quarter).code(),
            DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::read_variables({w, delta}).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::read_variables({}).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_FLOAT_EQ(b.read().value().data<float>().value()[0], 100.0f - 0.25f * 4);

  ASSERT_TRUE(dist::unregister_update_function("cpp_scaled_add").ok());
  EXPECT_EQ(live->load(), 0);
  EXPECT_FALSE(dist::is_update_function_registered("cpp_scaled_add").value());
  EXPECT_EQ(dist::unregister_update_function("cpp_scaled_add").code(), DIST_NOT_FOUND);
}

// The job: chief (the coordinator), worker 0 (runs closures), ps 0 (holds variables).
class CoordinatorTestCpp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ClearJobEnvironment();
    ASSERT_TRUE(dist::register_closure("cpp_add_and_double",
                                       [](dist::Strategy&, dist::ClosureArgsView args) -> dist::Result<dist::Value> {
                                         dist::Result<dist::ValueView> counter = args.value(0);
                                         dist::Result<dist::ValueView> x = args.value(1);
                                         if (!counter || !x) return dist::Status(DIST_INTERNAL, "no arguments");
                                         dist::Status added = counter->assign_add(dist::scalar<float>(1.0f).value());
                                         if (!added.ok()) return added;
                                         return dist::scalar<float>(2.0f * x->scalar<float>().value());
                                       })
                    .ok());
    ASSERT_TRUE(dist::register_closure("cpp_corrupt", [](dist::Strategy&, dist::ClosureArgsView) {
                  return dist::Status(DIST_DATA_LOSS, "the closure found corrupt input");
                }).ok());
    ASSERT_TRUE(dist::register_closure("cpp_first_of_batch",
                                       [](dist::Strategy&, dist::ClosureArgsView args) -> dist::Result<dist::Value> {
                                         dist::Result<dist::IteratorView> it = args.iterator(0);
                                         if (!it) return it.status();
                                         dist::Result<std::vector<dist::Value>> next = it->get_next(1);
                                         if (!next) return next.status();  // OUT_OF_RANGE ends the epoch
                                         dist::Result<dist::Value> rows = (*next)[0].component(0);
                                         if (!rows) return rows.status();
                                         return dist::scalar<int64_t>(rows->data<int64_t>().value()[0]);
                                       })
                    .ok());
    ASSERT_TRUE(dist::register_dataset_function("cpp_range_in_pairs", [](dist::InputContextView) {
                  return dist::Dataset::range(0, 8).value().batch(2);
                }).ok());

    const std::vector<int> ports = FreePorts(3);
    const auto cluster_as = [&](const char* job) {
      dist::Cluster cluster = dist::Cluster::create().value();
      EXPECT_TRUE(cluster.add_task("chief", 0, Loopback(ports[0]).c_str()).ok());
      EXPECT_TRUE(cluster.add_task("worker", 0, Loopback(ports[1]).c_str()).ok());
      EXPECT_TRUE(cluster.add_task("ps", 0, Loopback(ports[2]).c_str()).ok());
      EXPECT_TRUE(cluster.set_task(job, 0).ok());
      return cluster;
    };
    std::vector<std::thread> starts;
    for (const char* job : {"worker", "ps"}) {
      dist::Result<dist::Server>* slot = job[0] == 'w' ? &worker_server_ : &ps_server_;
      starts.emplace_back([slot, job, &cluster_as] { *slot = dist::Server::create(cluster_as(job)); });
    }
    dist::CommunicationOptions communication = dist::CommunicationOptions::create().value();
    EXPECT_TRUE(communication.set_timeout_ms(20000).ok());
    dist::Cluster chief = cluster_as("chief");
    dist::Result<dist::Strategy> strategy = dist::parameter_server_strategy(&chief, &communication);
    for (std::thread& t : starts) t.join();
    ASSERT_TRUE(strategy.ok()) << strategy.status().to_string();
    ASSERT_TRUE(worker_server_.ok()) << worker_server_.status().to_string();
    ASSERT_TRUE(ps_server_.ok()) << ps_server_.status().to_string();
    strategy_.emplace(std::move(*strategy));
    dist::Result<dist::Coordinator> coordinator = dist::Coordinator::create(*strategy_);
    ASSERT_TRUE(coordinator.ok()) << coordinator.status().to_string();
    coordinator_.emplace(std::move(*coordinator));
  }

  static void TearDownTestSuite() {
    coordinator_.reset();
    if (worker_server_.ok()) (void)worker_server_->stop();
    if (ps_server_.ok()) (void)ps_server_->stop();
    strategy_.reset();
    worker_server_ = dist::Status(DIST_CANCELLED, "torn down");
    ps_server_ = dist::Status(DIST_CANCELLED, "torn down");
    for (const char* name : {"cpp_add_and_double", "cpp_corrupt", "cpp_first_of_batch"}) {
      (void)dist::unregister_closure(name);
    }
    (void)dist::unregister_dataset_function("cpp_range_in_pairs");
  }

  static dist::Result<dist::Server> worker_server_;
  static dist::Result<dist::Server> ps_server_;
  static std::optional<dist::Strategy> strategy_;
  static std::optional<dist::Coordinator> coordinator_;
};

dist::Result<dist::Server> CoordinatorTestCpp::worker_server_ = dist::Status(DIST_CANCELLED, "not started");
dist::Result<dist::Server> CoordinatorTestCpp::ps_server_ = dist::Status(DIST_CANCELLED, "not started");
std::optional<dist::Strategy> CoordinatorTestCpp::strategy_;
std::optional<dist::Coordinator> CoordinatorTestCpp::coordinator_;

TEST_F(CoordinatorTestCpp, ClosuresAddToAPsVariableAndReturnResults) {
  ASSERT_TRUE(coordinator_.has_value());
  EXPECT_EQ(coordinator_->num_workers().value(), 1);
  dist::Value counter;
  {
    dist::Scope scope = strategy_->scope().value();
    counter = dist::variable(dist::scalar<float>(0.0f).value(), DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, "cpp_counter")
                  .value();
  }
  std::vector<dist::RemoteValue> results;
  for (int i = 0; i < 5; ++i) {
    dist::ClosureArgs args = dist::ClosureArgs::create().value();
    ASSERT_TRUE(args.add(counter).ok());
    ASSERT_TRUE(args.add(dist::scalar<float>(static_cast<float>(i)).value()).ok());
    EXPECT_EQ(args.count().value(), 2);
    EXPECT_EQ(args.kind(0).value(), DIST_CLOSURE_ARG_VARIABLE);
    EXPECT_EQ(args.kind(1).value(), DIST_CLOSURE_ARG_TENSOR);
    EXPECT_EQ(args.value(1).value().scalar<float>().value(), static_cast<float>(i));
    results.push_back(coordinator_->schedule("cpp_add_and_double", &args).value());
  }  // the arguments were copied: destroying them changes nothing
  ASSERT_TRUE(coordinator_->join().ok());
  EXPECT_TRUE(coordinator_->done().value());
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(results[static_cast<size_t>(i)].is_ready().value());
    EXPECT_EQ(results[static_cast<size_t>(i)].fetch().value().scalar<float>().value(), 2.0f * static_cast<float>(i));
  }
  EXPECT_EQ(counter.read().value().scalar<float>().value(), 5.0f);
  // Unknown functions are refused at schedule.
  EXPECT_EQ(coordinator_->schedule("").status().code(), DIST_INVALID_ARGUMENT);
}

TEST_F(CoordinatorTestCpp, AClosuresErrorReachesFetchAndJoinOnce) {
  ASSERT_TRUE(coordinator_.has_value());
  dist::RemoteValue failing = coordinator_->schedule("cpp_corrupt").value();
  const dist::Status fetched = failing.fetch().status();
  EXPECT_EQ(fetched.code(), DIST_DATA_LOSS);
  EXPECT_NE(fetched.message().find("the closure found corrupt input"), std::string::npos) << fetched.to_string();
  EXPECT_EQ(coordinator_->join().code(), DIST_DATA_LOSS);
  EXPECT_TRUE(coordinator_->join().ok());  // reported once
}

TEST_F(CoordinatorTestCpp, APerWorkerIteratorFeedsClosuresUntilItsEnd) {
  ASSERT_TRUE(coordinator_.has_value());
  dist::PerWorkerDataset dataset = coordinator_->create_per_worker_dataset("cpp_range_in_pairs").value();
  dist::PerWorkerIterator iterator = dataset.make_iterator().value();
  static_assert(CanAddToClosureArgs<dist::PerWorkerIterator>::value && !CanAddToClosureArgs<dist::PerWorkerDataset>::value,
                "a per-worker iterator is a closure argument, a per-worker dataset is not");
  std::vector<dist::RemoteValue> firsts;
  for (int i = 0; i < 4; ++i) {
    dist::ClosureArgs args = dist::ClosureArgs::create().value();
    ASSERT_TRUE(args.add(iterator).ok());
    EXPECT_EQ(args.kind(0).value(), DIST_CLOSURE_ARG_ITERATOR);
    firsts.push_back(coordinator_->schedule("cpp_first_of_batch", &args).value());
  }
  ASSERT_TRUE(coordinator_->join().ok());
  for (int i = 0; i < 4; ++i) {  // one worker runs them in order: [0 1], [2 3], ...
    EXPECT_EQ(firsts[static_cast<size_t>(i)].fetch().value().scalar<int64_t>().value(), 2 * i);
  }
  dist::ClosureArgs args = dist::ClosureArgs::create().value();
  ASSERT_TRUE(args.add(iterator).ok());
  dist::RemoteValue past_the_end = coordinator_->schedule("cpp_first_of_batch", &args).value();
  EXPECT_EQ(past_the_end.fetch().status().code(), DIST_OUT_OF_RANGE);
  EXPECT_EQ(coordinator_->join().code(), DIST_OUT_OF_RANGE);  // the end of the epoch
}

TEST(ClosureRegistrationTest, RoundTripsAndRefusals) {
  auto live = std::make_shared<int>(0);
  const auto noop = [live](dist::Strategy&, dist::ClosureArgsView) {};
  ASSERT_TRUE(dist::register_closure("cpp_noop", noop).ok());
  EXPECT_EQ(live.use_count(), 3);  // here, in noop, and the registry's copy
  EXPECT_EQ(dist::register_closure("cpp_noop", noop).code(), DIST_ALREADY_EXISTS);
  EXPECT_EQ(live.use_count(), 3);  // the refused copy is gone
  EXPECT_TRUE(dist::is_closure_registered("cpp_noop").value());
  ASSERT_TRUE(dist::unregister_closure("cpp_noop").ok());
  EXPECT_EQ(live.use_count(), 2);
  EXPECT_FALSE(dist::is_closure_registered("cpp_noop").value());
  EXPECT_EQ(dist::unregister_closure("cpp_noop").code(), DIST_NOT_FOUND);
  EXPECT_EQ(dist::register_closure("", noop).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::unregister_dataset_function("cpp_never_registered").code(), DIST_NOT_FOUND);
  // A coordinator needs a ParameterServerStrategy with a cluster.
  ClearJobEnvironment();
  dist::Strategy local = dist::parameter_server_strategy().value();
  EXPECT_EQ(dist::Coordinator::create(local).status().code(), DIST_INVALID_ARGUMENT);
  // Arguments made here: a borrowed view of what was added; no iterator from them.
  dist::ClosureArgs args = dist::ClosureArgs::create().value();
  ASSERT_TRUE(args.add(dist::scalar<float>(3.0f).value()).ok());
  EXPECT_EQ(args.kind(1).status().code(), DIST_OUT_OF_RANGE);
  EXPECT_EQ(dist::ClosureArgsView(args.get()).iterator(0).status().code(), DIST_INVALID_ARGUMENT);
}

// Every new handle class, empty (default-constructed or moved from): refused, not crashed.
TEST(ClosureRegistrationTest, EmptyHandlesAreRefusedNotCrashed) {
  EXPECT_EQ(dist::Server().port().status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::Server().barrier("b", 0).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::Server().key_value_get("k", 0).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::ParameterServerOptions().set_fixed_shards(2).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::Coordinator().join().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::Coordinator().schedule("f").status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::RemoteValue().fetch().status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::RemoteValue().is_ready().status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::PerWorkerDataset().make_iterator().status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::ClosureArgs().add(dist::PerWorkerIterator()).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::ClosureArgs().count().status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::ClosureArgsView(nullptr).iterator(0).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::apply_update(dist::ValueView(), "sgd", {}).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::num_shards(dist::ValueView()).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::register_closure(nullptr, [](dist::Strategy&, dist::ClosureArgsView) {}).code(),
            DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::register_update_function(nullptr, [](dist::Args, dist::Args, dist::Hyperparameters) {}).code(),
            DIST_INVALID_ARGUMENT);
}

}  // namespace
