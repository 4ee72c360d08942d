/* Where the cross-replica calls of strategy.h may be made, as their docs state: with no
 * scope entered (as in TF), inside the scope, and inside merge_call's function; and what
 * merge_call's function receives with one replica. The failures in replica context and
 * in another strategy's scope are tested in test_reduce.c and test_run.c. */
#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

/* Update function: adds args[0] to its copy of the variable. */
static dist_status_t add_arg(dist_value_t* variable, const dist_value_t* const* args,
                             int32_t num_args, dist_value_t** out, void* user_data) {
  int* calls = (int*)user_data;
  (void)num_args;
  (void)out;
  *calls += 1;
  return dist_variable_assign_add(variable, args[0]);
}

/* Component i of distribute_values_from_function: the scalar 10 (i + 1). */
static dist_status_t ten_times(int32_t replica_id, int32_t num_replicas, dist_value_t** out,
                               void* user_data) {
  const float value = 10.0f * (float)(replica_id + 1);
  (void)num_replicas;
  (void)user_data;
  *out = dts_make_f32(&value, -1, NULL);
  return *out != NULL ? DIST_OK : DIST_INTERNAL;
}

/* Every cross-replica call on a Mirrored strategy with no scope entered, as TF allows;
 * expectations computed by hand from the inputs {1, 2}. */
static void test_cross_replica_calls_with_no_scope(void** state) {
  const float parts[2] = {1, 2};
  const float zero = 0.0f;
  dist_strategy_t* s = dts_mirrored(2);
  dist_value_t* pr = dts_per_replica_f32(parts, 2, -1);
  dist_value_t* init = dts_f32_scalar(zero, NULL);
  dist_value_t* var = NULL;
  dist_value_t* out = NULL;
  dist_value_t* outs[1] = {NULL};
  const dist_value_t* values[1];
  const dist_value_t* destinations[1];
  const dist_value_t* update_args[1];
  int32_t in_cross = -1;
  int calls = 0;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "v", &var));
  DT_OK(dist_strategy_scope_exit(s));
  DT_OK(dist_in_cross_replica_context(&in_cross));
  assert_int_equal(in_cross, 0); /* no scope: the default replica context */

  DT_OK(dist_strategy_reduce(s, DIST_REDUCE_SUM, pr, &out));
  assert_true(dts_scalar_f32(out) == 3.0f);
  dist_value_destroy(out);
  DT_OK(dist_strategy_reduce(s, DIST_REDUCE_MEAN, pr, &out));
  assert_true(dts_scalar_f32(out) == 1.5f);
  dist_value_destroy(out);
  {
    const float gathered[2] = {1, 2};
    dist_value_t* rows = dts_per_replica_f32(parts, 2, 1);
    DT_OK(dist_strategy_gather(s, rows, 0, &out));
    dts_expect_f32(out, gathered, 2);
    dist_value_destroy(out);
    dist_value_destroy(rows);
  }
  DT_OK(dist_strategy_reduce_to(s, DIST_REDUCE_SUM, pr, var, &out));
  assert_int_equal(dts_kind(out), DIST_VALUE_MIRRORED);
  dist_value_destroy(out);
  values[0] = pr;
  destinations[0] = var;
  DT_OK(dist_strategy_batch_reduce_to(s, DIST_REDUCE_MAX, values, destinations, 1, outs));
  assert_int_equal(dts_num_components(outs[0]), 2);
  dist_value_destroy(outs[0]);

  /* update: fn runs once per copy; 0 + 3 on each. */
  DT_OK(dist_strategy_reduce_to(s, DIST_REDUCE_SUM, pr, var, &out));
  update_args[0] = out;
  DT_OK(dist_strategy_update(s, var, add_arg, &calls, update_args, 1, 1, &outs[0]));
  assert_int_equal(calls, 2);
  dist_value_destroy(outs[0]);
  dist_value_destroy(out);
  {
    const float three = 3.0f;
    dts_expect_variable_f32(var, &three, 1);
  }

  DT_OK(dist_strategy_distribute_values_from_function(s, ten_times, NULL, &out));
  assert_int_equal(dts_kind(out), DIST_VALUE_PER_REPLICA);
  {
    dist_value_t* c = dts_component(out, 1);
    assert_true(dts_scalar_f32(c) == 20.0f);
    dist_value_destroy(c);
  }
  dist_value_destroy(out);
  dist_value_destroy(var);
  dist_value_destroy(init);
  dist_value_destroy(pr);
  dist_strategy_destroy(s);
}

typedef struct {
  dts_errors errors;
  dist_value_kind_t kind;
  int32_t components;
  float reduced;
} merge_state;

/* merge_call's function: records what it received and reduces it (SUM) in place. */
static dist_status_t record_and_reduce(dist_strategy_t* strategy, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** out, void* user_data) {
  merge_state* st = (merge_state*)user_data;
  dist_value_t* sum = NULL;
  dist_status_t status;
  (void)num_args;
  if (dist_value_kind(args[0], &st->kind) != DIST_OK) return DIST_INTERNAL;
  if (dist_value_num_components(args[0], &st->components) != DIST_OK) return DIST_INTERNAL;
  /* A cross-replica call inside merge_call's function. */
  status = dist_strategy_reduce(strategy, DIST_REDUCE_SUM, args[0], &sum);
  if (status != DIST_OK) return status;
  if (dist_tensor_scalar_float32(sum, &st->reduced) != DIST_OK) return DIST_INTERNAL;
  *out = sum;
  return DIST_OK;
}

/* Each replica passes the scalar replica_id + 1 and receives the reduced sum. */
static dist_status_t merge_replica_value(dist_context_t* context, const dist_value_t* const* args,
                                         int32_t num_args, dist_value_t** results,
                                         int32_t num_results, void* user_data) {
  merge_state* st = (merge_state*)user_data;
  int32_t r = -1, n = 0;
  dist_value_t* mine = NULL;
  dist_value_t* merged = NULL;
  const dist_value_t* merge_args[1];
  float got = -1.0f;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_context_num_replicas_in_sync(context, &n));
  got = (float)(r + 1);
  mine = dts_make_f32(&got, -1, NULL);
  RCHECK(&st->errors, r, mine != NULL, "make");
  merge_args[0] = mine;
  RCALL(&st->errors, r, dist_context_merge_call(context, record_and_reduce, st, merge_args, 1, &merged));
  RCALL(&st->errors, r, dist_tensor_scalar_float32(merged, &got));
  RCHECK(&st->errors, r, got == (float)(n * (n + 1) / 2), "replica %d got %g", r, (double)got);
  dist_value_destroy(merged);
  dist_value_destroy(mine);
  return DIST_OK;
}

static void run_merge(dist_strategy_t* s, merge_state* st) {
  memset(st, 0, sizeof *st);
  DTS_RUN_OK(&st->errors, dts_num_replicas(s),
             dist_strategy_run(s, merge_replica_value, st, NULL, 0, NULL, 0));
}

/* With one replica, merge_call's function receives the bare tensor (not a PerReplica of
 * one component); with several, a PerReplica value of all of them. */
static void test_merge_call_argument_shape(void** state) {
  merge_state st;
  dist_strategy_t* one_device = dts_one_device("CPU:0");
  dist_strategy_t* mirrored_one = dts_mirrored(1);
  dist_strategy_t* mirrored_three = dts_mirrored(3);
  dist_strategy_t* default_strategy = NULL;
  (void)state;
  run_merge(one_device, &st);
  assert_int_equal(st.kind, DIST_VALUE_TENSOR);
  assert_int_equal(st.components, 1);
  assert_true(st.reduced == 1.0f);
  run_merge(mirrored_one, &st);
  assert_int_equal(st.kind, DIST_VALUE_TENSOR);
  DT_OK(dist_strategy_get_default(&default_strategy));
  run_merge(default_strategy, &st);
  assert_int_equal(st.kind, DIST_VALUE_TENSOR);
  run_merge(mirrored_three, &st);
  assert_int_equal(st.kind, DIST_VALUE_PER_REPLICA);
  assert_int_equal(st.components, 3);
  assert_true(st.reduced == 6.0f);
  dist_strategy_destroy(one_device);
  dist_strategy_destroy(mirrored_one);
  dist_strategy_destroy(mirrored_three);
  dist_strategy_destroy(default_strategy);
}

/* Cleanup calls return a status but are not warn-unused-result: a (void) cast compiles
 * under -Werror (GCC ignores such casts on warn_unused_result), so failure paths can call
 * them unconditionally. Misuse still reports. */
static void test_cleanup_calls_in_failure_paths(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  (void)dist_strategy_scope_exit(s);
  assert_int_equal(dist_strategy_scope_exit(s), DIST_FAILED_PRECONDITION);
  (void)dist_strategy_colocate_vars_with_exit(s);
  assert_int_equal(dist_context_leave(NULL), DIST_OK);
  /* The default replica context (no scope) is borrowed: leaving it is misuse. */
  assert_int_equal(dist_context_leave(dist_current_replica_context()), DIST_FAILED_PRECONDITION);
  assert_non_null(strstr(dist_last_error_message(), "dist_context_leave"));
  assert_non_null(dist_current_replica_context());
  (void)dist_context_leave(NULL);
  (void)dist_server_stop(NULL);
  dist_strategy_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cross_replica_calls_with_no_scope),
      cmocka_unit_test(test_merge_call_argument_shape),
      cmocka_unit_test(test_cleanup_calls_in_failure_paths),
  };
  return cmocka_run_group_tests_name("cross_replica_where", tests, setup, NULL);
}
