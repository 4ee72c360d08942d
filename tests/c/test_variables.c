/* Tests for variable.h: creation under each strategy, names, synchronization and
 * aggregation, reads, and TF's assignment rules in replica and cross-replica context. The
 * expected values are computed in the test from the rules as the header and TF state them. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

static dist_value_t* create_variable(const dist_value_t* init, dist_variable_sync_t sync,
                                     dist_variable_aggregation_t aggregation, const char* name) {
  dist_value_t* v = NULL;
  DT_OK(dist_variable_create(init, sync, aggregation, name, &v));
  assert_non_null(v);
  return v;
}

static void expect_copy_devices(const dist_value_t* variable, const char* const* devices,
                                int32_t count) {
  int32_t i;
  assert_int_equal(dts_num_components(variable), count);
  for (i = 0; i < count; ++i) {
    dist_value_t* c = dts_component(variable, i);
    dist_value_t* read = NULL;
    assert_int_equal(dts_kind(c), count == 1 ? dts_kind(variable) : DIST_VALUE_VARIABLE);
    DT_OK(dist_variable_read(c, &read));
    assert_string_equal(dts_device(read), devices[i]);
    dist_value_destroy(read);
    dist_value_destroy(c);
  }
}

static void expect_sync_and_aggregation(const dist_value_t* v, dist_variable_sync_t sync,
                                        dist_variable_aggregation_t aggregation) {
  dist_variable_sync_t got_sync = -1;
  dist_variable_aggregation_t got_aggregation = -1;
  DT_OK(dist_variable_synchronization(v, &got_sync));
  assert_int_equal(got_sync, sync);
  DT_OK(dist_variable_aggregation(v, &got_aggregation));
  assert_int_equal(got_aggregation, aggregation);
}

/* ---- Creation ---- */

static void test_creation_under_mirrored(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float init_values[2] = {1.5f, -2.0f};
  dist_value_t* init = dts_f32(init_values, 2, "CPU:3");
  dist_value_t* on_write = NULL;
  dist_value_t* automatic = NULL;
  dist_value_t* on_read = NULL;
  const char* both[2] = {"/device:CPU:0", "/device:CPU:1"};
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  on_write = create_variable(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL);
  automatic = create_variable(init, DIST_SYNC_AUTO, DIST_AGGREGATION_MEAN, NULL);
  on_read = create_variable(init, DIST_SYNC_ON_READ, DIST_AGGREGATION_ONLY_FIRST_REPLICA, NULL);
  DT_OK(dist_strategy_scope_exit(s));

  assert_int_equal(dts_kind(on_write), DIST_VALUE_MIRRORED_VARIABLE);
  expect_copy_devices(on_write, both, 2);
  expect_sync_and_aggregation(on_write, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM);
  dts_expect_components_f32(on_write, init_values, 2);

  /* AUTO resolves to ON_WRITE. */
  assert_int_equal(dts_kind(automatic), DIST_VALUE_MIRRORED_VARIABLE);
  expect_copy_devices(automatic, both, 2);
  expect_sync_and_aggregation(automatic, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN);

  assert_int_equal(dts_kind(on_read), DIST_VALUE_SYNC_ON_READ_VARIABLE);
  expect_copy_devices(on_read, both, 2);
  expect_sync_and_aggregation(on_read, DIST_SYNC_ON_READ, DIST_AGGREGATION_ONLY_FIRST_REPLICA);
  dts_expect_components_f32(on_read, init_values, 2);

  dist_value_destroy(on_write);
  dist_value_destroy(automatic);
  dist_value_destroy(on_read);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

static void test_creation_single_copy(void** state) {
  dist_strategy_t* cs = dts_central_storage(2, "CPU:1");
  dist_strategy_t* one = dts_one_device("CPU:3");
  const int32_t init_values[6] = {1, 2, 3, 4, 5, 6};
  const int64_t dims[2] = {2, 3};
  dist_value_t* init = dts_tensor(DIST_INT32, dims, 2, init_values, NULL);
  dist_value_t* v = NULL;
  const char* cpu1[1] = {"/device:CPU:1"};
  const char* cpu3[1] = {"/device:CPU:3"};
  const char* cpu0[1] = {"/device:CPU:0"};
  dist_variable_sync_t syncs[3] = {DIST_SYNC_ON_WRITE, DIST_SYNC_AUTO, DIST_SYNC_ON_READ};
  int i;
  (void)state;
  for (i = 0; i < 3; ++i) {
    DT_OK(dist_strategy_scope_enter(cs));
    v = create_variable(init, syncs[i], DIST_AGGREGATION_SUM, NULL);
    DT_OK(dist_strategy_scope_exit(cs));
    /* CentralStorage: one variable on the parameter device. */
    assert_int_equal(dts_kind(v), DIST_VALUE_VARIABLE);
    expect_copy_devices(v, cpu1, 1);
    dist_value_destroy(v);

    DT_OK(dist_strategy_scope_enter(one));
    v = create_variable(init, syncs[i], DIST_AGGREGATION_SUM, NULL);
    DT_OK(dist_strategy_scope_exit(one));
    assert_int_equal(dts_kind(v), DIST_VALUE_VARIABLE);
    expect_copy_devices(v, cpu3, 1);
    dist_value_destroy(v);
  }
  /* No scope: a plain variable on CPU:0 holding a copy of the initial value. */
  v = create_variable(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL);
  assert_int_equal(dts_kind(v), DIST_VALUE_VARIABLE);
  expect_copy_devices(v, cpu0, 1);
  {
    void* data = NULL;
    dist_value_t* read = NULL;
    dist_dtype_t dtype = 0;
    int64_t got_dims[2] = {0, 0};
    DT_OK(dist_tensor_data(init, &data));
    ((int32_t*)data)[0] = 99; /* the variable holds its own copy */
    DT_OK(dist_variable_read(v, &read));
    DT_OK(dist_tensor_dtype(read, &dtype));
    assert_int_equal(dtype, DIST_INT32);
    DT_OK(dist_tensor_shape(read, got_dims, 2));
    assert_int_equal(got_dims[0], 2);
    assert_int_equal(got_dims[1], 3);
    DT_OK(dist_tensor_data(read, &data));
    assert_memory_equal(data, init_values, sizeof(init_values));
    /* A read is a snapshot. */
    ((int32_t*)data)[1] = -1;
    dist_value_destroy(read);
    DT_OK(dist_variable_read(v, &read));
    DT_OK(dist_tensor_data(read, &data));
    assert_memory_equal(data, init_values, sizeof(init_values));
    dist_value_destroy(read);
  }
  dist_value_destroy(v);
  dist_value_destroy(init);
  dist_strategy_destroy(cs);
  dist_strategy_destroy(one);
}

static void test_names(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_strategy_t* t = dts_mirrored(2);
  dist_value_t* init = dts_f32_scalar(0.0f, NULL);
  dist_value_t* v[6];
  const char* expected[6] = {"Variable", "Variable_1", "w", "w_1", "Variable_2", "w_2"};
  const char* requested[6] = {NULL, NULL, "w", "w", NULL, "w"};
  const char* name = NULL;
  const char* other_name = NULL;
  dist_value_t* a = NULL;
  dist_value_t* b = NULL;
  int i;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  for (i = 0; i < 6; ++i) v[i] = create_variable(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE,
                                                 requested[i]);
  DT_OK(dist_strategy_scope_exit(s));
  for (i = 0; i < 6; ++i) {
    DT_OK(dist_variable_name(v[i], &name));
    assert_string_equal(name, expected[i]);
  }
  /* Unique per strategy: another strategy starts over. */
  DT_OK(dist_strategy_scope_enter(t));
  a = create_variable(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL);
  DT_OK(dist_strategy_scope_exit(t));
  DT_OK(dist_variable_name(a, &name));
  assert_string_equal(name, "Variable");
  dist_value_destroy(a);
  /* No scope: unique as well. */
  a = create_variable(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL);
  b = create_variable(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL);
  DT_OK(dist_variable_name(a, &name));
  DT_OK(dist_variable_name(b, &other_name));
  assert_string_not_equal(name, other_name);
  assert_true(strncmp(name, "Variable", 8) == 0);
  /* The copies of a distributed variable share its name. */
  {
    dist_value_t* c = dts_component(v[2], 1);
    DT_OK(dist_variable_name(c, &name));
    assert_non_null(strstr(name, "w"));
    dist_value_destroy(c);
  }
  for (i = 0; i < 6; ++i) dist_value_destroy(v[i]);
  dist_value_destroy(a);
  dist_value_destroy(b);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
  dist_strategy_destroy(t);
}

static void test_creation_rejects_misuse(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_value_t* init = dts_f32_scalar(1.0f, NULL);
  const float pr_values[2] = {1, 2};
  dist_value_t* pr = dts_per_replica_f32(pr_values, 2, -1);
  dist_value_t* v = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_variable_create(NULL, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &v),
         DIST_INVALID_ARGUMENT, "dist_variable_create", "initial_value");
  assert_null(v);
  DT_ERR(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, NULL),
         DIST_INVALID_ARGUMENT, "dist_variable_create", "out");
  DT_ERR(dist_variable_create(pr, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &v),
         DIST_INVALID_ARGUMENT, "dist_variable_create", NULL);
  DT_ERR(dist_variable_create(init, 4, DIST_AGGREGATION_NONE, NULL, &v), DIST_INVALID_ARGUMENT,
         "dist_variable_create", "synchronization");
  DT_ERR(dist_variable_create(init, -1, DIST_AGGREGATION_NONE, NULL, &v), DIST_INVALID_ARGUMENT,
         "dist_variable_create", "synchronization");
  DT_ERR(dist_variable_create(init, DIST_SYNC_AUTO, 4, NULL, &v), DIST_INVALID_ARGUMENT,
         "dist_variable_create", "aggregation");
  DT_ERR(dist_variable_create(init, DIST_SYNC_AUTO, -2, NULL, &v), DIST_INVALID_ARGUMENT,
         "dist_variable_create", "aggregation");
  /* Synchronization NONE under a strategy with several replicas, as in TF. */
  DT_OK(dist_strategy_scope_enter(s));
  v = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_variable_create(init, DIST_SYNC_NONE, DIST_AGGREGATION_SUM, NULL, &v),
         DIST_INVALID_ARGUMENT, "dist_variable_create", "NONE");
  assert_null(v);
  DT_OK(dist_strategy_scope_exit(s));
  /* NONE is fine without a strategy. */
  DT_OK(dist_variable_create(init, DIST_SYNC_NONE, DIST_AGGREGATION_NONE, NULL, &v));
  expect_sync_and_aggregation(v, DIST_SYNC_NONE, DIST_AGGREGATION_NONE);
  dist_value_destroy(v);
  dist_value_destroy(pr);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

typedef struct {
  dts_errors errors;
  const dist_value_t* init;
} create_in_replica_state;

static dist_status_t create_in_replica(dist_context_t* context, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** results,
                                       int32_t num_results, void* user_data) {
  create_in_replica_state* st = (create_in_replica_state*)user_data;
  int32_t r = -1;
  dist_value_t* v = (dist_value_t*)DT_SENTINEL_PTR;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCHECK_ERR(&st->errors, r,
             dist_variable_create(st->init, DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, NULL, &v),
             DIST_FAILED_PRECONDITION, "cross-replica");
  RCHECK(&st->errors, r, v == NULL, "out not reset");
  return DIST_OK;
}

static void test_creation_in_replica_context(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  create_in_replica_state st;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.init = dts_f32_scalar(1.0f, NULL);
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, create_in_replica, &st, NULL, 0, NULL, 0));
  DT_OK(dist_strategy_scope_enter(s));
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, create_in_replica, &st, NULL, 0, NULL, 0));
  DT_OK(dist_strategy_scope_exit(s));
  dist_value_destroy((dist_value_t*)st.init);
  dist_strategy_destroy(s);
}

static void test_accessors_reject_misuse(void** state) {
  dist_value_t* init = dts_f32_scalar(1.0f, NULL);
  dist_value_t* v = create_variable(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL);
  const char* name = DT_SENTINEL_STR;
  dist_variable_sync_t sync = 77;
  dist_variable_aggregation_t aggregation = 77;
  dist_value_t* read = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_variable_name(NULL, &name), DIST_INVALID_ARGUMENT, "dist_variable_name",
         "variable");
  assert_null(name);
  DT_ERR(dist_variable_name(init, &name), DIST_INVALID_ARGUMENT, "dist_variable_name",
         "variable");
  DT_ERR(dist_variable_name(v, NULL), DIST_INVALID_ARGUMENT, "dist_variable_name", "out_borrowed_name");
  DT_ERR(dist_variable_synchronization(NULL, &sync), DIST_INVALID_ARGUMENT,
         "dist_variable_synchronization", "variable");
  assert_int_equal(sync, 0);
  DT_ERR(dist_variable_synchronization(init, &sync), DIST_INVALID_ARGUMENT,
         "dist_variable_synchronization", "variable");
  DT_ERR(dist_variable_synchronization(v, NULL), DIST_INVALID_ARGUMENT,
         "dist_variable_synchronization", "out_sync");
  DT_ERR(dist_variable_aggregation(NULL, &aggregation), DIST_INVALID_ARGUMENT,
         "dist_variable_aggregation", "variable");
  assert_int_equal(aggregation, 0);
  DT_ERR(dist_variable_aggregation(init, &aggregation), DIST_INVALID_ARGUMENT,
         "dist_variable_aggregation", "variable");
  DT_ERR(dist_variable_aggregation(v, NULL), DIST_INVALID_ARGUMENT, "dist_variable_aggregation",
         "out_aggregation");
  DT_ERR(dist_variable_read(NULL, &read), DIST_INVALID_ARGUMENT, "dist_variable_read",
         "variable");
  assert_null(read);
  DT_ERR(dist_variable_read(init, &read), DIST_INVALID_ARGUMENT, "dist_variable_read",
         "variable");
  DT_ERR(dist_variable_read(v, NULL), DIST_INVALID_ARGUMENT, "dist_variable_read", "out");
  DT_ERR(dist_variable_assign(NULL, init), DIST_INVALID_ARGUMENT, "dist_variable_assign",
         "variable");
  DT_ERR(dist_variable_assign(init, init), DIST_INVALID_ARGUMENT, "dist_variable_assign",
         "variable");
  DT_ERR(dist_variable_assign(v, NULL), DIST_INVALID_ARGUMENT, "dist_variable_assign", "value");
  DT_ERR(dist_variable_assign_add(NULL, init), DIST_INVALID_ARGUMENT, "dist_variable_assign_add",
         "variable");
  DT_ERR(dist_variable_assign_add(v, NULL), DIST_INVALID_ARGUMENT, "dist_variable_assign_add",
         "value");
  DT_ERR(dist_variable_assign_sub(NULL, init), DIST_INVALID_ARGUMENT, "dist_variable_assign_sub",
         "variable");
  DT_ERR(dist_variable_assign_sub(v, NULL), DIST_INVALID_ARGUMENT, "dist_variable_assign_sub",
         "value");
  dist_value_destroy(v);
  dist_value_destroy(init);
}

/* ---- Replica-context assignment of a MirroredVariable ---- */

#define ASSIGN 0
#define ADD 1
#define SUB 2

typedef struct {
  dts_errors errors;
  dist_value_t* var;
  int kind;                  /* ASSIGN, ADD, SUB */
  float expected[2];         /* the value every replica reads after the assignment */
  dist_status_t code;        /* expected status */
  const char* needle;        /* expected in the message when code != OK */
  int mismatch;              /* 1: pass an int32 value; 2: pass float32[3] */
} assign_state;

/* Replica r passes x_r = {r+1, 10 (r+1)}. */
static void x_of(int32_t r, float* x) {
  x[0] = (float)(r + 1);
  x[1] = 10.0f * (float)(r + 1);
}

static dist_status_t assign_in_replica(dist_context_t* context, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** results,
                                       int32_t num_results, void* user_data) {
  assign_state* st = (assign_state*)user_data;
  int32_t r = -1;
  float x[3];
  dist_value_t* value = NULL;
  dist_value_t* read = NULL;
  const char* device = NULL;
  dist_status_t status;
  float got[2] = {0, 0};
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_context_device(context, &device));
  x_of(r, x);
  x[2] = 0.0f;
  if (st->mismatch == 1) {
    const int32_t ints[2] = {1, 2};
    const int64_t two = 2;
    RCALL(&st->errors, r, dist_tensor_create(DIST_INT32, &two, 1, ints, sizeof(ints), device,
                                             &value));
  } else {
    value = dts_make_f32(x, st->mismatch == 2 ? 3 : 2, device);
  }
  RCHECK(&st->errors, r, value != NULL, "make");
  if (st->kind == ASSIGN) {
    status = dist_variable_assign(st->var, value);
  } else if (st->kind == ADD) {
    status = dist_variable_assign_add(st->var, value);
  } else {
    status = dist_variable_assign_sub(st->var, value);
  }
  dist_value_destroy(value);
  RCHECK(&st->errors, r, status == st->code, "assignment returned %s, expected %s: \"%s\"",
         dist_status_name(status), dist_status_name(st->code), dist_last_error_message());
  if (status != DIST_OK) {
    RCHECK(&st->errors, r, st->needle == NULL || strstr(dist_last_error_message(), st->needle),
           "message \"%s\" lacks \"%s\"", dist_last_error_message(), st->needle);
    return DIST_OK;
  }
  /* In replica context a read gives this replica's copy, which now holds the result. */
  RCALL(&st->errors, r, dist_variable_read(st->var, &read));
  RCHECK(&st->errors, r, dts_get_f32(read, got, 2) == 2, "read is not float32[2]");
  RCHECK(&st->errors, r, got[0] == st->expected[0] && got[1] == st->expected[1],
         "read {%g, %g}, expected {%g, %g}", (double)got[0], (double)got[1],
         (double)st->expected[0], (double)st->expected[1]);
  {
    const char* read_device = NULL;
    int32_t copies = 0;
    RCALL(&st->errors, r, dist_value_num_components(st->var, &copies));
    RCALL(&st->errors, r, dist_tensor_device(read, &read_device));
    RCHECK(&st->errors, r, copies == 1 || strcmp(read_device, device) == 0, "read on %s",
           read_device);
  }
  dist_value_destroy(read);
  return DIST_OK;
}

/* The TF rule: aggregate the replicas' values, then apply to every copy. */
static void expected_after(int32_t n, dist_variable_aggregation_t aggregation, int kind,
                           const float* old, float* out) {
  int j;
  int32_t r;
  for (j = 0; j < 2; ++j) {
    double aggregated = 0.0;
    for (r = 0; r < n; ++r) {
      float x[2];
      x_of(r, x);
      aggregated += x[j];
    }
    if (aggregation == DIST_AGGREGATION_MEAN) aggregated /= n;
    if (aggregation == DIST_AGGREGATION_ONLY_FIRST_REPLICA) {
      float x[2];
      x_of(0, x);
      aggregated = x[j];
    }
    out[j] = kind == ASSIGN ? (float)aggregated
                            : kind == ADD ? (float)(old[j] + aggregated)
                                          : (float)(old[j] - aggregated);
  }
}

static void check_replica_assign(dist_strategy_t* s, dist_variable_aggregation_t aggregation,
                                 int kind) {
  const float initial[2] = {100.0f, 200.0f};
  const int32_t n = dts_num_replicas(s);
  dist_value_t* init = dts_f32(initial, 2, NULL);
  assign_state st;
  memset(&st, 0, sizeof(st));
  DT_OK(dist_strategy_scope_enter(s));
  st.var = create_variable(init, DIST_SYNC_ON_WRITE, aggregation, NULL);
  DT_OK(dist_strategy_scope_exit(s));
  st.kind = kind;
  st.code = DIST_OK;
  expected_after(n, aggregation, kind, initial, st.expected);
  DTS_RUN_OK(&st.errors, n, dist_strategy_run(s, assign_in_replica, &st, NULL, 0, NULL, 0));
  /* Every copy holds the result, and so does a cross-replica read. */
  dts_expect_components_f32(st.var, st.expected, 2);
  dts_expect_variable_f32(st.var, st.expected, 2);
  dist_value_destroy(st.var);
  dist_value_destroy(init);
}

static void test_replica_assign_mirrored(void** state) {
  const dist_variable_aggregation_t aggregations[3] = {
      DIST_AGGREGATION_SUM, DIST_AGGREGATION_MEAN, DIST_AGGREGATION_ONLY_FIRST_REPLICA};
  const int counts[2] = {2, 4};
  int a, k, c;
  (void)state;
  for (c = 0; c < 2; ++c) {
    dist_strategy_t* s = dts_mirrored(counts[c]);
    for (a = 0; a < 3; ++a) {
      for (k = 0; k < 3; ++k) check_replica_assign(s, aggregations[a], k);
    }
    dist_strategy_destroy(s);
  }
}

static void test_replica_assign_central_storage(void** state) {
  const dist_variable_aggregation_t aggregations[3] = {
      DIST_AGGREGATION_SUM, DIST_AGGREGATION_MEAN, DIST_AGGREGATION_ONLY_FIRST_REPLICA};
  dist_strategy_t* s = dts_central_storage(3, NULL);
  int a, k;
  (void)state;
  for (a = 0; a < 3; ++a) {
    for (k = 0; k < 3; ++k) check_replica_assign(s, aggregations[a], k);
  }
  dist_strategy_destroy(s);
}

static void test_replica_assign_one_device(void** state) {
  /* One replica: the value itself, whatever the aggregation (NONE included). */
  dist_strategy_t* s = dts_one_device("CPU:2");
  const float initial[2] = {100.0f, 200.0f};
  dist_value_t* init = dts_f32(initial, 2, NULL);
  assign_state st;
  (void)state;
  memset(&st, 0, sizeof(st));
  DT_OK(dist_strategy_scope_enter(s));
  st.var = create_variable(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL);
  DT_OK(dist_strategy_scope_exit(s));
  st.kind = ADD;
  st.code = DIST_OK;
  st.expected[0] = 101.0f;
  st.expected[1] = 210.0f;
  DTS_RUN_OK(&st.errors, 1, dist_strategy_run(s, assign_in_replica, &st, NULL, 0, NULL, 0));
  dts_expect_variable_f32(st.var, st.expected, 2);
  dist_value_destroy(st.var);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

static void test_replica_assign_errors(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float initial[2] = {100.0f, 200.0f};
  dist_value_t* init = dts_f32(initial, 2, NULL);
  dist_value_t* none_var = NULL;
  dist_value_t* sum_var = NULL;
  assign_state st;
  int k;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  none_var = create_variable(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_NONE, NULL);
  sum_var = create_variable(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL);
  DT_OK(dist_strategy_scope_exit(s));
  for (k = 0; k < 3; ++k) {
    /* Aggregation NONE in replica context: an aggregation must be specified. */
    memset(&st, 0, sizeof(st));
    st.var = none_var;
    st.kind = k;
    st.code = DIST_INVALID_ARGUMENT;
    st.needle = "aggregation";
    DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, assign_in_replica, &st, NULL, 0, NULL, 0));
    dts_expect_components_f32(none_var, initial, 2);
    /* dtype and shape mismatches. */
    memset(&st, 0, sizeof(st));
    st.var = sum_var;
    st.kind = k;
    st.code = DIST_INVALID_ARGUMENT;
    st.mismatch = 1;
    DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, assign_in_replica, &st, NULL, 0, NULL, 0));
    st.mismatch = 2;
    DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, assign_in_replica, &st, NULL, 0, NULL, 0));
    dts_expect_components_f32(sum_var, initial, 2);
  }
  /* The message names the function. */
  {
    memset(&st, 0, sizeof(st));
    st.var = none_var;
    st.kind = ASSIGN;
    st.code = DIST_INVALID_ARGUMENT;
    st.needle = "dist_variable_assign";
    DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, assign_in_replica, &st, NULL, 0, NULL, 0));
  }
  dist_value_destroy(none_var);
  dist_value_destroy(sum_var);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

/* ---- Cross-replica assignment ---- */

static void test_cross_replica_assign_mirrored(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float initial[2] = {1.0f, 2.0f};
  const float t_values[2] = {5.0f, -6.0f};
  const float m_values[2] = {0.5f, 0.25f};
  dist_value_t* init = dts_f32(initial, 2, NULL);
  dist_value_t* t = dts_f32(t_values, 2, "CPU:1");
  dist_value_t* parts[2];
  dist_value_t* mirrored = NULL;
  dist_value_t* var = NULL;
  dist_value_t* other = NULL;
  dist_value_t* pr = NULL;
  float expected[2];
  int in_scope;
  (void)state;
  parts[0] = dts_f32(m_values, 2, "CPU:0");
  parts[1] = dts_f32(m_values, 2, "CPU:1");
  DT_OK(dist_value_create_mirrored((const dist_value_t* const*)parts, 2, &mirrored));
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 2, &pr));
  DT_OK(dist_strategy_scope_enter(s));
  var = create_variable(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_NONE, NULL);
  other = create_variable(t, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_NONE, NULL);
  DT_OK(dist_strategy_scope_exit(s));
  for (in_scope = 0; in_scope < 2; ++in_scope) {
    if (in_scope) DT_OK(dist_strategy_scope_enter(s));
    /* A tensor is written to every copy (aggregation NONE is fine here). */
    DT_OK(dist_variable_assign(var, t));
    dts_expect_components_f32(var, t_values, 2);
    /* A Mirrored value: component i to copy i. */
    DT_OK(dist_variable_assign(var, mirrored));
    dts_expect_components_f32(var, m_values, 2);
    /* Another MirroredVariable. */
    DT_OK(dist_variable_assign(var, other));
    dts_expect_components_f32(var, t_values, 2);
    /* assign_add / assign_sub of a tensor apply to every copy. */
    DT_OK(dist_variable_assign_add(var, mirrored));
    expected[0] = t_values[0] + m_values[0];
    expected[1] = t_values[1] + m_values[1];
    dts_expect_components_f32(var, expected, 2);
    DT_OK(dist_variable_assign_sub(var, t));
    expected[0] -= t_values[0];
    expected[1] -= t_values[1];
    dts_expect_components_f32(var, expected, 2);
    dts_expect_variable_f32(var, expected, 2);
    /* A PerReplica value is rejected and changes nothing. */
    DT_ERR(dist_variable_assign(var, pr), DIST_INVALID_ARGUMENT, "dist_variable_assign", NULL);
    DT_ERR(dist_variable_assign_add(var, pr), DIST_INVALID_ARGUMENT, "dist_variable_assign_add",
           NULL);
    DT_ERR(dist_variable_assign_sub(var, pr), DIST_INVALID_ARGUMENT, "dist_variable_assign_sub",
           NULL);
    dts_expect_components_f32(var, expected, 2);
    DT_OK(dist_variable_assign(var, init));
    if (in_scope) DT_OK(dist_strategy_scope_exit(s));
  }
  dist_value_destroy(parts[0]);
  dist_value_destroy(parts[1]);
  dist_value_destroy(mirrored);
  dist_value_destroy(pr);
  dist_value_destroy(var);
  dist_value_destroy(other);
  dist_value_destroy(init);
  dist_value_destroy(t);
  dist_strategy_destroy(s);
}

static void test_cross_replica_assign_mismatch(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float initial[2] = {1.0f, 2.0f};
  const float three[3] = {1, 2, 3};
  const int32_t ints[2] = {1, 2};
  const int64_t two = 2;
  dist_value_t* init = dts_f32(initial, 2, NULL);
  dist_value_t* wrong_shape = dts_f32(three, 3, NULL);
  dist_value_t* scalar = dts_f32_scalar(1.0f, NULL);
  dist_value_t* wrong_dtype = dts_tensor(DIST_INT32, &two, 1, ints, NULL);
  dist_value_t* vars[3];
  int i;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  vars[0] = create_variable(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL);
  vars[1] = create_variable(init, DIST_SYNC_ON_READ, DIST_AGGREGATION_MEAN, NULL);
  DT_OK(dist_strategy_scope_exit(s));
  vars[2] = create_variable(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL);
  for (i = 0; i < 3; ++i) {
    DT_ERR(dist_variable_assign(vars[i], wrong_shape), DIST_INVALID_ARGUMENT,
           "dist_variable_assign", NULL);
    DT_ERR(dist_variable_assign(vars[i], scalar), DIST_INVALID_ARGUMENT, "dist_variable_assign",
           NULL);
    DT_ERR(dist_variable_assign(vars[i], wrong_dtype), DIST_INVALID_ARGUMENT,
           "dist_variable_assign", NULL);
    DT_ERR(dist_variable_assign_add(vars[i], wrong_dtype), DIST_INVALID_ARGUMENT,
           "dist_variable_assign_add", NULL);
    DT_ERR(dist_variable_assign_sub(vars[i], wrong_shape), DIST_INVALID_ARGUMENT,
           "dist_variable_assign_sub", NULL);
    dts_expect_components_f32(vars[i], initial, 2);
    dist_value_destroy(vars[i]);
  }
  dist_value_destroy(init);
  dist_value_destroy(wrong_shape);
  dist_value_destroy(scalar);
  dist_value_destroy(wrong_dtype);
  dist_strategy_destroy(s);
}

static void test_plain_variable(void** state) {
  const float initial[2] = {1.0f, 2.0f};
  const float d[2] = {0.5f, 4.0f};
  dist_value_t* init = dts_f32(initial, 2, NULL);
  dist_value_t* delta = dts_f32(d, 2, "CPU:2");
  dist_value_t* v = create_variable(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, "plain");
  float expected[2];
  (void)state;
  DT_OK(dist_variable_assign_add(v, delta));
  expected[0] = 1.5f;
  expected[1] = 6.0f;
  dts_expect_variable_f32(v, expected, 2);
  DT_OK(dist_variable_assign_sub(v, delta));
  DT_OK(dist_variable_assign_sub(v, delta));
  expected[0] = 0.5f;
  expected[1] = -2.0f;
  dts_expect_variable_f32(v, expected, 2);
  DT_OK(dist_variable_assign(v, delta));
  dts_expect_variable_f32(v, d, 2);
  dist_value_destroy(v);
  dist_value_destroy(init);
  dist_value_destroy(delta);
}

/* ---- SyncOnRead variables ---- */

typedef struct {
  dts_errors errors;
  dist_value_t* var;
  int kind;
} local_state;

/* Replica r adds (ADD) or assigns (ASSIGN) {r+1, 2 (r+1)} to its own copy. */
static dist_status_t write_local(dist_context_t* context, const dist_value_t* const* args,
                                 int32_t num_args, dist_value_t** results, int32_t num_results,
                                 void* user_data) {
  local_state* st = (local_state*)user_data;
  int32_t r = -1;
  float x[2], got[2];
  dist_value_t* value = NULL;
  dist_value_t* read = NULL;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  x[0] = (float)(r + 1);
  x[1] = 2.0f * (float)(r + 1);
  value = dts_make_f32(x, 2, NULL);
  RCHECK(&st->errors, r, value != NULL, "make");
  if (st->kind == ADD) {
    RCALL(&st->errors, r, dist_variable_assign_add(st->var, value));
  } else {
    RCALL(&st->errors, r, dist_variable_assign(st->var, value));
  }
  dist_value_destroy(value);
  /* A read in replica context is this replica's own copy. */
  RCALL(&st->errors, r, dist_variable_read(st->var, &read));
  RCHECK(&st->errors, r, dts_get_f32(read, got, 2) == 2, "read");
  RCHECK(&st->errors, r, got[0] == x[0] && got[1] == x[1], "replica %d reads {%g, %g}", r,
         (double)got[0], (double)got[1]);
  dist_value_destroy(read);
  return DIST_OK;
}

static void test_sync_on_read(void** state) {
  const dist_variable_aggregation_t aggregations[4] = {
      DIST_AGGREGATION_SUM, DIST_AGGREGATION_MEAN, DIST_AGGREGATION_ONLY_FIRST_REPLICA,
      DIST_AGGREGATION_NONE};
  dist_strategy_t* s = dts_mirrored(2);
  const float zeros[2] = {0, 0};
  dist_value_t* init = dts_f32(zeros, 2, NULL);
  local_state st;
  int a, kind;
  (void)state;
  for (a = 0; a < 4; ++a) {
    for (kind = 0; kind < 2; ++kind) {
      const float copy0[2] = {1, 2};
      const float copy1[2] = {2, 4};
      dist_value_t* c = NULL;
      dist_value_t* read = NULL;
      dist_status_t status;
      memset(&st, 0, sizeof(st));
      DT_OK(dist_strategy_scope_enter(s));
      st.var = create_variable(init, DIST_SYNC_ON_READ, aggregations[a], NULL);
      DT_OK(dist_strategy_scope_exit(s));
      st.kind = kind;
      DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, write_local, &st, NULL, 0, NULL, 0));
      /* The copies differ: no aggregation happened on write. */
      c = dts_component(st.var, 0);
      dts_expect_variable_f32(c, copy0, 2);
      dist_value_destroy(c);
      c = dts_component(st.var, 1);
      dts_expect_variable_f32(c, copy1, 2);
      dist_value_destroy(c);
      /* A cross-replica read aggregates. */
      status = dist_variable_read(st.var, &read);
      if (aggregations[a] == DIST_AGGREGATION_SUM) {
        const float sum[2] = {3, 6};
        assert_int_equal(status, DIST_OK);
        dts_expect_f32(read, sum, 2);
      } else if (aggregations[a] == DIST_AGGREGATION_MEAN) {
        const float mean[2] = {1.5f, 3.0f};
        assert_int_equal(status, DIST_OK);
        dts_expect_f32(read, mean, 2);
      } else if (aggregations[a] == DIST_AGGREGATION_ONLY_FIRST_REPLICA) {
        assert_int_equal(status, DIST_OK);
        dts_expect_f32(read, copy0, 2);
      } else {
        /* NONE: the header says "NONE reads replica 0's copy"; TF raises (no ReduceOp for
         * NONE). Either is accepted here; see the report. */
        if (status == DIST_OK) {
          dts_expect_f32(read, copy0, 2);
        } else {
          assert_int_equal(status, DIST_INVALID_ARGUMENT);
          assert_non_null(strstr(dist_last_error_message(), "dist_variable_read"));
          assert_null(read);
        }
      }
      dist_value_destroy(read);
      dist_value_destroy(st.var);
    }
  }
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

static void test_sync_on_read_cross_replica_assign(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float zeros[2] = {0, 0};
  const float t_values[2] = {4.0f, 8.0f};
  const float half[2] = {2.0f, 4.0f};
  const float doubled[2] = {8.0f, 16.0f};
  dist_value_t* init = dts_f32(zeros, 2, NULL);
  dist_value_t* t = dts_f32(t_values, 2, NULL);
  dist_value_t* parts[2];
  dist_value_t* mirrored = NULL;
  dist_value_t* pr = NULL;
  dist_value_t* sum_var = NULL;
  dist_value_t* mean_var = NULL;
  dist_value_t* first_var = NULL;
  (void)state;
  parts[0] = dts_f32(t_values, 2, "CPU:0");
  parts[1] = dts_f32(t_values, 2, "CPU:1");
  DT_OK(dist_value_create_mirrored((const dist_value_t* const*)parts, 2, &mirrored));
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 2, &pr));
  DT_OK(dist_strategy_scope_enter(s));
  sum_var = create_variable(init, DIST_SYNC_ON_READ, DIST_AGGREGATION_SUM, NULL);
  mean_var = create_variable(init, DIST_SYNC_ON_READ, DIST_AGGREGATION_MEAN, NULL);
  first_var = create_variable(init, DIST_SYNC_ON_READ, DIST_AGGREGATION_ONLY_FIRST_REPLICA, NULL);
  /* SUM: value / num_replicas on every copy, so that the aggregated read gives value. */
  DT_OK(dist_variable_assign(sum_var, t));
  dts_expect_components_f32(sum_var, half, 2);
  dts_expect_variable_f32(sum_var, t_values, 2);
  /* MEAN (and the others): the value itself on every copy. */
  DT_OK(dist_variable_assign(mean_var, t));
  dts_expect_components_f32(mean_var, t_values, 2);
  dts_expect_variable_f32(mean_var, t_values, 2);
  DT_OK(dist_variable_assign(first_var, t));
  dts_expect_components_f32(first_var, t_values, 2);
  dts_expect_variable_f32(first_var, t_values, 2);
  /* assign_add / assign_sub in cross-replica context: an error for SUM (TF) ... */
  DT_ERR(dist_variable_assign_add(sum_var, t), DIST_INVALID_ARGUMENT,
         "dist_variable_assign_add", NULL);
  DT_ERR(dist_variable_assign_sub(sum_var, t), DIST_INVALID_ARGUMENT,
         "dist_variable_assign_sub", NULL);
  dts_expect_components_f32(sum_var, half, 2);
  /* ... applied to every copy for MEAN. */
  DT_OK(dist_variable_assign_add(mean_var, t));
  dts_expect_components_f32(mean_var, doubled, 2);
  dts_expect_variable_f32(mean_var, doubled, 2);
  DT_OK(dist_variable_assign_sub(mean_var, t));
  dts_expect_components_f32(mean_var, t_values, 2);
  /* Only a single value: Mirrored and PerReplica values are rejected. */
  DT_ERR(dist_variable_assign(mean_var, mirrored), DIST_INVALID_ARGUMENT, "dist_variable_assign",
         NULL);
  DT_ERR(dist_variable_assign(mean_var, pr), DIST_INVALID_ARGUMENT, "dist_variable_assign",
         NULL);
  DT_ERR(dist_variable_assign(sum_var, pr), DIST_INVALID_ARGUMENT, "dist_variable_assign",
         NULL);
  dts_expect_components_f32(mean_var, t_values, 2);
  dts_expect_components_f32(sum_var, half, 2);
  DT_OK(dist_strategy_scope_exit(s));
  dist_value_destroy(parts[0]);
  dist_value_destroy(parts[1]);
  dist_value_destroy(mirrored);
  dist_value_destroy(pr);
  dist_value_destroy(sum_var);
  dist_value_destroy(mean_var);
  dist_value_destroy(first_var);
  dist_value_destroy(init);
  dist_value_destroy(t);
  dist_strategy_destroy(s);
}

/* ---- Reads inside a replica function ---- */

typedef struct {
  dts_errors errors;
  const dist_value_t* vars[2];
  float values[2];
} read_state;

static dist_status_t read_in_replica(dist_context_t* context, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** results,
                                     int32_t num_results, void* user_data) {
  read_state* st = (read_state*)user_data;
  int32_t r = -1, i;
  const char* device = NULL;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_context_device(context, &device));
  for (i = 0; i < 2; ++i) {
    dist_value_t* read = NULL;
    const char* read_device = NULL;
    float got = 0.0f;
    RCALL(&st->errors, r, dist_variable_read(st->vars[i], &read));
    RCHECK(&st->errors, r, dts_get_f32(read, &got, 1) == 1 && got == st->values[i],
           "variable %d reads %g", i, (double)got);
    RCALL(&st->errors, r, dist_tensor_device(read, &read_device));
    /* The MirroredVariable's copy is this replica's. */
    RCHECK(&st->errors, r, i != 0 || strcmp(read_device, device) == 0, "read on %s",
           read_device);
    dist_value_destroy(read);
  }
  /* The variable argument itself (passed as it is) reads the same. */
  {
    dist_value_t* read = NULL;
    float got = 0.0f;
    RCALL(&st->errors, r, dist_variable_read(args[0], &read));
    RCHECK(&st->errors, r, dts_get_f32(read, &got, 1) == 1 && got == st->values[0], "arg read");
    dist_value_destroy(read);
  }
  return DIST_OK;
}

static void test_read_in_replica_function(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  dist_value_t* a = dts_f32_scalar(3.0f, NULL);
  dist_value_t* b = dts_f32_scalar(-4.0f, NULL);
  read_state st;
  const dist_value_t* args[1];
  (void)state;
  memset(&st, 0, sizeof(st));
  DT_OK(dist_strategy_scope_enter(s));
  st.vars[0] = create_variable(a, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN, NULL);
  DT_OK(dist_strategy_scope_exit(s));
  st.vars[1] = create_variable(b, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL); /* plain */
  st.values[0] = 3.0f;
  st.values[1] = -4.0f;
  args[0] = st.vars[0];
  DTS_RUN_OK(&st.errors, 3, dist_strategy_run(s, read_in_replica, &st, args, 1, NULL, 0));
  dist_value_destroy((dist_value_t*)st.vars[0]);
  dist_value_destroy((dist_value_t*)st.vars[1]);
  dist_value_destroy(a);
  dist_value_destroy(b);
  dist_strategy_destroy(s);
}

/* "Thread-safety: safe; assignments to one variable are serialised": concurrent
 * assign_add calls from several threads lose no update. */
#define N_ADDERS 4
#define N_ADDS 200

typedef struct {
  dist_value_t* var;
  int failures;
} adder_state;

static void* add_many(void* arg) {
  adder_state* st = (adder_state*)arg;
  const float one = 1.0f;
  dist_value_t* t = dts_make_f32(&one, -1, NULL);
  int i;
  if (t == NULL) {
    st->failures += 1;
    return NULL;
  }
  for (i = 0; i < N_ADDS; ++i) {
    if (dist_variable_assign_add(st->var, t) != DIST_OK) st->failures += 1;
  }
  dist_value_destroy(t);
  return NULL;
}

static void test_concurrent_assignments(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_value_t* zero = dts_f32_scalar(0.0f, NULL);
  dist_value_t* vars[2];
  int v, i;
  (void)state;
  vars[0] = create_variable(zero, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL); /* plain */
  DT_OK(dist_strategy_scope_enter(s));
  vars[1] = create_variable(zero, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL);
  DT_OK(dist_strategy_scope_exit(s));
  for (v = 0; v < 2; ++v) {
    adder_state st[N_ADDERS];
    pthread_t threads[N_ADDERS];
    const float expected = (float)(N_ADDERS * N_ADDS);
    for (i = 0; i < N_ADDERS; ++i) {
      st[i].var = vars[v];
      st[i].failures = 0;
      assert_int_equal(pthread_create(&threads[i], NULL, add_many, &st[i]), 0);
    }
    for (i = 0; i < N_ADDERS; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
    for (i = 0; i < N_ADDERS; ++i) assert_int_equal(st[i].failures, 0);
    dts_expect_components_f32(vars[v], &expected, -1);
    dist_value_destroy(vars[v]);
  }
  dist_value_destroy(zero);
  dist_strategy_destroy(s);
}

/* TF refuses an integer variable with MEAN aggregation at creation
 * (tf.Variable(1, aggregation=tf.VariableAggregation.MEAN) under MirroredStrategy raises);
 * the refusal changes nothing: the next unnamed variable is still "Variable". */
static void test_integer_mean_variable_refused(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const int64_t one = 1;
  const int32_t v = 3;
  const dist_dtype_t dtypes[3] = {DIST_INT32, DIST_INT64, DIST_UINT8};
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  const char* name = NULL;
  int i;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  for (i = 0; i < 3; ++i) {
    const int64_t zero[1] = {0};
    dist_value_t* init = dts_tensor(dtypes[i], &one, 1, zero, "CPU:0");
    DT_ERR(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN, "counter", &out),
           DIST_INVALID_ARGUMENT, "dist_variable_create", "MEAN");
    assert_null(out);
    assert_non_null(strstr(dist_last_error_message(), "'counter'"));
    DT_ERR(dist_variable_create(init, DIST_SYNC_ON_READ, DIST_AGGREGATION_MEAN, NULL, &out),
           DIST_INVALID_ARGUMENT, "dist_variable_create", "floating-point");
    assert_null(out);
    dist_value_destroy(init);
  }
  {
    /* SUM is fine for integers, and the name counter did not move. */
    dist_value_t* init = dts_tensor(DIST_INT32, &one, 1, &v, "CPU:0");
    DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &out));
    DT_OK(dist_variable_name(out, &name));
    assert_string_equal(name, "Variable");
    dist_value_destroy(out);
    dist_value_destroy(init);
  }
  DT_OK(dist_strategy_scope_exit(s));
  dist_strategy_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_creation_under_mirrored),
      cmocka_unit_test(test_creation_single_copy),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_creation_rejects_misuse),
      cmocka_unit_test(test_creation_in_replica_context),
      cmocka_unit_test(test_accessors_reject_misuse),
      cmocka_unit_test(test_replica_assign_mirrored),
      cmocka_unit_test(test_replica_assign_central_storage),
      cmocka_unit_test(test_replica_assign_one_device),
      cmocka_unit_test(test_replica_assign_errors),
      cmocka_unit_test(test_cross_replica_assign_mirrored),
      cmocka_unit_test(test_cross_replica_assign_mismatch),
      cmocka_unit_test(test_plain_variable),
      cmocka_unit_test(test_sync_on_read),
      cmocka_unit_test(test_sync_on_read_cross_replica_assign),
      cmocka_unit_test(test_read_in_replica_function),
      cmocka_unit_test(test_concurrent_assignments),
      cmocka_unit_test(test_integer_mean_variable_refused),
  };
  return cmocka_run_group_tests_name("variables", tests, setup, NULL);
}
