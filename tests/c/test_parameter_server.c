/* Tests for parameter_server.h in local mode (no cluster): the strategy's replicas and
 * parameter device, variables created in its scope, assignments in replica context
 * aggregated within the worker and applied once, registered updates (the built-in "sgd"
 * and "adam", whose results are computed here from TF's formulas), partitioned variables
 * read and written as one, checkpoints, and misuse. The multi-process behaviour (ps
 * tasks over gRPC) is in tests/multiworker. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  unsetenv("TF_CONFIG");
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

/* ---- The strategy ---- */

static void test_local_mode_properties(void** state) {
  dist_strategy_t* s = dts_local_parameter_server(2, NULL);
  dist_strategy_kind_t kind = 0;
  int32_t count = 0;
  const char* device = NULL;
  (void)state;
  DT_OK(dist_strategy_kind(s, &kind));
  assert_int_equal(kind, DIST_STRATEGY_PARAMETER_SERVER);
  assert_int_equal(dts_num_replicas(s), 2);
  DT_OK(dist_strategy_parameter_device_count(s, &count));
  assert_int_equal(count, 1);
  DT_OK(dist_strategy_parameter_device(s, 0, &device));
  assert_string_equal(device, "/device:CPU:0");
  dist_strategy_destroy(s);
}

static void test_variable_lives_on_the_parameter_device(void** state) {
  const float init[3] = {1.0f, 2.0f, 3.0f};
  dist_strategy_t* s = dts_local_parameter_server(2, NULL);
  dist_value_t* v = dts_variable_f32(s, init, 3, DIST_AGGREGATION_SUM, "w");
  const char* device = NULL;
  int32_t count = 0;
  int32_t task = -1;
  (void)state;
  assert_int_equal(dts_kind(v), DIST_VALUE_VARIABLE);
  DT_OK(dist_variable_device_count(v, &count));
  assert_int_equal(count, 1);
  DT_OK(dist_variable_device(v, 0, &device));
  assert_string_equal(device, "/device:CPU:0");
  DT_OK(dist_variable_num_shards(v, &count));
  assert_int_equal(count, 1);
  DT_OK(dist_variable_shard_task(v, 0, &task));
  assert_int_equal(task, 0);
  dts_expect_variable_f32(v, init, 3);
  dist_value_destroy(v);
  dist_strategy_destroy(s);
}

static void test_the_same_name_is_the_same_variable(void** state) {
  /* TF's get_variable: creating "w" again gives the same variable (its current value, not
   * the new initial one); another shape under that name is refused naming both. */
  const float init[2] = {1.0f, 2.0f};
  const float other_init[2] = {7.0f, 7.0f};
  const float three[3] = {1.0f, 2.0f, 3.0f};
  const float added[2] = {2.0f, 3.0f};
  char path[] = "/tmp/dist_ps_same_XXXXXX";
  int fd = mkstemp(path);
  dist_strategy_t* s = dts_local_parameter_server(1, NULL);
  dist_value_t* a = dts_variable_f32(s, init, 2, DIST_AGGREGATION_SUM, "w");
  dist_value_t* b = dts_variable_f32(s, other_init, 2, DIST_AGGREGATION_SUM, "w");
  const float delta[2] = {1.0f, 1.0f};
  dist_value_t* ones = dts_f32(delta, 2, NULL);
  dist_value_t* wrong = dts_f32(three, 3, NULL);
  dist_value_t* refused = DT_SENTINEL_PTR;
  const char* name = NULL;
  (void)state;
  assert_true(fd >= 0);
  close(fd);
  DT_OK(dist_variable_name(b, &name));
  assert_string_equal(name, "w");
  dts_expect_variable_f32(b, init, 2);
  DT_OK(dist_variable_assign_add(a, ones));
  dts_expect_variable_f32(b, added, 2);
  DT_OK(dist_strategy_scope_enter(s));
  DT_ERR(dist_variable_create(wrong, DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, "w", &refused),
         DIST_INVALID_ARGUMENT, "dist_variable_create", "[3]");
  DT_OK(dist_strategy_scope_exit(s));
  assert_null(refused);
  /* Two handles, one variable: the file holds it once. */
  DT_OK(dist_strategy_save_variables(s, path));
  DT_OK(dist_strategy_restore_variables(s, path));
  dts_expect_variable_f32(a, added, 2);
  unlink(path);
  dist_value_destroy(wrong);
  dist_value_destroy(ones);
  dist_value_destroy(a);
  dist_value_destroy(b);
  dist_strategy_destroy(s);
}

/* ---- Assignments in replica context: aggregated in the worker, applied once ---- */

typedef struct {
  dist_value_t* var;
  int use_apply_update; /* 0: assign_add; 1: apply_update("sgd") */
  dts_errors errors;
} replica_state;

/* Replica r adds (or, through sgd with learning rate 1, subtracts) r + 1 per element. */
static dist_status_t add_in_replica(dist_context_t* context, const dist_value_t* const* args,
                                    int32_t num_args, dist_value_t** results, int32_t num_results,
                                    void* user_data) {
  replica_state* st = (replica_state*)user_data;
  int32_t r = -1;
  float delta[2];
  dist_value_t* t = NULL;
  dist_status_t status;
  const char* lr_name = "learning_rate";
  const double lr = 1.0;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  delta[0] = delta[1] = (float)(r + 1);
  t = dts_f32(delta, 2, NULL);
  /* The tensor is released before a failure is recorded, so a refused update leaks nothing. */
  if (st->use_apply_update) {
    status = dist_variable_apply_update(st->var, "sgd", (const dist_value_t* const*)&t, 1, &lr_name, &lr, 1);
  } else {
    status = dist_variable_assign_add(st->var, t);
  }
  dist_value_destroy(t);
  RCALL(&st->errors, r, status);
  return DIST_OK;
}

static void run_adds(dist_strategy_t* s, dist_value_t* var, int use_apply_update) {
  replica_state st;
  memset(&st, 0, sizeof(st));
  st.var = var;
  st.use_apply_update = use_apply_update;
  DTS_RUN_OK(&st.errors, dts_num_replicas(s),
             dist_strategy_run(s, add_in_replica, &st, NULL, 0, NULL, 0));
}

static void test_replica_assign_add_by_aggregation(void** state) {
  /* Three replicas add 1, 2 and 3: SUM sends 6, MEAN 2, ONLY_FIRST_REPLICA 1. */
  const float init[2] = {10.0f, 20.0f};
  const dist_variable_aggregation_t aggregations[3] = {
      DIST_AGGREGATION_SUM, DIST_AGGREGATION_MEAN, DIST_AGGREGATION_ONLY_FIRST_REPLICA};
  const float added[3] = {6.0f, 2.0f, 1.0f};
  int i;
  (void)state;
  for (i = 0; i < 3; ++i) {
    dist_strategy_t* s = dts_local_parameter_server(3, NULL);
    dist_value_t* v = dts_variable_f32(s, init, 2, aggregations[i], "counter");
    float expected[2];
    run_adds(s, v, 0);
    run_adds(s, v, 0);
    expected[0] = init[0] + 2 * added[i];
    expected[1] = init[1] + 2 * added[i];
    dts_expect_variable_f32(v, expected, 2);
    dist_value_destroy(v);
    dist_strategy_destroy(s);
  }
}

static void test_replica_apply_update_sgd(void** state) {
  /* sgd: w -= learning_rate * gradient, the gradient averaged over 2 replicas (MEAN):
   * (1 + 2) / 2 = 1.5 per step. */
  const float init[2] = {4.0f, -4.0f};
  const float expected[2] = {4.0f - 1.5f, -4.0f - 1.5f};
  dist_strategy_t* s = dts_local_parameter_server(2, NULL);
  dist_value_t* v = dts_variable_f32(s, init, 2, DIST_AGGREGATION_MEAN, "w");
  (void)state;
  run_adds(s, v, 1);
  dts_expect_variable_f32(v, expected, 2);
  dist_value_destroy(v);
  dist_strategy_destroy(s);
}

static void test_replica_assign_without_aggregation_fails(void** state) {
  const float init[2] = {0.0f, 0.0f};
  dist_strategy_t* s = dts_local_parameter_server(2, NULL);
  dist_value_t* v = dts_variable_f32(s, init, 2, DIST_AGGREGATION_NONE, "none");
  replica_state st;
  dist_status_t status;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.var = v;
  status = dist_strategy_run(s, add_in_replica, &st, NULL, 0, NULL, 0);
  assert_int_equal(status, DIST_INTERNAL); /* the replicas recorded the refusal */
  assert_non_null(strstr(st.errors.message[0], "aggregation NONE"));
  dts_expect_variable_f32(v, init, 2);
  dist_value_destroy(v);
  dist_strategy_destroy(s);
}

/* ---- Cross-replica updates ---- */

static void test_cross_replica_adam(void** state) {
  /* One Adam step from zero slots (TF's formula, Keras defaults beta_1 0.9, beta_2 0.999,
   * epsilon 1e-7; the first step is step 1): m = 0.1 g, v = 0.001 g^2, lr_t = lr * sqrt(1 - 0.999) / (1 - 0.9),
   * w -= lr_t * m / (sqrt(v) + epsilon). */
  const float init[2] = {1.0f, 2.0f};
  const float gradient[2] = {0.5f, -2.0f};
  const char* names[2] = {"learning_rate", "step"};
  const double values[2] = {0.01, 1.0};
  dist_strategy_t* s = dts_local_parameter_server(1, NULL);
  dist_value_t* v = dts_variable_f32(s, init, 2, DIST_AGGREGATION_SUM, "adam_w");
  dist_value_t* g = dts_f32(gradient, 2, NULL);
  float expected[2];
  int j;
  (void)state;
  for (j = 0; j < 2; ++j) {
    const double m = 0.1 * gradient[j];
    const double vv = 0.001 * gradient[j] * gradient[j];
    const double lr_t = 0.01 * sqrt(1.0 - 0.999) / (1.0 - 0.9);
    expected[j] = (float)(init[j] - lr_t * m / (sqrt(vv) + 1e-7));
  }
  DT_OK(dist_variable_apply_update(v, "adam", (const dist_value_t* const*)&g, 1, names, values, 2));
  {
    dist_value_t* read = NULL;
    float got[2];
    DT_OK(dist_variable_read(v, &read));
    dts_read_f32(read, got, 2);
    for (j = 0; j < 2; ++j) assert_true(fabsf(got[j] - expected[j]) <= 1e-6f * fabsf(expected[j]) + 1e-7f);
    dist_value_destroy(read);
  }
  dist_value_destroy(g);
  dist_value_destroy(v);
  dist_strategy_destroy(s);
}

static void test_cross_replica_assign_and_sub(void** state) {
  const float init[2] = {1.0f, 1.0f};
  const float value[2] = {5.0f, 7.0f};
  const float after_sub[2] = {0.0f, 0.0f};
  dist_strategy_t* s = dts_local_parameter_server(2, NULL);
  dist_value_t* v = dts_variable_f32(s, init, 2, DIST_AGGREGATION_SUM, "w");
  dist_value_t* t = dts_f32(value, 2, NULL);
  (void)state;
  DT_OK(dist_variable_assign(v, t));
  dts_expect_variable_f32(v, value, 2);
  DT_OK(dist_variable_assign_sub(v, t));
  dts_expect_variable_f32(v, after_sub, 2);
  dist_value_destroy(t);
  dist_value_destroy(v);
  dist_strategy_destroy(s);
}

/* ---- Partitioned variables ---- */

static void test_fixed_shards_read_and_write_as_one(void** state) {
  /* A [5, 2] variable in 3 shards along axis 0: rows 2, 2, 1 (the first 5 % 3 one larger). */
  float init[10];
  float expected[10];
  int64_t dims[2] = {5, 2};
  dist_parameter_server_options_t* options = NULL;
  dist_strategy_t* s = NULL;
  dist_value_t* initial = NULL;
  dist_value_t* v = NULL;
  dist_value_t* delta = NULL;
  int32_t shards = 0;
  int32_t task = -1;
  int i;
  (void)state;
  for (i = 0; i < 10; ++i) {
    init[i] = (float)i;
    expected[i] = (float)(2 * i);
  }
  DT_OK(dist_parameter_server_options_create(&options));
  DT_OK(dist_parameter_server_options_set_fixed_shards(options, 3, 0));
  s = dts_local_parameter_server(1, options);
  dist_parameter_server_options_destroy(options);
  initial = dts_tensor(DIST_FLOAT32, dims, 2, init, NULL);
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(initial, DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, "emb", &v));
  DT_OK(dist_strategy_scope_exit(s));
  DT_OK(dist_variable_num_shards(v, &shards));
  assert_int_equal(shards, 3);
  for (i = 0; i < 3; ++i) {
    DT_OK(dist_variable_shard_task(v, i, &task));
    assert_int_equal(task, 0); /* one parameter device in local mode */
  }
  dts_expect_variable_f32(v, init, 10);
  delta = dts_tensor(DIST_FLOAT32, dims, 2, init, NULL);
  DT_OK(dist_variable_assign_add(v, delta));
  dts_expect_variable_f32(v, expected, 10);
  DT_ERR(dist_variable_shard_task(v, 3, &task), DIST_OUT_OF_RANGE, "dist_variable_shard_task", "3");
  dist_value_destroy(delta);
  dist_value_destroy(initial);
  dist_value_destroy(v);
  dist_strategy_destroy(s);
}

static void test_checkpoint_round_trip_of_a_sharded_variable(void** state) {
  float init[6] = {1, 2, 3, 4, 5, 6};
  const float zeros[6] = {0, 0, 0, 0, 0, 0};
  int64_t dims[2] = {3, 2};
  char path[] = "/tmp/dist_ps_ckpt_XXXXXX";
  int fd = mkstemp(path);
  dist_parameter_server_options_t* options = NULL;
  dist_strategy_t* s = NULL;
  dist_value_t* initial = NULL;
  dist_value_t* zero = NULL;
  dist_value_t* v = NULL;
  (void)state;
  assert_true(fd >= 0);
  close(fd);
  DT_OK(dist_parameter_server_options_create(&options));
  DT_OK(dist_parameter_server_options_set_fixed_shards(options, 2, 0));
  s = dts_local_parameter_server(1, options);
  dist_parameter_server_options_destroy(options);
  initial = dts_tensor(DIST_FLOAT32, dims, 2, init, NULL);
  zero = dts_tensor(DIST_FLOAT32, dims, 2, zeros, NULL);
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(initial, DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, "table", &v));
  DT_OK(dist_strategy_scope_exit(s));
  DT_OK(dist_strategy_save_variables(s, path));
  DT_OK(dist_variable_assign(v, zero));
  dts_expect_variable_f32(v, zeros, 6);
  DT_OK(dist_strategy_restore_variables(s, path));
  dts_expect_variable_f32(v, init, 6);
  unlink(path);
  dist_value_destroy(zero);
  dist_value_destroy(initial);
  dist_value_destroy(v);
  dist_strategy_destroy(s);
}

/* Adam's step `step` on a [3] variable, computed here from TF's formula. */
static void adam_by_hand(double* w, double* m, double* v, const float* g, int step) {
  const double lr_t = 0.01 * sqrt(1.0 - pow(0.999, step)) / (1.0 - pow(0.9, step));
  int j;
  for (j = 0; j < 3; ++j) {
    m[j] = 0.9 * m[j] + 0.1 * g[j];
    v[j] = 0.999 * v[j] + 0.001 * g[j] * g[j];
    w[j] -= lr_t * m[j] / (sqrt(v[j]) + 1e-7);
  }
}

static void adam_step(dist_value_t* variable, const float* gradient, int step) {
  const char* names[2] = {"learning_rate", "step"};
  double values[2];
  dist_value_t* g = dts_f32(gradient, 3, NULL);
  values[0] = 0.01;
  values[1] = step;
  DT_OK(dist_variable_apply_update(variable, "adam", (const dist_value_t* const*)&g, 1, names, values, 2));
  dist_value_destroy(g);
}

static dist_strategy_t* sharded_ps(int64_t shards) {
  dist_parameter_server_options_t* options = NULL;
  dist_strategy_t* s = NULL;
  DT_OK(dist_parameter_server_options_create(&options));
  DT_OK(dist_parameter_server_options_set_fixed_shards(options, shards, 0));
  s = dts_local_parameter_server(1, options);
  dist_parameter_server_options_destroy(options);
  return s;
}

static void test_checkpoint_keeps_optimizer_slots(void** state) {
  /* Adam step 1, save; a fresh strategy (fresh parameter server, no slots) restores and
   * takes step 2, which must continue from the saved m and v. */
  const float init[3] = {1.0f, -2.0f, 3.0f};
  const float junk[3] = {9.0f, 9.0f, 9.0f};
  const float g1[3] = {0.5f, -1.0f, 2.0f};
  const float g2[3] = {-0.25f, 1.5f, 0.75f};
  double w[3], m[3] = {0, 0, 0}, v[3] = {0, 0, 0};
  float expected[3];
  char path[] = "/tmp/dist_ps_slots_XXXXXX";
  int fd = mkstemp(path);
  dist_strategy_t* first = sharded_ps(2);
  dist_strategy_t* fresh = sharded_ps(2);
  dist_value_t* a = dts_variable_f32(first, init, 3, DIST_AGGREGATION_SUM, "table");
  dist_value_t* b = dts_variable_f32(fresh, junk, 3, DIST_AGGREGATION_SUM, "table");
  dist_value_t* read = NULL;
  float got[3];
  int j;
  (void)state;
  assert_true(fd >= 0);
  close(fd);
  for (j = 0; j < 3; ++j) w[j] = init[j];
  adam_step(a, g1, 1);
  adam_by_hand(w, m, v, g1, 1);
  DT_OK(dist_strategy_save_variables(first, path));
  DT_OK(dist_strategy_restore_variables(fresh, path));
  adam_step(b, g2, 2);
  adam_by_hand(w, m, v, g2, 2);
  for (j = 0; j < 3; ++j) expected[j] = (float)w[j];
  DT_OK(dist_variable_read(b, &read));
  dts_read_f32(read, got, 3);
  for (j = 0; j < 3; ++j) assert_true(fabsf(got[j] - expected[j]) <= 1e-5f * fabsf(expected[j]) + 1e-6f);
  unlink(path);
  dist_value_destroy(read);
  dist_value_destroy(a);
  dist_value_destroy(b);
  dist_strategy_destroy(first);
  dist_strategy_destroy(fresh);
}

/* ---- Misuse ---- */

static void test_create_misuse(void** state) {
  dist_strategy_t* s = DT_SENTINEL_PTR;
  dist_value_t* not_options = dts_f32_scalar(1.0f, NULL);
  (void)state;
  DT_ERR(dist_strategy_create_parameter_server(NULL, NULL, NULL, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_parameter_server", "out");
  DT_ERR(dist_strategy_create_parameter_server(NULL, NULL, (const dist_parameter_server_options_t*)not_options, &s),
         DIST_INVALID_ARGUMENT, "dist_strategy_create_parameter_server", "options");
  assert_null(s);
  dist_value_destroy(not_options);
}

static void test_apply_update_misuse(void** state) {
  const float init[2] = {1.0f, 2.0f};
  const float other[3] = {1.0f, 2.0f, 3.0f};
  dist_strategy_t* s = dts_local_parameter_server(1, NULL);
  dist_strategy_t* mirrored = dts_mirrored(2);
  dist_value_t* v = dts_variable_f32(s, init, 2, DIST_AGGREGATION_SUM, "w");
  dist_value_t* g = dts_f32(init, 2, NULL);
  dist_value_t* wrong_shape = dts_f32(other, 3, NULL);
  dist_value_t* mirrored_var = NULL;
  const char* lr_name[2] = {"learning_rate", "learning_rate"};
  const char* typo[1] = {"learnig_rate"};
  const double lr[2] = {0.1, 0.1};
  const dist_value_t* args[17];
  int32_t count = -1;
  int i;
  (void)state;
  for (i = 0; i < 17; ++i) args[i] = g;
  DT_OK(dist_strategy_scope_enter(mirrored));
  DT_OK(dist_variable_create(g, DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, "m", &mirrored_var));
  DT_OK(dist_strategy_scope_exit(mirrored));

  DT_ERR(dist_variable_apply_update(NULL, "sgd", args, 1, lr_name, lr, 1), DIST_INVALID_ARGUMENT,
         "dist_variable_apply_update", "variable");
  DT_ERR(dist_variable_apply_update(v, NULL, args, 1, lr_name, lr, 1), DIST_INVALID_ARGUMENT,
         "dist_variable_apply_update", "function");
  DT_ERR(dist_variable_apply_update(v, "", args, 1, lr_name, lr, 1), DIST_INVALID_ARGUMENT,
         "dist_variable_apply_update", "function");
  DT_ERR(dist_variable_apply_update(v, "no_such_update", args, 1, NULL, NULL, 0), DIST_NOT_FOUND,
         "dist_variable_apply_update", "no_such_update");
  DT_ERR(dist_variable_apply_update(v, "sgd", args, 17, lr_name, lr, 1), DIST_INVALID_ARGUMENT,
         "dist_variable_apply_update", "num_args");
  DT_ERR(dist_variable_apply_update(v, "sgd", NULL, 1, lr_name, lr, 1), DIST_INVALID_ARGUMENT,
         "dist_variable_apply_update", "args");
  DT_ERR(dist_variable_apply_update(v, "sgd", args, 1, lr_name, lr, 2), DIST_INVALID_ARGUMENT,
         "dist_variable_apply_update", "repeats");
  DT_ERR(dist_variable_apply_update(v, "sgd", args, 1, typo, lr, 1), DIST_INVALID_ARGUMENT,
         "dist_variable_apply_update", "learnig_rate");
  DT_ERR(dist_variable_apply_update(v, "sgd", args, 1, lr_name, NULL, 1), DIST_INVALID_ARGUMENT,
         "dist_variable_apply_update", "hyperparameter_values");
  DT_ERR(dist_variable_apply_update(v, "sgd", args, 1, lr_name, lr, -1), DIST_INVALID_ARGUMENT,
         "dist_variable_apply_update", "num_hyperparameters");
  args[0] = wrong_shape;
  DT_ERR(dist_variable_apply_update(v, "sgd", args, 1, lr_name, lr, 1), DIST_INVALID_ARGUMENT,
         "dist_variable_apply_update", "args[0]");
  args[0] = g;
  DT_ERR(dist_variable_apply_update(mirrored_var, "sgd", args, 1, lr_name, lr, 1),
         DIST_INVALID_ARGUMENT, "dist_variable_apply_update", "ParameterServerStrategy");
  DT_ERR(dist_variable_apply_update(g, "sgd", args, 1, lr_name, lr, 1), DIST_INVALID_ARGUMENT,
         "dist_variable_apply_update", "not a variable");
  dts_expect_variable_f32(v, init, 2); /* nothing changed */

  DT_ERR(dist_variable_num_shards(mirrored_var, &count), DIST_INVALID_ARGUMENT,
         "dist_variable_num_shards", "ParameterServerStrategy");
  assert_int_equal(count, 0);
  DT_ERR(dist_variable_num_shards(v, NULL), DIST_INVALID_ARGUMENT, "dist_variable_num_shards",
         "out_count");
  DT_ERR(dist_variable_shard_task(v, -1, &count), DIST_OUT_OF_RANGE, "dist_variable_shard_task",
         "-1");
  DT_ERR(dist_variable_shard_task(NULL, 0, &count), DIST_INVALID_ARGUMENT,
         "dist_variable_shard_task", "variable");

  dist_value_destroy(mirrored_var);
  dist_value_destroy(wrong_shape);
  dist_value_destroy(g);
  dist_value_destroy(v);
  dist_strategy_destroy(mirrored);
  dist_strategy_destroy(s);
}

static void test_cluster_without_ps_task_is_refused(void** state) {
  dist_cluster_t* cluster = NULL;
  dist_strategy_t* s = DT_SENTINEL_PTR;
  (void)state;
  DT_OK(dist_cluster_create(&cluster));
  DT_OK(dist_cluster_add_task(cluster, "chief", 0, "localhost:1"));
  DT_OK(dist_cluster_set_task(cluster, "chief", 0));
  DT_ERR(dist_strategy_create_parameter_server(cluster, NULL, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_parameter_server", "\"ps\"");
  assert_null(s);
  dist_cluster_destroy(cluster);
}

static void test_ps_task_is_refused(void** state) {
  dist_cluster_t* cluster = NULL;
  dist_strategy_t* s = DT_SENTINEL_PTR;
  (void)state;
  DT_OK(dist_cluster_create(&cluster));
  DT_OK(dist_cluster_add_task(cluster, "chief", 0, "localhost:1"));
  DT_OK(dist_cluster_add_task(cluster, "ps", 0, "localhost:2"));
  DT_OK(dist_cluster_set_task(cluster, "ps", 0));
  DT_ERR(dist_strategy_create_parameter_server(cluster, NULL, NULL, &s), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_parameter_server", "dist_server_create");
  assert_null(s);
  dist_cluster_destroy(cluster);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_local_mode_properties),
      cmocka_unit_test(test_variable_lives_on_the_parameter_device),
      cmocka_unit_test(test_the_same_name_is_the_same_variable),
      cmocka_unit_test(test_replica_assign_add_by_aggregation),
      cmocka_unit_test(test_replica_apply_update_sgd),
      cmocka_unit_test(test_replica_assign_without_aggregation_fails),
      cmocka_unit_test(test_cross_replica_adam),
      cmocka_unit_test(test_cross_replica_assign_and_sub),
      cmocka_unit_test(test_fixed_shards_read_and_write_as_one),
      cmocka_unit_test(test_checkpoint_round_trip_of_a_sharded_variable),
      cmocka_unit_test(test_checkpoint_keeps_optimizer_slots),
      cmocka_unit_test(test_create_misuse),
      cmocka_unit_test(test_apply_update_misuse),
      cmocka_unit_test(test_cluster_without_ps_task_is_refused),
      cmocka_unit_test(test_ps_task_is_refused),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
