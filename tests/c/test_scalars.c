/* Tests for the typed scalar getters of tensor.h (dist_tensor_scalar_*): one element of
 * exactly the named dtype, whatever the rank; everything else is INVALID_ARGUMENT naming
 * the dtype or shape, with the output cleared. */
#include "dist_test.h"

static dist_value_t* make(dist_dtype_t dtype, const int64_t* dims, int32_t rank, const void* data,
                          size_t bytes) {
  dist_value_t* tensor = NULL;
  DT_OK(dist_tensor_create(dtype, dims, rank, data, bytes, NULL, &tensor));
  return tensor;
}

static void test_reads_each_dtype(void** state) {
  const float f = -2.5f;
  const double d = 1e300;
  const int32_t i = -7;
  const int64_t l = INT64_C(1) << 40;
  const int64_t one[3] = {1, 1, 1};
  float out_f = 0;
  double out_d = 0;
  int32_t out_i = 0;
  int64_t out_l = 0;
  dist_value_t* tf = make(DIST_FLOAT32, NULL, 0, &f, sizeof f);
  dist_value_t* td = make(DIST_FLOAT64, one, 1, &d, sizeof d);
  dist_value_t* ti = make(DIST_INT32, one, 2, &i, sizeof i);
  dist_value_t* tl = make(DIST_INT64, one, 3, &l, sizeof l);
  (void)state;
  DT_OK(dist_tensor_scalar_float32(tf, &out_f));
  assert_true(out_f == f);
  DT_OK(dist_tensor_scalar_float64(td, &out_d));
  assert_true(out_d == d);
  DT_OK(dist_tensor_scalar_int32(ti, &out_i));
  assert_int_equal(out_i, i);
  DT_OK(dist_tensor_scalar_int64(tl, &out_l));
  assert_true(out_l == l);
  dist_value_destroy(tf);
  dist_value_destroy(td);
  dist_value_destroy(ti);
  dist_value_destroy(tl);
}

static void test_rejects_other_dtypes_and_shapes(void** state) {
  const float two[2] = {1.0f, 2.0f};
  const int64_t dims2[1] = {2};
  const int64_t dims0[1] = {0};
  const double d = 3.0;
  float out_f = 9.0f;
  int64_t out_l = 9;
  dist_value_t* pair = make(DIST_FLOAT32, dims2, 1, two, sizeof two);
  dist_value_t* empty = make(DIST_FLOAT32, dims0, 1, NULL, 0);
  dist_value_t* wide = make(DIST_FLOAT64, NULL, 0, &d, sizeof d);
  (void)state;
  DT_ERR(dist_tensor_scalar_float32(pair, &out_f), DIST_INVALID_ARGUMENT,
         "dist_tensor_scalar_float32", "[2]");
  assert_true(out_f == 0.0f);
  DT_ERR(dist_tensor_scalar_float32(empty, &out_f), DIST_INVALID_ARGUMENT,
         "dist_tensor_scalar_float32", "expected a scalar");
  /* No conversion: a float64 scalar is not read as float32 or int64. */
  DT_ERR(dist_tensor_scalar_float32(wide, &out_f), DIST_INVALID_ARGUMENT,
         "dist_tensor_scalar_float32", "float64");
  DT_ERR(dist_tensor_scalar_int64(wide, &out_l), DIST_INVALID_ARGUMENT,
         "dist_tensor_scalar_int64", "float64");
  assert_true(out_l == 0);
  dist_value_destroy(pair);
  dist_value_destroy(empty);
  dist_value_destroy(wide);
}

static void test_misuse(void** state) {
  const float f = 1.0f;
  float out_f = 0;
  double out_d = 0;
  int32_t out_i = 0;
  int64_t out_l = 0;
  dist_value_t* t = make(DIST_FLOAT32, NULL, 0, &f, sizeof f);
  dist_value_t* pr = NULL;
  const dist_value_t* parts[1];
  (void)state;
  parts[0] = t;
  DT_ERR(dist_tensor_scalar_float32(NULL, &out_f), DIST_INVALID_ARGUMENT, "dist_tensor_scalar_float32",
         "tensor");
  DT_ERR(dist_tensor_scalar_float64(NULL, &out_d), DIST_INVALID_ARGUMENT, "dist_tensor_scalar_float64",
         "tensor");
  DT_ERR(dist_tensor_scalar_int32(NULL, &out_i), DIST_INVALID_ARGUMENT, "dist_tensor_scalar_int32",
         "tensor");
  DT_ERR(dist_tensor_scalar_int64(NULL, &out_l), DIST_INVALID_ARGUMENT, "dist_tensor_scalar_int64",
         "tensor");
  DT_ERR(dist_tensor_scalar_float32(t, NULL), DIST_INVALID_ARGUMENT, "dist_tensor_scalar_float32",
         "out_value");
  /* A distributed value is not a tensor, even with one component. */
  DT_OK(dist_value_create_per_replica(parts, 1, &pr));
  DT_ERR(dist_tensor_scalar_float32(pr, &out_f), DIST_INVALID_ARGUMENT, "dist_tensor_scalar_float32",
         "PerReplica");
  dist_value_destroy(pr);
  dist_value_destroy(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reads_each_dtype),
      cmocka_unit_test(test_rejects_other_dtypes_and_shapes),
      cmocka_unit_test(test_misuse),
  };
  return cmocka_run_group_tests_name("scalars", tests, NULL, NULL);
}
