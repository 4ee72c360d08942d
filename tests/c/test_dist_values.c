/* Tests for the distributed-value functions of value.h: dist_value_num_components,
 * dist_value_component, dist_value_create_per_replica and dist_value_create_mirrored, on
 * tensors, PerReplica and Mirrored values, and variables. */
#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

static void test_per_replica(void** state) {
  const float a[2] = {1, 2};
  const int32_t b[3] = {7, 8, 9};
  const int64_t db[1] = {3};
  dist_value_t* parts[3];
  dist_value_t* pr = NULL;
  dist_value_t* c = NULL;
  void* original = NULL;
  void* shared = NULL;
  int32_t i;
  (void)state;
  /* Components may differ in dtype and shape (a PerReplica value is each replica's own). */
  parts[0] = dts_f32(a, 2, "CPU:0");
  parts[1] = dts_tensor(DIST_INT32, db, 1, b, "CPU:1");
  parts[2] = dts_f32_scalar(5.0f, "CPU:2");
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 3, &pr));
  assert_int_equal(dts_kind(pr), DIST_VALUE_PER_REPLICA);
  assert_int_equal(dts_num_components(pr), 3);
  for (i = 0; i < 3; ++i) {
    char device[32];
    c = dts_component(pr, i);
    assert_int_equal(dts_kind(c), DIST_VALUE_TENSOR);
    snprintf(device, sizeof(device), "/device:CPU:%d", (int)i);
    assert_string_equal(dts_device(c), device);
    /* Shared, not copied. */
    DT_OK(dist_tensor_data(parts[i], &original));
    DT_OK(dist_tensor_data(c, &shared));
    assert_ptr_equal(original, shared);
    dist_value_destroy(c);
  }
  /* The components outlive the handles they were made from. */
  for (i = 0; i < 3; ++i) dist_value_destroy(parts[i]);
  c = dts_component(pr, 0);
  dts_expect_f32(c, a, 2);
  dist_value_destroy(c);
  c = dts_component(pr, 2);
  assert_true(dts_scalar_f32(c) == 5.0f);
  /* A component outlives the PerReplica value. */
  dist_value_destroy(pr);
  assert_true(dts_scalar_f32(c) == 5.0f);
  dist_value_destroy(c);

  /* One component. */
  parts[0] = dts_f32(a, 2, NULL);
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 1, &pr));
  assert_int_equal(dts_kind(pr), DIST_VALUE_PER_REPLICA);
  assert_int_equal(dts_num_components(pr), 1);
  dist_value_destroy(pr);
  dist_value_destroy(parts[0]);
}

static void test_mirrored(void** state) {
  const float a[2] = {1, 2};
  dist_value_t* parts[4];
  dist_value_t* m = NULL;
  int32_t i;
  (void)state;
  for (i = 0; i < 4; ++i) {
    char device[16];
    dts_cpu_name(i, device, sizeof(device));
    parts[i] = dts_f32(a, 2, device);
  }
  DT_OK(dist_value_create_mirrored((const dist_value_t* const*)parts, 4, &m));
  assert_int_equal(dts_kind(m), DIST_VALUE_MIRRORED);
  assert_int_equal(dts_num_components(m), 4);
  for (i = 0; i < 4; ++i) dist_value_destroy(parts[i]);
  for (i = 0; i < 4; ++i) {
    dist_value_t* c = dts_component(m, i);
    char device[32];
    dts_expect_f32(c, a, 2);
    snprintf(device, sizeof(device), "/device:CPU:%d", (int)i);
    assert_string_equal(dts_device(c), device);
    dist_value_destroy(c);
  }
  dist_value_destroy(m);
}

static void test_tensor_components(void** state) {
  dist_value_t* t = dts_f32_scalar(3.0f, NULL);
  dist_value_t* c = NULL;
  void* a = NULL;
  void* b = NULL;
  (void)state;
  assert_int_equal(dts_num_components(t), 1);
  c = dts_component(t, 0);
  assert_int_equal(dts_kind(c), DIST_VALUE_TENSOR);
  DT_OK(dist_tensor_data(t, &a));
  DT_OK(dist_tensor_data(c, &b));
  assert_ptr_equal(a, b);
  dist_value_destroy(t);
  assert_true(dts_scalar_f32(c) == 3.0f);
  dist_value_destroy(c);
}

static void test_variable_components(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  dist_strategy_t* one = dts_one_device("CPU:1");
  dist_value_t* init = dts_f32_scalar(2.0f, NULL);
  dist_value_t* mirrored_var = NULL;
  dist_value_t* on_read = NULL;
  dist_value_t* plain = NULL;
  dist_value_t* c = NULL;
  dist_value_t* read = NULL;
  const float seven = 7.0f, two = 2.0f;
  int32_t i;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "mv",
                             &mirrored_var));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_READ, DIST_AGGREGATION_SUM, "sv", &on_read));
  DT_OK(dist_strategy_scope_exit(s));
  DT_OK(dist_strategy_scope_enter(one));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "pv", &plain));
  DT_OK(dist_strategy_scope_exit(one));
  assert_int_equal(dts_num_components(mirrored_var), 3);
  assert_int_equal(dts_num_components(on_read), 3);
  assert_int_equal(dts_num_components(plain), 1);
  /* A component of a distributed variable is a plain variable on one device ... */
  for (i = 0; i < 3; ++i) {
    char device[32];
    c = dts_component(mirrored_var, i);
    assert_int_equal(dts_kind(c), DIST_VALUE_VARIABLE);
    assert_int_equal(dts_num_components(c), 1);
    DT_OK(dist_variable_read(c, &read));
    snprintf(device, sizeof(device), "/device:CPU:%d", (int)i);
    assert_string_equal(dts_device(read), device);
    dist_value_destroy(read);
    dist_value_destroy(c);
  }
  /* ... sharing the variable's state: writing it changes that copy only. */
  c = dts_component(on_read, 1);
  {
    dist_value_t* v = dts_f32_scalar(seven, NULL);
    DT_OK(dist_variable_assign(c, v));
    dist_value_destroy(v);
  }
  dist_value_destroy(c);
  for (i = 0; i < 3; ++i) {
    c = dts_component(on_read, i);
    dts_expect_variable_f32(c, i == 1 ? &seven : &two, -1);
    dist_value_destroy(c);
  }
  /* Index 0 of a plain variable is the variable itself. */
  c = dts_component(plain, 0);
  assert_int_equal(dts_kind(c), DIST_VALUE_VARIABLE);
  {
    const char* name = NULL;
    DT_OK(dist_variable_name(c, &name));
    assert_string_equal(name, "pv");
  }
  dist_value_destroy(c);
  dist_value_destroy(mirrored_var);
  dist_value_destroy(on_read);
  dist_value_destroy(plain);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
  dist_strategy_destroy(one);
}

static void test_component_rejects_misuse(void** state) {
  const float v[2] = {1, 2};
  dist_value_t* pr = dts_per_replica_f32(v, 2, -1);
  dist_value_t* t = dts_f32_scalar(1.0f, NULL);
  dist_value_t* init = dts_f32_scalar(1.0f, NULL);
  dist_strategy_t* s = dts_mirrored(2);
  dist_value_t* var = NULL;
  dist_value_t* c = (dist_value_t*)DT_SENTINEL_PTR;
  int32_t count = 77;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &var));
  DT_OK(dist_strategy_scope_exit(s));
  DT_ERR(dist_value_num_components(NULL, &count), DIST_INVALID_ARGUMENT,
         "dist_value_num_components", "value");
  assert_int_equal(count, 0);
  DT_ERR(dist_value_num_components(pr, NULL), DIST_INVALID_ARGUMENT, "dist_value_num_components",
         "out_count");
  DT_ERR(dist_value_component(NULL, 0, &c), DIST_INVALID_ARGUMENT, "dist_value_component",
         "value");
  assert_null(c);
  DT_ERR(dist_value_component(pr, 0, NULL), DIST_INVALID_ARGUMENT, "dist_value_component", "out");
  c = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR2(dist_value_component(pr, 2, &c), DIST_OUT_OF_RANGE, DIST_INVALID_ARGUMENT,
          "dist_value_component", "index");
  assert_null(c);
  DT_ERR2(dist_value_component(pr, -1, &c), DIST_OUT_OF_RANGE, DIST_INVALID_ARGUMENT,
          "dist_value_component", "index");
  DT_ERR2(dist_value_component(t, 1, &c), DIST_OUT_OF_RANGE, DIST_INVALID_ARGUMENT,
          "dist_value_component", "index");
  DT_ERR2(dist_value_component(var, 2, &c), DIST_OUT_OF_RANGE, DIST_INVALID_ARGUMENT,
          "dist_value_component", "index");
  assert_null(c);
  dist_value_destroy(pr);
  dist_value_destroy(t);
  dist_value_destroy(init);
  dist_value_destroy(var);
  dist_strategy_destroy(s);
}

static void test_create_rejects_misuse(void** state) {
  const float a[2] = {1, 2};
  const float b[3] = {1, 2, 3};
  const int32_t ints[2] = {1, 2};
  const int64_t two = 2;
  dist_value_t* fa = dts_f32(a, 2, "CPU:0");
  dist_value_t* fb = dts_f32(b, 3, "CPU:1");
  dist_value_t* ia = dts_tensor(DIST_INT32, &two, 1, ints, "CPU:1");
  dist_value_t* pr = NULL;
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  const dist_value_t* with_null[2];
  const dist_value_t* nested[2];
  const dist_value_t* shapes[2];
  const dist_value_t* dtypes[2];
  dist_value_t* init = dts_f32_scalar(1.0f, NULL);
  dist_value_t* var = NULL;
  const dist_value_t* with_var[2];
  (void)state;
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &var));
  with_null[0] = fa;
  with_null[1] = NULL;
  shapes[0] = fa;
  shapes[1] = fb;
  dtypes[0] = fa;
  dtypes[1] = ia;
  DT_OK(dist_value_create_per_replica(shapes, 2, &pr));
  nested[0] = fa;
  nested[1] = pr;
  with_var[0] = fa;
  with_var[1] = var;

  DT_ERR(dist_value_create_per_replica(NULL, 2, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_per_replica", "components");
  assert_null(out);
  DT_ERR(dist_value_create_per_replica(shapes, 2, NULL), DIST_INVALID_ARGUMENT,
         "dist_value_create_per_replica", "out");
  DT_ERR(dist_value_create_per_replica(shapes, 0, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_per_replica", "count");
  DT_ERR(dist_value_create_per_replica(shapes, -1, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_per_replica", "count");
  DT_ERR(dist_value_create_per_replica(with_null, 2, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_per_replica", "components[1]");
  /* Components must be tensors. */
  DT_ERR(dist_value_create_per_replica(nested, 2, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_per_replica", "components[1]");
  DT_ERR(dist_value_create_per_replica(with_var, 2, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_per_replica", "components[1]");
  assert_null(out);

  DT_ERR(dist_value_create_mirrored(NULL, 2, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_mirrored", "components");
  DT_ERR(dist_value_create_mirrored(dtypes, 2, NULL), DIST_INVALID_ARGUMENT,
         "dist_value_create_mirrored", "out");
  DT_ERR(dist_value_create_mirrored(shapes, 0, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_mirrored", "count");
  DT_ERR(dist_value_create_mirrored(with_null, 2, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_mirrored", "components[1]");
  DT_ERR(dist_value_create_mirrored(nested, 2, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_mirrored", "components[1]");
  /* Equal dtype and shape. */
  DT_ERR(dist_value_create_mirrored(shapes, 2, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_mirrored", NULL);
  DT_ERR(dist_value_create_mirrored(dtypes, 2, &out), DIST_INVALID_ARGUMENT,
         "dist_value_create_mirrored", NULL);
  assert_null(out);
  dist_value_destroy(fa);
  dist_value_destroy(fb);
  dist_value_destroy(ia);
  dist_value_destroy(pr);
  dist_value_destroy(init);
  dist_value_destroy(var);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_per_replica),
      cmocka_unit_test(test_mirrored),
      cmocka_unit_test(test_tensor_components),
      cmocka_unit_test(test_variable_components),
      cmocka_unit_test(test_component_rejects_misuse),
      cmocka_unit_test(test_create_rejects_misuse),
  };
  return cmocka_run_group_tests_name("dist_values", tests, setup, NULL);
}
