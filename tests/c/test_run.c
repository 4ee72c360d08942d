/* Tests for dist_strategy_run (strategy.h) and the replica context's identity calls
 * (context.h: dist_context_replica_id, _num_replicas_in_sync, _strategy, _device), plus
 * dist_strategy_distribute_values_from_function and dist_strategy_value_container. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

/* ---- Identity: every replica sees its id, count, device and strategy ---- */

typedef struct {
  dts_errors errors;
  int32_t calls[DTS_MAX_REPLICAS];
  char devices[DTS_MAX_REPLICAS][64];
  int32_t counts[DTS_MAX_REPLICAS];
  dist_strategy_kind_t kinds[DTS_MAX_REPLICAS];
  int32_t strategy_counts[DTS_MAX_REPLICAS];
  int on_caller_thread[DTS_MAX_REPLICAS];
  pthread_t caller;
  int32_t num_args_seen;
} identity_state;

static dist_status_t record_identity(dist_context_t* context, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** results,
                                     int32_t num_results, void* user_data) {
  identity_state* st = (identity_state*)user_data;
  int32_t r = -1, n = -1;
  const char* device = NULL;
  dist_strategy_t* owner = NULL;
  (void)args;
  (void)results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCHECK(&st->errors, 0, r >= 0 && r < DTS_MAX_REPLICAS, "replica id %d", r);
  RCHECK(&st->errors, r, num_results == 0 && num_args == 0, "num_args %d num_results %d",
         num_args, num_results);
  st->calls[r] += 1;
  RCALL(&st->errors, r, dist_context_num_replicas_in_sync(context, &n));
  st->counts[r] = n;
  RCALL(&st->errors, r, dist_context_device(context, &device));
  RCHECK(&st->errors, r, device != NULL, "device is NULL");
  snprintf(st->devices[r], sizeof(st->devices[r]), "%s", device);
  RCALL(&st->errors, r, dist_context_strategy(context, &owner));
  RCALL(&st->errors, r, dist_strategy_kind(owner, &st->kinds[r]));
  RCALL(&st->errors, r, dist_strategy_num_replicas_in_sync(owner, &st->strategy_counts[r]));
  dist_strategy_destroy(owner);
  st->on_caller_thread[r] = pthread_equal(pthread_self(), st->caller) ? 1 : 0;
  return DIST_OK;
}

static void check_identity(dist_strategy_t* s, int32_t n, dist_strategy_kind_t kind) {
  identity_state st;
  int32_t r;
  memset(&st, 0, sizeof(st));
  st.caller = pthread_self();
  DTS_RUN_OK(&st.errors, n, dist_strategy_run(s, record_identity, &st, NULL, 0, NULL, 0));
  for (r = 0; r < n; ++r) {
    char expected[32];
    const char* worker = NULL;
    assert_int_equal(st.calls[r], 1);
    assert_int_equal(st.counts[r], n);
    assert_int_equal(st.kinds[r], kind);
    assert_int_equal(st.strategy_counts[r], n);
    DT_OK(dist_strategy_worker_device(s, r, &worker));
    assert_string_equal(st.devices[r], worker);
    snprintf(expected, sizeof(expected), "/device:CPU:%d", (int)r);
    if (kind == DIST_STRATEGY_MIRRORED) assert_string_equal(st.devices[r], expected);
    /* The calling thread acts as replica 0; the others have their own threads. */
    assert_int_equal(st.on_caller_thread[r], r == 0 ? 1 : 0);
  }
  for (r = n; r < DTS_MAX_REPLICAS; ++r) assert_int_equal(st.calls[r], 0);
}

static void test_run_identity(void** state) {
  const int counts[3] = {1, 2, 4};
  int i;
  dist_strategy_t* s = NULL;
  (void)state;
  for (i = 0; i < 3; ++i) {
    s = dts_mirrored(counts[i]);
    check_identity(s, counts[i], DIST_STRATEGY_MIRRORED);
    /* Runs are repeatable on the same strategy. */
    check_identity(s, counts[i], DIST_STRATEGY_MIRRORED);
    dist_strategy_destroy(s);
  }
  s = dts_one_device("CPU:3");
  check_identity(s, 1, DIST_STRATEGY_ONE_DEVICE);
  dist_strategy_destroy(s);
  s = dts_central_storage(3, NULL);
  check_identity(s, 3, DIST_STRATEGY_CENTRAL_STORAGE);
  dist_strategy_destroy(s);
  DT_OK(dist_strategy_get_default(&s));
  check_identity(s, 1, DIST_STRATEGY_DEFAULT);
  dist_strategy_destroy(s);
}

/* ---- Arguments are unwrapped per replica ---- */

typedef struct {
  dts_errors errors;
  const dist_value_t* tensor_arg;
  int32_t n;
} args_state;

static dist_status_t check_args(dist_context_t* context, const dist_value_t* const* args,
                                int32_t num_args, dist_value_t** results, int32_t num_results,
                                void* user_data) {
  args_state* st = (args_state*)user_data;
  int32_t r = -1;
  dist_value_kind_t kind = 0;
  float got[4];
  const char* device = NULL;
  const char* my_device = NULL;
  const char* name = NULL;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_context_device(context, &my_device));
  RCHECK(&st->errors, r, num_args == 4, "num_args %d", num_args);
  /* args[0], PerReplica: this replica's component {10r+1, 10r+2}. */
  RCALL(&st->errors, r, dist_value_kind(args[0], &kind));
  RCHECK(&st->errors, r, kind == DIST_VALUE_TENSOR, "args[0] kind %d", kind);
  RCHECK(&st->errors, r, dts_get_f32(args[0], got, 4) == 2, "args[0] is not float32[2]");
  RCHECK(&st->errors, r, got[0] == 10.0f * (float)r + 1.0f && got[1] == 10.0f * (float)r + 2.0f,
         "args[0] holds {%g, %g}", (double)got[0], (double)got[1]);
  RCALL(&st->errors, r, dist_tensor_device(args[0], &device));
  RCHECK(&st->errors, r, strcmp(device, my_device) == 0, "args[0] on %s", device);
  /* args[1], Mirrored: this replica's component, on this replica's device. */
  RCALL(&st->errors, r, dist_value_kind(args[1], &kind));
  RCHECK(&st->errors, r, kind == DIST_VALUE_TENSOR, "args[1] kind %d", kind);
  RCHECK(&st->errors, r, dts_get_f32(args[1], got, 4) == 1 && got[0] == -5.5f,
         "args[1] is not {-5.5}");
  RCALL(&st->errors, r, dist_tensor_device(args[1], &device));
  RCHECK(&st->errors, r, strcmp(device, my_device) == 0, "args[1] on %s", device);
  /* args[2], a tensor: passed as it is (same buffer for every replica). */
  RCALL(&st->errors, r, dist_value_kind(args[2], &kind));
  RCHECK(&st->errors, r, kind == DIST_VALUE_TENSOR, "args[2] kind %d", kind);
  {
    void* mine = NULL;
    void* original = NULL;
    RCALL(&st->errors, r, dist_tensor_data(args[2], &mine));
    RCALL(&st->errors, r, dist_tensor_data(st->tensor_arg, &original));
    RCHECK(&st->errors, r, mine == original, "the tensor argument was copied");
  }
  /* args[3], a MirroredVariable: passed as it is. */
  RCALL(&st->errors, r, dist_value_kind(args[3], &kind));
  RCHECK(&st->errors, r, kind == DIST_VALUE_MIRRORED_VARIABLE, "args[3] kind %d", kind);
  RCALL(&st->errors, r, dist_variable_name(args[3], &name));
  RCHECK(&st->errors, r, strcmp(name, "arg_var") == 0, "args[3] is variable %s", name);
  return DIST_OK;
}

static void test_run_unwraps_arguments(void** state) {
  const int counts[3] = {1, 2, 4};
  int i;
  (void)state;
  for (i = 0; i < 3; ++i) {
    const int32_t n = counts[i];
    dist_strategy_t* s = dts_mirrored(n);
    float per[DTS_MAX_REPLICAS * 2];
    dist_value_t* mirrored_parts[DTS_MAX_REPLICAS];
    dist_value_t* per_replica = NULL;
    dist_value_t* mirrored = NULL;
    const float scalar_values[3] = {9.0f, 8.0f, 7.0f};
    dist_value_t* tensor = dts_f32(scalar_values, 3, "CPU:1");
    dist_value_t* init = dts_f32_scalar(0.0f, NULL);
    dist_value_t* var = NULL;
    const dist_value_t* args[4];
    args_state st;
    int32_t r;
    for (r = 0; r < n; ++r) {
      char device[16];
      const float v = -5.5f;
      per[2 * r] = 10.0f * (float)r + 1.0f;
      per[2 * r + 1] = 10.0f * (float)r + 2.0f;
      dts_cpu_name(r, device, sizeof(device));
      mirrored_parts[r] = dts_f32(&v, 1, device);
    }
    per_replica = dts_per_replica_f32(per, n, 2);
    DT_OK(dist_value_create_mirrored((const dist_value_t* const*)mirrored_parts, n, &mirrored));
    DT_OK(dist_strategy_scope_enter(s));
    DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "arg_var", &var));
    DT_OK(dist_strategy_scope_exit(s));
    args[0] = per_replica;
    args[1] = mirrored;
    args[2] = tensor;
    args[3] = var;
    memset(&st, 0, sizeof(st));
    st.tensor_arg = tensor;
    st.n = n;
    DTS_RUN_OK(&st.errors, n, dist_strategy_run(s, check_args, &st, args, 4, NULL, 0));
    for (r = 0; r < n; ++r) dist_value_destroy(mirrored_parts[r]);
    dist_value_destroy(per_replica);
    dist_value_destroy(mirrored);
    dist_value_destroy(tensor);
    dist_value_destroy(init);
    dist_value_destroy(var);
    dist_strategy_destroy(s);
  }
}

static dist_status_t count_calls(dist_context_t* context, const dist_value_t* const* args,
                                 int32_t num_args, dist_value_t** results, int32_t num_results,
                                 void* user_data) {
  (void)context;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  /* Only reached if run did not reject its arguments; counted on one replica at a time is
   * not guaranteed, but any call at all is a failure of the test. */
  *(volatile int*)user_data = 1;
  return DIST_OK;
}

static void test_run_rejects_component_count_mismatch(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float three[3] = {1.0f, 2.0f, 3.0f};
  dist_value_t* per_replica = dts_per_replica_f32(three, 3, -1);
  dist_value_t* mirrored = NULL;
  dist_value_t* parts[3];
  const dist_value_t* args[2];
  int called = 0;
  dist_value_t* results[2];
  int i;
  (void)state;
  for (i = 0; i < 3; ++i) parts[i] = dts_f32_scalar(1.0f, "CPU:0");
  DT_OK(dist_value_create_mirrored((const dist_value_t* const*)parts, 3, &mirrored));
  args[0] = per_replica;
  results[0] = results[1] = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_run(s, count_calls, &called, args, 1, results, 2), DIST_INVALID_ARGUMENT,
         "dist_strategy_run", "has 3 components but the strategy has 2 replicas");
  assert_null(results[0]);
  assert_null(results[1]);
  args[0] = dts_per_replica_f32(three, 2, -1); /* a good one first */
  args[1] = mirrored;
  DT_ERR(dist_strategy_run(s, count_calls, &called, args, 2, NULL, 0), DIST_INVALID_ARGUMENT,
         "dist_strategy_run", "has 3 components but the strategy has 2 replicas");
  assert_int_equal(called, 0);
  dist_value_destroy((dist_value_t*)args[0]);
  for (i = 0; i < 3; ++i) dist_value_destroy(parts[i]);
  dist_value_destroy(mirrored);
  dist_value_destroy(per_replica);
  dist_strategy_destroy(s);
}

static dist_status_t do_nothing(dist_context_t* context, const dist_value_t* const* args,
                                int32_t num_args, dist_value_t** results, int32_t num_results,
                                void* user_data) {
  (void)context;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  (void)user_data;
  return DIST_OK;
}

static void test_run_rejects_misuse(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_value_t* results[2];
  const dist_value_t* null_args[2] = {NULL, NULL};
  dist_value_t* t = dts_f32_scalar(1.0f, NULL);
  const dist_value_t* one_null[2];
  (void)state;
  one_null[0] = t;
  one_null[1] = NULL;
  results[0] = results[1] = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_run(NULL, do_nothing, NULL, NULL, 0, results, 2), DIST_INVALID_ARGUMENT,
         "dist_strategy_run", "strategy");
  assert_null(results[0]);
  assert_null(results[1]);
  DT_ERR(dist_strategy_run(s, NULL, NULL, NULL, 0, NULL, 0), DIST_INVALID_ARGUMENT,
         "dist_strategy_run", "fn");
  DT_ERR(dist_strategy_run(s, do_nothing, NULL, NULL, 0, NULL, 2), DIST_INVALID_ARGUMENT,
         "dist_strategy_run", "results");
  DT_ERR(dist_strategy_run(s, do_nothing, NULL, NULL, 0, results, -1), DIST_INVALID_ARGUMENT,
         "dist_strategy_run", "num_results");
  DT_ERR(dist_strategy_run(s, do_nothing, NULL, NULL, 1, NULL, 0), DIST_INVALID_ARGUMENT,
         "dist_strategy_run", "args");
  DT_ERR(dist_strategy_run(s, do_nothing, NULL, null_args, -1, NULL, 0), DIST_INVALID_ARGUMENT,
         "dist_strategy_run", "num_args");
  DT_ERR(dist_strategy_run(s, do_nothing, NULL, one_null, 2, NULL, 0), DIST_INVALID_ARGUMENT,
         "dist_strategy_run", "args[1]");
  /* Still usable. */
  DT_OK(dist_strategy_run(s, do_nothing, NULL, NULL, 0, NULL, 0));
  dist_value_destroy(t);
  dist_strategy_destroy(s);
}

/* ---- Results ---- */

typedef struct {
  dts_errors errors;
  const dist_value_t* var;
} results_state;

/* Slot 0: a tensor per replica (1.5 r on the replica's device); slot 1: nothing; slot 2:
 * the same variable from every replica; slot 3: the tensor argument, unchanged. */
static dist_status_t produce_results(dist_context_t* context, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** results,
                                     int32_t num_results, void* user_data) {
  results_state* st = (results_state*)user_data;
  int32_t r = -1, i;
  const char* device = NULL;
  dist_strategy_t* owner = NULL;
  float v;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCHECK(&st->errors, r, num_results == 4 && num_args == 1, "num_results %d", num_results);
  for (i = 0; i < num_results; ++i) {
    RCHECK(&st->errors, r, results[i] == NULL, "results[%d] is not pre-set to NULL", i);
  }
  RCALL(&st->errors, r, dist_context_device(context, &device));
  v = 1.5f * (float)r;
  RCALL(&st->errors, r,
        dist_tensor_create(DIST_FLOAT32, NULL, 0, &v, sizeof(v), device, &results[0]));
  RCALL(&st->errors, r, dist_context_strategy(context, &owner));
  RCALL(&st->errors, r, dist_strategy_value_container(owner, st->var, &results[2]));
  RCALL(&st->errors, r, dist_strategy_value_container(owner, args[0], &results[3]));
  dist_strategy_destroy(owner);
  return DIST_OK;
}

static void test_run_merges_results(void** state) {
  const int counts[3] = {1, 2, 4};
  int i;
  (void)state;
  for (i = 0; i < 3; ++i) {
    const int32_t n = counts[i];
    dist_strategy_t* s = dts_mirrored(n);
    dist_value_t* init = dts_f32_scalar(2.0f, NULL);
    dist_value_t* var = NULL;
    dist_value_t* tensor = dts_f32_scalar(-1.0f, "CPU:0");
    dist_value_t* results[4];
    const dist_value_t* args[1];
    results_state st;
    const char* name = NULL;
    int32_t r;
    DT_OK(dist_strategy_scope_enter(s));
    DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "result_var",
                               &var));
    DT_OK(dist_strategy_scope_exit(s));
    memset(&st, 0, sizeof(st));
    st.var = var;
    args[0] = tensor;
    DTS_RUN_OK(&st.errors, n, dist_strategy_run(s, produce_results, &st, args, 1, results, 4));
    if (n == 1) {
      /* One replica's value as it is. */
      assert_int_equal(dts_kind(results[0]), DIST_VALUE_TENSOR);
      assert_true(dts_scalar_f32(results[0]) == 0.0f);
    } else {
      assert_int_equal(dts_kind(results[0]), DIST_VALUE_PER_REPLICA);
      assert_int_equal(dts_num_components(results[0]), n);
      for (r = 0; r < n; ++r) {
        dist_value_t* c = dts_component(results[0], r);
        char expected[32];
        assert_true(dts_scalar_f32(c) == 1.5f * (float)r);
        snprintf(expected, sizeof(expected), "/device:CPU:%d", (int)r);
        assert_string_equal(dts_device(c), expected);
        dist_value_destroy(c);
      }
    }
    assert_null(results[1]);
    /* The same variable from every replica: that variable. */
    assert_int_equal(dts_kind(results[2]), DIST_VALUE_MIRRORED_VARIABLE);
    DT_OK(dist_variable_name(results[2], &name));
    assert_string_equal(name, "result_var");
    /* The same tensor from every replica: a PerReplica value of it (one replica: itself). */
    if (n == 1) {
      assert_int_equal(dts_kind(results[3]), DIST_VALUE_TENSOR);
    } else {
      assert_int_equal(dts_kind(results[3]), DIST_VALUE_PER_REPLICA);
      assert_int_equal(dts_num_components(results[3]), n);
    }
    for (r = 0; r < 4; ++r) dist_value_destroy(results[r]);
    dist_value_destroy(var);
    dist_value_destroy(init);
    dist_value_destroy(tensor);
    dist_strategy_destroy(s);
  }
}

/* Replica 0 stores a result, the others do not. */
static dist_status_t uneven_results(dist_context_t* context, const dist_value_t* const* args,
                                    int32_t num_args, dist_value_t** results, int32_t num_results,
                                    void* user_data) {
  int32_t r = -1;
  float v = 1.0f;
  (void)args;
  (void)num_args;
  (void)num_results;
  (void)user_data;
  if (dist_context_replica_id(context, &r) != DIST_OK) return DIST_INTERNAL;
  if (r == 0) {
    return dist_tensor_create(DIST_FLOAT32, NULL, 0, &v, sizeof(v), NULL, &results[1]);
  }
  return DIST_OK;
}

static void test_run_rejects_uneven_results(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_value_t* results[2];
  dist_status_t status;
  (void)state;
  results[0] = results[1] = (dist_value_t*)DT_SENTINEL_PTR;
  status = dist_strategy_run(s, uneven_results, NULL, NULL, 0, results, 2);
  assert_int_not_equal(status, DIST_OK);
  assert_non_null(strstr(dist_last_error_message(), "dist_strategy_run"));
  assert_null(results[0]);
  assert_null(results[1]);
  /* Still usable. */
  DT_OK(dist_strategy_run(s, do_nothing, NULL, NULL, 0, results, 2));
  assert_null(results[0]);
  assert_null(results[1]);
  dist_strategy_destroy(s);
}

/* ---- Context: run must be called in cross-replica context ---- */

typedef struct {
  dts_errors errors;
  dist_strategy_t* strategy;
  dist_strategy_t* other;
} nested_state;

static dist_status_t run_inside(dist_context_t* context, const dist_value_t* const* args,
                                int32_t num_args, dist_value_t** results, int32_t num_results,
                                void* user_data) {
  nested_state* st = (nested_state*)user_data;
  int32_t r = -1;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCHECK_ERR(&st->errors, r, dist_strategy_run(st->strategy, do_nothing, NULL, NULL, 0, NULL, 0),
             DIST_FAILED_PRECONDITION, "cross-replica");
  RCHECK_ERR(&st->errors, r, dist_strategy_run(st->other, do_nothing, NULL, NULL, 0, NULL, 0),
             DIST_FAILED_PRECONDITION, "dist_strategy_run");
  return DIST_OK;
}

static void test_run_from_replica_context(void** state) {
  nested_state st;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.strategy = dts_mirrored(2);
  st.other = dts_mirrored(3);
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(st.strategy, run_inside, &st, NULL, 0, NULL, 0));
  dist_strategy_destroy(st.strategy);
  dist_strategy_destroy(st.other);
}

/* ---- A failing replica ---- */

typedef struct {
  dts_errors errors;
  int32_t failing;           /* the replica that fails */
  int32_t silent;            /* 1: fail without leaving a message */
  dist_status_t seen[DTS_MAX_REPLICAS];
  char failing_message[512];
} failure_state;

static dist_status_t fail_one_replica(dist_context_t* context, const dist_value_t* const* args,
                                      int32_t num_args, dist_value_t** results,
                                      int32_t num_results, void* user_data) {
  failure_state* st = (failure_state*)user_data;
  int32_t r = -1;
  const char* device = NULL;
  float v = 1.0f;
  dist_value_t* x = NULL;
  dist_value_t* sum = NULL;
  (void)args;
  (void)num_args;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_context_device(context, &device));
  /* Every replica stores a result first: it must not leak when the run fails. */
  RCALL(&st->errors, r,
        dist_tensor_create(DIST_FLOAT32, NULL, 0, &v, sizeof(v), device, &results[0]));
  if (r == st->failing) {
    dist_device_t* parsed = NULL;
    dist_status_t status;
    if (st->silent) return DIST_UNAVAILABLE;
    status = dist_device_parse("replica-failure-marker", &parsed);
    snprintf(st->failing_message, sizeof(st->failing_message), "%s", dist_last_error_message());
    return status;
  }
  /* The others wait in a collective that the failing replica never joins. */
  RCALL(&st->errors, r,
        dist_tensor_create(DIST_FLOAT32, NULL, 0, &v, sizeof(v), device, &x));
  st->seen[r] = dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &sum);
  dist_value_destroy(x);
  dist_value_destroy(sum);
  return st->seen[r];
}

static dist_status_t sum_of_ids(dist_context_t* context, const dist_value_t* const* args,
                                int32_t num_args, dist_value_t** results, int32_t num_results,
                                void* user_data) {
  dts_errors* errors = (dts_errors*)user_data;
  int32_t r = -1;
  float v;
  dist_value_t* x = NULL;
  (void)args;
  (void)num_args;
  (void)num_results;
  RCALL(errors, 0, dist_context_replica_id(context, &r));
  v = (float)r;
  RCALL(errors, r, dist_tensor_create(DIST_FLOAT32, NULL, 0, &v, sizeof(v), NULL, &x));
  RCALL(errors, r, dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &results[0]));
  dist_value_destroy(x);
  return DIST_OK;
}

static void expect_sum_of_ids(dist_strategy_t* s, int32_t n) {
  dts_errors errors;
  dist_value_t* result = NULL;
  int32_t r;
  dts_errors_clear(&errors);
  DTS_RUN_OK(&errors, n, dist_strategy_run(s, sum_of_ids, &errors, NULL, 0, &result, 1));
  for (r = 0; r < n; ++r) {
    dist_value_t* c = dts_component(result, r);
    assert_true(dts_scalar_f32(c) == (float)(n * (n - 1) / 2));
    dist_value_destroy(c);
  }
  dist_value_destroy(result);
}

static void test_run_replica_error(void** state) {
  const int32_t n = 4;
  dist_strategy_t* s = dts_mirrored(n);
  failure_state st;
  dist_value_t* results[1];
  dist_status_t status;
  int32_t failing, r;
  (void)state;
  for (failing = 0; failing < n; failing += 3) {
    memset(&st, 0, sizeof(st));
    st.failing = failing;
    results[0] = (dist_value_t*)DT_SENTINEL_PTR;
    status = dist_strategy_run(s, fail_one_replica, &st, NULL, 0, results, 1);
    dts_check_errors(&st.errors, n);
    /* run returns the failing replica's status and message ... */
    assert_int_equal(status, DIST_INVALID_ARGUMENT);
    assert_non_null(strstr(dist_last_error_message(), "dist_strategy_run"));
    assert_true(st.failing_message[0] != '\0');
    if (strstr(dist_last_error_message(), st.failing_message) == NULL) {
      fail_msg("run's message \"%s\" does not contain the replica's \"%s\"",
               dist_last_error_message(), st.failing_message);
    }
    assert_null(results[0]);
    /* ... and the replicas waiting in the collective were released with ABORTED. */
    for (r = 0; r < n; ++r) {
      if (r == failing) continue;
      if (st.seen[r] != DIST_ABORTED) {
        fail_msg("replica %d's all_reduce returned %s, expected ABORTED", (int)r,
                 dist_status_name(st.seen[r]));
      }
    }
    /* The strategy works for the next run. */
    expect_sum_of_ids(s, n);
  }

  /* A replica that fails without a message: the message names the replica. */
  memset(&st, 0, sizeof(st));
  st.failing = 2;
  st.silent = 1;
  status = dist_strategy_run(s, fail_one_replica, &st, NULL, 0, results, 1);
  dts_check_errors(&st.errors, n);
  assert_int_equal(status, DIST_UNAVAILABLE);
  assert_non_null(strstr(dist_last_error_message(), "dist_strategy_run"));
  assert_non_null(strstr(dist_last_error_message(), "replica 2"));
  for (r = 0; r < n; ++r) {
    if (r != 2) assert_int_equal(st.seen[r], DIST_ABORTED);
  }
  expect_sum_of_ids(s, n);
  dist_strategy_destroy(s);
}

/* One run per strategy at a time; concurrent callers wait their turn and all get the
 * right results. */
typedef struct {
  dist_strategy_t* strategy;
  int32_t n;
  int failures;
  char failure[256];
} concurrent_runs_state;

static void* run_many(void* arg) {
  concurrent_runs_state* st = (concurrent_runs_state*)arg;
  int i;
  for (i = 0; i < 25; ++i) {
    dts_errors errors;
    dist_value_t* result = NULL;
    dist_status_t status;
    int32_t r;
    dts_errors_clear(&errors);
    status = dist_strategy_run(st->strategy, sum_of_ids, &errors, NULL, 0, &result, 1);
    if (status != DIST_OK) {
      st->failures += 1;
      snprintf(st->failure, sizeof(st->failure), "run: %s", dist_last_error_message());
      return NULL;
    }
    for (r = 0; r < st->n; ++r) {
      dist_value_t* c = NULL;
      float v = -1.0f;
      if (dist_value_component(result, r, &c) != DIST_OK || dts_get_f32(c, &v, 1) != 1 ||
          v != (float)(st->n * (st->n - 1) / 2)) {
        st->failures += 1;
        snprintf(st->failure, sizeof(st->failure), "replica %d's sum is %g", (int)r, (double)v);
      }
      dist_value_destroy(c);
    }
    dist_value_destroy(result);
  }
  return NULL;
}

static void test_concurrent_runs(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  concurrent_runs_state st[3];
  pthread_t threads[3];
  int i;
  (void)state;
  for (i = 0; i < 3; ++i) {
    memset(&st[i], 0, sizeof(st[i]));
    st[i].strategy = s;
    st[i].n = 3;
    assert_int_equal(pthread_create(&threads[i], NULL, run_many, &st[i]), 0);
  }
  for (i = 0; i < 3; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
  for (i = 0; i < 3; ++i) {
    if (st[i].failures != 0) fail_msg("thread %d: %s", i, st[i].failure);
  }
  dist_strategy_destroy(s);
}

/* ---- Context accessors: misuse ---- */

typedef struct {
  dts_errors errors;
} misuse_state;

static dist_status_t context_misuse(dist_context_t* context, const dist_value_t* const* args,
                                    int32_t num_args, dist_value_t** results, int32_t num_results,
                                    void* user_data) {
  misuse_state* st = (misuse_state*)user_data;
  int32_t r = -1, out = 77;
  const char* device = DT_SENTINEL_STR;
  dist_strategy_t* owner = (dist_strategy_t*)DT_SENTINEL_PTR;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCHECK_ERR(&st->errors, r, dist_context_replica_id(NULL, &out), DIST_INVALID_ARGUMENT,
             "context");
  RCHECK(&st->errors, r, out == 0, "out not reset");
  RCHECK_ERR(&st->errors, r, dist_context_replica_id(context, NULL), DIST_INVALID_ARGUMENT,
             "out_replica_id");
  out = 77;
  RCHECK_ERR(&st->errors, r, dist_context_num_replicas_in_sync(NULL, &out),
             DIST_INVALID_ARGUMENT, "dist_context_num_replicas_in_sync: context");
  RCHECK(&st->errors, r, out == 0, "out not reset");
  RCHECK_ERR(&st->errors, r, dist_context_num_replicas_in_sync(context, NULL),
             DIST_INVALID_ARGUMENT, "out_count");
  RCHECK_ERR(&st->errors, r, dist_context_strategy(NULL, &owner), DIST_INVALID_ARGUMENT,
             "dist_context_strategy: context");
  RCHECK(&st->errors, r, owner == NULL, "out not reset");
  RCHECK_ERR(&st->errors, r, dist_context_strategy(context, NULL), DIST_INVALID_ARGUMENT, "out");
  RCHECK_ERR(&st->errors, r, dist_context_device(NULL, &device), DIST_INVALID_ARGUMENT,
             "dist_context_device: context");
  RCHECK(&st->errors, r, device == NULL, "out not reset");
  RCHECK_ERR(&st->errors, r, dist_context_device(context, NULL), DIST_INVALID_ARGUMENT,
             "out_borrowed_device");
  /* A run's context is not left with dist_context_leave. */
  RCHECK_ERR(&st->errors, r, dist_context_leave(context), DIST_FAILED_PRECONDITION,
             "dist_context_leave");
  return DIST_OK;
}

static void test_context_accessors_reject_misuse(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  misuse_state st;
  (void)state;
  memset(&st, 0, sizeof(st));
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, context_misuse, &st, NULL, 0, NULL, 0));
  /* Still fine afterwards. */
  check_identity(s, 2, DIST_STRATEGY_MIRRORED);
  dist_strategy_destroy(s);
}

/* ---- distribute_values_from_function ---- */

typedef struct {
  int32_t calls[DTS_MAX_REPLICAS];
  int32_t seen_count;
  int32_t fail_at;      /* replica whose call fails, or -1 */
  int32_t store_none;   /* 1: the call for fail_at stores nothing and returns OK */
  int32_t store_non_tensor; /* 1: the call for fail_at stores a PerReplica value */
} values_fn_state;

static dist_status_t make_value(int32_t replica_id, int32_t num_replicas, dist_value_t** out,
                                void* user_data) {
  values_fn_state* st = (values_fn_state*)user_data;
  float v[2];
  char device[16];
  st->calls[replica_id] += 1;
  st->seen_count = num_replicas;
  if (*out != NULL) return DIST_INTERNAL; /* must be pre-set to NULL */
  if (replica_id == st->fail_at) {
    if (st->store_none) return DIST_OK;
    if (st->store_non_tensor) {
      dist_value_t* t = NULL;
      dist_status_t s;
      v[0] = 1.0f;
      if (dist_tensor_create(DIST_FLOAT32, NULL, 0, v, sizeof(float), NULL, &t) != DIST_OK)
        return DIST_INTERNAL;
      s = dist_value_create_per_replica((const dist_value_t* const*)&t, 1, out);
      dist_value_destroy(t);
      return s;
    }
    {
      dist_device_t* parsed = NULL;
      return dist_device_parse("values-fn-failure", &parsed);
    }
  }
  v[0] = (float)replica_id;
  v[1] = (float)num_replicas;
  dts_cpu_name(replica_id, device, sizeof(device));
  {
    const int64_t dims[1] = {2};
    return dist_tensor_create(DIST_FLOAT32, dims, 1, v, sizeof(v), device, out);
  }
}

static void test_distribute_values_from_function(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  dist_strategy_t* one = dts_one_device("CPU:2");
  values_fn_state st;
  dist_value_t* out = NULL;
  int32_t r;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.fail_at = -1;
  DT_OK(dist_strategy_distribute_values_from_function(s, make_value, &st, &out));
  assert_int_equal(st.seen_count, 3);
  assert_int_equal(dts_kind(out), DIST_VALUE_PER_REPLICA);
  assert_int_equal(dts_num_components(out), 3);
  for (r = 0; r < 3; ++r) {
    const float expected[2] = {(float)r, 3.0f};
    dist_value_t* c = dts_component(out, r);
    char device[32];
    assert_int_equal(st.calls[r], 1);
    dts_expect_f32(c, expected, 2);
    snprintf(device, sizeof(device), "/device:CPU:%d", (int)r);
    assert_string_equal(dts_device(c), device);
    dist_value_destroy(c);
  }
  dist_value_destroy(out);

  /* Inside the scope, too. */
  DT_OK(dist_strategy_scope_enter(s));
  out = NULL;
  DT_OK(dist_strategy_distribute_values_from_function(s, make_value, &st, &out));
  assert_int_equal(dts_kind(out), DIST_VALUE_PER_REPLICA);
  dist_value_destroy(out);
  DT_OK(dist_strategy_scope_exit(s));

  /* One replica: the tensor itself. */
  memset(&st, 0, sizeof(st));
  st.fail_at = -1;
  out = NULL;
  DT_OK(dist_strategy_distribute_values_from_function(one, make_value, &st, &out));
  assert_int_equal(st.seen_count, 1);
  assert_int_equal(dts_kind(out), DIST_VALUE_TENSOR);
  {
    const float expected[2] = {0.0f, 1.0f};
    dts_expect_f32(out, expected, 2);
  }
  dist_value_destroy(out);
  dist_strategy_destroy(one);
  dist_strategy_destroy(s);
}

static void test_distribute_values_from_function_errors(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  values_fn_state st;
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.fail_at = -1;
  DT_ERR(dist_strategy_distribute_values_from_function(NULL, make_value, &st, &out),
         DIST_INVALID_ARGUMENT, "dist_strategy_distribute_values_from_function", "strategy");
  assert_null(out);
  DT_ERR(dist_strategy_distribute_values_from_function(s, NULL, &st, &out),
         DIST_INVALID_ARGUMENT, "dist_strategy_distribute_values_from_function", "fn");
  DT_ERR(dist_strategy_distribute_values_from_function(s, make_value, &st, NULL),
         DIST_INVALID_ARGUMENT, "dist_strategy_distribute_values_from_function", "out");

  /* fn fails for replica 1: its status and message come back; earlier components do not
   * leak (valgrind). */
  st.fail_at = 1;
  out = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_distribute_values_from_function(s, make_value, &st, &out),
         DIST_INVALID_ARGUMENT, "dist_strategy_distribute_values_from_function",
         "values-fn-failure");
  assert_null(out);
  /* fn stores nothing. */
  memset(&st, 0, sizeof(st));
  st.fail_at = 2;
  st.store_none = 1;
  out = (dist_value_t*)DT_SENTINEL_PTR;
  assert_int_not_equal(dist_strategy_distribute_values_from_function(s, make_value, &st, &out),
                       DIST_OK);
  assert_non_null(strstr(dist_last_error_message(),
                         "dist_strategy_distribute_values_from_function"));
  assert_null(out);
  /* fn stores a value that is not a tensor. */
  memset(&st, 0, sizeof(st));
  st.fail_at = 0;
  st.store_non_tensor = 1;
  DT_ERR(dist_strategy_distribute_values_from_function(s, make_value, &st, &out),
         DIST_INVALID_ARGUMENT, "dist_strategy_distribute_values_from_function", NULL);
  assert_null(out);
  dist_strategy_destroy(s);
}

typedef struct {
  dts_errors errors;
  dist_strategy_t* strategy;
} cross_state;

static dist_status_t values_fn_in_replica(dist_context_t* context, const dist_value_t* const* args,
                                          int32_t num_args, dist_value_t** results,
                                          int32_t num_results, void* user_data) {
  cross_state* st = (cross_state*)user_data;
  int32_t r = -1;
  values_fn_state fn_state;
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  memset(&fn_state, 0, sizeof(fn_state));
  fn_state.fail_at = -1;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCHECK_ERR(&st->errors, r,
             dist_strategy_distribute_values_from_function(st->strategy, make_value, &fn_state,
                                                           &out),
             DIST_FAILED_PRECONDITION, "cross-replica");
  RCHECK(&st->errors, r, out == NULL, "out not reset");
  RCHECK(&st->errors, r, fn_state.calls[0] == 0, "fn was called in replica context");
  return DIST_OK;
}

static void test_distribute_values_from_function_in_replica_context(void** state) {
  cross_state st;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.strategy = dts_mirrored(2);
  DTS_RUN_OK(&st.errors, 2,
             dist_strategy_run(st.strategy, values_fn_in_replica, &st, NULL, 0, NULL, 0));
  dist_strategy_destroy(st.strategy);
}

/* ---- value_container ---- */

typedef struct {
  dist_strategy_t* strategy;
  int32_t calls;
  int32_t failures;
} container_state;

static dist_status_t check_container_in_update(dist_value_t* variable,
                                               const dist_value_t* const* args, int32_t num_args,
                                               dist_value_t** out, void* user_data) {
  container_state* st = (container_state*)user_data;
  dist_value_t* container = NULL;
  dist_value_kind_t kind = 0;
  const char* name = NULL;
  (void)args;
  (void)num_args;
  (void)out;
  st->calls += 1;
  if (dist_strategy_value_container(st->strategy, variable, &container) != DIST_OK) {
    st->failures += 1;
    return DIST_INTERNAL;
  }
  if (dist_value_kind(container, &kind) != DIST_OK || kind != DIST_VALUE_MIRRORED_VARIABLE ||
      dist_variable_name(container, &name) != DIST_OK || strcmp(name, "container_var") != 0) {
    st->failures += 1;
  }
  dist_value_destroy(container);
  return DIST_OK;
}

static void test_value_container(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_value_t* init = dts_f32_scalar(1.0f, NULL);
  dist_value_t* var = NULL;
  dist_value_t* component = NULL;
  dist_value_t* container = NULL;
  dist_value_t* tensor = dts_f32_scalar(5.0f, NULL);
  const float pr[2] = {1.0f, 2.0f};
  dist_value_t* per_replica = dts_per_replica_f32(pr, 2, -1);
  dist_value_t* update_out = (dist_value_t*)DT_SENTINEL_PTR;
  container_state st;
  const char* name = NULL;
  void* a = NULL;
  void* b = NULL;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN, "container_var",
                             &var));
  /* A component of a distributed variable: its container is the distributed variable. */
  component = dts_component(var, 1);
  assert_int_equal(dts_kind(component), DIST_VALUE_VARIABLE);
  DT_OK(dist_strategy_value_container(s, component, &container));
  assert_int_equal(dts_kind(container), DIST_VALUE_MIRRORED_VARIABLE);
  assert_int_equal(dts_num_components(container), 2);
  DT_OK(dist_variable_name(container, &name));
  assert_string_equal(name, "container_var");
  dist_value_destroy(container);
  /* The distributed variable itself. */
  DT_OK(dist_strategy_value_container(s, var, &container));
  assert_int_equal(dts_kind(container), DIST_VALUE_MIRRORED_VARIABLE);
  dist_value_destroy(container);
  /* A component handed to an update function. */
  memset(&st, 0, sizeof(st));
  st.strategy = s;
  DT_OK(dist_strategy_update(s, var, check_container_in_update, &st, NULL, 0, 1, &update_out));
  assert_null(update_out);
  assert_int_equal(st.calls, 2);
  assert_int_equal(st.failures, 0);
  DT_OK(dist_strategy_scope_exit(s));

  /* Anything else: the value itself. */
  DT_OK(dist_strategy_value_container(s, tensor, &container));
  assert_int_equal(dts_kind(container), DIST_VALUE_TENSOR);
  DT_OK(dist_tensor_data(tensor, &a));
  DT_OK(dist_tensor_data(container, &b));
  assert_ptr_equal(a, b);
  dist_value_destroy(container);
  DT_OK(dist_strategy_value_container(s, per_replica, &container));
  assert_int_equal(dts_kind(container), DIST_VALUE_PER_REPLICA);
  assert_int_equal(dts_num_components(container), 2);
  dist_value_destroy(container);

  /* Misuse. */
  container = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_value_container(NULL, tensor, &container), DIST_INVALID_ARGUMENT,
         "dist_strategy_value_container", "strategy");
  assert_null(container);
  DT_ERR(dist_strategy_value_container(s, NULL, &container), DIST_INVALID_ARGUMENT,
         "dist_strategy_value_container", "value");
  DT_ERR(dist_strategy_value_container(s, tensor, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_value_container", "out");

  dist_value_destroy(component);
  dist_value_destroy(var);
  dist_value_destroy(init);
  dist_value_destroy(tensor);
  dist_value_destroy(per_replica);
  dist_strategy_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_run_identity),
      cmocka_unit_test(test_run_unwraps_arguments),
      cmocka_unit_test(test_run_rejects_component_count_mismatch),
      cmocka_unit_test(test_run_rejects_misuse),
      cmocka_unit_test(test_run_merges_results),
      cmocka_unit_test(test_run_rejects_uneven_results),
      cmocka_unit_test(test_run_from_replica_context),
      cmocka_unit_test(test_run_replica_error),
      cmocka_unit_test(test_concurrent_runs),
      cmocka_unit_test(test_context_accessors_reject_misuse),
      cmocka_unit_test(test_distribute_values_from_function),
      cmocka_unit_test(test_distribute_values_from_function_errors),
      cmocka_unit_test(test_distribute_values_from_function_in_replica_context),
      cmocka_unit_test(test_value_container),
  };
  return cmocka_run_group_tests_name("run", tests, setup, NULL);
}
