// The Slurm and StatefulSet cluster resolvers and Slurm's hostlist syntax, with the
// environment given as a map (no setenv in a multi-threaded test binary).
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cluster/slurm_hostlist.h"
#include "core/cluster/slurm_resolver.h"
#include "core/cluster/statefulset_resolver.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute {
namespace {

using ::distribute::testing::HasError;
using ::distribute::testing::IsOk;

EnvironmentLookup Env(std::map<std::string, std::string> values) {
  return [values = std::move(values)](const char* name) -> std::optional<std::string> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
}

std::vector<std::string> Hosts(absl::string_view list) {
  absl::StatusOr<std::vector<std::string>> hosts = ExpandSlurmHostlist("LIST", list);
  EXPECT_TRUE(hosts.ok()) << hosts.status();
  return hosts.ok() ? *hosts : std::vector<std::string>{};
}

TEST(SlurmHostlistTest, ExpandsRangesPaddingAndProducts) {
  EXPECT_EQ(Hosts("node[01-04,07],gpu5"), (std::vector<std::string>{"node01", "node02", "node03", "node04", "node07", "gpu5"}));
  EXPECT_EQ(Hosts("a,b.example.org"), (std::vector<std::string>{"a", "b.example.org"}));
  EXPECT_EQ(Hosts("rack[1-2]-n[1-2]"), (std::vector<std::string>{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}));
  EXPECT_EQ(Hosts("n[8-11]"), (std::vector<std::string>{"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(Hosts("n[098-101]"), (std::vector<std::string>{"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(Hosts("n[3],n[3]"), (std::vector<std::string>{"n3", "n3"})) << "order kept, nothing deduplicated";
  EXPECT_EQ(Hosts("n[1-65536]").size(), 65536u);
}

TEST(SlurmHostlistTest, MalformedListsAreClearErrors) {
  struct Case {
    const char* list;
    const char* problem;
  };
  const Case cases[] = {
      {"", "the host list is empty"},
      {"node[01-04", "unclosed '[' at byte 4"},
      {"node[4-1]", "the range 4-1 runs backwards"},
      {"node[]", "a number was expected at byte 5"},
      {"node[1-]", "a number was expected"},
      {"node[1;2]", "',' or ']' was expected"},
      {"a,,b", "an empty host name at byte 2"},
      {"a,", "an empty host name"},
      {"n[1234567890]", "more than 9 digits"},
      {"n[1-65537]", "more than 65536 hosts"},
      {"r[1-300]-n[1-300]", "more than 65536 hosts"},
      {"bad$host", "'$' cannot be part of a host name"},
  };
  std::string many;
  for (int i = 0; i <= 65536; ++i) absl::StrAppend(&many, many.empty() ? "" : ",", "h", i);
  EXPECT_TRUE(HasError(ExpandSlurmHostlist("L", many), absl::StatusCode::kInvalidArgument, {"more than 65536 hosts"}));
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<std::string>> hosts = ExpandSlurmHostlist("SLURM_JOB_NODELIST", c.list);
    EXPECT_TRUE(HasError(hosts.status(), absl::StatusCode::kInvalidArgument, {"SLURM_JOB_NODELIST: "})) << c.list;
    EXPECT_NE(std::string(hosts.status().message()).find(c.problem), std::string::npos)
        << c.list << ": " << hosts.status();
  }
}

TEST(SlurmTasksPerNodeTest, ExpandsRepeats) {
  absl::StatusOr<std::vector<int32_t>> counts = ExpandSlurmTasksPerNode("T", "2(x3),1");
  ASSERT_TRUE(IsOk(counts.status()));
  EXPECT_EQ(*counts, (std::vector<int32_t>{2, 2, 2, 1}));
  EXPECT_EQ(*ExpandSlurmTasksPerNode("T", "4"), (std::vector<int32_t>{4}));
  for (const char* bad : {"", "0", "2(x0)", "2(3)", "2(x3", "x", "1,", "2(x70000)"}) {
    EXPECT_TRUE(HasError(ExpandSlurmTasksPerNode("T", bad).status(), absl::StatusCode::kInvalidArgument, {"T: "}))
        << bad;
  }
}

std::map<std::string, std::string> TwoNodesFourTasks(const std::string& rank) {
  return {{"SLURM_PROCID", rank},
          {"SLURM_STEP_NUM_TASKS", "4"},
          {"SLURM_STEP_NODELIST", "node[1-2]"},
          {"SLURM_STEP_TASKS_PER_NODE", "2(x2)"}};
}

std::string Address(const ClusterSpec& spec, const char* job, int index) {
  absl::StatusOr<const std::string*> address = spec.task_address(job, index);
  return address.ok() ? **address : std::string(address.status().message());
}

TEST(SlurmResolverTest, EveryTaskAWorkerByDefault) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpecFromSlurm(SlurmSettings{}, Env(TwoNodesFourTasks("3")));
  ASSERT_TRUE(IsOk(spec.status()));
  EXPECT_EQ(spec->num_tasks(Job::kWorker), 4);
  EXPECT_EQ(Address(*spec, "worker", 0), "node1:8888");
  EXPECT_EQ(Address(*spec, "worker", 1), "node1:8889");
  EXPECT_EQ(Address(*spec, "worker", 2), "node2:8888");
  EXPECT_EQ(Address(*spec, "worker", 3), "node2:8889");
  EXPECT_EQ(*spec->task_type(), Job::kWorker);
  EXPECT_EQ(*spec->task_index(), 3);
}

TEST(SlurmResolverTest, JobsTakeRanksInNameOrder) {
  SlurmSettings settings;
  settings.jobs = {{"worker", 3}, {"ps", 1}};
  settings.port_base = 9000;
  absl::StatusOr<ClusterSpec> spec = ClusterSpecFromSlurm(settings, Env(TwoNodesFourTasks("0")));
  ASSERT_TRUE(IsOk(spec.status()));
  EXPECT_EQ(Address(*spec, "ps", 0), "node1:9000");
  EXPECT_EQ(Address(*spec, "worker", 0), "node1:9001");
  EXPECT_EQ(Address(*spec, "worker", 2), "node2:9001");
  EXPECT_EQ(*spec->task_type(), Job::kPs);
  spec = ClusterSpecFromSlurm(settings, Env(TwoNodesFourTasks("2")));
  ASSERT_TRUE(IsOk(spec.status()));
  EXPECT_EQ(*spec->task_type(), Job::kWorker);
  EXPECT_EQ(*spec->task_index(), 1);

  settings.jobs = {{"worker", 3}, {"chief", 1}};
  spec = ClusterSpecFromSlurm(settings, Env(TwoNodesFourTasks("0")));
  ASSERT_TRUE(IsOk(spec.status()));
  EXPECT_EQ(Address(*spec, "chief", 0), "node1:9000") << "the chief takes rank 0";
  EXPECT_TRUE(*spec->is_chief());
}

TEST(SlurmResolverTest, FallbackVariablesAndTasksPerNodeOverride) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpecFromSlurm(
      SlurmSettings{}, Env({{"SLURM_PROCID", "1"},
                            {"SLURM_NTASKS", "3"},
                            {"SLURM_JOB_NODELIST", "a,b,c"},
                            {"SLURM_TASKS_PER_NODE", "1(x3)"}}));
  ASSERT_TRUE(IsOk(spec.status()));
  EXPECT_EQ(Address(*spec, "worker", 2), "c:8888");
  SlurmSettings settings;
  settings.tasks_per_node = 3;
  spec = ClusterSpecFromSlurm(settings, Env({{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "3"}, {"SLURM_JOB_NODELIST", "a,b"}}));
  ASSERT_TRUE(IsOk(spec.status()));
  EXPECT_EQ(Address(*spec, "worker", 2), "a:8890") << "3 tasks on the first node";
}

TEST(SlurmResolverTest, ErrorsNameWhatIsWrong) {
  auto error = [](SlurmSettings settings, std::map<std::string, std::string> env) {
    return ClusterSpecFromSlurm(settings, Env(std::move(env))).status();
  };
  std::map<std::string, std::string> env = TwoNodesFourTasks("1");
  std::map<std::string, std::string> missing = env;
  missing.erase("SLURM_PROCID");
  EXPECT_TRUE(HasError(error({}, missing), absl::StatusCode::kNotFound, {"SLURM_PROCID"}));
  missing = env;
  missing.erase("SLURM_STEP_NODELIST");
  EXPECT_TRUE(HasError(error({}, missing), absl::StatusCode::kNotFound, {"SLURM_STEP_NODELIST or SLURM_JOB_NODELIST"}));
  std::map<std::string, std::string> bad = env;
  bad["SLURM_PROCID"] = "-1";
  EXPECT_TRUE(HasError(error({}, bad), absl::StatusCode::kInvalidArgument, {"SLURM_PROCID is '-1'"}));
  bad = env;
  bad["SLURM_PROCID"] = "4";
  EXPECT_TRUE(HasError(error({}, bad), absl::StatusCode::kInvalidArgument, {"runs 4 tasks"}));
  bad = env;
  bad["SLURM_STEP_NODELIST"] = "node[1-2";
  EXPECT_TRUE(HasError(error({}, bad), absl::StatusCode::kInvalidArgument, {"SLURM_STEP_NODELIST: unclosed '['"}));
  bad = env;
  bad["SLURM_STEP_TASKS_PER_NODE"] = "2(x3)";
  EXPECT_TRUE(HasError(error({}, bad), absl::StatusCode::kInvalidArgument, {"counts tasks on 3 nodes"}));
  bad = env;
  bad["SLURM_STEP_TASKS_PER_NODE"] = "1(x2)";
  EXPECT_TRUE(HasError(error({}, bad), absl::StatusCode::kInvalidArgument, {"offer 2 task slots"}));
  SlurmSettings jobs;
  jobs.jobs = {{"worker", 5}};
  EXPECT_TRUE(HasError(error(jobs, env), absl::StatusCode::kInvalidArgument, {"the jobs ask for 5 tasks"}));
  jobs.jobs = {{"gpu", 4}};
  EXPECT_TRUE(HasError(error(jobs, env), absl::StatusCode::kInvalidArgument, {"gpu"}));
  jobs.jobs = {{"worker", 2}, {"worker", 2}};
  EXPECT_TRUE(HasError(error(jobs, env), absl::StatusCode::kInvalidArgument, {"given twice"}));
  jobs.jobs = {{"chief", 2}, {"worker", 2}};
  EXPECT_FALSE(ClusterSpecFromSlurm(jobs, Env(env)).ok()) << "a second chief";
  std::map<std::string, std::string> base = env;
  base["DIST_SLURM_PORT_BASE"] = "7100";
  absl::StatusOr<ClusterSpec> moved = ClusterSpecFromSlurm(SlurmSettings{}, Env(base));
  ASSERT_TRUE(IsOk(moved));
  EXPECT_EQ(Address(*moved, "worker", 3), "node2:7101") << "port_base 0: DIST_SLURM_PORT_BASE";
  base["DIST_SLURM_PORT_BASE"] = "99999";
  EXPECT_TRUE(HasError(error({}, base), absl::StatusCode::kInvalidArgument, {"DIST_SLURM_PORT_BASE is 99999"}));
  SlurmSettings port;
  port.port_base = 65535;
  EXPECT_TRUE(HasError(error(port, env), absl::StatusCode::kInvalidArgument, {"port 65536 is past 65535"}));
  port.port_base = -1;
  EXPECT_TRUE(HasError(error(port, env), absl::StatusCode::kInvalidArgument, {"port_base is -1"}));
}

std::map<std::string, std::string> Pod(const std::string& name) {
  return {{"POD_NAME", name}, {"DIST_K8S_SERVICE", "train"}, {"DIST_K8S_REPLICAS", "4"}};
}

TEST(StatefulSetResolverTest, PodsOfAHeadlessService) {
  absl::StatusOr<ClusterSpec> spec = ClusterSpecFromStatefulSet(StatefulSetSettings{}, Env(Pod("mnist-train-2")));
  ASSERT_TRUE(IsOk(spec.status()));
  EXPECT_EQ(spec->num_tasks(Job::kWorker), 4);
  EXPECT_EQ(Address(*spec, "worker", 0), "mnist-train-0.train:2222");
  EXPECT_EQ(Address(*spec, "worker", 3), "mnist-train-3.train:2222");
  EXPECT_EQ(*spec->task_index(), 2);
  EXPECT_FALSE(*spec->is_chief());

  StatefulSetSettings given{"w-0", "w.ml.svc.cluster.local", 2, 7000};
  spec = ClusterSpecFromStatefulSet(given, Env({}));
  ASSERT_TRUE(IsOk(spec.status()));
  EXPECT_EQ(Address(*spec, "worker", 1), "w-1.w.ml.svc.cluster.local:7000");
  EXPECT_TRUE(*spec->is_chief());

  spec = ClusterSpecFromStatefulSet(
      {}, Env({{"HOSTNAME", "w-1"}, {"DIST_K8S_SERVICE", "w"}, {"DIST_K8S_REPLICAS", "2"}, {"DIST_K8S_PORT", "5000"}}));
  ASSERT_TRUE(IsOk(spec.status()));
  EXPECT_EQ(Address(*spec, "worker", 0), "w-0.w:5000") << "HOSTNAME when POD_NAME is unset";
}

TEST(StatefulSetResolverTest, ErrorsNameWhatIsWrong) {
  auto error = [](StatefulSetSettings settings, std::map<std::string, std::string> env) {
    return ClusterSpecFromStatefulSet(settings, Env(std::move(env))).status();
  };
  EXPECT_TRUE(HasError(error({}, Pod("train")), absl::StatusCode::kInvalidArgument, {"\"<set>-<ordinal>\""}));
  EXPECT_TRUE(HasError(error({}, Pod("train-07")), absl::StatusCode::kInvalidArgument, {"POD_NAME is 'train-07'"}));
  EXPECT_TRUE(HasError(error({}, Pod("-3")), absl::StatusCode::kInvalidArgument, {"<set>-<ordinal>"}));
  EXPECT_TRUE(HasError(error({}, Pod("train-4")), absl::StatusCode::kInvalidArgument, {"has 4 replicas"}));
  std::map<std::string, std::string> env = Pod("train-1");
  env.erase("DIST_K8S_REPLICAS");
  EXPECT_TRUE(HasError(error({}, env), absl::StatusCode::kNotFound, {"DIST_K8S_REPLICAS"}));
  env = Pod("train-1");
  env["DIST_K8S_REPLICAS"] = "many";
  EXPECT_TRUE(HasError(error({}, env), absl::StatusCode::kInvalidArgument, {"DIST_K8S_REPLICAS is 'many'"}));
  env = Pod("train-1");
  env["DIST_K8S_SERVICE"] = "bad_service!";
  EXPECT_TRUE(HasError(error({}, env), absl::StatusCode::kInvalidArgument, {"DIST_K8S_SERVICE"}));
  EXPECT_TRUE(HasError(error({}, {}), absl::StatusCode::kNotFound, {"POD_NAME or HOSTNAME"}));
  EXPECT_TRUE(HasError(error({"w-0", "w", -1, 0}, {}), absl::StatusCode::kInvalidArgument, {"replicas is -1"}));
  EXPECT_TRUE(HasError(error({"w-0", "w", 1, 70000}, {}), absl::StatusCode::kInvalidArgument, {"port is 70000"}));
}

}  // namespace
}  // namespace distribute
