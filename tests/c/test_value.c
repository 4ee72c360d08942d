/* Tests for value.h: dist_value_kind and dist_value_destroy.
 *
 * The public API of this version creates tensors only (tensor.h, dlpack_interop.h), so a
 * value of another kind cannot be made here; the kind constants are checked for being
 * distinct and the tensor kind end to end. */
#include "dist_test.h"

static void test_kind_constants_are_distinct(void** state) {
  const dist_value_kind_t kinds[] = {DIST_VALUE_TENSOR,
                                     DIST_VALUE_PER_REPLICA,
                                     DIST_VALUE_MIRRORED,
                                     DIST_VALUE_MIRRORED_VARIABLE,
                                     DIST_VALUE_SYNC_ON_READ_VARIABLE,
                                     DIST_VALUE_VARIABLE};
  size_t i, j;
  (void)state;
  for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); ++i) {
    assert_int_not_equal(kinds[i], 0);
    for (j = i + 1; j < sizeof(kinds) / sizeof(kinds[0]); ++j) {
      assert_int_not_equal(kinds[i], kinds[j]);
    }
  }
}

static void test_kind_of_tensors(void** state) {
  const int64_t dims[1] = {2};
  const float values[2] = {1.0f, 2.0f};
  float borrowed[2] = {3.0f, 4.0f};
  dist_value_t* created = NULL;
  dist_value_t* wrapped = NULL;
  dist_value_t* copied = NULL;
  dist_value_kind_t kind;
  (void)state;
  DT_OK(dist_tensor_create(DIST_FLOAT32, dims, 1, values, sizeof(values), NULL, &created));
  DT_OK(dist_tensor_wrap(DIST_FLOAT32, dims, 1, borrowed, sizeof(borrowed), NULL, NULL, NULL,
                         &wrapped));
  DT_OK(dist_tensor_copy_to_device(created, "CPU:0", &copied));
  kind = 0;
  DT_OK(dist_value_kind(created, &kind));
  assert_int_equal(kind, DIST_VALUE_TENSOR);
  kind = 0;
  DT_OK(dist_value_kind(wrapped, &kind));
  assert_int_equal(kind, DIST_VALUE_TENSOR);
  kind = 0;
  DT_OK(dist_value_kind(copied, &kind));
  assert_int_equal(kind, DIST_VALUE_TENSOR);
  dist_value_destroy(created);
  dist_value_destroy(wrapped);
  dist_value_destroy(copied);
}

static void test_kind_rejects_null(void** state) {
  const int8_t v = 1;
  dist_value_t* tensor = NULL;
  dist_value_kind_t kind = 12345;
  (void)state;
  DT_ERR(dist_value_kind(NULL, &kind), DIST_INVALID_ARGUMENT, "dist_value_kind", "value");
  assert_int_equal(kind, 0);
  DT_OK(dist_tensor_create(DIST_INT8, NULL, 0, &v, 1, NULL, &tensor));
  DT_ERR(dist_value_kind(tensor, NULL), DIST_INVALID_ARGUMENT, "dist_value_kind", "out_kind");
  dist_value_destroy(tensor);
}

static void test_destroy_accepts_null(void** state) {
  (void)state;
  dist_value_destroy(NULL);
  dist_value_destroy(NULL);
}

static void test_destroy_in_any_order(void** state) {
  const int64_t dims[1] = {3};
  const int16_t values[3] = {1, 2, 3};
  dist_value_t* a = NULL;
  dist_value_t* b = NULL;
  dist_value_t* c = NULL;
  void* data = NULL;
  (void)state;
  DT_OK(dist_tensor_create(DIST_INT16, dims, 1, values, sizeof(values), NULL, &a));
  DT_OK(dist_tensor_copy_to_device(a, "CPU:0", &b));
  DT_OK(dist_tensor_copy_to_device(b, "CPU:0", &c));
  dist_value_destroy(b);
  dist_value_destroy(a);
  DT_OK(dist_tensor_data(c, &data));
  assert_int_equal(((int16_t*)data)[0], 1);
  assert_int_equal(((int16_t*)data)[2], 3);
  dist_value_destroy(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kind_constants_are_distinct),
      cmocka_unit_test(test_kind_of_tensors),
      cmocka_unit_test(test_kind_rejects_null),
      cmocka_unit_test(test_destroy_accepts_null),
      cmocka_unit_test(test_destroy_in_any_order),
  };
  return cmocka_run_group_tests_name("value", tests, NULL, NULL);
}
