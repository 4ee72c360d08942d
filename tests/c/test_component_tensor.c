/* Tests for dist_value_component_tensor (value.h) and a variable's devices
 * (dist_variable_device_count, dist_variable_device in variable.h): component i of any
 * value as a tensor the caller owns, independent of the value afterwards. */
#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

/* Component `index` of `value` as a snapshot, checked to be a tensor with `expected`. */
static dist_value_t* expect_component(const dist_value_t* value, int32_t index, const float* expected,
                                      int64_t n) {
  dist_value_t* tensor = NULL;
  DT_OK(dist_value_component_tensor(value, index, &tensor));
  assert_int_equal(dts_kind(tensor), DIST_VALUE_TENSOR);
  dts_expect_f32(tensor, expected, n);
  return tensor;
}

static void test_per_replica_mirrored_and_tensor(void** state) {
  const float a[2] = {1, 2};
  const float b[2] = {3, 4};
  dist_value_t* ta = dts_f32(a, 2, "CPU:0");
  dist_value_t* tb = dts_f32(b, 2, "CPU:1");
  const dist_value_t* parts[2];
  dist_value_t* per_replica = NULL;
  dist_value_t* mirrored = NULL;
  dist_value_t* snapshot = NULL;
  float* data = NULL;
  (void)state;
  parts[0] = ta;
  parts[1] = tb;
  DT_OK(dist_value_create_per_replica(parts, 2, &per_replica));
  snapshot = expect_component(per_replica, 1, b, 2);
  assert_string_equal(dts_device(snapshot), "/device:CPU:1");
  /* A copy: writing it leaves the PerReplica value's component as it was. */
  DT_OK(dist_tensor_data(snapshot, (void**)&data));
  data[0] = 100.0f;
  dist_value_destroy(snapshot);
  dist_value_destroy(expect_component(per_replica, 1, b, 2));
  parts[1] = ta;
  DT_OK(dist_value_create_mirrored(parts, 2, &mirrored));
  dist_value_destroy(expect_component(mirrored, 0, a, 2));
  /* A plain tensor has one component: itself. */
  dist_value_destroy(expect_component(tb, 0, b, 2));
  dist_value_destroy(per_replica);
  dist_value_destroy(mirrored);
  dist_value_destroy(ta);
  dist_value_destroy(tb);
}

typedef struct {
  dts_errors errors;
  dist_value_t* var;
} write_state;

/* Replica r assigns {r + 1, 2 (r + 1)} to its own copy of a SyncOnRead variable. */
static dist_status_t write_own_copy(dist_context_t* context, const dist_value_t* const* args,
                                    int32_t num_args, dist_value_t** results, int32_t num_results,
                                    void* user_data) {
  write_state* st = (write_state*)user_data;
  int32_t r = -1;
  float x[2];
  dist_value_t* value = NULL;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  x[0] = (float)(r + 1);
  x[1] = 2.0f * (float)(r + 1);
  value = dts_f32(x, 2, NULL);
  RCALL(&st->errors, r, dist_variable_assign(st->var, value));
  dist_value_destroy(value);
  return DIST_OK;
}

static void test_variables(void** state) {
  const float init_values[2] = {5, 6};
  const float copy0[2] = {1, 2};
  const float copy1[2] = {2, 4};
  dist_strategy_t* s = dts_mirrored(2);
  dist_value_t* init = dts_f32(init_values, 2, NULL);
  dist_value_t* mirrored_var = NULL;
  write_state st;
  const char* device = DT_SENTINEL_STR;
  int32_t count = -1;
  dist_value_t* copy = NULL;
  (void)state;
  memset(&st, 0, sizeof st);
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "w", &mirrored_var));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_READ, DIST_AGGREGATION_SUM, "acc", &st.var));
  DT_OK(dist_strategy_scope_exit(s));
  /* MirroredVariable: every component is the initial value, on its replica's device. */
  dist_value_destroy(expect_component(mirrored_var, 0, init_values, 2));
  dist_value_destroy(expect_component(mirrored_var, 1, init_values, 2));
  DT_OK(dist_variable_device_count(mirrored_var, &count));
  assert_int_equal(count, 2);
  DT_OK(dist_variable_device(mirrored_var, 0, &device));
  assert_string_equal(device, "/device:CPU:0");
  DT_OK(dist_variable_device(mirrored_var, 1, &device));
  assert_string_equal(device, "/device:CPU:1");
  /* SyncOnRead: each component is that replica's own copy, not the aggregate. */
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, write_own_copy, &st, NULL, 0, NULL, 0));
  dist_value_destroy(expect_component(st.var, 0, copy0, 2));
  dist_value_destroy(expect_component(st.var, 1, copy1, 2));
  /* One copy (dist_value_component) has one device and one component. */
  copy = dts_component(st.var, 1);
  DT_OK(dist_variable_device_count(copy, &count));
  assert_int_equal(count, 1);
  DT_OK(dist_variable_device(copy, 0, &device));
  assert_string_equal(device, "/device:CPU:1");
  dist_value_destroy(expect_component(copy, 0, copy1, 2));
  /* The borrowed name outlives the handle it came from while the variable lives. */
  dist_value_destroy(copy);
  assert_string_equal(device, "/device:CPU:1");
  dist_value_destroy(mirrored_var);
  dist_value_destroy(st.var);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

static void test_misuse(void** state) {
  const float a[1] = {1};
  dist_value_t* t = dts_f32(a, 1, NULL);
  dist_value_t* out = DT_SENTINEL_PTR;
  const char* device = DT_SENTINEL_STR;
  int32_t count = -1;
  (void)state;
  DT_ERR(dist_value_component_tensor(NULL, 0, &out), DIST_INVALID_ARGUMENT,
         "dist_value_component_tensor", "value");
  assert_null(out);
  DT_ERR(dist_value_component_tensor(t, 0, NULL), DIST_INVALID_ARGUMENT,
         "dist_value_component_tensor", "out");
  out = DT_SENTINEL_PTR;
  DT_ERR(dist_value_component_tensor(t, 1, &out), DIST_OUT_OF_RANGE, "dist_value_component_tensor",
         "1 component");
  assert_null(out);
  DT_ERR(dist_value_component_tensor(t, -1, &out), DIST_OUT_OF_RANGE,
         "dist_value_component_tensor", "-1");
  DT_ERR(dist_variable_device_count(NULL, &count), DIST_INVALID_ARGUMENT,
         "dist_variable_device_count", "variable");
  DT_ERR(dist_variable_device_count(t, &count), DIST_INVALID_ARGUMENT, "dist_variable_device_count",
         "not a variable");
  assert_int_equal(count, 0);
  DT_ERR(dist_variable_device(t, 0, &device), DIST_INVALID_ARGUMENT, "dist_variable_device",
         "not a variable");
  assert_null(device);
  dist_value_destroy(t);
}

static void test_variable_device_misuse(void** state) {
  const float a[1] = {1};
  dist_value_t* init = dts_f32(a, 1, NULL);
  dist_value_t* v = NULL;
  const char* device = DT_SENTINEL_STR;
  int32_t count = -1;
  (void)state;
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, "plain", &v));
  DT_OK(dist_variable_device_count(v, &count));
  assert_int_equal(count, 1);
  DT_ERR(dist_variable_device(v, 1, &device), DIST_OUT_OF_RANGE, "dist_variable_device", "1");
  assert_null(device);
  DT_ERR(dist_variable_device(v, 0, NULL), DIST_INVALID_ARGUMENT, "dist_variable_device",
         "out_borrowed_device");
  DT_ERR(dist_variable_device_count(v, NULL), DIST_INVALID_ARGUMENT, "dist_variable_device_count",
         "out_count");
  dist_value_destroy(v);
  dist_value_destroy(init);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_per_replica_mirrored_and_tensor),
      cmocka_unit_test(test_variables),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_variable_device_misuse),
  };
  return cmocka_run_group_tests_name("component_tensor", tests, setup, NULL);
}
