/* Tests for the dtype functions of tensor.h: dist_dtype_name and dist_dtype_size. */
#include "dist_test.h"

/* Every dtype with TensorFlow's DataType number, its name, and the size of the C type that
 * holds one element (bool is 1 byte; bfloat16 and float16 are 16-bit patterns). */
static const struct {
  dist_dtype_t dtype;
  int tf_number;
  const char* name;
  size_t size;
} kDtypes[] = {
    {DIST_FLOAT32, 1, "float32", sizeof(float)},
    {DIST_FLOAT64, 2, "float64", sizeof(double)},
    {DIST_INT32, 3, "int32", sizeof(int32_t)},
    {DIST_UINT8, 4, "uint8", sizeof(uint8_t)},
    {DIST_INT16, 5, "int16", sizeof(int16_t)},
    {DIST_INT8, 6, "int8", sizeof(int8_t)},
    {DIST_INT64, 9, "int64", sizeof(int64_t)},
    {DIST_BOOL, 10, "bool", 1},
    {DIST_BFLOAT16, 14, "bfloat16", sizeof(uint16_t)},
    {DIST_FLOAT16, 19, "float16", sizeof(uint16_t)},
};

/* Values that are not dtypes (TensorFlow numbers of types this library does not have,
 * and values that are no DataType at all). */
static const dist_dtype_t kBadDtypes[] = {0, 7, 8, 11, 12, 13, 15, 16, 17, 18, 20, 23,
                                          100, 101, -1, INT32_MAX, INT32_MIN};

static void test_dtype_numbers_are_tensorflow_datatypes(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kDtypes) / sizeof(kDtypes[0]); ++i) {
    assert_int_equal(kDtypes[i].dtype, kDtypes[i].tf_number);
  }
}

static void test_dtype_size_of_every_dtype(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kDtypes) / sizeof(kDtypes[0]); ++i) {
    size_t size = 12345;
    DT_OK(dist_dtype_size(kDtypes[i].dtype, &size));
    assert_int_equal(size, kDtypes[i].size);
  }
}

static void test_dtype_name_of_every_dtype(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kDtypes) / sizeof(kDtypes[0]); ++i) {
    const char* name = dist_dtype_name(kDtypes[i].dtype);
    assert_non_null(name);
    assert_string_equal(name, kDtypes[i].name);
  }
}

static void test_dtype_name_of_bad_dtypes(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kBadDtypes) / sizeof(kBadDtypes[0]); ++i) {
    const char* name = dist_dtype_name(kBadDtypes[i]);
    assert_non_null(name);
    assert_string_equal(name, "invalid");
  }
}

static void test_dtype_size_of_bad_dtypes(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kBadDtypes) / sizeof(kBadDtypes[0]); ++i) {
    size_t size = 12345;
    print_message("dist_dtype_size(%d) (must fail)\n", (int)kBadDtypes[i]);
    DT_ERR(dist_dtype_size(kBadDtypes[i], &size), DIST_INVALID_ARGUMENT, "dist_dtype_size",
           "dtype");
    assert_int_equal(size, 0);
  }
}

static void test_dtype_size_rejects_null_out(void** state) {
  (void)state;
  DT_ERR(dist_dtype_size(DIST_FLOAT32, NULL), DIST_INVALID_ARGUMENT, "dist_dtype_size",
         "out_size");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_numbers_are_tensorflow_datatypes),
      cmocka_unit_test(test_dtype_size_of_every_dtype),
      cmocka_unit_test(test_dtype_name_of_every_dtype),
      cmocka_unit_test(test_dtype_name_of_bad_dtypes),
      cmocka_unit_test(test_dtype_size_of_bad_dtypes),
      cmocka_unit_test(test_dtype_size_rejects_null_out),
  };
  return cmocka_run_group_tests_name("dtype", tests, NULL, NULL);
}
