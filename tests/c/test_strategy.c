/* Tests for strategy.h: creation, properties, timeouts, scopes and the current strategy
 * (dist_get_strategy, dist_has_strategy, dist_in_cross_replica_context,
 * dist_current_replica_context, dist_experimental_set_strategy, dist_get_loss_reduction), and
 * destruction order. The process has DTS_NUM_CPUS (4) logical CPU devices. */
#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

static void expect_kind(const dist_strategy_t* strategy, dist_strategy_kind_t expected) {
  dist_strategy_kind_t kind = 0;
  DT_OK(dist_strategy_kind(strategy, &kind));
  assert_int_equal(kind, expected);
}

static void expect_worker(const dist_strategy_t* strategy, int32_t index, const char* expected) {
  const char* device = NULL;
  DT_OK(dist_strategy_worker_device(strategy, index, &device));
  assert_non_null(device);
  assert_string_equal(device, expected);
}

static void expect_parameter_devices(const dist_strategy_t* strategy, int32_t count,
                                     const char* const* expected) {
  int32_t got = -1, i;
  DT_OK(dist_strategy_parameter_device_count(strategy, &got));
  assert_int_equal(got, count);
  for (i = 0; i < count; ++i) {
    const char* device = NULL;
    DT_OK(dist_strategy_parameter_device(strategy, i, &device));
    assert_non_null(device);
    assert_string_equal(device, expected[i]);
  }
}

/* ---- Creation and properties ---- */

static void test_one_device(void** state) {
  const char* names[] = {"CPU:1", "/device:CPU:1", "/cpu:1", "/device:cpu:1"};
  const char* expected[1] = {"/device:CPU:1"};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(names) / sizeof(names[0]); ++i) {
    dist_strategy_t* s = NULL;
    DT_OK(dist_strategy_create_one_device(names[i], &s));
    assert_non_null(s);
    expect_kind(s, DIST_STRATEGY_ONE_DEVICE);
    assert_int_equal(dts_num_replicas(s), 1);
    expect_worker(s, 0, "/device:CPU:1");
    expect_parameter_devices(s, 1, expected);
    dist_strategy_destroy(s);
  }
}

static void test_mirrored_over_given_devices(void** state) {
  const char* devices[] = {"CPU:0", "CPU:1", "CPU:2", "CPU:3"};
  const char* canonical[] = {"/device:CPU:0", "/device:CPU:1", "/device:CPU:2", "/device:CPU:3"};
  const char* reordered[] = {"/device:CPU:2", "cpu:0"};
  const char* reordered_canonical[] = {"/device:CPU:2", "/device:CPU:0"};
  dist_strategy_t* s = NULL;
  int32_t i;
  (void)state;
  DT_OK(dist_strategy_create_mirrored(devices, 4, NULL, &s));
  expect_kind(s, DIST_STRATEGY_MIRRORED);
  assert_int_equal(dts_num_replicas(s), 4);
  for (i = 0; i < 4; ++i) expect_worker(s, i, canonical[i]);
  /* Mirrored: variables live on every worker device. */
  expect_parameter_devices(s, 4, canonical);
  dist_strategy_destroy(s);

  /* Replica order is the order of `devices`. */
  s = NULL;
  DT_OK(dist_strategy_create_mirrored(reordered, 2, NULL, &s));
  assert_int_equal(dts_num_replicas(s), 2);
  expect_worker(s, 0, reordered_canonical[0]);
  expect_worker(s, 1, reordered_canonical[1]);
  expect_parameter_devices(s, 2, reordered_canonical);
  dist_strategy_destroy(s);

  /* One device. */
  s = NULL;
  DT_OK(dist_strategy_create_mirrored(devices + 3, 1, NULL, &s));
  expect_kind(s, DIST_STRATEGY_MIRRORED);
  assert_int_equal(dts_num_replicas(s), 1);
  expect_worker(s, 0, "/device:CPU:3");
  dist_strategy_destroy(s);
}

static void test_mirrored_over_every_local_device(void** state) {
  dist_strategy_t* s = NULL;
  int32_t i, n;
  (void)state;
  if (dt_have_gpu()) {
    print_message("GPUs present: NULL devices means every GPU; CPU expectations skipped\n");
    skip();
  }
  DT_OK(dist_strategy_create_mirrored(NULL, 0, NULL, &s));
  expect_kind(s, DIST_STRATEGY_MIRRORED);
  n = dts_num_replicas(s);
  assert_int_equal(n, DTS_NUM_CPUS);
  for (i = 0; i < n; ++i) {
    char expected[32];
    snprintf(expected, sizeof(expected), "/device:CPU:%d", (int)i);
    expect_worker(s, i, expected);
  }
  dist_strategy_destroy(s);
}

static void test_mirrored_with_cross_device_ops(void** state) {
  dist_cross_device_ops_t* ops = NULL;
  dist_strategy_t* s = NULL;
  (void)state;
  DT_OK(dist_cross_device_ops_create_hierarchical_copy(2, &ops));
  s = dts_mirrored_with(2, ops);
  /* The strategy keeps its own reference. */
  dist_cross_device_ops_destroy(ops);
  expect_kind(s, DIST_STRATEGY_MIRRORED);
  assert_int_equal(dts_num_replicas(s), 2);
  dist_strategy_destroy(s);
}

static void test_central_storage(void** state) {
  const char* compute[] = {"CPU:0", "CPU:1"};
  const char* single[] = {"CPU:2"};
  const char* cpu0[] = {"/device:CPU:0"};
  const char* cpu2[] = {"/device:CPU:2"};
  const char* cpu3[] = {"/device:CPU:3"};
  dist_strategy_t* s = NULL;
  (void)state;
  /* Explicit parameter device. */
  DT_OK(dist_strategy_create_central_storage(compute, 2, "CPU:0", &s));
  expect_kind(s, DIST_STRATEGY_CENTRAL_STORAGE);
  assert_int_equal(dts_num_replicas(s), 2);
  expect_worker(s, 0, "/device:CPU:0");
  expect_worker(s, 1, "/device:CPU:1");
  expect_parameter_devices(s, 1, cpu0);
  dist_strategy_destroy(s);

  s = NULL;
  DT_OK(dist_strategy_create_central_storage(compute, 2, "/device:CPU:3", &s));
  expect_parameter_devices(s, 1, cpu3);
  dist_strategy_destroy(s);

  /* NULL: CPU:0 when computing on several devices... */
  s = NULL;
  DT_OK(dist_strategy_create_central_storage(compute, 2, NULL, &s));
  expect_parameter_devices(s, 1, cpu0);
  dist_strategy_destroy(s);

  /* ... otherwise the single compute device. */
  s = NULL;
  DT_OK(dist_strategy_create_central_storage(single, 1, NULL, &s));
  assert_int_equal(dts_num_replicas(s), 1);
  expect_worker(s, 0, "/device:CPU:2");
  expect_parameter_devices(s, 1, cpu2);
  dist_strategy_destroy(s);
}

static void test_default_strategy(void** state) {
  const char* cpu0[] = {"/device:CPU:0"};
  dist_strategy_t* a = NULL;
  dist_strategy_t* b = NULL;
  (void)state;
  DT_OK(dist_strategy_get_default(&a));
  DT_OK(dist_strategy_get_default(&b));
  assert_non_null(a);
  assert_non_null(b);
  expect_kind(a, DIST_STRATEGY_DEFAULT);
  assert_int_equal(dts_num_replicas(a), 1);
  expect_worker(a, 0, "/device:CPU:0");
  expect_parameter_devices(a, 1, cpu0);
  /* Releasing one reference leaves the other usable. */
  dist_strategy_destroy(a);
  expect_kind(b, DIST_STRATEGY_DEFAULT);
  dist_strategy_destroy(b);
  dist_strategy_destroy(NULL);
}

static void test_creation_rejects_null(void** state) {
  const char* devices[] = {"CPU:0", "CPU:1"};
  const char* with_null[] = {"CPU:0", NULL};
  dist_strategy_t* s = (dist_strategy_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_strategy_create_one_device(NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_one_device", "device");
  assert_null(s);
  DT_ERR(dist_strategy_create_one_device("CPU:0", NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_one_device", "out");

  s = (dist_strategy_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_create_mirrored(NULL, 2, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_mirrored", "devices");
  assert_null(s);
  s = (dist_strategy_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_create_mirrored(with_null, 2, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_mirrored", "devices[1]");
  assert_null(s);
  s = (dist_strategy_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_create_mirrored(devices, -1, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_mirrored", "num_devices");
  assert_null(s);
  DT_ERR(dist_strategy_create_mirrored(devices, 2, NULL, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_mirrored", "out");

  s = (dist_strategy_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_create_central_storage(NULL, 2, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_central_storage", "compute_devices");
  assert_null(s);
  s = (dist_strategy_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_create_central_storage(with_null, 2, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_central_storage", "compute_devices[1]");
  assert_null(s);
  DT_ERR(dist_strategy_create_central_storage(devices, 2, NULL, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_central_storage", "out");

  DT_ERR(dist_strategy_get_default(NULL), DIST_INVALID_ARGUMENT, "dist_strategy_get_default",
         "out");
}

static void test_creation_rejects_bad_devices(void** state) {
  const char* duplicate[] = {"CPU:0", "CPU:1", "CPU:0"};
  const char* duplicate_spelling[] = {"CPU:1", "/device:CPU:1"};
  const char* malformed[] = {"CPU:0", "not a device"};
  const char* unknown_type[] = {"TPU:0"};
  const char* missing[] = {"CPU:0", "CPU:77"};
  const char* good[] = {"CPU:0", "CPU:1"};
  dist_strategy_t* s = (dist_strategy_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_strategy_create_mirrored(duplicate, 3, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_mirrored", "devices");
  assert_null(s);
  DT_ERR(dist_strategy_create_mirrored(duplicate_spelling, 2, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_mirrored", "devices");
  DT_ERR(dist_strategy_create_central_storage(duplicate, 3, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_central_storage", NULL);
  DT_ERR(dist_strategy_create_mirrored(malformed, 2, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_mirrored", "not a device");
  DT_ERR(dist_strategy_create_mirrored(unknown_type, 1, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_mirrored", NULL);
  DT_ERR(dist_strategy_create_one_device("not a device", &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_one_device", NULL);
  assert_null(s);
  DT_ERR2(dist_strategy_create_mirrored(missing, 2, NULL, &s), DIST_INVALID_ARGUMENT,
          DIST_NOT_FOUND, "dist_strategy_create_mirrored", "CPU:77");
  DT_ERR2(dist_strategy_create_one_device("CPU:77", &s), DIST_INVALID_ARGUMENT, DIST_NOT_FOUND,
          "dist_strategy_create_one_device", "CPU:77");
  DT_ERR(dist_strategy_create_central_storage(good, 2, "not a device", &s),
         DIST_INVALID_ARGUMENT, "dist_strategy_create_central_storage", "parameter_device");
  DT_ERR2(dist_strategy_create_central_storage(good, 2, "CPU:77", &s), DIST_INVALID_ARGUMENT,
          DIST_NOT_FOUND, "dist_strategy_create_central_storage", "parameter_device");
  assert_null(s);
}

static void test_creation_rejects_gpus_without_gpu(void** state) {
  const char* gpu[] = {"GPU:0"};
  const char* mixed[] = {"CPU:0", "GPU:0"};
  const char* cpus[] = {"CPU:0", "CPU:1"};
  dist_strategy_t* s = (dist_strategy_t*)DT_SENTINEL_PTR;
  (void)state;
  if (dt_have_gpu()) {
    print_message("GPUs present: the no-GPU rejection is not testable here\n");
    skip();
  }
  DT_ERR(dist_strategy_create_one_device("GPU:0", &s), DIST_FAILED_PRECONDITION,
         "dist_strategy_create_one_device", NULL);
  assert_null(s);
  DT_ERR(dist_strategy_create_mirrored(gpu, 1, NULL, &s), DIST_FAILED_PRECONDITION,
         "dist_strategy_create_mirrored", NULL);
  DT_ERR(dist_strategy_create_mirrored(mixed, 2, NULL, &s), DIST_FAILED_PRECONDITION,
         "dist_strategy_create_mirrored", NULL);
  DT_ERR(dist_strategy_create_central_storage(gpu, 1, NULL, &s), DIST_FAILED_PRECONDITION,
         "dist_strategy_create_central_storage", NULL);
  DT_ERR(dist_strategy_create_central_storage(cpus, 2, "GPU:0", &s), DIST_FAILED_PRECONDITION,
         "dist_strategy_create_central_storage", "parameter_device");
  assert_null(s);
}

static void test_properties_reject_misuse(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_strategy_kind_t kind = 77;
  int32_t count = 77;
  const char* device = DT_SENTINEL_STR;
  (void)state;
  DT_ERR(dist_strategy_kind(NULL, &kind), DIST_INVALID_ARGUMENT, "dist_strategy_kind",
         "strategy");
  assert_int_equal(kind, 0);
  DT_ERR(dist_strategy_kind(s, NULL), DIST_INVALID_ARGUMENT, "dist_strategy_kind", "out_kind");
  DT_ERR(dist_strategy_num_replicas_in_sync(NULL, &count), DIST_INVALID_ARGUMENT,
         "dist_strategy_num_replicas_in_sync", "strategy");
  assert_int_equal(count, 0);
  DT_ERR(dist_strategy_num_replicas_in_sync(s, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_num_replicas_in_sync", "out_count");

  DT_ERR(dist_strategy_worker_device(NULL, 0, &device), DIST_INVALID_ARGUMENT,
         "dist_strategy_worker_device", "strategy");
  assert_null(device);
  DT_ERR(dist_strategy_worker_device(s, 0, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_worker_device", "out_borrowed_device");
  device = DT_SENTINEL_STR;
  DT_ERR2(dist_strategy_worker_device(s, 2, &device), DIST_OUT_OF_RANGE, DIST_INVALID_ARGUMENT,
          "dist_strategy_worker_device", "index");
  assert_null(device);
  DT_ERR2(dist_strategy_worker_device(s, -1, &device), DIST_OUT_OF_RANGE, DIST_INVALID_ARGUMENT,
          "dist_strategy_worker_device", "index");

  count = 77;
  DT_ERR(dist_strategy_parameter_device_count(NULL, &count), DIST_INVALID_ARGUMENT,
         "dist_strategy_parameter_device_count", "strategy");
  assert_int_equal(count, 0);
  DT_ERR(dist_strategy_parameter_device_count(s, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_parameter_device_count", "out_count");
  DT_ERR(dist_strategy_parameter_device(NULL, 0, &device), DIST_INVALID_ARGUMENT,
         "dist_strategy_parameter_device", "strategy");
  DT_ERR(dist_strategy_parameter_device(s, 0, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_parameter_device", "out_borrowed_device");
  device = DT_SENTINEL_STR;
  DT_ERR2(dist_strategy_parameter_device(s, 2, &device), DIST_OUT_OF_RANGE,
          DIST_INVALID_ARGUMENT, "dist_strategy_parameter_device", "index");
  assert_null(device);
  DT_ERR2(dist_strategy_parameter_device(s, -3, &device), DIST_OUT_OF_RANGE,
          DIST_INVALID_ARGUMENT, "dist_strategy_parameter_device", "index");
  dist_strategy_destroy(s);
}

static void test_set_timeout(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  (void)state;
  DT_OK(dist_strategy_set_timeout_ms(s, 1));
  DT_OK(dist_strategy_set_timeout_ms(s, 123456));
  DT_OK(dist_strategy_set_timeout_ms(s, DTS_TIMEOUT_MS));
  DT_ERR(dist_strategy_set_timeout_ms(s, 0), DIST_INVALID_ARGUMENT, "dist_strategy_set_timeout_ms",
         "timeout_ms");
  DT_ERR(dist_strategy_set_timeout_ms(s, -5), DIST_INVALID_ARGUMENT, "dist_strategy_set_timeout_ms",
         "timeout_ms");
  DT_ERR(dist_strategy_set_timeout_ms(NULL, 10), DIST_INVALID_ARGUMENT, "dist_strategy_set_timeout_ms",
         "strategy");
  dist_strategy_destroy(s);
}

/* ---- Scopes and the current strategy ---- */

/* The state seen on this thread. */
typedef struct {
  int32_t has;
  int32_t in_cross;
  dist_context_t* replica_context;
  dist_strategy_kind_t kind;
  int32_t num_replicas;
  const char* worker0;
} seen_state;

static void observe(seen_state* seen) {
  dist_strategy_t* current = NULL;
  seen->has = -1;
  seen->in_cross = -1;
  seen->replica_context = (dist_context_t*)DT_SENTINEL_PTR;
  DT_OK(dist_has_strategy(&seen->has));
  DT_OK(dist_in_cross_replica_context(&seen->in_cross));
  seen->replica_context = dist_current_replica_context();
  DT_OK(dist_get_strategy(&current));
  assert_non_null(current);
  DT_OK(dist_strategy_kind(current, &seen->kind));
  DT_OK(dist_strategy_num_replicas_in_sync(current, &seen->num_replicas));
  DT_OK(dist_strategy_worker_device(current, 0, &seen->worker0));
  dist_strategy_destroy(current); /* worker0 stays valid: the strategy object lives on */
}

static void expect_default_state(void) {
  seen_state seen;
  observe(&seen);
  assert_int_equal(seen.has, 0);
  assert_int_equal(seen.kind, DIST_STRATEGY_DEFAULT);
  assert_int_equal(seen.num_replicas, 1);
  /* No scope: replica context of the default strategy. */
  assert_int_equal(seen.in_cross, 0);
  assert_non_null(seen.replica_context);
}

static void expect_in_scope_of(dist_strategy_kind_t kind, int32_t n, const char* worker0) {
  seen_state seen;
  observe(&seen);
  assert_int_equal(seen.has, 1);
  assert_int_equal(seen.kind, kind);
  assert_int_equal(seen.num_replicas, n);
  assert_string_equal(seen.worker0, worker0);
  assert_int_equal(seen.in_cross, 1);
  assert_null(seen.replica_context);
}

static void test_scope_enter_exit(void** state) {
  const char* devices[] = {"CPU:2", "CPU:3", "CPU:1"};
  dist_strategy_t* s = NULL;
  dist_value_t* init = dts_f32_scalar(1.0f, NULL);
  dist_value_t* v = NULL;
  dist_strategy_t* current = NULL;
  int32_t created = -1;
  (void)state;
  DT_OK(dist_strategy_create_mirrored(devices, 3, NULL, &s));
  expect_default_state();
  DT_OK(dist_strategy_scope_enter(s));
  expect_in_scope_of(DIST_STRATEGY_MIRRORED, 3, "/device:CPU:2");
  /* The current strategy is `s` itself: a variable made now belongs to it. */
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &v));
  DT_OK(dist_get_strategy(&current));
  DT_OK(dist_strategy_variable_created_in_scope(current, v, &created));
  assert_int_equal(created, 1);
  DT_OK(dist_strategy_variable_created_in_scope(s, v, &created));
  assert_int_equal(created, 1);
  dist_strategy_destroy(current);

  /* Re-entering the current strategy's scope is allowed; each enter needs one exit. */
  DT_OK(dist_strategy_scope_enter(s));
  expect_in_scope_of(DIST_STRATEGY_MIRRORED, 3, "/device:CPU:2");
  DT_OK(dist_strategy_scope_exit(s));
  expect_in_scope_of(DIST_STRATEGY_MIRRORED, 3, "/device:CPU:2");
  DT_OK(dist_strategy_scope_exit(s));
  expect_default_state();

  dist_value_destroy(v);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

static void test_scope_misuse(void** state) {
  dist_strategy_t* a = dts_mirrored(2);
  dist_strategy_t* b = dts_one_device("CPU:3");
  dist_strategy_t* c = dts_mirrored(2); /* same devices as a, a different strategy */
  (void)state;
  DT_ERR(dist_strategy_scope_enter(NULL), DIST_INVALID_ARGUMENT, "dist_strategy_scope_enter",
         "strategy");
  DT_ERR(dist_strategy_scope_exit(NULL), DIST_INVALID_ARGUMENT, "dist_strategy_scope_exit",
         "strategy");
  /* Exit without any scope. */
  DT_ERR(dist_strategy_scope_exit(a), DIST_FAILED_PRECONDITION, "dist_strategy_scope_exit",
         NULL);
  expect_default_state();

  DT_OK(dist_strategy_scope_enter(a));
  /* A different strategy inside a's scope. */
  DT_ERR(dist_strategy_scope_enter(b), DIST_FAILED_PRECONDITION, "dist_strategy_scope_enter",
         NULL);
  DT_ERR(dist_strategy_scope_enter(c), DIST_FAILED_PRECONDITION, "dist_strategy_scope_enter",
         NULL);
  /* The failed enters changed nothing. */
  expect_in_scope_of(DIST_STRATEGY_MIRRORED, 2, "/device:CPU:0");
  /* Exiting a scope that is not the innermost. */
  DT_ERR(dist_strategy_scope_exit(b), DIST_FAILED_PRECONDITION, "dist_strategy_scope_exit",
         NULL);
  DT_ERR(dist_strategy_scope_exit(c), DIST_FAILED_PRECONDITION, "dist_strategy_scope_exit",
         NULL);
  expect_in_scope_of(DIST_STRATEGY_MIRRORED, 2, "/device:CPU:0");
  DT_OK(dist_strategy_scope_exit(a));
  expect_default_state();
  DT_ERR(dist_strategy_scope_exit(a), DIST_FAILED_PRECONDITION, "dist_strategy_scope_exit",
         NULL);

  /* The other order: b outside, a inside is refused too. */
  DT_OK(dist_strategy_scope_enter(b));
  expect_in_scope_of(DIST_STRATEGY_ONE_DEVICE, 1, "/device:CPU:3");
  DT_ERR(dist_strategy_scope_enter(a), DIST_FAILED_PRECONDITION, "dist_strategy_scope_enter",
         NULL);
  DT_OK(dist_strategy_scope_exit(b));
  expect_default_state();

  dist_strategy_destroy(a);
  dist_strategy_destroy(b);
  dist_strategy_destroy(c);
}

static void test_current_strategy_rejects_null(void** state) {
  (void)state;
  DT_ERR(dist_get_strategy(NULL), DIST_INVALID_ARGUMENT, "dist_get_strategy", "out");
  DT_ERR(dist_has_strategy(NULL), DIST_INVALID_ARGUMENT, "dist_has_strategy", "out_has");
  DT_ERR(dist_in_cross_replica_context(NULL), DIST_INVALID_ARGUMENT,
         "dist_in_cross_replica_context", "out_in_cross");
  DT_ERR(dist_get_loss_reduction(NULL), DIST_INVALID_ARGUMENT, "dist_get_loss_reduction",
         "out_op");
}

static void test_experimental_set_strategy(void** state) {
  dist_strategy_t* a = dts_mirrored(3);
  dist_strategy_t* b = dts_one_device("CPU:1");
  (void)state;
  DT_OK(dist_experimental_set_strategy(a));
  expect_in_scope_of(DIST_STRATEGY_MIRRORED, 3, "/device:CPU:0");
  /* Entering the set strategy's scope is fine, another's is not. */
  DT_OK(dist_strategy_scope_enter(a));
  expect_in_scope_of(DIST_STRATEGY_MIRRORED, 3, "/device:CPU:0");
  /* Fails inside a scope. */
  DT_ERR(dist_experimental_set_strategy(b), DIST_FAILED_PRECONDITION,
         "dist_experimental_set_strategy", NULL);
  DT_ERR(dist_experimental_set_strategy(NULL), DIST_FAILED_PRECONDITION,
         "dist_experimental_set_strategy", NULL);
  DT_OK(dist_strategy_scope_exit(a));
  expect_in_scope_of(DIST_STRATEGY_MIRRORED, 3, "/device:CPU:0");
  DT_ERR(dist_strategy_scope_enter(b), DIST_FAILED_PRECONDITION, "dist_strategy_scope_enter",
         NULL);
  /* Variables made now belong to the set strategy and are distributed by it. */
  {
    dist_value_t* init = dts_f32_scalar(1.0f, NULL);
    dist_value_t* v = NULL;
    int32_t created = -1;
    DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &v));
    assert_int_equal(dts_kind(v), DIST_VALUE_MIRRORED_VARIABLE);
    assert_int_equal(dts_num_components(v), 3);
    DT_OK(dist_strategy_variable_created_in_scope(a, v, &created));
    assert_int_equal(created, 1);
    dist_value_destroy(v);
    dist_value_destroy(init);
  }
  /* Replacing the set strategy outside any scope is allowed. */
  DT_OK(dist_experimental_set_strategy(b));
  expect_in_scope_of(DIST_STRATEGY_ONE_DEVICE, 1, "/device:CPU:1");
  /* NULL restores the default. */
  DT_OK(dist_experimental_set_strategy(NULL));
  expect_default_state();
  DT_OK(dist_experimental_set_strategy(NULL));
  expect_default_state();
  dist_strategy_destroy(a);
  dist_strategy_destroy(b);
}

static void test_loss_reduction(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_reduce_op_t op = 0;
  (void)state;
  DT_OK(dist_get_loss_reduction(&op));
  assert_int_equal(op, DIST_REDUCE_SUM);
  DT_OK(dist_strategy_scope_enter(s));
  op = 0;
  DT_OK(dist_get_loss_reduction(&op));
  assert_int_equal(op, DIST_REDUCE_SUM);
  DT_OK(dist_strategy_scope_exit(s));
  dist_strategy_destroy(s);
}

/* ---- The current strategy inside replica and merge functions ---- */

typedef struct {
  dts_errors errors;
  dist_strategy_t* other; /* a different strategy, whose scope must not be entered */
  int32_t merge_calls;
} inside_state;

static dist_status_t check_merge_state(dist_strategy_t* strategy, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** out, void* user_data) {
  inside_state* st = (inside_state*)user_data;
  int32_t in_cross = -1, has = -1, n = 0;
  dist_context_t* replica_context = (dist_context_t*)DT_SENTINEL_PTR;
  dist_strategy_t* current = NULL;
  dist_strategy_kind_t kind = 0;
  dist_reduce_op_t op = 0;
  (void)args;
  (void)num_args;
  (void)out;
  st->merge_calls += 1;
  RCALL(&st->errors, 0, dist_in_cross_replica_context(&in_cross));
  RCHECK(&st->errors, 0, in_cross == 1, "in merge_call's fn in_cross_replica is %d", in_cross);
  replica_context = dist_current_replica_context();
  RCHECK(&st->errors, 0, replica_context == NULL, "merge fn has a replica context");
  RCALL(&st->errors, 0, dist_has_strategy(&has));
  RCHECK(&st->errors, 0, has == 1, "merge fn: has_strategy is %d", has);
  RCALL(&st->errors, 0, dist_get_strategy(&current));
  RCALL(&st->errors, 0, dist_strategy_kind(current, &kind));
  RCALL(&st->errors, 0, dist_strategy_num_replicas_in_sync(current, &n));
  dist_strategy_destroy(current);
  RCHECK(&st->errors, 0, kind == DIST_STRATEGY_MIRRORED && n == 2,
         "merge fn: current strategy is kind %d with %d replicas", kind, n);
  RCALL(&st->errors, 0, dist_strategy_kind(strategy, &kind));
  RCHECK(&st->errors, 0, kind == DIST_STRATEGY_MIRRORED, "merge fn strategy kind %d", kind);
  RCALL(&st->errors, 0, dist_get_loss_reduction(&op));
  RCHECK(&st->errors, 0, op == DIST_REDUCE_SUM, "loss reduction %d", op);
  return DIST_OK;
}

static dist_status_t check_replica_state(dist_context_t* context, const dist_value_t* const* args,
                                         int32_t num_args, dist_value_t** results,
                                         int32_t num_results, void* user_data) {
  inside_state* st = (inside_state*)user_data;
  int32_t r = -1, in_cross = -1, has = -1, n = 0, rid = -1;
  dist_context_t* current_context = NULL;
  dist_strategy_t* current = NULL;
  dist_strategy_kind_t kind = 0;
  dist_reduce_op_t op = 0;
  dist_value_t* merged = (dist_value_t*)DT_SENTINEL_PTR;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_in_cross_replica_context(&in_cross));
  RCHECK(&st->errors, r, in_cross == 0, "in a replica function in_cross_replica is %d", in_cross);
  RCALL(&st->errors, r, dist_has_strategy(&has));
  RCHECK(&st->errors, r, has == 1, "has_strategy is %d", has);
  current_context = dist_current_replica_context();
  RCHECK(&st->errors, r, current_context != NULL, "no current replica context");
  RCALL(&st->errors, r, dist_context_replica_id(current_context, &rid));
  RCHECK(&st->errors, r, rid == r, "current replica context has id %d", rid);
  RCALL(&st->errors, r, dist_get_strategy(&current));
  RCALL(&st->errors, r, dist_strategy_kind(current, &kind));
  RCALL(&st->errors, r, dist_strategy_num_replicas_in_sync(current, &n));
  dist_strategy_destroy(current);
  RCHECK(&st->errors, r, kind == DIST_STRATEGY_MIRRORED && n == 2,
         "current strategy is kind %d with %d replicas", kind, n);
  RCALL(&st->errors, r, dist_get_loss_reduction(&op));
  RCHECK(&st->errors, r, op == DIST_REDUCE_SUM, "loss reduction %d", op);
  /* Setting a strategy is not allowed here, nor entering another strategy's scope. */
  RCHECK_ERR(&st->errors, r, dist_experimental_set_strategy(st->other), DIST_FAILED_PRECONDITION,
             "dist_experimental_set_strategy");
  RCHECK_ERR(&st->errors, r, dist_strategy_scope_enter(st->other), DIST_FAILED_PRECONDITION,
             "dist_strategy_scope_enter");
  /* merge_call switches to cross-replica context, and back. */
  RCALL(&st->errors, r, dist_context_merge_call(context, check_merge_state, st, NULL, 0, &merged));
  RCHECK(&st->errors, r, merged == NULL, "merge fn stored nothing but out is not NULL");
  RCALL(&st->errors, r, dist_in_cross_replica_context(&in_cross));
  RCHECK(&st->errors, r, in_cross == 0, "after merge_call in_cross_replica is %d", in_cross);
  return DIST_OK;
}

static void test_state_inside_replica_and_merge_functions(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  inside_state st;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.other = dts_one_device("CPU:2");
  /* Without a scope ... */
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, check_replica_state, &st, NULL, 0, NULL, 0));
  assert_int_equal(st.merge_calls, 1);
  expect_default_state();
  /* ... and inside the scope. */
  DT_OK(dist_strategy_scope_enter(s));
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, check_replica_state, &st, NULL, 0, NULL, 0));
  assert_int_equal(st.merge_calls, 2);
  expect_in_scope_of(DIST_STRATEGY_MIRRORED, 2, "/device:CPU:0");
  DT_OK(dist_strategy_scope_exit(s));
  dist_strategy_destroy(st.other);
  dist_strategy_destroy(s);
}

/* With no scope, dist_current_replica_context gives the default strategy's replica context: one
 * replica on CPU:0 (TF: tf.distribute.get_replica_context() outside any strategy). Its
 * collectives work on the single replica, as in TF, where all_reduce returns the value. */
static void test_default_replica_context(void** state) {
  dist_context_t* context = NULL;
  dist_strategy_t* owner = NULL;
  dist_strategy_kind_t kind = 0;
  int32_t id = -1, n = -1;
  const char* device = NULL;
  dist_value_t* x = NULL;
  dist_value_t* sum = NULL;
  const float values[3] = {1.5f, -2.0f, 4.0f};
  (void)state;
  context = dist_current_replica_context();
  assert_non_null(context);
  DT_OK(dist_context_replica_id(context, &id));
  assert_int_equal(id, 0);
  DT_OK(dist_context_num_replicas_in_sync(context, &n));
  assert_int_equal(n, 1);
  DT_OK(dist_context_device(context, &device));
  assert_string_equal(device, "/device:CPU:0");
  DT_OK(dist_context_strategy(context, &owner));
  DT_OK(dist_strategy_kind(owner, &kind));
  assert_int_equal(kind, DIST_STRATEGY_DEFAULT);
  dist_strategy_destroy(owner);

  x = dts_f32(values, 3, NULL);
  {
    dist_status_t status;
    dt_leave_error();
    status = dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &sum);
    dist_value_destroy(x); /* before asserting, so that a failure leaks nothing */
    if (!dt_check_ok(status, "dist_context_all_reduce(default context, SUM, x, &sum)")) fail();
  }
  dts_expect_f32(sum, values, 3);
  dist_value_destroy(sum);
}

/* ---- Destruction order ---- */

static dist_status_t make_component(int32_t replica_id, int32_t num_replicas, dist_value_t** out,
                                    void* user_data) {
  float v = (float)(replica_id * 10 + num_replicas);
  char device[16];
  (void)user_data;
  dts_cpu_name(replica_id, device, sizeof(device));
  return dist_tensor_create(DIST_FLOAT32, NULL, 0, &v, sizeof(v), device, out);
}

static dist_status_t return_replica_value(dist_context_t* context, const dist_value_t* const* args,
                                          int32_t num_args, dist_value_t** results,
                                          int32_t num_results, void* user_data) {
  int32_t r = 0;
  const char* device = NULL;
  float v;
  (void)args;
  (void)num_args;
  (void)num_results;
  (void)user_data;
  if (dist_context_replica_id(context, &r) != DIST_OK) return DIST_INTERNAL;
  if (dist_context_device(context, &device) != DIST_OK) return DIST_INTERNAL;
  v = 100.0f + (float)r;
  return dist_tensor_create(DIST_FLOAT32, NULL, 0, &v, sizeof(v), device, &results[0]);
}

static void test_destroy_strategy_before_its_values(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_value_t* init = dts_f32_scalar(3.0f, NULL);
  dist_value_t* one = dts_f32_scalar(1.0f, NULL);
  dist_value_t* mirrored_var = NULL;
  dist_value_t* on_read_var = NULL;
  dist_value_t* per_replica = NULL;
  dist_value_t* result = NULL;
  dist_value_t* component = NULL;
  dist_value_t* read = NULL;
  const char* name = NULL;
  const float four = 4.0f, three = 3.0f, two = 2.0f;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "w",
                             &mirrored_var));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_READ, DIST_AGGREGATION_MEAN, NULL,
                             &on_read_var));
  DT_OK(dist_strategy_distribute_values_from_function(s, make_component, NULL, &per_replica));
  DT_OK(dist_strategy_run(s, return_replica_value, NULL, NULL, 0, &result, 1));
  DT_OK(dist_strategy_scope_exit(s));
  dist_strategy_destroy(s);

  /* Every value made with the strategy is still usable. */
  assert_int_equal(dts_kind(mirrored_var), DIST_VALUE_MIRRORED_VARIABLE);
  assert_int_equal(dts_num_components(mirrored_var), 2);
  DT_OK(dist_variable_name(mirrored_var, &name));
  assert_string_equal(name, "w");
  dts_expect_components_f32(mirrored_var, &three, -1);
  DT_OK(dist_variable_assign_add(mirrored_var, one));
  dts_expect_components_f32(mirrored_var, &four, -1);
  DT_OK(dist_variable_read(mirrored_var, &read));
  dts_expect_f32(read, &four, -1);
  dist_value_destroy(read);

  DT_OK(dist_variable_assign_sub(on_read_var, one));
  dts_expect_components_f32(on_read_var, &two, -1);
  dts_expect_variable_f32(on_read_var, &two, -1);

  assert_int_equal(dts_kind(per_replica), DIST_VALUE_PER_REPLICA);
  component = dts_component(per_replica, 1);
  assert_true(dts_scalar_f32(component) == 12.0f);
  dist_value_destroy(component);
  assert_int_equal(dts_kind(result), DIST_VALUE_PER_REPLICA);
  component = dts_component(result, 0);
  assert_true(dts_scalar_f32(component) == 100.0f);
  dist_value_destroy(component);

  /* A component outlives its variable handle, too. */
  component = dts_component(mirrored_var, 1);
  dist_value_destroy(mirrored_var);
  dts_expect_variable_f32(component, &four, -1);
  dist_value_destroy(component);

  dist_value_destroy(on_read_var);
  dist_value_destroy(per_replica);
  dist_value_destroy(result);
  dist_value_destroy(one);
  dist_value_destroy(init);
}

static void test_destroy_strategy_inside_its_scope(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_strategy_t* again = NULL;
  dist_value_t* init = dts_f32_scalar(7.0f, NULL);
  dist_value_t* v = NULL;
  const float seven = 7.0f;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_get_strategy(&again));
  /* The scope keeps the strategy alive after its creating reference is gone. */
  dist_strategy_destroy(s);
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &v));
  assert_int_equal(dts_kind(v), DIST_VALUE_MIRRORED_VARIABLE);
  assert_int_equal(dts_num_components(v), 2);
  DT_OK(dist_strategy_scope_exit(again));
  dist_strategy_destroy(again);
  expect_default_state();
  dts_expect_components_f32(v, &seven, -1);
  dist_value_destroy(v);
  dist_value_destroy(init);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_device),
      cmocka_unit_test(test_mirrored_over_given_devices),
      cmocka_unit_test(test_mirrored_over_every_local_device),
      cmocka_unit_test(test_mirrored_with_cross_device_ops),
      cmocka_unit_test(test_central_storage),
      cmocka_unit_test(test_default_strategy),
      cmocka_unit_test(test_creation_rejects_null),
      cmocka_unit_test(test_creation_rejects_bad_devices),
      cmocka_unit_test(test_creation_rejects_gpus_without_gpu),
      cmocka_unit_test(test_properties_reject_misuse),
      cmocka_unit_test(test_set_timeout),
      cmocka_unit_test(test_scope_enter_exit),
      cmocka_unit_test(test_scope_misuse),
      cmocka_unit_test(test_current_strategy_rejects_null),
      cmocka_unit_test(test_experimental_set_strategy),
      cmocka_unit_test(test_loss_reduction),
      cmocka_unit_test(test_state_inside_replica_and_merge_functions),
      cmocka_unit_test(test_default_replica_context),
      cmocka_unit_test(test_destroy_strategy_before_its_values),
      cmocka_unit_test(test_destroy_strategy_inside_its_scope),
  };
  return cmocka_run_group_tests_name("strategy", tests, setup, NULL);
}
