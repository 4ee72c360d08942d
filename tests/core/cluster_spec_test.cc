// Cluster specs and TF_CONFIG: both job forms, the derived facts against TensorFlow's rules
// written out here (the chief is "chief", else worker 0; workers are chief + worker), and
// every validation error with its message.
#include "core/cluster/cluster_spec.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cluster/tf_config.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;
constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

TEST(TfConfigTest, ListFormWithChief) {
  absl::StatusOr<ClusterSpec> spec = ParseTfConfig(R"({
      "cluster": {"chief": ["host0:2222"], "worker": ["host1:2222", "host2:2222"],
                  "ps": ["ps0:2222"], "evaluator": ["eval0:2222"]},
      "task": {"type": "worker", "index": 1},
      "environment": "cloud", "rpc_layer": "grpc"})");
  ASSERT_TRUE(IsOk(spec));
  EXPECT_EQ(*spec->task_type(), Job::kWorker);
  EXPECT_EQ(*spec->task_index(), 1);
  EXPECT_FALSE(*spec->is_chief());
  EXPECT_EQ(spec->num_workers(), 3);  // chief + 2 workers; ps and evaluator are not workers
  EXPECT_EQ(*spec->num_tasks("ps"), 1);
  EXPECT_EQ(*spec->num_tasks("evaluator"), 1);
  EXPECT_EQ(**spec->task_address("worker", 1), "host2:2222");
  EXPECT_EQ(**spec->task_address("chief", 0), "host0:2222");
  const std::vector<ClusterTask> tasks = spec->tasks();
  ASSERT_EQ(tasks.size(), 5u);
  EXPECT_EQ(tasks[0].job, Job::kChief);
  EXPECT_EQ(tasks[1].address, "host1:2222");
  EXPECT_EQ(tasks[2].address, "host2:2222");
  EXPECT_EQ(tasks[3].job, Job::kPs);
  EXPECT_EQ(tasks[4].job, Job::kEvaluator);
}

TEST(TfConfigTest, ChiefIsChiefTaskOrWorkerZero) {
  auto with_chief = ParseTfConfig(
      R"({"cluster": {"chief": ["a:1"], "worker": ["b:1"]}, "task": {"type": "chief", "index": 0}})");
  ASSERT_TRUE(IsOk(with_chief));
  EXPECT_TRUE(*with_chief->is_chief());
  auto worker0_with_chief = ParseTfConfig(
      R"({"cluster": {"chief": ["a:1"], "worker": ["b:1"]}, "task": {"type": "worker", "index": 0}})");
  ASSERT_TRUE(IsOk(worker0_with_chief));
  EXPECT_FALSE(*worker0_with_chief->is_chief());
  auto worker0 = ParseTfConfig(R"({"cluster": {"worker": ["b:1", "c:1"]}, "task": {"type": "worker", "index": 0}})");
  ASSERT_TRUE(IsOk(worker0));
  EXPECT_TRUE(*worker0->is_chief());
  EXPECT_EQ(worker0->num_workers(), 2);
  auto worker1 = ParseTfConfig(R"({"cluster": {"worker": ["b:1", "c:1"]}, "task": {"type": "worker", "index": 1}})");
  ASSERT_TRUE(IsOk(worker1));
  EXPECT_FALSE(*worker1->is_chief());
  auto evaluator = ParseTfConfig(
      R"({"cluster": {"worker": ["b:1"], "evaluator": ["e:1"]}, "task": {"type": "evaluator", "index": 0}})");
  ASSERT_TRUE(IsOk(evaluator));
  // TF: multi_worker_util.is_chief(cluster, "evaluator", 0) is True (the evaluator is its
  // own chief) and worker_count(cluster, "evaluator") is len(cluster["evaluator"]) = 1.
  EXPECT_TRUE(*evaluator->is_chief());
  EXPECT_EQ(*evaluator->worker_count(), 1);
  EXPECT_EQ(evaluator->num_workers(), 1);  // the job's workers are still chief + worker
}

// TF's multi_worker_util for the other task types: is_chief(cluster, "ps", 0) is False and
// worker_count(cluster, "ps") raises ValueError("Unexpected `task_type` 'ps'"); a worker
// counts the chief and the workers; three evaluators count themselves.
TEST(TfConfigTest, WorkerCountFollowsMultiWorkerUtil) {
  const char* kCluster = R"("cluster": {"chief": ["c:1"], "worker": ["w0:1", "w1:1"],
                                         "ps": ["p:1"], "evaluator": ["e0:1", "e1:1", "e2:1"]})";
  auto ps = ParseTfConfig(absl::StrCat("{", kCluster, R"(, "task": {"type": "ps", "index": 0}})"));
  ASSERT_TRUE(IsOk(ps));
  EXPECT_FALSE(*ps->is_chief());
  EXPECT_TRUE(HasError(ps->worker_count(), kInvalid, {"ps:0", "ps task", "worker_count"}));
  auto worker = ParseTfConfig(absl::StrCat("{", kCluster, R"(, "task": {"type": "worker", "index": 1}})"));
  ASSERT_TRUE(IsOk(worker));
  EXPECT_EQ(*worker->worker_count(), 3);
  auto evaluator =
      ParseTfConfig(absl::StrCat("{", kCluster, R"(, "task": {"type": "evaluator", "index": 2}})"));
  ASSERT_TRUE(IsOk(evaluator));
  EXPECT_TRUE(*evaluator->is_chief());
  EXPECT_EQ(*evaluator->worker_count(), 3);
  ClusterSpec no_task;
  ASSERT_TRUE(IsOk(no_task.AddTask("worker", 0, "a:1")));
  EXPECT_EQ(*no_task.worker_count(), 1);
}

// What TF accepts and a user may write: the index as a string (TF converts it with int())
// and unknown top-level keys (TFConfigClusterResolver reads only the keys it knows).
TEST(TfConfigTest, AcceptsStringIndexAndUnknownKeys) {
  auto spec = ParseTfConfig(R"({"cluster": {"worker": ["a:1", "b:1"]},
                                "task": {"type": "worker", "index": "1"}, "job_name": "x",
                                "session_master": "ignored"})");
  ASSERT_TRUE(IsOk(spec));
  EXPECT_EQ(*spec->task_index(), 1);
  EXPECT_FALSE(*spec->is_chief());
}

// TFConfigClusterResolver: rpc_layer and environment come from TF_CONFIG ("" without);
// master() is the current task's address with "<rpc_layer>://", and "" for a cluster of
// one task. TF: with TF_CONFIG = {"cluster": {"chief": ["c:1"], "worker": ["w:2"]},
// "task": {"type": "worker", "index": 0}, "rpc_layer": "grpc", "environment": "cloud"},
// resolver.master() == "grpc://w:2", resolver.rpc_layer == "grpc",
// resolver.environment == "cloud".
TEST(TfConfigTest, RpcLayerEnvironmentAndMaster) {
  auto spec = ParseTfConfig(R"({"cluster": {"chief": ["c:1"], "worker": ["w:2"]},
                                "task": {"type": "worker", "index": 0},
                                "rpc_layer": "grpc", "environment": "cloud"})");
  ASSERT_TRUE(IsOk(spec));
  EXPECT_EQ(spec->rpc_layer(), "grpc");
  EXPECT_EQ(spec->environment(), "cloud");
  EXPECT_EQ(spec->master(), "grpc://w:2");
  auto plain = ParseTfConfig(R"({"cluster": {"chief": ["c:1"], "worker": ["w:2"]},
                                 "task": {"type": "chief", "index": 0}})");
  ASSERT_TRUE(IsOk(plain));
  EXPECT_EQ(plain->rpc_layer(), "");
  EXPECT_EQ(plain->environment(), "");
  EXPECT_EQ(plain->master(), "c:1");
  auto single = ParseTfConfig(R"({"cluster": {"worker": ["w:2"]},
                                  "task": {"type": "worker", "index": 0}, "rpc_layer": "grpc"})");
  ASSERT_TRUE(IsOk(single));
  EXPECT_EQ(single->master(), "");
  ClusterSpec built;
  ASSERT_TRUE(IsOk(built.AddTask("worker", 0, "a:1")));
  ASSERT_TRUE(IsOk(built.AddTask("worker", 1, "b:1")));
  EXPECT_EQ(built.master(), "");  // no current task
  ASSERT_TRUE(IsOk(built.SetTask("worker", 1)));
  EXPECT_EQ(built.master(), "b:1");
}

// TF's MultiWorkerMirroredStrategy runs as one local worker when TF_CONFIG describes no
// cluster: unset, empty, "{}", or no or an empty "cluster".
TEST(TfConfigTest, NoClusterInTheEnvironment) {
  for (const char* value : {"", "{}", R"({"task": {"type": "worker", "index": 0}})",
                            R"({"cluster": {}, "task": {}})"}) {
    SCOPED_TRACE(value);
    ASSERT_EQ(setenv("TF_CONFIG", value, 1), 0);
    absl::StatusOr<std::optional<ClusterSpec>> spec = ClusterSpecFromEnvironmentIfAny();
    ASSERT_TRUE(IsOk(spec));
    EXPECT_FALSE(spec->has_value());
  }
  ASSERT_EQ(unsetenv("TF_CONFIG"), 0);
  ASSERT_TRUE(IsOk(ClusterSpecFromEnvironmentIfAny()));
  EXPECT_FALSE(ClusterSpecFromEnvironmentIfAny()->has_value());
  ASSERT_EQ(setenv("TF_CONFIG", R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}})", 1), 0);
  absl::StatusOr<std::optional<ClusterSpec>> one = ClusterSpecFromEnvironmentIfAny();
  ASSERT_TRUE(IsOk(one));
  ASSERT_TRUE(one->has_value());
  EXPECT_EQ((*one)->num_workers(), 1);
  // A cluster that is wrong is still an error, not a local run.
  ASSERT_EQ(setenv("TF_CONFIG", R"({"cluster": {"worker": ["a"]}, "task": {"type": "worker", "index": 0}})", 1), 0);
  EXPECT_TRUE(HasError(ClusterSpecFromEnvironmentIfAny(), kInvalid, {"no ':port'"}));
  ASSERT_EQ(setenv("TF_CONFIG", "{", 1), 0);
  EXPECT_TRUE(HasError(ClusterSpecFromEnvironmentIfAny(), kInvalid, {"not valid JSON"}));
  ASSERT_EQ(unsetenv("TF_CONFIG"), 0);
}

TEST(TfConfigTest, SparseDictForm) {
  auto spec = ParseTfConfig(R"({"cluster": {"worker": {"1": "h1:2222", "3": "[::1]:2222"},
                                             "ps": {"0": "10.0.0.1:1"}},
                                "task": {"type": "worker", "index": 3}})");
  ASSERT_TRUE(IsOk(spec));
  EXPECT_EQ(*spec->num_tasks("worker"), 2);
  EXPECT_EQ(spec->num_workers(), 2);
  EXPECT_EQ(**spec->task_address("worker", 3), "[::1]:2222");
  EXPECT_EQ(*spec->task_index_at("worker", 0), 1);
  EXPECT_EQ(*spec->task_index_at("worker", 1), 3);
  EXPECT_FALSE(*spec->is_chief());  // no chief and no worker 0: nobody here is task 0
  EXPECT_TRUE(HasError(spec->task_address("worker", 2), kInvalid,
                       {"task index 2 is not in the cluster: the worker task indices are 1, 3"}));
  EXPECT_TRUE(HasError(spec->task_index_at("worker", 2), kInvalid, {"position 2 is out of range"}));
  EXPECT_TRUE(HasError(ParseTfConfig(R"({"cluster": {"worker": {"0": "a:1", "2": "b:1"}},
                                         "task": {"type": "worker", "index": 1}})"),
                       kInvalid, {"TF_CONFIG: task index 1 is not in the cluster"}));
}

struct BadConfig {
  const char* json;
  const char* message;
};

TEST(TfConfigTest, ValidationErrors) {
  const BadConfig cases[] = {
      {R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 2}})",
       "TF_CONFIG: task index 2 is out of range: cluster has 2 workers"},
      {R"({"cluster": {"chief": ["a:1", "b:1"]}, "task": {"type": "chief", "index": 0}})",
       "TF_CONFIG: cluster has two chiefs: chief[1] 'b:1'"},
      {R"({"cluster": {"chief": {"1": "a:1"}}, "task": {"type": "chief", "index": 1}})",
       "TF_CONFIG: chief[1]: the chief must be task 0"},
      {R"({"cluster": {"worker": ["a:1", "nohost"]}, "task": {"type": "worker", "index": 0}})",
       "TF_CONFIG: worker[1] address 'nohost' is malformed: there is no ':port'"},
      {R"({"cluster": {"worker": ["a:0"]}, "task": {"type": "worker", "index": 0}})",
       "worker[0] address 'a:0' is malformed: the port '0' is not a number from 1 to 65535"},
      {R"({"cluster": {"worker": ["a:65536"]}, "task": {"type": "worker", "index": 0}})",
       "the port '65536' is not a number from 1 to 65535"},
      {R"({"cluster": {"worker": ["a:"]}, "task": {"type": "worker", "index": 0}})",
       "the port '' is not a number"},
      {R"({"cluster": {"worker": [":80"]}, "task": {"type": "worker", "index": 0}})",
       "worker[0] address ':80' is malformed: the host is empty"},
      {R"({"cluster": {"worker": ["a b:80"]}, "task": {"type": "worker", "index": 0}})",
       "the host contains ' '"},
      {R"({"cluster": {"worker": ["-a:80"]}, "task": {"type": "worker", "index": 0}})",
       "starts or ends with '-'"},
      {R"({"cluster": {"worker": ["a..b:80"]}, "task": {"type": "worker", "index": 0}})",
       "empty label"},
      {R"({"cluster": {"worker": ["256.1.1.1:80"]}, "task": {"type": "worker", "index": 0}})",
       "the IPv4 part '256' is not a number from 0 to 255"},
      {R"({"cluster": {"worker": ["1.2.3:80"]}, "task": {"type": "worker", "index": 0}})",
       "does not have 4 parts"},
      {R"({"cluster": {"worker": ["::1:80"]}, "task": {"type": "worker", "index": 0}})",
       "more than one ':'"},
      {R"({"cluster": {"worker": ["[::g]:80"]}, "task": {"type": "worker", "index": 0}})",
       "'::g' is not an IPv6 address"},
      {R"({"cluster": {"worker": ["[::1]"]}, "task": {"type": "worker", "index": 0}})",
       "no ':port' after the IPv6 address"},
      {R"({"cluster": {"worker": ["[::1:80"]}, "task": {"type": "worker", "index": 0}})",
       "no closing ']'"},
      {R"({"cluster": {"master": ["a:1"]}, "task": {"type": "master", "index": 0}})",
       "TF_CONFIG: unknown job 'master' in cluster: expected chief, worker, ps or evaluator"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "ps", "index": 0}})",
       "TF_CONFIG: task type 'ps' is not in the cluster"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "boss", "index": 0}})",
       "TF_CONFIG: unknown job 'boss'"},
      {R"({"cluster": {"worker": ["a:1", "A:1"]}, "task": {"type": "worker", "index": 0}})",
       "TF_CONFIG: worker[1] address 'A:1' is already used by worker[0]"},
      {R"({"cluster": {"chief": ["a:1"], "worker": ["a:1"]}, "task": {"type": "worker", "index": 0}})",
       "worker[0] address 'a:1' is already used by chief[0]"},
      {R"({"cluster": {}, "task": {"type": "worker", "index": 0}})", "TF_CONFIG: the cluster is empty"},
      {R"({"cluster": {"worker": []}, "task": {"type": "worker", "index": 0}})", "the cluster is empty"},
      {R"({"cluster": {"evaluator": ["e:1"]}, "task": {"type": "worker", "index": 0}})",
       "task type 'worker' is not in the cluster"},
      {"", "TF_CONFIG: the input is empty"},
      {"not json", "TF_CONFIG: not valid JSON: error at byte"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "wor)", "TF_CONFIG: not valid JSON: error at byte"},
      {"[1, 2]", "TF_CONFIG: expected a JSON object, not an array"},
      {R"({"cluster": ["a:1"], "task": {"type": "worker", "index": 0}})", "\"cluster\" must be an object"},
      {R"({"cluster": {"worker": "a:1"}, "task": {"type": "worker", "index": 0}})",
       "cluster.worker must be a list of addresses or an object from task index to address, not a string"},
      {R"({"cluster": {"worker": [7]}, "task": {"type": "worker", "index": 0}})",
       "cluster.worker[0] must be a \"host:port\" string, not a number"},
      {R"({"cluster": {"worker": {"x": "a:1"}}, "task": {"type": "worker", "index": 0}})",
       "cluster.worker key 'x' is not a task index"},
      {R"({"cluster": {"worker": {"01": "a:1"}}, "task": {"type": "worker", "index": 1}})",
       "cluster.worker key '01' is not a task index"},
      {R"({"cluster": {"worker": {"-1": "a:1"}}, "task": {"type": "worker", "index": 0}})",
       "cluster.worker key '-1' is not a task index"},
      {R"({"cluster": {"worker": {"2147483648": "a:1"}}, "task": {"type": "worker", "index": 0}})",
       "key '2147483648' is not a task index"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "x"}})",
       "task.index 'x' is not a task index: expected a decimal number"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": "-1"}})",
       "task.index '-1' is not a task index"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": true}})",
       "task.index must be a non-negative integer (or a string of one), not a boolean"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0.5}})",
       "task.index must be a non-negative integer (or a string of one), not a number"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": -1}})",
       "task.index is -1: a task index must be >= 0"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 4294967296}})",
       "task.index is 4294967296: a task index must be from 0 to 2147483647"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": 1, "index": 0}})", "task.type must be a string"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"index": 0}})", "task has no \"type\""},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker"}})", "task has no \"index\""},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0, "trial": 1}})",
       "unknown key 'trial' in task"},
      {R"({"cluster": {"worker": ["a:1"]}, "task": []})", "\"task\" must be an object"},
      {R"({"cluster": {"worker": ["a:1"]}})", "TF_CONFIG: no \"task\""},
      {R"({"task": {"type": "worker", "index": 0}})", "TF_CONFIG: no \"cluster\""},
      {R"({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}, "rpc_layer": 3})",
       "\"rpc_layer\" must be a string, not a number"},
  };
  for (const BadConfig& c : cases) {
    SCOPED_TRACE(c.json);
    EXPECT_TRUE(HasError(ParseTfConfig(c.json), kInvalid, {c.message}));
  }
}

TEST(TfConfigTest, Environment) {
  const char* kConfig = R"({"cluster": {"worker": ["a:1", "b:1"]}, "task": {"type": "worker", "index": 1}})";
  ASSERT_EQ(setenv("TF_CONFIG", kConfig, 1), 0);
  absl::StatusOr<ClusterSpec> spec = ClusterSpecFromEnvironment();
  ASSERT_TRUE(IsOk(spec));
  EXPECT_EQ(*spec->task_index(), 1);
  ASSERT_EQ(setenv("TF_CONFIG", "{", 1), 0);
  EXPECT_TRUE(HasError(ClusterSpecFromEnvironment(), kInvalid, {"not valid JSON"}));
  ASSERT_EQ(setenv("TF_CONFIG", "", 1), 0);
  EXPECT_TRUE(HasError(ClusterSpecFromEnvironment(), absl::StatusCode::kNotFound, {"TF_CONFIG"}));
  ASSERT_EQ(unsetenv("TF_CONFIG"), 0);
  EXPECT_TRUE(HasError(ClusterSpecFromEnvironment(), absl::StatusCode::kNotFound, {"not set"}));
}

TEST(ClusterSpecTest, ExplicitBuild) {
  ClusterSpec spec;
  EXPECT_TRUE(spec.empty());
  EXPECT_TRUE(HasError(spec.task_type(), absl::StatusCode::kFailedPrecondition, {"no current task"}));
  EXPECT_TRUE(HasError(spec.is_chief(), absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(spec.num_workers(), 0);
  ASSERT_TRUE(IsOk(spec.AddTask("worker", 0, "localhost:2222")));
  ASSERT_TRUE(IsOk(spec.AddTask("worker", 1, "127.0.0.1:2223")));
  ASSERT_TRUE(IsOk(spec.AddTask("chief", 0, "[fe80::1]:65535")));
  ASSERT_TRUE(IsOk(spec.AddTask("ps", 7, "ps-7.example.com:1")));
  ASSERT_TRUE(IsOk(spec.SetTask("worker", 0)));
  EXPECT_FALSE(*spec.is_chief());  // there is a chief
  EXPECT_EQ(spec.num_workers(), 3);
  EXPECT_EQ(*spec.num_tasks("ps"), 1);
  EXPECT_EQ(*spec.num_tasks("evaluator"), 0);
  ASSERT_TRUE(IsOk(spec.SetTask("chief", 0)));
  EXPECT_TRUE(*spec.is_chief());
}

TEST(ClusterSpecTest, FailedCallsChangeNothing) {
  ClusterSpec spec;
  ASSERT_TRUE(IsOk(spec.AddTask("worker", 0, "a:1")));
  ASSERT_TRUE(IsOk(spec.AddTask("chief", 0, "c:1")));
  ASSERT_TRUE(IsOk(spec.SetTask("worker", 0)));
  EXPECT_TRUE(HasError(spec.AddTask("worker", 0, "b:1"), kInvalid, {"worker[0] is already in the cluster"}));
  EXPECT_TRUE(HasError(spec.AddTask("worker", 1, "a:1"), kInvalid, {"worker[1] address 'a:1' is already used by worker[0]"}));
  EXPECT_TRUE(HasError(spec.AddTask("worker", -1, "b:1"), kInvalid, {"worker[-1]: a task index must be from 0"}));
  EXPECT_TRUE(HasError(spec.AddTask("worker", int64_t{1} << 31, "b:1"), kInvalid, {"a task index must be from 0"}));
  EXPECT_TRUE(HasError(spec.AddTask("chief", 1, "d:1"), kInvalid, {"cluster has two chiefs: chief[1] 'd:1'"}));
  EXPECT_TRUE(HasError(spec.AddTask("master", 0, "d:1"), kInvalid, {"unknown job 'master'"}));
  EXPECT_TRUE(HasError(spec.AddTask("worker", 1, "d"), kInvalid, {"worker[1] address 'd' is malformed"}));
  EXPECT_TRUE(HasError(spec.SetTask("worker", 1), kInvalid, {"task index 1 is out of range: cluster has 1 worker"}));
  EXPECT_TRUE(HasError(spec.SetTask("worker", -1), kInvalid, {"task index -1 is out of range"}));
  EXPECT_TRUE(HasError(spec.SetTask("ps", 0), kInvalid, {"task type 'ps' is not in the cluster"}));
  EXPECT_TRUE(HasError(spec.SetTask("", 0), kInvalid, {"unknown job ''"}));
  EXPECT_EQ(spec.tasks().size(), 2u);
  EXPECT_EQ(*spec.task_type(), Job::kWorker);
  EXPECT_EQ(*spec.task_index(), 0);
  EXPECT_TRUE(HasError(spec.task_address("chief", 1), kInvalid, {"task index 1 is out of range: cluster has 1 chief"}));
  EXPECT_TRUE(HasError(spec.num_tasks("master"), kInvalid, {"unknown job 'master'"}));
}

// The facts every part of the library asks the spec for, against TF's rules written here:
// workers are the chief then the worker tasks by index; the chief is the "chief" task,
// else worker 0; ps tasks and the evaluator are never workers.
// A TF_CONFIG of n tasks: a chief, n - 2 workers and one ps task, each on its own host.
std::string LargeTfConfig(int n, const std::string& last_worker_address = "") {
  std::string workers;
  for (int i = 0; i < n - 2; ++i) {
    const bool last = i == n - 3;
    absl::StrAppend(&workers, i == 0 ? "" : ",", "\"",
                    last && !last_worker_address.empty() ? last_worker_address
                                                         : absl::StrCat("w", i, ".example:2222"),
                    "\"");
  }
  return absl::StrCat(R"({"cluster": {"chief": ["Chief.example:2222"], "ps": ["ps0.example:1"], )",
                      R"("worker": [)", workers, R"(]}, "task": {"type": "worker", "index": 7}})");
}

// Issue 13, item 7: 20,000 tasks took 18.7 s (each task compared with every earlier one).
// Not timed here (tests never assert on time); the test prints what it took.
TEST(TfConfigTest, ParsesAHundredThousandTasks) {
  constexpr int kTasks = 100000;
  const std::string config = LargeTfConfig(kTasks);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ClusterSpec> spec = ParseTfConfig(config);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("parsed a TF_CONFIG of %d tasks (%zu bytes) in %.3f s\n", kTasks, config.size(),
              seconds);
  ASSERT_TRUE(IsOk(spec));
  EXPECT_EQ(spec->num_workers(), kTasks - 1);  // the chief and the workers
  EXPECT_EQ(spec->tasks().size(), static_cast<size_t>(kTasks));
  EXPECT_EQ(**spec->task_address("worker", kTasks - 3), absl::StrCat("w", kTasks - 3, ".example:2222"));
  EXPECT_EQ(spec->master(), "w7.example:2222");
  // Walking every position (dist_cluster_task_index_at) is linear overall: the list form's
  // indices are their positions.
  int64_t mismatches = 0;
  for (int64_t position = 0; position < kTasks - 2; ++position) {
    absl::StatusOr<int32_t> index = spec->task_index_at("worker", position);
    if (!index.ok() || *index != position) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);

  // A repeated address is still found, however far apart and whatever the case of its host.
  EXPECT_TRUE(HasError(ParseTfConfig(LargeTfConfig(kTasks, "chief.EXAMPLE:2222")), kInvalid,
                       {absl::StrCat("worker[", kTasks - 3, "] address 'chief.EXAMPLE:2222' is "
                                     "already used by chief[0]")}));
  EXPECT_TRUE(HasError(ParseTfConfig(LargeTfConfig(kTasks, "W0.Example:2222")), kInvalid,
                       {absl::StrCat("worker[", kTasks - 3, "] address 'W0.Example:2222' is "
                                     "already used by worker[0]")}));
  // Jobs are added in name order (chief, ps, worker): the ps task came first.
  EXPECT_TRUE(HasError(ParseTfConfig(LargeTfConfig(kTasks, "PS0.example:1")), kInvalid,
                       {"address 'PS0.example:1' is already used by ps[0]"}));
  // The same host on another port is another address.
  EXPECT_TRUE(IsOk(ParseTfConfig(LargeTfConfig(kTasks, "w0.example:2223"))));
}

TEST(ClusterSpecTest, RepeatedAddressesDifferingOnlyInCase) {
  ClusterSpec spec;
  ASSERT_TRUE(IsOk(spec.AddTask("worker", 0, "Host-A.Example:1")));
  ASSERT_TRUE(IsOk(spec.AddTask("ps", 3, "[FE80::1]:2")));
  EXPECT_TRUE(HasError(spec.AddTask("worker", 1, "host-a.example:1"), kInvalid,
                       {"worker[1] address 'host-a.example:1' is already used by worker[0]"}));
  EXPECT_TRUE(HasError(spec.AddTask("chief", 0, "HOST-A.EXAMPLE:1"), kInvalid,
                       {"chief[0] address 'HOST-A.EXAMPLE:1' is already used by worker[0]"}));
  EXPECT_TRUE(HasError(spec.AddTask("evaluator", 0, "[fe80::1]:2"), kInvalid,
                       {"already used by ps[3]"}));
  // A refused task changes nothing: its address stays free for the next one.
  EXPECT_TRUE(HasError(spec.AddTask("worker", 0, "free.example:1"), kInvalid,
                       {"worker[0] is already in the cluster"}));
  EXPECT_TRUE(IsOk(spec.AddTask("worker", 1, "free.example:1")));
  EXPECT_EQ(spec.tasks().size(), 3u);
}

TEST(ClusterSpecTest, WorkersChiefAndTaskNames) {
  ClusterSpec spec;
  ASSERT_TRUE(IsOk(spec.AddTask("worker", 2, "w2:1")));
  ASSERT_TRUE(IsOk(spec.AddTask("worker", 0, "w0:1")));
  ASSERT_TRUE(IsOk(spec.AddTask("ps", 1, "p1:1")));
  ASSERT_TRUE(IsOk(spec.AddTask("ps", 0, "p0:1")));
  ASSERT_TRUE(IsOk(spec.AddTask("evaluator", 0, "e:1")));
  EXPECT_TRUE(HasError(spec.current_task(), absl::StatusCode::kFailedPrecondition, {"no current task"}));
  EXPECT_TRUE(HasError(spec.worker_rank("x"), absl::StatusCode::kFailedPrecondition));
  // No chief task: worker 0 is the chief and rank 0.
  std::vector<std::string> names;
  for (const ClusterTask& task : spec.workers()) names.push_back(task.name());
  EXPECT_EQ(names, (std::vector<std::string>{"worker:0", "worker:2"}));
  EXPECT_EQ(spec.chief()->name(), "worker:0");
  EXPECT_EQ(spec.chief()->address, "w0:1");
  ASSERT_TRUE(IsOk(spec.SetTask("worker", 2)));
  EXPECT_EQ(*spec.worker_rank("x"), 1);
  EXPECT_EQ(spec.current_task()->address, "w2:1");
  EXPECT_FALSE(*spec.is_chief());
  ASSERT_TRUE(IsOk(spec.SetTask("ps", 1)));
  EXPECT_TRUE(HasError(spec.worker_rank("the strategy needs a worker"), kInvalid,
                       {"task ps:1 is not a worker: the strategy needs a worker"}));
  ASSERT_EQ(spec.tasks(Job::kPs).size(), 2u);
  EXPECT_EQ(spec.tasks(Job::kPs)[0].address, "p0:1");
  EXPECT_EQ(spec.tasks(Job::kEvaluator).size(), 1u);
  // A chief task comes first and is the chief.
  ASSERT_TRUE(IsOk(spec.AddTask("chief", 0, "c:1")));
  EXPECT_EQ(spec.workers().front().name(), "chief:0");
  EXPECT_EQ(spec.workers().size(), 3u);
  EXPECT_EQ(spec.chief()->name(), "chief:0");
  ASSERT_TRUE(IsOk(spec.SetTask("worker", 0)));
  EXPECT_EQ(*spec.worker_rank("x"), 1);
  EXPECT_FALSE(*spec.is_chief());
  // Workers without index 0 and no chief: nobody can host the coordination service.
  ClusterSpec headless;
  ASSERT_TRUE(IsOk(headless.AddTask("worker", 1, "a:1")));
  EXPECT_TRUE(HasError(headless.chief(), kInvalid, {"the cluster has no chief"}));
  ASSERT_TRUE(IsOk(headless.SetTask("worker", 1)));
  EXPECT_FALSE(*headless.is_chief());
}

TEST(ClusterSpecTest, DialAndListenAddresses) {
  EXPECT_EQ(DialAddress("localhost:2222"), "127.0.0.1:2222");
  EXPECT_EQ(DialAddress("host.example.com:1"), "host.example.com:1");
  EXPECT_EQ(DialAddress("[::1]:5"), "[::1]:5");
  EXPECT_EQ(ListenHost("localhost:2222"), "127.0.0.1");
  EXPECT_EQ(ListenHost("[fe80::1]:65535"), "fe80::1");
  EXPECT_EQ(ListenHost("10.1.2.3:80"), "10.1.2.3");
  EXPECT_EQ(SplitTaskAddress("[::1]:7").port, "7");
  EXPECT_EQ(TaskName(Job::kEvaluator, 0), "evaluator:0");
}

TEST(ClusterSpecTest, AddressForms) {
  for (const char* good : {"a:1", "localhost:65535", "my-host.example.com:2222", "10.0.0.255:80",
                           "0.0.0.0:1", "[::1]:1", "[2001:db8::8a2e:370:7334]:443", "x1:8"}) {
    EXPECT_TRUE(IsOk(ValidateTaskAddress("worker[0]", good))) << good;
  }
  for (const char* bad : {"a", "a:01", "a:+1", "a:1x", "a:99999999999", "host_x:1", "a.:1", "1.2.3.04:1",
                          "[]:1", "[::1]x:1", "a:1:2"}) {
    EXPECT_TRUE(HasError(ValidateTaskAddress("worker[3]", bad), kInvalid, {"worker[3] address", "is malformed"}))
        << bad;
  }
  EXPECT_TRUE(HasError(ValidateTaskAddress("ps[0]", std::string(254, 'a') + ":1"), kInvalid,
                       {"the host has 254 characters: at most 253"}));
  EXPECT_TRUE(HasError(ValidateTaskAddress("ps[0]", std::string(64, 'a') + ".b:1"), kInvalid,
                       {"longer than 63 characters"}));
  EXPECT_TRUE(HasError(ValidateTaskAddress("ps[0]", std::string("a\n:1")), kInvalid, {"'a\\n:1'"}));
}

}  // namespace
}  // namespace distribute
