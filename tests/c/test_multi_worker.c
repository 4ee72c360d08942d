/* Tests for the multi-worker part of strategy.h: communication options (defaults, every
 * setter, rejected values that change nothing), a MultiWorkerMirroredStrategy of one
 * worker in this process (its replicas, collectives and variables behave as a Mirrored
 * strategy's), creation from TF_CONFIG, and misuse (NULL arguments, a cluster without a
 * current task, a ps task, NCCL on CPU replicas, a port in use), and the shared-memory
 * modes. Several workers in
 * several processes are tested in tests/multiworker. */
#define _POSIX_C_SOURCE 200112L

#include <stdlib.h>

#include "dist_ports_test.h"

static dist_cluster_t* one_worker_cluster(int32_t port) {
  dist_cluster_t* cluster = NULL;
  char address[32];
  snprintf(address, sizeof address, "127.0.0.1:%d", (int)port);
  DT_OK(dist_cluster_create(&cluster));
  DT_OK(dist_cluster_add_task(cluster, "worker", 0, address));
  DT_OK(dist_cluster_set_task(cluster, "worker", 0));
  return cluster;
}

static dist_communication_options_t* short_timeout(void) {
  dist_communication_options_t* options = NULL;
  DT_OK(dist_communication_options_create(&options));
  DT_OK(dist_communication_options_set_timeout_ms(options, 10000));
  return options;
}

static void test_options_setters_and_rejections(void** state) {
  dist_communication_options_t* options = NULL;
  (void)state;
  DT_OK(dist_communication_options_create(&options));
  assert_non_null(options);
  DT_OK(dist_communication_options_set_implementation(options, DIST_COMMUNICATION_RING));
  DT_OK(dist_communication_options_set_implementation(options, DIST_COMMUNICATION_AUTO));
  DT_OK(dist_communication_options_set_bytes_per_pack(options, 1 << 20));
  DT_OK(dist_communication_options_set_bytes_per_pack(options, 0));
  DT_OK(dist_communication_options_set_timeout_ms(options, 500));
  DT_OK(dist_communication_options_set_timeout_ms(options, 604800000)); /* a week: the bound */
  DT_OK(dist_communication_options_set_timeout_ms(options, 0));         /* the default */
  DT_OK(dist_communication_options_set_replicas_per_worker(options, 1));
  DT_OK(dist_communication_options_set_replicas_per_worker(options, DIST_MAX_LOGICAL_CPU_DEVICES));
  DT_OK(dist_communication_options_set_replicas_per_worker(options, 0)); /* the default */
  DT_OK(dist_communication_options_set_shared_memory(options, DIST_SHARED_MEMORY_ON));
  DT_OK(dist_communication_options_set_shared_memory(options, DIST_SHARED_MEMORY_OFF));
  DT_OK(dist_communication_options_set_shared_memory(options, DIST_SHARED_MEMORY_AUTO));
  DT_ERR(dist_communication_options_set_shared_memory(options, 3), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_shared_memory", "shared memory mode 3");
  DT_ERR(dist_communication_options_set_shared_memory(options, -1), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_shared_memory", "shared memory mode -1");
  DT_ERR(dist_communication_options_set_implementation(options, 7), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_implementation", "implementation");
  DT_ERR(dist_communication_options_set_implementation(options, -1), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_implementation", "implementation");
  DT_ERR(dist_communication_options_set_bytes_per_pack(options, -1), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_bytes_per_pack", "bytes_per_pack");
  DT_ERR(dist_communication_options_set_timeout_ms(options, -1), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_timeout_ms", "timeout_ms");
  DT_ERR(dist_communication_options_set_timeout_ms(options, 604800001), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_timeout_ms", "timeout_ms");
  DT_ERR(dist_communication_options_set_timeout_ms(options, INT64_MAX), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_timeout_ms", "timeout_ms");
  DT_ERR(dist_communication_options_set_replicas_per_worker(options, -1), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_replicas_per_worker", "replicas_per_worker");
  DT_ERR(dist_communication_options_set_replicas_per_worker(options, DIST_MAX_LOGICAL_CPU_DEVICES + 1),
         DIST_INVALID_ARGUMENT, "dist_communication_options_set_replicas_per_worker",
         "replicas_per_worker");
  dist_communication_options_destroy(options);
  dist_communication_options_destroy(NULL);
}

static void test_options_misuse(void** state) {
  (void)state;
  DT_ERR(dist_communication_options_create(NULL), DIST_INVALID_ARGUMENT,
         "dist_communication_options_create", "out");
  DT_ERR(dist_communication_options_set_implementation(NULL, DIST_COMMUNICATION_AUTO),
         DIST_INVALID_ARGUMENT, "dist_communication_options_set_implementation", "options");
  DT_ERR(dist_communication_options_set_bytes_per_pack(NULL, 0), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_bytes_per_pack", "options");
  DT_ERR(dist_communication_options_set_timeout_ms(NULL, 1), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_timeout_ms", "options");
  DT_ERR(dist_communication_options_set_replicas_per_worker(NULL, 1), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_replicas_per_worker", "options");
  DT_ERR(dist_communication_options_set_shared_memory(NULL, DIST_SHARED_MEMORY_ON), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_shared_memory", "options");
}

/* Replica g contributes g + 1; an all-reduce SUM over n replicas gives n(n+1)/2. */
static dist_status_t sum_of_ids(dist_context_t* context, const dist_value_t* const* args,
                                int32_t num_args, dist_value_t** results, int32_t num_results,
                                void* user_data) {
  int32_t id = -1;
  float value;
  int64_t shape[1] = {1};
  dist_value_t* mine = NULL;
  dist_status_t status;
  (void)args;
  (void)num_args;
  (void)num_results;
  (void)user_data;
  status = dist_context_replica_id(context, &id);
  if (status != DIST_OK) return status;
  value = (float)(id + 1);
  status = dist_tensor_create(DIST_FLOAT32, shape, 1, &value, sizeof value, NULL, &mine);
  if (status != DIST_OK) return status;
  status = dist_context_all_reduce(context, DIST_REDUCE_SUM, mine, &results[0]);
  dist_value_destroy(mine);
  return status;
}

static float first_float(const dist_value_t* value) {
  dist_value_t* component = NULL;
  void* data = NULL;
  float result;
  DT_OK(dist_value_component(value, 0, &component));
  DT_OK(dist_tensor_data(component, &data));
  result = *(const float*)data;
  dist_value_destroy(component);
  return result;
}

static void test_one_worker_behaves_as_mirrored(void** state) {
  int32_t port = 0;
  int32_t count = 0;
  dist_strategy_kind_t kind = 0;
  dist_cluster_t* cluster;
  dist_communication_options_t* options = short_timeout();
  dist_strategy_t* strategy = NULL;
  dist_value_t* results[1] = {NULL};
  (void)state;
  dt_free_ports(&port, 1);
  cluster = one_worker_cluster(port);
  /* The options give the replica count; the process had fewer logical CPU devices, and the
   * strategy makes the ones it needs available. */
  DT_OK(dist_set_logical_cpu_device_count(1));
  DT_OK(dist_communication_options_set_replicas_per_worker(options, 3));
  DT_OK(dist_strategy_create_multi_worker_mirrored(cluster, options, &strategy));
  DT_OK(dist_local_device_count(&count));
  assert_true(count >= 3);
  DT_OK(dist_strategy_kind(strategy, &kind));
  assert_int_equal(kind, DIST_STRATEGY_MULTI_WORKER_MIRRORED);
  DT_OK(dist_strategy_num_replicas_in_sync(strategy, &count));
  assert_int_equal(count, 3);
  DT_OK(dist_strategy_run(strategy, sum_of_ids, NULL, NULL, 0, results, 1));
  assert_float_equal(first_float(results[0]), 6.0f, 0.0f);
  dist_value_destroy(results[0]);
  dist_strategy_destroy(strategy);
  dist_communication_options_destroy(options);
  dist_cluster_destroy(cluster);
}

/* One worker over each shared-memory mode (its transport has no peer to talk to, but it
 * is set up, and torn down, all the same); DIST_SHARED_MEMORY decides only when the
 * options say AUTO, and a bad value there fails creation naming it. Two processes on one
 * host, and several hosts, are tested in tests/multiworker and tests/multihost. */
static void test_shared_memory_modes(void** state) {
  const dist_shared_memory_t modes[3] = {DIST_SHARED_MEMORY_ON, DIST_SHARED_MEMORY_OFF, DIST_SHARED_MEMORY_AUTO};
  int k;
  (void)state;
  DT_OK(dist_set_logical_cpu_device_count(2));
  for (k = 0; k < 4; ++k) {
    int32_t port = 0;
    dist_cluster_t* cluster;
    dist_communication_options_t* options = short_timeout();
    dist_strategy_t* strategy = NULL;
    dist_value_t* results[1] = {NULL};
    dt_free_ports(&port, 1);
    cluster = one_worker_cluster(port);
    DT_OK(dist_communication_options_set_replicas_per_worker(options, 2));
    if (k < 3) {
      DT_OK(dist_communication_options_set_shared_memory(options, modes[k]));
    } else {
      /* The options' own choice comes before the variable, which is then never read. */
      assert_int_equal(setenv("DIST_SHARED_MEMORY", "sometimes", 1), 0);
      DT_OK(dist_communication_options_set_shared_memory(options, DIST_SHARED_MEMORY_OFF));
    }
    DT_OK(dist_strategy_create_multi_worker_mirrored(cluster, options, &strategy));
    DT_OK(dist_strategy_run(strategy, sum_of_ids, NULL, NULL, 0, results, 1));
    assert_float_equal(first_float(results[0]), 3.0f, 0.0f);
    dist_value_destroy(results[0]);
    dist_strategy_destroy(strategy);
    if (k == 3) {
      strategy = DT_SENTINEL_PTR;
      DT_OK(dist_communication_options_set_shared_memory(options, DIST_SHARED_MEMORY_AUTO));
      DT_ERR(dist_strategy_create_multi_worker_mirrored(cluster, options, &strategy), DIST_INVALID_ARGUMENT,
             "dist_strategy_create_multi_worker_mirrored", "DIST_SHARED_MEMORY");
      assert_null(strategy);
      assert_int_equal(unsetenv("DIST_SHARED_MEMORY"), 0);
    }
    dist_communication_options_destroy(options);
    dist_cluster_destroy(cluster);
  }
}

/* TF_CONFIG names the cluster; DIST_REPLICAS_PER_WORKER the replicas per worker, and with
 * neither options nor that variable a worker runs one replica, as in TF. */
static void test_created_from_tf_config(void** state) {
  int32_t ports[2] = {0, 0};
  int32_t count = 0;
  char config[256];
  dist_strategy_t* strategy = NULL;
  (void)state;
  dt_free_ports(ports, 2);
  assert_int_equal(unsetenv("DIST_REPLICAS_PER_WORKER"), 0);
  DT_OK(dist_set_logical_cpu_device_count(4));
  snprintf(config, sizeof config,
           "{\"cluster\": {\"chief\": [\"localhost:%d\"]}, \"task\": {\"type\": \"chief\", \"index\": 0}}",
           (int)ports[0]);
  assert_int_equal(setenv("TF_CONFIG", config, 1), 0);
  DT_OK(dist_strategy_create_multi_worker_mirrored(NULL, NULL, &strategy));
  DT_OK(dist_strategy_num_replicas_in_sync(strategy, &count));
  assert_int_equal(count, 1);
  dist_strategy_destroy(strategy);

  snprintf(config, sizeof config,
           "{\"cluster\": {\"chief\": [\"localhost:%d\"]}, \"task\": {\"type\": \"chief\", \"index\": 0}}",
           (int)ports[1]);
  assert_int_equal(setenv("TF_CONFIG", config, 1), 0);
  assert_int_equal(setenv("DIST_REPLICAS_PER_WORKER", "2", 1), 0);
  DT_OK(dist_strategy_create_multi_worker_mirrored(NULL, NULL, &strategy));
  DT_OK(dist_strategy_num_replicas_in_sync(strategy, &count));
  assert_int_equal(count, 2);
  dist_strategy_destroy(strategy);

  /* A bad variable fails creation before any connection, naming the variable. */
  assert_int_equal(setenv("DIST_REPLICAS_PER_WORKER", "two", 1), 0);
  strategy = DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_create_multi_worker_mirrored(NULL, NULL, &strategy), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_multi_worker_mirrored", "DIST_REPLICAS_PER_WORKER");
  assert_null(strategy);
  assert_int_equal(setenv("DIST_REPLICAS_PER_WORKER", "0", 1), 0);
  DT_ERR(dist_strategy_create_multi_worker_mirrored(NULL, NULL, &strategy), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_multi_worker_mirrored", "DIST_REPLICAS_PER_WORKER");
  assert_int_equal(setenv("DIST_REPLICAS_PER_WORKER", "257", 1), 0);
  DT_ERR(dist_strategy_create_multi_worker_mirrored(NULL, NULL, &strategy), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_multi_worker_mirrored", "DIST_REPLICAS_PER_WORKER");
  assert_int_equal(unsetenv("DIST_REPLICAS_PER_WORKER"), 0);

  /* A TF_CONFIG that is there but wrong is still an error, naming the entry. */
  assert_int_equal(setenv("TF_CONFIG",
                          "{\"cluster\": {\"worker\": [\"nohost\"]}, "
                          "\"task\": {\"type\": \"worker\", \"index\": 0}}",
                          1),
                   0);
  strategy = DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_create_multi_worker_mirrored(NULL, NULL, &strategy), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_multi_worker_mirrored", "worker[0]");
  assert_null(strategy);
  assert_int_equal(unsetenv("TF_CONFIG"), 0);
}

/* TF: with TF_CONFIG unset or "{}", tf.distribute.MultiWorkerMirroredStrategy() runs as
 * one local worker over this process's devices (cluster_resolver.cluster_spec() empty; on
 * CPUs TF uses CPU:0 only, as our default of one replica per worker does; here
 * DIST_REPLICAS_PER_WORKER=2 asks for two). No server and no port, so two such strategies
 * live side by side, and their collectives are local. */
static void test_no_tf_config_runs_one_local_worker(void** state) {
  const char* configs[5] = {NULL, "", "{}", "{\"cluster\": {}}",
                            "{\"task\": {\"type\": \"worker\", \"index\": 0}}"};
  int k;
  (void)state;
  DT_OK(dist_set_logical_cpu_device_count(2));
  assert_int_equal(setenv("DIST_REPLICAS_PER_WORKER", "2", 1), 0);
  for (k = 0; k < 5; ++k) {
    dist_strategy_t* strategies[2] = {NULL, NULL};
    dist_strategy_kind_t kind = 0;
    int32_t count = 0;
    int i;
    if (configs[k] == NULL) {
      assert_int_equal(unsetenv("TF_CONFIG"), 0);
    } else {
      assert_int_equal(setenv("TF_CONFIG", configs[k], 1), 0);
    }
    for (i = 0; i < 2; ++i) {
      DT_OK(dist_strategy_create_multi_worker_mirrored(NULL, NULL, &strategies[i]));
      assert_non_null(strategies[i]);
    }
    DT_OK(dist_strategy_kind(strategies[0], &kind));
    assert_int_equal(kind, DIST_STRATEGY_MULTI_WORKER_MIRRORED);
    DT_OK(dist_strategy_num_replicas_in_sync(strategies[1], &count));
    assert_int_equal(count, 2);
    {
      /* reduce(SUM) of a PerReplica {1, 2} -> 3, computed locally. */
      dist_value_t* parts[2];
      dist_value_t* pr = NULL;
      dist_value_t* out = NULL;
      const float one = 1.0f, two = 2.0f;
      const int64_t dim = 1;
      DT_OK(dist_tensor_create(DIST_FLOAT32, &dim, 1, &one, sizeof one, "CPU:0", &parts[0]));
      DT_OK(dist_tensor_create(DIST_FLOAT32, &dim, 1, &two, sizeof two, "CPU:1", &parts[1]));
      DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 2, &pr));
      DT_OK(dist_strategy_reduce(strategies[1], DIST_REDUCE_SUM, pr, &out));
      assert_float_equal(first_float(out), 3.0f, 0.0f);
      dist_value_destroy(out);
      dist_value_destroy(pr);
      dist_value_destroy(parts[0]);
      dist_value_destroy(parts[1]);
    }
    dist_strategy_destroy(strategies[0]);
    dist_strategy_destroy(strategies[1]);
  }
  assert_int_equal(unsetenv("TF_CONFIG"), 0);
  assert_int_equal(unsetenv("DIST_REPLICAS_PER_WORKER"), 0);
}

static void test_create_misuse(void** state) {
  int32_t ports[2] = {0, 0};
  char address[32];
  dist_cluster_t* cluster = NULL;
  dist_communication_options_t* options = short_timeout();
  dist_strategy_t* strategy = DT_SENTINEL_PTR;
  dist_strategy_t* first = NULL;
  (void)state;
  dt_free_ports(ports, 2);
  cluster = one_worker_cluster(ports[0]);
  DT_ERR(dist_strategy_create_multi_worker_mirrored(cluster, options, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_multi_worker_mirrored", "out");

  /* NCCL needs GPU replicas. */
  DT_OK(dist_communication_options_set_implementation(options, DIST_COMMUNICATION_NCCL));
  DT_ERR(dist_strategy_create_multi_worker_mirrored(cluster, options, &strategy),
         DIST_FAILED_PRECONDITION, "dist_strategy_create_multi_worker_mirrored", "NCCL");
  assert_null(strategy);
  DT_OK(dist_communication_options_set_implementation(options, DIST_COMMUNICATION_AUTO));

  /* A port in use: the first strategy holds the task's address. */
  DT_OK(dist_strategy_create_multi_worker_mirrored(cluster, options, &first));
  strategy = DT_SENTINEL_PTR;
  DT_ERR2(dist_strategy_create_multi_worker_mirrored(cluster, options, &strategy), DIST_UNAVAILABLE,
          DIST_ALREADY_EXISTS, "dist_strategy_create_multi_worker_mirrored", NULL);
  assert_null(strategy);
  dist_strategy_destroy(first);
  dist_cluster_destroy(cluster);

  /* No current task; a ps task is not a worker. */
  DT_OK(dist_cluster_create(&cluster));
  snprintf(address, sizeof address, "127.0.0.1:%d", (int)ports[0]);
  DT_OK(dist_cluster_add_task(cluster, "worker", 0, address));
  snprintf(address, sizeof address, "127.0.0.1:%d", (int)ports[1]);
  DT_OK(dist_cluster_add_task(cluster, "ps", 0, address));
  strategy = DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_create_multi_worker_mirrored(cluster, options, &strategy),
         DIST_INVALID_ARGUMENT, "dist_strategy_create_multi_worker_mirrored", "task");
  assert_null(strategy);
  DT_OK(dist_cluster_set_task(cluster, "ps", 0));
  DT_ERR(dist_strategy_create_multi_worker_mirrored(cluster, options, &strategy),
         DIST_INVALID_ARGUMENT, "dist_strategy_create_multi_worker_mirrored", "ps:0");
  dist_cluster_destroy(cluster);
  dist_communication_options_destroy(options);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options_setters_and_rejections),
      cmocka_unit_test(test_options_misuse),
      cmocka_unit_test(test_one_worker_behaves_as_mirrored),
      cmocka_unit_test(test_shared_memory_modes),
      cmocka_unit_test(test_created_from_tf_config),
      cmocka_unit_test(test_no_tf_config_runs_one_local_worker),
      cmocka_unit_test(test_create_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
