/* The worked examples of tf.distribute.StrategyExtended's reference page, in C, with the
 * page's devices mapped to CPUs ("GPU:0", "GPU:1" -> "CPU:0", "CPU:1").
 *
 *   def step_fn(var):
 *     def merge_fn(strategy, value, var):
 *       reduced = strategy.extended.batch_reduce_to(SUM, [(value, var)])[0]
 *       strategy.extended.update(var, lambda var, value: var.assign(value), args=(reduced,))
 *     value = tf.identity(1.)
 *     tf.distribute.get_replica_context().merge_call(merge_fn, args=(value, var))
 *   def run(strategy):
 *     with strategy.scope():
 *       v = tf.Variable(0.)
 *       strategy.run(step_fn, args=(v,))
 *       return v
 *
 * gives MirroredVariable {0: 2.0, 1: 2.0} for MirroredStrategy(["GPU:0", "GPU:1"]), a
 * variable holding 2.0 for CentralStorageStrategy(compute ["GPU:0", "GPU:1"], parameter
 * "CPU:0"), and 1.0 for OneDeviceStrategy("GPU:0"); the reduce_to variant
 * (reduce_to(SUM, value, destinations=var)) gives the same. The update example:
 *
 *   strategy = tf.distribute.MirroredStrategy(['GPU:0', 'GPU:1'])
 *   with strategy.scope():
 *     v = tf.Variable(5.0, aggregation=tf.VariableAggregation.SUM)
 *   def update_fn(v):
 *     return v.assign(1.0)
 *   result = strategy.extended.update(v, update_fn)
 *   # Mirrored: {0: 1.0, 1: 1.0}
 */
#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

typedef struct {
  dts_errors errors;
  int use_reduce_to; /* 0: batch_reduce_to, 1: reduce_to */
  int32_t merge_calls;
  int32_t assign_calls;
} example_state;

/* lambda var, value: var.assign(value) */
static dist_status_t assign_value(dist_value_t* variable, const dist_value_t* const* args,
                                  int32_t num_args, dist_value_t** out, void* user_data) {
  example_state* st = (example_state*)user_data;
  (void)out;
  st->assign_calls += 1;
  if (num_args != 1) return DIST_INTERNAL;
  return dist_variable_assign(variable, args[0]);
}

static dist_status_t merge_fn(dist_strategy_t* strategy, const dist_value_t* const* args,
                              int32_t num_args, dist_value_t** out, void* user_data) {
  example_state* st = (example_state*)user_data;
  dist_value_t* reduced = NULL;
  dist_value_t* updated = NULL;
  const dist_value_t* update_args[1];
  (void)out;
  st->merge_calls += 1;
  RCHECK(&st->errors, 0, num_args == 2, "merge_fn got %d args", num_args);
  if (st->use_reduce_to) {
    RCALL(&st->errors, 0, dist_strategy_reduce_to(strategy, DIST_REDUCE_SUM, args[0], args[1],
                                                  &reduced));
  } else {
    const dist_value_t* values[1];
    const dist_value_t* destinations[1];
    values[0] = args[0];
    destinations[0] = args[1];
    RCALL(&st->errors, 0, dist_strategy_batch_reduce_to(strategy, DIST_REDUCE_SUM, values,
                                                        destinations, 1, &reduced));
  }
  update_args[0] = reduced;
  RCALL(&st->errors, 0,
        dist_strategy_update(strategy, (dist_value_t*)args[1], assign_value, st, update_args, 1,
                             1, &updated));
  dist_value_destroy(updated);
  dist_value_destroy(reduced);
  return DIST_OK;
}

static dist_status_t step_fn(dist_context_t* context, const dist_value_t* const* args,
                             int32_t num_args, dist_value_t** results, int32_t num_results,
                             void* user_data) {
  example_state* st = (example_state*)user_data;
  int32_t r = -1;
  const char* device = NULL;
  const float one = 1.0f;
  dist_value_t* value = NULL;
  dist_value_t* merged = NULL;
  const dist_value_t* merge_args[2];
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCHECK(&st->errors, r, num_args == 1, "step_fn got %d args", num_args);
  RCALL(&st->errors, r, dist_context_device(context, &device));
  /* value = tf.identity(1.) */
  value = dts_make_f32(&one, -1, device);
  RCHECK(&st->errors, r, value != NULL, "make");
  merge_args[0] = value;
  merge_args[1] = args[0];
  RCALL(&st->errors, r, dist_context_merge_call(context, merge_fn, st, merge_args, 2, &merged));
  dist_value_destroy(merged);
  dist_value_destroy(value);
  return DIST_OK;
}

/* run(strategy): returns v. */
static dist_value_t* run_example(dist_strategy_t* s, int use_reduce_to, example_state* st) {
  dist_value_t* zero = dts_f32_scalar(0.0f, NULL);
  dist_value_t* v = NULL;
  const dist_value_t* args[1];
  const int32_t n = dts_num_replicas(s);
  memset(st, 0, sizeof(*st));
  st->use_reduce_to = use_reduce_to;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(zero, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &v));
  args[0] = v;
  DTS_RUN_OK(&st->errors, n, dist_strategy_run(s, step_fn, st, args, 1, NULL, 0));
  DT_OK(dist_strategy_scope_exit(s));
  assert_int_equal(st->merge_calls, 1);
  dist_value_destroy(zero);
  return v;
}

static void check_mirrored(int use_reduce_to) {
  const char* devices[2] = {"CPU:0", "CPU:1"};
  dist_strategy_t* s = NULL;
  example_state st;
  dist_value_t* v;
  const char* name = NULL;
  const float two = 2.0f;
  DT_OK(dist_strategy_create_mirrored(devices, 2, NULL, &s));
  DT_OK(dist_strategy_set_timeout_ms(s, DTS_TIMEOUT_MS));
  v = run_example(s, use_reduce_to, &st);
  /* MirroredVariable:{ 0: 2.0, 1: 2.0 } */
  assert_int_equal(dts_kind(v), DIST_VALUE_MIRRORED_VARIABLE);
  assert_int_equal(dts_num_components(v), 2);
  DT_OK(dist_variable_name(v, &name));
  assert_string_equal(name, "Variable");
  assert_int_equal(st.assign_calls, 2);
  dts_expect_components_f32(v, &two, -1);
  dts_expect_variable_f32(v, &two, -1);
  dist_value_destroy(v);
  dist_strategy_destroy(s);
}

static void check_central_storage(int use_reduce_to) {
  const char* compute[2] = {"CPU:0", "CPU:1"};
  dist_strategy_t* s = NULL;
  example_state st;
  dist_value_t* v;
  const float two = 2.0f;
  DT_OK(dist_strategy_create_central_storage(compute, 2, "CPU:0", &s));
  DT_OK(dist_strategy_set_timeout_ms(s, DTS_TIMEOUT_MS));
  v = run_example(s, use_reduce_to, &st);
  /* <tf.Variable 'Variable:0' shape=() dtype=float32, numpy=2.0> */
  assert_int_equal(dts_kind(v), DIST_VALUE_VARIABLE);
  assert_int_equal(dts_num_components(v), 1);
  assert_int_equal(st.assign_calls, 1);
  dts_expect_variable_f32(v, &two, -1);
  {
    dist_value_t* read = NULL;
    DT_OK(dist_variable_read(v, &read));
    assert_string_equal(dts_device(read), "/device:CPU:0");
    dist_value_destroy(read);
  }
  dist_value_destroy(v);
  dist_strategy_destroy(s);
}

static void check_one_device(int use_reduce_to) {
  dist_strategy_t* s = NULL;
  example_state st;
  dist_value_t* v;
  const float one = 1.0f;
  DT_OK(dist_strategy_create_one_device("CPU:0", &s));
  v = run_example(s, use_reduce_to, &st);
  /* <tf.Variable 'Variable:0' shape=() dtype=float32, numpy=1.0> */
  assert_int_equal(dts_kind(v), DIST_VALUE_VARIABLE);
  assert_int_equal(dts_num_components(v), 1);
  assert_int_equal(st.assign_calls, 1);
  dts_expect_variable_f32(v, &one, -1);
  dist_value_destroy(v);
  dist_strategy_destroy(s);
}

static void test_batch_reduce_to_example_mirrored(void** state) {
  (void)state;
  check_mirrored(0);
}

static void test_batch_reduce_to_example_central_storage(void** state) {
  (void)state;
  check_central_storage(0);
}

static void test_batch_reduce_to_example_one_device(void** state) {
  (void)state;
  check_one_device(0);
}

static void test_reduce_to_example_mirrored(void** state) {
  (void)state;
  check_mirrored(1);
}

static void test_reduce_to_example_central_storage(void** state) {
  (void)state;
  check_central_storage(1);
}

static void test_reduce_to_example_one_device(void** state) {
  (void)state;
  check_one_device(1);
}

/* def update_fn(v): return v.assign(1.0) */
static dist_status_t assign_one(dist_value_t* variable, const dist_value_t* const* args,
                                int32_t num_args, dist_value_t** out, void* user_data) {
  const float one = 1.0f;
  dist_value_t* value = NULL;
  dist_status_t status;
  (void)args;
  (void)user_data;
  if (num_args != 0) return DIST_INTERNAL;
  value = dts_make_f32(&one, -1, NULL);
  if (value == NULL) return DIST_INTERNAL;
  status = dist_variable_assign(variable, value);
  dist_value_destroy(value);
  if (status != DIST_OK) return status;
  /* assign returns the variable's new value */
  return dist_variable_read(variable, out);
}

static void test_update_example(void** state) {
  const char* devices[2] = {"CPU:0", "CPU:1"};
  dist_strategy_t* s = NULL;
  dist_value_t* five = dts_f32_scalar(5.0f, NULL);
  dist_value_t* v = NULL;
  dist_value_t* result = NULL;
  dist_variable_aggregation_t aggregation = 0;
  const float one = 1.0f;
  int32_t i;
  (void)state;
  DT_OK(dist_strategy_create_mirrored(devices, 2, NULL, &s));
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(five, DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, NULL, &v));
  DT_OK(dist_strategy_scope_exit(s));
  DT_OK(dist_variable_aggregation(v, &aggregation));
  assert_int_equal(aggregation, DIST_AGGREGATION_SUM);
  DT_OK(dist_strategy_update(s, v, assign_one, NULL, NULL, 0, 1, &result));
  /* Mirrored:{ 0: tf.Tensor(1.0), 1: tf.Tensor(1.0) } */
  assert_int_equal(dts_kind(result), DIST_VALUE_MIRRORED);
  assert_int_equal(dts_num_components(result), 2);
  for (i = 0; i < 2; ++i) {
    dist_value_t* c = dts_component(result, i);
    char expected[32];
    assert_true(dts_scalar_f32(c) == 1.0f);
    snprintf(expected, sizeof(expected), "/device:CPU:%d", (int)i);
    assert_string_equal(dts_device(c), expected);
    dist_value_destroy(c);
  }
  /* ... and v reads 1.0 (every copy). */
  dts_expect_variable_f32(v, &one, -1);
  dts_expect_components_f32(v, &one, -1);
  dist_value_destroy(result);
  dist_value_destroy(v);
  dist_value_destroy(five);
  dist_strategy_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batch_reduce_to_example_mirrored),
      cmocka_unit_test(test_batch_reduce_to_example_central_storage),
      cmocka_unit_test(test_batch_reduce_to_example_one_device),
      cmocka_unit_test(test_reduce_to_example_mirrored),
      cmocka_unit_test(test_reduce_to_example_central_storage),
      cmocka_unit_test(test_reduce_to_example_one_device),
      cmocka_unit_test(test_update_example),
  };
  return cmocka_run_group_tests_name("reference_examples", tests, setup, NULL);
}
