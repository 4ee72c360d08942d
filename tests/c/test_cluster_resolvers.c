/* Tests for cluster.h's resolvers: dist_cluster_from_slurm and
 * dist_cluster_from_statefulset, with the environment a Slurm step or a StatefulSet pod
 * would have, and their misuse. (The parsing details are in tests/core.) */
#define _POSIX_C_SOURCE 200809L

#include "dist_test.h"

static void clear_environment(void) {
  const char* names[] = {"SLURM_PROCID",           "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS",
                         "SLURM_STEP_NODELIST",    "SLURM_JOB_NODELIST",   "SLURM_STEP_TASKS_PER_NODE",
                         "SLURM_TASKS_PER_NODE",   "POD_NAME",             "HOSTNAME",
                         "DIST_K8S_SERVICE",       "DIST_K8S_REPLICAS",    "DIST_K8S_PORT",
                         "DIST_SLURM_PORT_BASE"};
  size_t i;
  for (i = 0; i < sizeof(names) / sizeof(names[0]); ++i) unsetenv(names[i]);
}

static int setup(void** state) {
  (void)state;
  clear_environment();
  return 0;
}

static void expect_address(const dist_cluster_t* cluster, const char* job, int32_t index, const char* expected) {
  const char* address = NULL;
  DT_OK(dist_cluster_task_address(cluster, job, index, &address));
  assert_string_equal(address, expected);
}

/* srun -N 2 --ntasks-per-node 2: rank 2 of 4 on node[07-08]; a ps task and 3 workers. */
static void test_slurm_step(void** state) {
  const char* jobs[] = {"worker", "ps"};
  const int32_t counts[] = {3, 1};
  dist_cluster_t* cluster = NULL;
  const char* type = NULL;
  int32_t index = -1;
  (void)state;
  setenv("SLURM_PROCID", "2", 1);
  setenv("SLURM_STEP_NUM_TASKS", "4", 1);
  setenv("SLURM_STEP_NODELIST", "node[07-08]", 1);
  setenv("SLURM_STEP_TASKS_PER_NODE", "2(x2)", 1);
  DT_OK(dist_cluster_from_slurm(jobs, counts, 2, 7000, 0, &cluster));
  expect_address(cluster, "ps", 0, "node07:7000"); /* "ps" sorts before "worker" */
  expect_address(cluster, "worker", 0, "node07:7001");
  expect_address(cluster, "worker", 1, "node08:7000");
  expect_address(cluster, "worker", 2, "node08:7001");
  DT_OK(dist_cluster_task_type(cluster, &type));
  DT_OK(dist_cluster_task_index(cluster, &index));
  assert_string_equal(type, "worker");
  assert_int_equal(index, 1);
  dist_cluster_destroy(cluster);

  /* No jobs: every task a worker, on the default port base. */
  DT_OK(dist_cluster_from_slurm(NULL, NULL, 0, 0, 0, &cluster));
  expect_address(cluster, "worker", 3, "node08:8889");
  dist_cluster_destroy(cluster);
  /* tasks_per_node overrides Slurm's count. */
  DT_OK(dist_cluster_from_slurm(NULL, NULL, 0, 0, 4, &cluster));
  expect_address(cluster, "worker", 3, "node07:8891");
  dist_cluster_destroy(cluster);
}

static void test_slurm_misuse(void** state) {
  const char* jobs[] = {"worker", NULL};
  const int32_t counts[] = {2, 2};
  dist_cluster_t* cluster = DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_cluster_from_slurm(NULL, NULL, 0, 0, 0, &cluster), DIST_NOT_FOUND, "dist_cluster_from_slurm",
         "SLURM_PROCID");
  assert_null(cluster);
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_NTASKS", "4", 1);
  setenv("SLURM_JOB_NODELIST", "node[1-2", 1);
  setenv("SLURM_TASKS_PER_NODE", "2(x2)", 1);
  DT_ERR(dist_cluster_from_slurm(NULL, NULL, 0, 0, 0, &cluster), DIST_INVALID_ARGUMENT, "dist_cluster_from_slurm",
         "SLURM_JOB_NODELIST: unclosed '['");
  setenv("SLURM_JOB_NODELIST", "node[1-2]", 1);
  DT_ERR(dist_cluster_from_slurm(NULL, NULL, 0, 0, 0, NULL), DIST_INVALID_ARGUMENT, "dist_cluster_from_slurm",
         "out is NULL");
  DT_ERR(dist_cluster_from_slurm(NULL, counts, 1, 0, 0, &cluster), DIST_INVALID_ARGUMENT,
         "dist_cluster_from_slurm", "jobs is NULL");
  DT_ERR(dist_cluster_from_slurm(jobs, NULL, 1, 0, 0, &cluster), DIST_INVALID_ARGUMENT, "dist_cluster_from_slurm",
         "task_counts is NULL");
  DT_ERR(dist_cluster_from_slurm(jobs, counts, 2, 0, 0, &cluster), DIST_INVALID_ARGUMENT,
         "dist_cluster_from_slurm", "jobs[1] is NULL");
  DT_ERR(dist_cluster_from_slurm(jobs, counts, -1, 0, 0, &cluster), DIST_INVALID_ARGUMENT,
         "dist_cluster_from_slurm", "num_jobs is -1");
  DT_ERR(dist_cluster_from_slurm(jobs, counts, 1, 0, 0, &cluster), DIST_INVALID_ARGUMENT, "dist_cluster_from_slurm",
         "the jobs ask for 2 tasks");
  DT_ERR(dist_cluster_from_slurm(NULL, NULL, 0, 70000, 0, &cluster), DIST_INVALID_ARGUMENT,
         "dist_cluster_from_slurm", "port_base is 70000");
  DT_ERR(dist_cluster_from_slurm(NULL, NULL, 0, 0, -2, &cluster), DIST_INVALID_ARGUMENT, "dist_cluster_from_slurm",
         "tasks_per_node is -2");
  assert_null(cluster);
  clear_environment();
}

/* Pod train-1 of a 3-pod StatefulSet behind the headless service "train". */
static void test_statefulset_pod(void** state) {
  dist_cluster_t* cluster = NULL;
  int32_t index = -1, is_chief = -1, workers = 0;
  (void)state;
  setenv("POD_NAME", "train-1", 1);
  setenv("DIST_K8S_SERVICE", "train", 1);
  setenv("DIST_K8S_REPLICAS", "3", 1);
  DT_OK(dist_cluster_from_statefulset(NULL, NULL, 0, 0, &cluster));
  expect_address(cluster, "worker", 0, "train-0.train:2222");
  expect_address(cluster, "worker", 2, "train-2.train:2222");
  DT_OK(dist_cluster_task_index(cluster, &index));
  DT_OK(dist_cluster_is_chief(cluster, &is_chief));
  DT_OK(dist_cluster_num_workers(cluster, &workers));
  assert_int_equal(index, 1);
  assert_int_equal(is_chief, 0);
  assert_int_equal(workers, 3);
  dist_cluster_destroy(cluster);
  /* Arguments win over the environment. */
  DT_OK(dist_cluster_from_statefulset("sim-0", "sim.games.svc.cluster.local", 2, 7777, &cluster));
  expect_address(cluster, "worker", 1, "sim-1.sim.games.svc.cluster.local:7777");
  DT_OK(dist_cluster_is_chief(cluster, &is_chief));
  assert_int_equal(is_chief, 1);
  dist_cluster_destroy(cluster);
  clear_environment();
}

static void test_statefulset_misuse(void** state) {
  dist_cluster_t* cluster = DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_cluster_from_statefulset(NULL, NULL, 0, 0, &cluster), DIST_NOT_FOUND,
         "dist_cluster_from_statefulset", "POD_NAME or HOSTNAME");
  assert_null(cluster);
  DT_ERR(dist_cluster_from_statefulset("train", "train", 2, 0, &cluster), DIST_INVALID_ARGUMENT,
         "dist_cluster_from_statefulset", "<set>-<ordinal>");
  DT_ERR(dist_cluster_from_statefulset("train-2", "train", 2, 0, &cluster), DIST_INVALID_ARGUMENT,
         "dist_cluster_from_statefulset", "has 2 replicas");
  DT_ERR(dist_cluster_from_statefulset("train-0", NULL, 2, 0, &cluster), DIST_NOT_FOUND,
         "dist_cluster_from_statefulset", "DIST_K8S_SERVICE");
  DT_ERR(dist_cluster_from_statefulset("train-0", "train", 0, 0, &cluster), DIST_NOT_FOUND,
         "dist_cluster_from_statefulset", "DIST_K8S_REPLICAS");
  DT_ERR(dist_cluster_from_statefulset("train-0", "train", -4, 0, &cluster), DIST_INVALID_ARGUMENT,
         "dist_cluster_from_statefulset", "replicas is -4");
  DT_ERR(dist_cluster_from_statefulset("train-0", "train", 2, 65536, &cluster), DIST_INVALID_ARGUMENT,
         "dist_cluster_from_statefulset", "port is 65536");
  DT_ERR(dist_cluster_from_statefulset("train-0", "no spaces", 2, 0, &cluster), DIST_INVALID_ARGUMENT,
         "dist_cluster_from_statefulset", "service");
  DT_ERR(dist_cluster_from_statefulset("train-0", "train", 2, 0, NULL), DIST_INVALID_ARGUMENT,
         "dist_cluster_from_statefulset", "out is NULL");
  setenv("DIST_K8S_PORT", "http", 1);
  DT_ERR(dist_cluster_from_statefulset("train-0", "train", 2, 0, &cluster), DIST_INVALID_ARGUMENT,
         "dist_cluster_from_statefulset", "DIST_K8S_PORT is 'http'");
  assert_null(cluster);
  clear_environment();
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_slurm_step, setup),
      cmocka_unit_test_setup(test_slurm_misuse, setup),
      cmocka_unit_test_setup(test_statefulset_pod, setup),
      cmocka_unit_test_setup(test_statefulset_misuse, setup),
  };
  return cmocka_run_group_tests_name("cluster_resolvers", tests, NULL, NULL);
}
