/* Tests for the batch calls, dist_variables_read (variable.h) and
 * dist_variables_apply_update (parameter_server.h), in local mode: values read in one batch
 * equal those read one by one (sharded variables, variables of other strategies and
 * repeats mixed in), sgd on several variables at once against w - lr * g computed here,
 * the replica-context aggregation of a batch (SUM and MEAN variables in one call), a batch
 * whose middle update fails (the others stay applied, the error names it), and misuse:
 * every refusal leaves outs NULL and the variables unchanged. The batches over gRPC (one
 * call per ps task) are in tests/core/variable_service_test.cc and the demo's
 * ParameterServer run. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>

#include "dist_strategy_test.h"

#define READ "dist_variables_read"
#define APPLY "dist_variables_apply_update"

static int setup(void** state) {
  (void)state;
  unsetenv("TF_CONFIG");
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

/* A local ParameterServerStrategy whose variables of 2 or more rows are cut in 2 shards. */
static dist_strategy_t* sharded_strategy(int32_t replicas) {
  dist_parameter_server_options_t* options = NULL;
  dist_strategy_t* s = NULL;
  DT_OK(dist_parameter_server_options_create(&options));
  DT_OK(dist_parameter_server_options_set_fixed_shards(options, 2, 0));
  s = dts_local_parameter_server(replicas, options);
  dist_parameter_server_options_destroy(options);
  return s;
}

static int32_t shards_of(const dist_value_t* v) {
  int32_t count = -1;
  DT_OK(dist_variable_num_shards(v, &count));
  return count;
}

static void test_a_batch_reads_what_single_reads_read(void** state) {
  const float w0[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float b0[2] = {-1.0f, 0.5f};
  const float c0[1] = {9.0f};
  const float m0[3] = {7.0f, 8.0f, 9.0f};
  dist_strategy_t* ps = sharded_strategy(1);
  dist_strategy_t* mirrored = dts_mirrored(2);
  dist_value_t* w = dts_variable_f32(ps, w0, 4, DIST_AGGREGATION_SUM, "w");
  dist_value_t* b = dts_variable_f32(ps, b0, 2, DIST_AGGREGATION_SUM, "b");
  dist_value_t* c = dts_variable_f32(ps, c0, 1, DIST_AGGREGATION_SUM, "c");
  dist_value_t* m = dts_variable_f32(mirrored, m0, 3, DIST_AGGREGATION_MEAN, "m");
  const dist_value_t* batch[5];
  dist_value_t* outs[5];
  int i;
  (void)state;
  assert_int_equal(shards_of(w), 2);
  assert_int_equal(shards_of(b), 2);
  batch[0] = w, batch[1] = m, batch[2] = b, batch[3] = w, batch[4] = c;
  DT_OK(dist_variables_read(batch, 5, outs));
  dts_expect_f32(outs[0], w0, 4);
  dts_expect_f32(outs[1], m0, 3);
  dts_expect_f32(outs[2], b0, 2);
  dts_expect_f32(outs[3], w0, 4);
  dts_expect_f32(outs[4], c0, 1);
  /* Each out is a tensor of its own (a snapshot): writing one changes neither the
   * variable nor the repeat. */
  {
    void* data = NULL;
    DT_OK(dist_tensor_data(outs[0], &data));
    ((float*)data)[0] = 100.0f;
    dts_expect_f32(outs[3], w0, 4);
    dts_expect_variable_f32(w, w0, 4);
  }
  for (i = 0; i < 5; ++i) dist_value_destroy(outs[i]);
  /* After an update the batch sees it, as a single read does. */
  {
    const float delta[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    const float w1[4] = {1.5f, 2.5f, 3.5f, 4.5f};
    dist_value_t* d = dts_f32(delta, 4, NULL);
    DT_OK(dist_variable_assign_add(w, d));
    dist_value_destroy(d);
    DT_OK(dist_variables_read(batch, 1, outs));
    dts_expect_f32(outs[0], w1, 4);
    dts_expect_variable_f32(w, w1, 4);
    dist_value_destroy(outs[0]);
  }
  dist_value_destroy(w);
  dist_value_destroy(b);
  dist_value_destroy(c);
  dist_value_destroy(m);
  dist_strategy_destroy(mirrored);
  dist_strategy_destroy(ps);
}

static void test_sgd_on_several_variables_at_once(void** state) {
  const float w0[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  const float b0[1] = {10.0f};
  const float gw[4] = {0.5f, -1.0f, 2.0f, 4.0f};
  const float gb[1] = {8.0f};
  const double lr = 0.25;
  const char* lr_name = "learning_rate";
  float w1[4], b1[1];
  dist_strategy_t* s = sharded_strategy(1);
  dist_value_t* w = dts_variable_f32(s, w0, 4, DIST_AGGREGATION_SUM, "w");
  dist_value_t* b = dts_variable_f32(s, b0, 1, DIST_AGGREGATION_SUM, "b");
  dist_value_t* variables[2];
  const dist_value_t* args[2];
  int i;
  (void)state;
  variables[0] = w, variables[1] = b;
  args[0] = dts_f32(gw, 4, NULL);
  args[1] = dts_f32(gb, 1, NULL);
  DT_OK(dist_variables_apply_update(variables, 2, "sgd", args, 1, &lr_name, &lr, 1));
  for (i = 0; i < 4; ++i) w1[i] = w0[i] - (float)lr * gw[i];
  b1[0] = b0[0] - (float)lr * gb[0];
  dts_expect_variable_f32(w, w1, 4);
  dts_expect_variable_f32(b, b1, 1);
  dist_value_destroy((dist_value_t*)args[0]);
  dist_value_destroy((dist_value_t*)args[1]);
  dist_value_destroy(w);
  dist_value_destroy(b);
  dist_strategy_destroy(s);
}

/* An update function that adds its argument, and fails for a variable whose first element
 * is negative (to fail one entry of a batch). */
static dist_status_t add_unless_negative(dist_value_t* const* variables, int32_t num_variables,
                                         const dist_value_t* const* args, int32_t num_args,
                                         const char* const* names, const double* values,
                                         int32_t num_hyperparameters, void* user_data) {
  void* target = NULL;
  void* delta = NULL;
  int64_t n = 0, i;
  (void)num_variables, (void)num_args, (void)names, (void)values, (void)num_hyperparameters;
  (void)user_data;
  if (dist_tensor_data(variables[0], &target) != DIST_OK) return DIST_INTERNAL;
  if (dist_tensor_data((dist_value_t*)args[0], &delta) != DIST_OK) return DIST_INTERNAL;
  if (dist_tensor_num_elements(variables[0], &n) != DIST_OK) return DIST_INTERNAL;
  if (n > 0 && ((float*)target)[0] < 0.0f) return DIST_FAILED_PRECONDITION;
  for (i = 0; i < n; ++i) ((float*)target)[i] += ((const float*)delta)[i];
  return DIST_OK;
}

static void test_a_failed_update_leaves_the_others_applied(void** state) {
  const float a0[1] = {1.0f}, bad0[1] = {-5.0f}, c0[1] = {2.0f}, one[1] = {1.0f};
  const float a1[1] = {2.0f}, c1[1] = {3.0f};
  dist_strategy_t* s = sharded_strategy(1);
  dist_value_t* a = dts_variable_f32(s, a0, 1, DIST_AGGREGATION_SUM, "a");
  dist_value_t* bad = dts_variable_f32(s, bad0, 1, DIST_AGGREGATION_SUM, "bad");
  dist_value_t* c = dts_variable_f32(s, c0, 1, DIST_AGGREGATION_SUM, "c");
  dist_value_t* delta = dts_f32(one, 1, NULL);
  dist_value_t* variables[3];
  const dist_value_t* args[3];
  (void)state;
  DT_OK(dist_function_register("test_add_unless_negative", add_unless_negative, NULL, NULL, 1,
                               NULL, NULL, 0, NULL, NULL, 0));
  variables[0] = a, variables[1] = bad, variables[2] = c;
  args[0] = args[1] = args[2] = delta;
  DT_ERR(dist_variables_apply_update(variables, 3, "test_add_unless_negative", args, 1, NULL,
                                     NULL, 0),
         DIST_FAILED_PRECONDITION, APPLY, "variables[1] ('bad'): update function 'test_add_unless_negative'");
  dts_expect_variable_f32(a, a1, 1);
  dts_expect_variable_f32(bad, bad0, 1);
  dts_expect_variable_f32(c, c1, 1);
  DT_OK(dist_function_unregister("test_add_unless_negative"));
  dist_value_destroy(delta);
  dist_value_destroy(a);
  dist_value_destroy(bad);
  dist_value_destroy(c);
  dist_strategy_destroy(s);
}

/* ---- Replica context: every replica calls with the same variables ---- */

typedef struct {
  dist_value_t* variables[2];
  dts_errors errors;
  float read_back[2][2][4]; /* per replica, per variable, what the batch read gave */
} batch_state;

/* Replica r reads both variables in one batch, then sends gradient (r + 1) for the first
 * (SUM) and 10 * (r + 1) for the second (MEAN) through sgd with learning rate 1. */
static dist_status_t batch_in_replica(dist_context_t* context, const dist_value_t* const* args,
                                      int32_t num_args, dist_value_t** results,
                                      int32_t num_results, void* user_data) {
  batch_state* st = (batch_state*)user_data;
  int32_t r = -1;
  const float g0[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  float g[2][4];
  dist_value_t* outs[2] = {NULL, NULL};
  const dist_value_t* grads[2];
  const char* lr_name = "learning_rate";
  const double lr = 1.0;
  dist_status_t status;
  int v, i;
  (void)args, (void)num_args, (void)results, (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_variables_read((const dist_value_t* const*)st->variables, 2, outs));
  for (v = 0; v < 2; ++v) {
    void* data = NULL;
    status = dist_tensor_data(outs[v], &data);
    if (status == DIST_OK) memcpy(st->read_back[r][v], data, 4 * sizeof(float));
    dist_value_destroy(outs[v]);
    RCALL(&st->errors, r, status);
  }
  for (i = 0; i < 4; ++i) {
    g[0][i] = g0[i] * (float)(r + 1);
    g[1][i] = 10.0f * (float)(r + 1);
  }
  grads[0] = dts_f32(g[0], 4, NULL);
  grads[1] = dts_f32(g[1], 4, NULL);
  status = dist_variables_apply_update(st->variables, 2, "sgd", grads, 1, &lr_name, &lr, 1);
  dist_value_destroy((dist_value_t*)grads[0]);
  dist_value_destroy((dist_value_t*)grads[1]);
  RCALL(&st->errors, r, status);
  return DIST_OK;
}

static void test_replicas_aggregate_a_batch_and_send_it_once(void** state) {
  /* 2 replicas: the SUM variable loses 1 + 2 = 3 per element, the MEAN one (10 + 20) / 2
   * = 15, once per step (replica 0 sends the batch). */
  const float sum0[4] = {10.0f, 20.0f, 30.0f, 40.0f};
  const float mean0[4] = {100.0f, 100.0f, 100.0f, 100.0f};
  const float sum1[4] = {7.0f, 17.0f, 27.0f, 37.0f};
  const float mean1[4] = {85.0f, 85.0f, 85.0f, 85.0f};
  const float sum2[4] = {4.0f, 14.0f, 24.0f, 34.0f};
  const float mean2[4] = {70.0f, 70.0f, 70.0f, 70.0f};
  dist_strategy_t* s = sharded_strategy(2);
  batch_state st;
  int r;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.variables[0] = dts_variable_f32(s, sum0, 4, DIST_AGGREGATION_SUM, "sum");
  st.variables[1] = dts_variable_f32(s, mean0, 4, DIST_AGGREGATION_MEAN, "mean");
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, batch_in_replica, &st, NULL, 0, NULL, 0));
  dts_expect_variable_f32(st.variables[0], sum1, 4);
  dts_expect_variable_f32(st.variables[1], mean1, 4);
  for (r = 0; r < 2; ++r) {
    assert_memory_equal(st.read_back[r][0], sum0, sizeof(sum0));
    assert_memory_equal(st.read_back[r][1], mean0, sizeof(mean0));
  }
  /* The second step's batch reads see the first step's update (every replica returns
   * only once it was applied). */
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, batch_in_replica, &st, NULL, 0, NULL, 0));
  for (r = 0; r < 2; ++r) {
    assert_memory_equal(st.read_back[r][0], sum1, sizeof(sum1));
    assert_memory_equal(st.read_back[r][1], mean1, sizeof(mean1));
  }
  dts_expect_variable_f32(st.variables[0], sum2, 4);
  dts_expect_variable_f32(st.variables[1], mean2, 4);
  dist_value_destroy(st.variables[0]);
  dist_value_destroy(st.variables[1]);
  dist_strategy_destroy(s);
}

/* Replica 0 and 1 both call with a NONE variable in the batch: refused before any
 * collective, on every replica. */
static dist_status_t none_in_replica(dist_context_t* context, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** results,
                                     int32_t num_results, void* user_data) {
  batch_state* st = (batch_state*)user_data;
  int32_t r = -1;
  const float g[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  const dist_value_t* grads[2];
  const char* lr_name = "learning_rate";
  const double lr = 1.0;
  dist_status_t status;
  (void)args, (void)num_args, (void)results, (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  grads[0] = dts_f32(g, 4, NULL);
  grads[1] = grads[0];
  status = dist_variables_apply_update(st->variables, 2, "sgd", grads, 1, &lr_name, &lr, 1);
  dist_value_destroy((dist_value_t*)grads[0]);
  RCHECK_ERR(&st->errors, r, status, DIST_INVALID_ARGUMENT, "aggregation NONE");
  return DIST_OK;
}

static void test_a_batch_with_aggregation_none_is_refused_in_replica_context(void** state) {
  const float init[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  dist_strategy_t* s = sharded_strategy(2);
  batch_state st;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.variables[0] = dts_variable_f32(s, init, 4, DIST_AGGREGATION_SUM, "sum");
  st.variables[1] = dts_variable_f32(s, init, 4, DIST_AGGREGATION_NONE, "none");
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, none_in_replica, &st, NULL, 0, NULL, 0));
  dts_expect_variable_f32(st.variables[0], init, 4);
  dts_expect_variable_f32(st.variables[1], init, 4);
  dist_value_destroy(st.variables[0]);
  dist_value_destroy(st.variables[1]);
  dist_strategy_destroy(s);
}

/* Replica 1 alone passes a gradient of the wrong shape for the second variable: every
 * replica fails at once with its error (it still meets the others' collective), and
 * nothing is applied. */
typedef struct {
  dist_value_t* variables[2];
  dist_status_t status[2];
  char message[2][512];
} divergent_state;

static dist_status_t divergent_in_replica(dist_context_t* context, const dist_value_t* const* args,
                                          int32_t num_args, dist_value_t** results,
                                          int32_t num_results, void* user_data) {
  divergent_state* st = (divergent_state*)user_data;
  int32_t r = -1;
  const float g[4] = {1.0f, 1.0f, 1.0f, 1.0f};
  const dist_value_t* grads[2];
  const char* lr_name = "learning_rate";
  const double lr = 1.0;
  (void)args, (void)num_args, (void)results, (void)num_results;
  if (dist_context_replica_id(context, &r) != DIST_OK || r < 0 || r > 1) return DIST_INTERNAL;
  grads[0] = dts_f32(g, 4, NULL);
  grads[1] = dts_f32(g, r == 1 ? 3 : 4, NULL);
  st->status[r] = dist_variables_apply_update(st->variables, 2, "sgd", grads, 1, &lr_name, &lr, 1);
  snprintf(st->message[r], sizeof st->message[r], "%s", dist_last_error_message());
  dist_value_destroy((dist_value_t*)grads[0]);
  dist_value_destroy((dist_value_t*)grads[1]);
  return DIST_OK;
}

static void test_one_replicas_bad_argument_fails_every_replica(void** state) {
  const float init[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  dist_strategy_t* s = sharded_strategy(2);
  divergent_state st;
  int r;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.variables[0] = dts_variable_f32(s, init, 4, DIST_AGGREGATION_SUM, "first");
  st.variables[1] = dts_variable_f32(s, init, 4, DIST_AGGREGATION_MEAN, "second");
  DT_OK(dist_strategy_run(s, divergent_in_replica, &st, NULL, 0, NULL, 0));
  for (r = 0; r < 2; ++r) {
    if (st.status[r] != DIST_INVALID_ARGUMENT || strstr(st.message[r], "variables[1]: args[0]") == NULL) {
      fail_msg("replica %d: %s \"%s\" (expected INVALID_ARGUMENT naming variables[1]: args[0])", r,
               dist_status_name(st.status[r]), st.message[r]);
    }
  }
  dts_expect_variable_f32(st.variables[0], init, 4);
  dts_expect_variable_f32(st.variables[1], init, 4);
  dist_value_destroy(st.variables[0]);
  dist_value_destroy(st.variables[1]);
  dist_strategy_destroy(s);
}

/* ---- Misuse ---- */

static void expect_outs_null(dist_value_t** outs, int n) {
  int i;
  for (i = 0; i < n; ++i) assert_null(outs[i]);
}

static void test_read_misuse(void** state) {
  const float w0[2] = {1.0f, 2.0f};
  dist_strategy_t* s = sharded_strategy(1);
  dist_value_t* w = dts_variable_f32(s, w0, 2, DIST_AGGREGATION_SUM, "w");
  dist_value_t* tensor = dts_f32(w0, 2, NULL);
  const dist_value_t* batch[2];
  dist_value_t* outs[2];
  (void)state;
  batch[0] = w, batch[1] = w;
  outs[0] = outs[1] = DT_SENTINEL_PTR;
  DT_ERR(dist_variables_read(batch, 0, outs), DIST_INVALID_ARGUMENT, READ, "count is 0");
  DT_ERR(dist_variables_read(batch, -1, outs), DIST_INVALID_ARGUMENT, READ, "count is -1");
  DT_ERR(dist_variables_read(batch, DIST_MAX_BATCH_VARIABLES + 1, outs), DIST_INVALID_ARGUMENT,
         READ, "expected 1 to 65536");
  DT_ERR(dist_variables_read(NULL, 2, outs), DIST_INVALID_ARGUMENT, READ, "variables");
  expect_outs_null(outs, 2);
  DT_ERR(dist_variables_read(batch, 2, NULL), DIST_INVALID_ARGUMENT, READ, "outs");
  batch[1] = NULL;
  outs[0] = outs[1] = DT_SENTINEL_PTR;
  DT_ERR(dist_variables_read(batch, 2, outs), DIST_INVALID_ARGUMENT, READ, "variables[1]");
  expect_outs_null(outs, 2);
  batch[1] = tensor;
  DT_ERR(dist_variables_read(batch, 2, outs), DIST_INVALID_ARGUMENT, READ, "variables[1]");
  expect_outs_null(outs, 2);
  dts_expect_variable_f32(w, w0, 2);
  dist_value_destroy(tensor);
  dist_value_destroy(w);
  dist_strategy_destroy(s);
}

static void test_apply_misuse_changes_nothing(void** state) {
  const float w0[2] = {1.0f, 2.0f};
  const float three[3] = {1.0f, 1.0f, 1.0f};
  const char* lr_name = "learning_rate";
  const double lr = 1.0;
  const char* no_such_name = "no_such_hyperparameter";
  dist_strategy_t* s = sharded_strategy(1);
  dist_strategy_t* mirrored = dts_mirrored(2);
  dist_value_t* w = dts_variable_f32(s, w0, 2, DIST_AGGREGATION_SUM, "w");
  dist_value_t* b = dts_variable_f32(s, w0, 2, DIST_AGGREGATION_SUM, "b");
  dist_value_t* m = dts_variable_f32(mirrored, w0, 2, DIST_AGGREGATION_SUM, "m");
  dist_value_t* g = dts_f32(w0, 2, NULL);
  dist_value_t* wrong = dts_f32(three, 3, NULL);
  dist_value_t* variables[2];
  const dist_value_t* args[2];
  (void)state;
  variables[0] = w, variables[1] = b;
  args[0] = g, args[1] = g;
  DT_ERR(dist_variables_apply_update(variables, 0, "sgd", args, 1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "count is 0");
  DT_ERR(dist_variables_apply_update(variables, DIST_MAX_BATCH_VARIABLES + 1, "sgd", args, 1,
                                     &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "65536");
  DT_ERR(dist_variables_apply_update(NULL, 2, "sgd", args, 1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "variables");
  DT_ERR(dist_variables_apply_update(variables, 2, NULL, args, 1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "function");
  DT_ERR(dist_variables_apply_update(variables, 2, "bad\nname", args, 1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "printable ASCII");
  DT_ERR(dist_variables_apply_update(variables, 2, "sgd", NULL, 1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "args");
  DT_ERR(dist_variables_apply_update(variables, 2, "sgd", args, -1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "num_args is -1");
  DT_ERR(dist_variables_apply_update(variables, 2, "sgd", args, 17, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "num_args is 17");
  DT_ERR(dist_variables_apply_update(variables, 2, "sgd", args, 1, NULL, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "hyperparameter_names");
  DT_ERR(dist_variables_apply_update(variables, 2, "sgd", args, 1, &no_such_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "no_such_hyperparameter");
  DT_ERR(dist_variables_apply_update(variables, 2, "no_such_function", args, 1, &lr_name, &lr, 1),
         DIST_NOT_FOUND, APPLY, "no_such_function");
  /* One bad entry refuses the whole batch before anything is sent. */
  args[1] = wrong;
  DT_ERR(dist_variables_apply_update(variables, 2, "sgd", args, 1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "variables[1]: args[0]");
  args[1] = NULL;
  DT_ERR(dist_variables_apply_update(variables, 2, "sgd", args, 1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "variables[1]");
  args[1] = g;
  variables[1] = m;
  DT_ERR(dist_variables_apply_update(variables, 2, "sgd", args, 1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "variables[1]: variable 'm' is not a variable of a ParameterServerStrategy");
  variables[1] = NULL;
  DT_ERR(dist_variables_apply_update(variables, 2, "sgd", args, 1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "variables[1]");
  variables[1] = g;
  DT_ERR(dist_variables_apply_update(variables, 2, "sgd", args, 1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, APPLY, "variables[1]");
  dts_expect_variable_f32(w, w0, 2);
  dts_expect_variable_f32(b, w0, 2);
  dts_expect_variable_f32(m, w0, 2);
  dist_value_destroy(wrong);
  dist_value_destroy(g);
  dist_value_destroy(w);
  dist_value_destroy(b);
  dist_value_destroy(m);
  dist_strategy_destroy(mirrored);
  dist_strategy_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_batch_reads_what_single_reads_read),
      cmocka_unit_test(test_sgd_on_several_variables_at_once),
      cmocka_unit_test(test_a_failed_update_leaves_the_others_applied),
      cmocka_unit_test(test_replicas_aggregate_a_batch_and_send_it_once),
      cmocka_unit_test(test_a_batch_with_aggregation_none_is_refused_in_replica_context),
      cmocka_unit_test(test_one_replicas_bad_argument_fails_every_replica),
      cmocka_unit_test(test_read_misuse),
      cmocka_unit_test(test_apply_misuse_changes_nothing),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
