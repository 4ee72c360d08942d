/* Tests for cluster.h: TF_CONFIG in both job forms, explicit clusters, the derived facts
 * against TensorFlow's rules (workers are chief + worker; the chief is "chief", else worker
 * 0), every validation error, and misuse (NULL arguments, no current task). */
#define _POSIX_C_SOURCE 200112L

#include "dist_test.h"

static const char kListConfig[] =
    "{\"cluster\": {\"chief\": [\"host0:2222\"], \"worker\": [\"host1:2222\", \"host2:2222\"],"
    " \"ps\": [\"ps0:2222\"], \"evaluator\": [\"eval0:2222\"]},"
    " \"task\": {\"type\": \"worker\", \"index\": 1}, \"rpc_layer\": \"grpc\"}";

static const char kSparseConfig[] =
    "{\"cluster\": {\"worker\": {\"1\": \"h1:1\", \"4\": \"[::1]:2\"}},"
    " \"task\": {\"type\": \"worker\", \"index\": 4}}";

static dist_cluster_t* parse_or_fail(const char* json) {
  dist_cluster_t* cluster = NULL;
  DT_OK(dist_cluster_from_tf_config(json, &cluster));
  assert_non_null(cluster);
  return cluster;
}

static void test_from_tf_config_list_form(void** state) {
  dist_cluster_t* cluster = parse_or_fail(kListConfig);
  const char* type = NULL;
  const char* address = NULL;
  int32_t value = -1;
  (void)state;
  DT_OK(dist_cluster_task_type(cluster, &type));
  assert_string_equal(type, "worker");
  DT_OK(dist_cluster_task_index(cluster, &value));
  assert_int_equal(value, 1);
  DT_OK(dist_cluster_is_chief(cluster, &value));
  assert_int_equal(value, 0);
  DT_OK(dist_cluster_num_workers(cluster, &value));
  assert_int_equal(value, 3); /* chief + 2 workers; ps and evaluator are not workers */
  DT_OK(dist_cluster_num_tasks(cluster, "ps", &value));
  assert_int_equal(value, 1);
  DT_OK(dist_cluster_num_tasks(cluster, "evaluator", &value));
  assert_int_equal(value, 1);
  DT_OK(dist_cluster_task_address(cluster, "worker", 1, &address));
  assert_string_equal(address, "host2:2222");
  DT_OK(dist_cluster_task_address(cluster, "chief", 0, &address));
  assert_string_equal(address, "host0:2222");
  DT_OK(dist_cluster_task_index_at(cluster, "worker", 1, &value));
  assert_int_equal(value, 1);
  dist_cluster_destroy(cluster);
}

static void test_from_tf_config_sparse_form(void** state) {
  dist_cluster_t* cluster = parse_or_fail(kSparseConfig);
  const char* address = DT_SENTINEL_STR;
  int32_t value = -1;
  (void)state;
  DT_OK(dist_cluster_num_tasks(cluster, "worker", &value));
  assert_int_equal(value, 2);
  DT_OK(dist_cluster_task_index_at(cluster, "worker", 0, &value));
  assert_int_equal(value, 1);
  DT_OK(dist_cluster_task_index_at(cluster, "worker", 1, &value));
  assert_int_equal(value, 4);
  DT_OK(dist_cluster_task_address(cluster, "worker", 4, &address));
  assert_string_equal(address, "[::1]:2");
  DT_OK(dist_cluster_is_chief(cluster, &value));
  assert_int_equal(value, 0); /* no chief and no worker 0 */
  address = DT_SENTINEL_STR;
  DT_ERR(dist_cluster_task_address(cluster, "worker", 2, &address), DIST_INVALID_ARGUMENT,
         "dist_cluster_task_address", "task index 2 is not in the cluster: the worker task indices are 1, 4");
  assert_null(address);
  value = 7;
  DT_ERR(dist_cluster_task_index_at(cluster, "worker", 2, &value), DIST_INVALID_ARGUMENT,
         "dist_cluster_task_index_at", "position 2 is out of range: cluster has 2 workers");
  assert_int_equal(value, 0);
  DT_ERR(dist_cluster_task_index_at(cluster, "worker", -1, &value), DIST_INVALID_ARGUMENT,
         "dist_cluster_task_index_at", "position -1");
  dist_cluster_destroy(cluster);
}

static void test_chief_rule(void** state) {
  static const struct {
    const char* json;
    int32_t is_chief;
    int32_t num_workers;
  } cases[] = {
      {"{\"cluster\": {\"chief\": [\"a:1\"], \"worker\": [\"b:1\"]}, \"task\": {\"type\": \"chief\", \"index\": 0}}", 1, 2},
      {"{\"cluster\": {\"chief\": [\"a:1\"], \"worker\": [\"b:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}", 0, 2},
      {"{\"cluster\": {\"worker\": [\"a:1\", \"b:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}", 1, 2},
      {"{\"cluster\": {\"worker\": [\"a:1\", \"b:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 1}}", 0, 2},
      /* TF's multi_worker_util: is_chief(cluster, "ps", 0) is False and
       * worker_count(cluster, "ps") raises ValueError (-1 here: DIST_INVALID_ARGUMENT) */
      {"{\"cluster\": {\"worker\": [\"a:1\"], \"ps\": [\"p:1\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}", 0, -1},
      /* the evaluator is its own chief, of a cluster of the evaluators:
       * is_chief(cluster, "evaluator", 0) is True, worker_count(cluster, "evaluator") is 1 */
      {"{\"cluster\": {\"chief\": [\"c:1\"], \"worker\": [\"a:1\", \"b:1\"], \"evaluator\": [\"e:1\"]}, \"task\": {\"type\": \"evaluator\", \"index\": 0}}", 1, 1},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    dist_cluster_t* cluster = parse_or_fail(cases[i].json);
    int32_t value = -1;
    DT_OK(dist_cluster_is_chief(cluster, &value));
    assert_int_equal(value, cases[i].is_chief);
    if (cases[i].num_workers < 0) {
      DT_ERR(dist_cluster_num_workers(cluster, &value), DIST_INVALID_ARGUMENT,
             "dist_cluster_num_workers", "ps task");
      assert_int_equal(value, 0);
    } else {
      DT_OK(dist_cluster_num_workers(cluster, &value));
      assert_int_equal(value, cases[i].num_workers);
    }
    dist_cluster_destroy(cluster);
  }
}

/* What TF accepts: the index as a string and unknown top-level keys; rpc_layer,
 * environment and master as TFConfigClusterResolver gives them. TF, with
 * TF_CONFIG = {"cluster": {"chief": ["c:1"], "worker": ["w:2", "w:3"]},
 *              "task": {"type": "worker", "index": "1"}, "rpc_layer": "grpc",
 *              "environment": "cloud", "job": "x"}:
 * resolver.task_id == 1, resolver.rpc_layer == "grpc", resolver.environment == "cloud",
 * resolver.master() == "grpc://w:3". */
static void test_from_tf_config_resolver_fields(void** state) {
  dist_cluster_t* cluster = parse_or_fail(
      "{\"cluster\": {\"chief\": [\"c:1\"], \"worker\": [\"w:2\", \"w:3\"]}, "
      "\"task\": {\"type\": \"worker\", \"index\": \"1\"}, \"rpc_layer\": \"grpc\", "
      "\"environment\": \"cloud\", \"job\": \"x\"}");
  dist_cluster_t* bare = parse_or_fail(
      "{\"cluster\": {\"worker\": [\"w:2\", \"w:3\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
  dist_cluster_t* single = parse_or_fail(
      "{\"cluster\": {\"worker\": [\"w:2\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
  dist_cluster_t* empty = NULL;
  const char* text = DT_SENTINEL_STR;
  int32_t index = -1;
  (void)state;
  DT_OK(dist_cluster_task_index(cluster, &index));
  assert_int_equal(index, 1);
  DT_OK(dist_cluster_rpc_layer(cluster, &text));
  assert_string_equal(text, "grpc");
  DT_OK(dist_cluster_environment(cluster, &text));
  assert_string_equal(text, "cloud");
  DT_OK(dist_cluster_master(cluster, &text));
  assert_string_equal(text, "grpc://w:3");
  /* Without rpc_layer the master is the bare address; a single task has none ("") */
  DT_OK(dist_cluster_rpc_layer(bare, &text));
  assert_string_equal(text, "");
  DT_OK(dist_cluster_environment(bare, &text));
  assert_string_equal(text, "");
  DT_OK(dist_cluster_master(bare, &text));
  assert_string_equal(text, "w:2");
  DT_OK(dist_cluster_master(single, &text));
  assert_string_equal(text, "");
  /* A cluster built by hand: "" until it has two tasks and a current one. */
  DT_OK(dist_cluster_create(&empty));
  DT_OK(dist_cluster_master(empty, &text));
  assert_string_equal(text, "");
  DT_OK(dist_cluster_add_task(empty, "worker", 0, "a:1"));
  DT_OK(dist_cluster_add_task(empty, "worker", 1, "b:1"));
  DT_OK(dist_cluster_set_task(empty, "worker", 1));
  DT_OK(dist_cluster_master(empty, &text));
  assert_string_equal(text, "b:1");
  /* Misuse: NULL arguments are named, outputs cleared. */
  text = DT_SENTINEL_STR;
  DT_ERR(dist_cluster_rpc_layer(NULL, &text), DIST_INVALID_ARGUMENT, "dist_cluster_rpc_layer",
         "cluster");
  assert_null(text);
  DT_ERR(dist_cluster_rpc_layer(cluster, NULL), DIST_INVALID_ARGUMENT, "dist_cluster_rpc_layer",
         "out_rpc_layer");
  text = DT_SENTINEL_STR;
  DT_ERR(dist_cluster_environment(NULL, &text), DIST_INVALID_ARGUMENT,
         "dist_cluster_environment", "cluster");
  assert_null(text);
  DT_ERR(dist_cluster_environment(cluster, NULL), DIST_INVALID_ARGUMENT,
         "dist_cluster_environment", "out_environment");
  text = DT_SENTINEL_STR;
  DT_ERR(dist_cluster_master(NULL, &text), DIST_INVALID_ARGUMENT, "dist_cluster_master",
         "cluster");
  assert_null(text);
  DT_ERR(dist_cluster_master(cluster, NULL), DIST_INVALID_ARGUMENT, "dist_cluster_master",
         "out_master");
  dist_cluster_destroy(cluster);
  dist_cluster_destroy(bare);
  dist_cluster_destroy(single);
  dist_cluster_destroy(empty);
}

static void test_from_tf_config_errors(void** state) {
  static const struct {
    const char* json;
    const char* message;
  } cases[] = {
      {"{\"cluster\": {\"worker\": [\"a:1\", \"b:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 2}}",
       "task index 2 is out of range: cluster has 2 workers"},
      {"{\"cluster\": {\"chief\": [\"a:1\", \"b:1\"]}, \"task\": {\"type\": \"chief\", \"index\": 0}}",
       "cluster has two chiefs"},
      {"{\"cluster\": {\"worker\": [\"a:1\", \"b\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}",
       "worker[1] address 'b' is malformed"},
      {"{\"cluster\": {\"worker\": [\"a:70000\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}",
       "the port '70000' is not a number from 1 to 65535"},
      {"{\"cluster\": {\"master\": [\"a:1\"]}, \"task\": {\"type\": \"master\", \"index\": 0}}",
       "unknown job 'master'"},
      {"{\"cluster\": {\"worker\": [\"a:1\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}",
       "task type 'ps' is not in the cluster"},
      {"{\"cluster\": {\"worker\": [\"a:1\", \"a:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}",
       "worker[1] address 'a:1' is already used by worker[0]"},
      {"{\"cluster\": {}, \"task\": {\"type\": \"worker\", \"index\": 0}}", "the cluster is empty"},
      {"{\"cluster\": {\"evaluator\": [\"e:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}}",
       "task type 'worker' is not in the cluster"},
      {"{\"cluster\": {\"worker\": [\"a:1\"]}, \"task\": {\"type\": \"wor", "not valid JSON: error at byte"},
      {"", "the input is empty"},
      {"{\"cluster\": {\"worker\": [1]}, \"task\": {\"type\": \"worker\", \"index\": 0}}",
       "cluster.worker[0] must be a \"host:port\" string, not a number"},
      {"{\"cluster\": {\"worker\": [\"a:1\"]}, \"task\": {\"type\": \"worker\", \"index\": \"one\"}}",
       "task.index 'one' is not a task index"},
      {"{\"cluster\": {\"worker\": [\"a:1\"]}, \"task\": {\"type\": \"worker\", \"index\": 0}, \"rpc_layer\": 1}",
       "\"rpc_layer\" must be a string"},
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    dist_cluster_t* cluster = (dist_cluster_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_cluster_from_tf_config(cases[i].json, &cluster), DIST_INVALID_ARGUMENT,
           "dist_cluster_from_tf_config", cases[i].message);
    assert_null(cluster);
  }
}

static void test_from_tf_config_environment(void** state) {
  dist_cluster_t* cluster = NULL;
  int32_t index = -1;
  (void)state;
  assert_int_equal(setenv("TF_CONFIG", kSparseConfig, 1), 0);
  DT_OK(dist_cluster_from_tf_config(NULL, &cluster));
  DT_OK(dist_cluster_task_index(cluster, &index));
  assert_int_equal(index, 4);
  dist_cluster_destroy(cluster);

  assert_int_equal(unsetenv("TF_CONFIG"), 0);
  cluster = (dist_cluster_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_cluster_from_tf_config(NULL, &cluster), DIST_NOT_FOUND, "dist_cluster_from_tf_config",
         "TF_CONFIG");
  assert_null(cluster);
  assert_int_equal(setenv("TF_CONFIG", "{", 1), 0);
  DT_ERR(dist_cluster_from_tf_config(NULL, &cluster), DIST_INVALID_ARGUMENT, "dist_cluster_from_tf_config",
         "not valid JSON");
  assert_int_equal(unsetenv("TF_CONFIG"), 0);
}

static void test_from_tf_config_rejects_null_out(void** state) {
  (void)state;
  DT_ERR(dist_cluster_from_tf_config(kListConfig, NULL), DIST_INVALID_ARGUMENT, "dist_cluster_from_tf_config",
         "out");
}

static void test_create_and_build(void** state) {
  dist_cluster_t* cluster = NULL;
  const char* text = NULL;
  int32_t value = -1;
  (void)state;
  DT_OK(dist_cluster_create(&cluster));
  assert_non_null(cluster);
  DT_OK(dist_cluster_num_workers(cluster, &value));
  assert_int_equal(value, 0);
  DT_OK(dist_cluster_add_task(cluster, "worker", 0, "localhost:2222"));
  DT_OK(dist_cluster_add_task(cluster, "worker", 2, "127.0.0.1:2223"));
  DT_OK(dist_cluster_add_task(cluster, "ps", 0, "[fe80::1]:1"));
  DT_OK(dist_cluster_set_task(cluster, "worker", 0));
  DT_OK(dist_cluster_is_chief(cluster, &value));
  assert_int_equal(value, 1); /* worker 0 without a chief */
  DT_OK(dist_cluster_task_address(cluster, "worker", 0, &text));
  assert_string_equal(text, "localhost:2222");
  /* a borrowed address survives later additions */
  DT_OK(dist_cluster_add_task(cluster, "chief", 0, "chief.example.com:5"));
  assert_string_equal(text, "localhost:2222");
  DT_OK(dist_cluster_is_chief(cluster, &value));
  assert_int_equal(value, 0); /* now there is a chief */
  DT_OK(dist_cluster_num_workers(cluster, &value));
  assert_int_equal(value, 3);
  DT_OK(dist_cluster_set_task(cluster, "chief", 0));
  DT_OK(dist_cluster_task_type(cluster, &text));
  assert_string_equal(text, "chief");
  DT_OK(dist_cluster_is_chief(cluster, &value));
  assert_int_equal(value, 1);
  DT_OK(dist_cluster_num_tasks(cluster, "evaluator", &value));
  assert_int_equal(value, 0);
  dist_cluster_destroy(cluster);
}

static void test_create_rejects_null_out(void** state) {
  (void)state;
  DT_ERR(dist_cluster_create(NULL), DIST_INVALID_ARGUMENT, "dist_cluster_create", "out");
}

static void test_add_task_errors_change_nothing(void** state) {
  dist_cluster_t* cluster = NULL;
  int32_t value = -1;
  const char* text = NULL;
  (void)state;
  DT_OK(dist_cluster_create(&cluster));
  DT_OK(dist_cluster_add_task(cluster, "chief", 0, "c:1"));
  DT_OK(dist_cluster_add_task(cluster, "worker", 0, "w:1"));
  DT_ERR(dist_cluster_add_task(cluster, "chief", 1, "d:1"), DIST_INVALID_ARGUMENT, "dist_cluster_add_task",
         "cluster has two chiefs");
  DT_ERR(dist_cluster_add_task(cluster, "worker", 0, "x:1"), DIST_INVALID_ARGUMENT, "dist_cluster_add_task",
         "worker[0] is already in the cluster");
  DT_ERR(dist_cluster_add_task(cluster, "worker", 1, "c:1"), DIST_INVALID_ARGUMENT, "dist_cluster_add_task",
         "worker[1] address 'c:1' is already used by chief[0]");
  DT_ERR(dist_cluster_add_task(cluster, "worker", 1, "x:0"), DIST_INVALID_ARGUMENT, "dist_cluster_add_task",
         "worker[1] address 'x:0' is malformed");
  DT_ERR(dist_cluster_add_task(cluster, "worker", -1, "x:1"), DIST_INVALID_ARGUMENT, "dist_cluster_add_task",
         "worker[-1]");
  DT_ERR(dist_cluster_add_task(cluster, "boss", 0, "x:1"), DIST_INVALID_ARGUMENT, "dist_cluster_add_task",
         "unknown job 'boss'");
  DT_ERR(dist_cluster_add_task(NULL, "worker", 1, "x:1"), DIST_INVALID_ARGUMENT, "dist_cluster_add_task",
         "cluster");
  DT_ERR(dist_cluster_add_task(cluster, NULL, 1, "x:1"), DIST_INVALID_ARGUMENT, "dist_cluster_add_task", "job");
  DT_ERR(dist_cluster_add_task(cluster, "worker", 1, NULL), DIST_INVALID_ARGUMENT, "dist_cluster_add_task",
         "address");
  DT_OK(dist_cluster_num_workers(cluster, &value));
  assert_int_equal(value, 2);
  DT_OK(dist_cluster_task_address(cluster, "worker", 0, &text));
  assert_string_equal(text, "w:1");
  dist_cluster_destroy(cluster);
}

static void test_set_task_errors_change_nothing(void** state) {
  dist_cluster_t* cluster = NULL;
  int32_t value = -1;
  (void)state;
  DT_OK(dist_cluster_create(&cluster));
  DT_ERR(dist_cluster_set_task(cluster, "worker", 0), DIST_INVALID_ARGUMENT, "dist_cluster_set_task",
         "task type 'worker' is not in the cluster");
  DT_OK(dist_cluster_add_task(cluster, "worker", 0, "a:1"));
  DT_OK(dist_cluster_add_task(cluster, "worker", 1, "b:1"));
  DT_OK(dist_cluster_set_task(cluster, "worker", 1));
  DT_ERR(dist_cluster_set_task(cluster, "worker", 2), DIST_INVALID_ARGUMENT, "dist_cluster_set_task",
         "task index 2 is out of range: cluster has 2 workers");
  DT_ERR(dist_cluster_set_task(cluster, "worker", -1), DIST_INVALID_ARGUMENT, "dist_cluster_set_task",
         "task index -1 is out of range");
  DT_ERR(dist_cluster_set_task(cluster, "evaluator", 0), DIST_INVALID_ARGUMENT, "dist_cluster_set_task",
         "task type 'evaluator' is not in the cluster");
  DT_ERR(dist_cluster_set_task(cluster, "nope", 0), DIST_INVALID_ARGUMENT, "dist_cluster_set_task",
         "unknown job 'nope'");
  DT_ERR(dist_cluster_set_task(NULL, "worker", 0), DIST_INVALID_ARGUMENT, "dist_cluster_set_task", "cluster");
  DT_ERR(dist_cluster_set_task(cluster, NULL, 0), DIST_INVALID_ARGUMENT, "dist_cluster_set_task", "job");
  DT_OK(dist_cluster_task_index(cluster, &value));
  assert_int_equal(value, 1);
  dist_cluster_destroy(cluster);
}

static void test_task_accessors_need_a_task(void** state) {
  dist_cluster_t* cluster = NULL;
  const char* type = DT_SENTINEL_STR;
  int32_t value = 5;
  (void)state;
  DT_OK(dist_cluster_create(&cluster));
  DT_OK(dist_cluster_add_task(cluster, "worker", 0, "a:1"));
  DT_ERR(dist_cluster_task_type(cluster, &type), DIST_FAILED_PRECONDITION, "dist_cluster_task_type",
         "no current task");
  assert_null(type);
  DT_ERR(dist_cluster_task_index(cluster, &value), DIST_FAILED_PRECONDITION, "dist_cluster_task_index",
         "no current task");
  assert_int_equal(value, 0);
  value = 5;
  DT_ERR(dist_cluster_is_chief(cluster, &value), DIST_FAILED_PRECONDITION, "dist_cluster_is_chief",
         "no current task");
  assert_int_equal(value, 0);
  dist_cluster_destroy(cluster);
}

static void test_accessors_reject_null(void** state) {
  dist_cluster_t* cluster = parse_or_fail(kListConfig);
  const char* text = DT_SENTINEL_STR;
  int32_t value = 5;
  (void)state;
  DT_ERR(dist_cluster_task_type(NULL, &text), DIST_INVALID_ARGUMENT, "dist_cluster_task_type", "cluster");
  assert_null(text);
  DT_ERR(dist_cluster_task_type(cluster, NULL), DIST_INVALID_ARGUMENT, "dist_cluster_task_type", "out_borrowed_type");
  DT_ERR(dist_cluster_task_index(NULL, &value), DIST_INVALID_ARGUMENT, "dist_cluster_task_index", "cluster");
  assert_int_equal(value, 0);
  DT_ERR(dist_cluster_task_index(cluster, NULL), DIST_INVALID_ARGUMENT, "dist_cluster_task_index", "out_index");
  DT_ERR(dist_cluster_is_chief(NULL, &value), DIST_INVALID_ARGUMENT, "dist_cluster_is_chief", "cluster");
  DT_ERR(dist_cluster_is_chief(cluster, NULL), DIST_INVALID_ARGUMENT, "dist_cluster_is_chief", "out_is_chief");
  DT_ERR(dist_cluster_num_workers(NULL, &value), DIST_INVALID_ARGUMENT, "dist_cluster_num_workers", "cluster");
  DT_ERR(dist_cluster_num_workers(cluster, NULL), DIST_INVALID_ARGUMENT, "dist_cluster_num_workers", "out_count");
  value = 5;
  DT_ERR(dist_cluster_num_tasks(NULL, "worker", &value), DIST_INVALID_ARGUMENT, "dist_cluster_num_tasks",
         "cluster");
  assert_int_equal(value, 0);
  DT_ERR(dist_cluster_num_tasks(cluster, NULL, &value), DIST_INVALID_ARGUMENT, "dist_cluster_num_tasks", "job");
  DT_ERR(dist_cluster_num_tasks(cluster, "worker", NULL), DIST_INVALID_ARGUMENT, "dist_cluster_num_tasks",
         "out_count");
  DT_ERR(dist_cluster_num_tasks(cluster, "master", &value), DIST_INVALID_ARGUMENT, "dist_cluster_num_tasks",
         "unknown job 'master'");
  DT_ERR(dist_cluster_task_index_at(NULL, "worker", 0, &value), DIST_INVALID_ARGUMENT,
         "dist_cluster_task_index_at", "cluster");
  DT_ERR(dist_cluster_task_index_at(cluster, NULL, 0, &value), DIST_INVALID_ARGUMENT,
         "dist_cluster_task_index_at", "job");
  DT_ERR(dist_cluster_task_index_at(cluster, "worker", 0, NULL), DIST_INVALID_ARGUMENT,
         "dist_cluster_task_index_at", "out_index");
  DT_ERR(dist_cluster_task_address(NULL, "worker", 0, &text), DIST_INVALID_ARGUMENT,
         "dist_cluster_task_address", "cluster");
  DT_ERR(dist_cluster_task_address(cluster, NULL, 0, &text), DIST_INVALID_ARGUMENT,
         "dist_cluster_task_address", "job");
  DT_ERR(dist_cluster_task_address(cluster, "worker", 0, NULL), DIST_INVALID_ARGUMENT,
         "dist_cluster_task_address", "out_borrowed_address");
  text = DT_SENTINEL_STR;
  DT_ERR(dist_cluster_task_address(cluster, "ps", 1, &text), DIST_INVALID_ARGUMENT,
         "dist_cluster_task_address", "task index 1 is out of range: cluster has 1 ps task");
  assert_null(text);
  DT_ERR(dist_cluster_task_address(cluster, "master", 0, &text), DIST_INVALID_ARGUMENT,
         "dist_cluster_task_address", "unknown job 'master'");
  dist_cluster_destroy(cluster);
}

static void test_destroy_accepts_null(void** state) {
  (void)state;
  dist_cluster_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_from_tf_config_list_form),
      cmocka_unit_test(test_from_tf_config_sparse_form),
      cmocka_unit_test(test_chief_rule),
      cmocka_unit_test(test_from_tf_config_errors),
      cmocka_unit_test(test_from_tf_config_resolver_fields),
      cmocka_unit_test(test_from_tf_config_environment),
      cmocka_unit_test(test_from_tf_config_rejects_null_out),
      cmocka_unit_test(test_create_and_build),
      cmocka_unit_test(test_create_rejects_null_out),
      cmocka_unit_test(test_add_task_errors_change_nothing),
      cmocka_unit_test(test_set_task_errors_change_nothing),
      cmocka_unit_test(test_task_accessors_need_a_task),
      cmocka_unit_test(test_accessors_reject_null),
      cmocka_unit_test(test_destroy_accepts_null),
  };
  return cmocka_run_group_tests_name("cluster", tests, NULL, NULL);
}
