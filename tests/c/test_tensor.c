/* Tests for tensor.h: dist_tensor_create / wrap / copy_to_device and the accessors. */
#include "dist_test.h"

#define N_CPUS 3

static int setup_three_cpus(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(N_CPUS) == DIST_OK ? 0 : -1;
}

/* Checks every accessor of `tensor` against the expectation; `bytes` (when not NULL) is
 * the expected content. Returns the tensor's data pointer. */
static void* check_tensor(const dist_value_t* tensor, dist_dtype_t dtype, const int64_t* dims,
                          int32_t rank, const char* device, const void* bytes) {
  dist_value_kind_t kind = 0;
  dist_dtype_t got_dtype = 0;
  int32_t got_rank = -1;
  int64_t got_dims[DIST_MAX_RANK + 1];
  int64_t count = -1;
  int64_t expected_count = 1;
  size_t byte_size = 12345;
  void* data = DT_SENTINEL_PTR;
  const char* got_device = NULL;
  int32_t i;

  /* Any zero dimension makes the count 0 (checked first, so that the product of the
   * other dimensions is never formed). */
  for (i = 0; i < rank; ++i) {
    if (dims[i] == 0) expected_count = 0;
  }
  for (i = 0; i < rank && expected_count != 0; ++i) expected_count *= dims[i];

  DT_OK(dist_value_kind(tensor, &kind));
  assert_int_equal(kind, DIST_VALUE_TENSOR);
  DT_OK(dist_tensor_dtype(tensor, &got_dtype));
  assert_int_equal(got_dtype, dtype);
  DT_OK(dist_tensor_rank(tensor, &got_rank));
  assert_int_equal(got_rank, rank);
  for (i = 0; i < DIST_MAX_RANK + 1; ++i) got_dims[i] = -77;
  DT_OK(dist_tensor_shape(tensor, got_dims, DIST_MAX_RANK + 1));
  for (i = 0; i < rank; ++i) assert_int_equal(got_dims[i], dims[i]);
  DT_OK(dist_tensor_num_elements(tensor, &count));
  assert_int_equal(count, expected_count);
  DT_OK(dist_tensor_byte_size(tensor, &byte_size));
  assert_int_equal(byte_size, (size_t)expected_count * dt_c_size(dtype));
  DT_OK(dist_tensor_data(tensor, &data));
  assert_ptr_not_equal(data, DT_SENTINEL_PTR);
  if (byte_size > 0) assert_non_null(data);
  DT_OK(dist_tensor_device(tensor, &got_device));
  assert_non_null(got_device);
  assert_string_equal(got_device, device);
  if (bytes != NULL && byte_size > 0) assert_memory_equal(data, bytes, byte_size);
  return data;
}

/* ---------------------------------------------------------------------------------------
 * dist_tensor_create */

static void test_create_roundtrip_every_dtype(void** state) {
  const int64_t dims[3] = {2, 3, 4};
  int i;
  (void)state;
  for (i = 0; i < DT_NUM_DTYPES; ++i) {
    dist_dtype_t dtype = dt_dtype_at(i);
    size_t size = 24 * dt_c_size(dtype);
    unsigned char source[24 * 8];
    unsigned char expected[24 * 8];
    dist_value_t* tensor = NULL;
    void* data;
    print_message("dtype %s\n", dist_dtype_name(dtype));
    dt_fill(dtype, source, 24, i);
    memcpy(expected, source, size);
    DT_OK(dist_tensor_create(dtype, dims, 3, source, size, NULL, &tensor));
    assert_non_null(tensor);
    /* The caller keeps `data`: changing it afterwards does not change the tensor. */
    memset(source, 0xA5, sizeof(source));
    data = check_tensor(tensor, dtype, dims, 3, "/device:CPU:0", expected);
    assert_ptr_not_equal(data, source);
    dist_value_destroy(tensor);
  }
}

static void test_create_on_named_cpu_devices(void** state) {
  static const struct {
    const char* name;
    const char* canonical;
  } kDevices[] = {
      {NULL, "/device:CPU:0"},           {"CPU:0", "/device:CPU:0"},
      {"CPU:1", "/device:CPU:1"},        {"cpu:2", "/device:CPU:2"},
      {"/device:CPU:1", "/device:CPU:1"}, {"/cpu:2", "/device:CPU:2"},
      {"/device:cpu:0", "/device:CPU:0"},
  };
  const int64_t dims[1] = {5};
  int32_t values[5] = {1, -2, 3, -4, 5};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kDevices) / sizeof(kDevices[0]); ++i) {
    dist_value_t* tensor = NULL;
    print_message("device %s\n", kDevices[i].name ? kDevices[i].name : "(NULL)");
    DT_OK(dist_tensor_create(DIST_INT32, dims, 1, values, sizeof(values), kDevices[i].name,
                             &tensor));
    check_tensor(tensor, DIST_INT32, dims, 1, kDevices[i].canonical, values);
    dist_value_destroy(tensor);
  }
}

static void test_create_zero_filled(void** state) {
  const int64_t dims[2] = {2, 3};
  const double zeros[6] = {0, 0, 0, 0, 0, 0};
  int i;
  (void)state;
  for (i = 0; i < DT_NUM_DTYPES; ++i) {
    dist_dtype_t dtype = dt_dtype_at(i);
    dist_value_t* tensor = NULL;
    void* data;
    DT_OK(dist_tensor_create(dtype, dims, 2, NULL, 0, "CPU:1", &tensor));
    data = check_tensor(tensor, dtype, dims, 2, "/device:CPU:1", zeros);
    assert_true(dt_all_zero(data, 6 * dt_c_size(dtype)));
    dist_value_destroy(tensor);
  }
}

static void test_create_rank0(void** state) {
  const double value = 2.718281828;
  dist_value_t* tensor = NULL;
  dist_value_t* zero = NULL;
  (void)state;
  DT_OK(dist_tensor_create(DIST_FLOAT64, NULL, 0, &value, sizeof(value), NULL, &tensor));
  check_tensor(tensor, DIST_FLOAT64, NULL, 0, "/device:CPU:0", &value);
  /* dist_tensor_shape accepts NULL out_dims for rank 0. */
  DT_OK(dist_tensor_shape(tensor, NULL, 0));
  dist_value_destroy(tensor);

  /* A zero-filled scalar. */
  DT_OK(dist_tensor_create(DIST_INT64, NULL, 0, NULL, 0, NULL, &zero));
  {
    const int64_t expected = 0;
    check_tensor(zero, DIST_INT64, NULL, 0, "/device:CPU:0", &expected);
  }
  dist_value_destroy(zero);
}

static void test_create_zero_elements(void** state) {
  const int64_t shapes[][3] = {{0, 3, 0}, {4, 0, 2}, {0, 0, 0}};
  const float dummy[1] = {1.0f};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); ++i) {
    dist_value_t* a = NULL;
    dist_value_t* b = NULL;
    DT_OK(dist_tensor_create(DIST_FLOAT32, shapes[i], 3, NULL, 0, NULL, &a));
    check_tensor(a, DIST_FLOAT32, shapes[i], 3, "/device:CPU:0", NULL);
    /* A non-NULL data with byte_size 0 is consistent with zero elements too. */
    DT_OK(dist_tensor_create(DIST_FLOAT32, shapes[i], 3, dummy, 0, NULL, &b));
    check_tensor(b, DIST_FLOAT32, shapes[i], 3, "/device:CPU:0", NULL);
    dist_value_destroy(a);
    dist_value_destroy(b);
  }
}

static void test_create_max_rank(void** state) {
  int64_t dims[DIST_MAX_RANK];
  int16_t values[3] = {7, 8, 9};
  dist_value_t* tensor = NULL;
  int i;
  (void)state;
  for (i = 0; i < DIST_MAX_RANK; ++i) dims[i] = 1;
  dims[DIST_MAX_RANK / 2] = 3;
  DT_OK(dist_tensor_create(DIST_INT16, dims, DIST_MAX_RANK, values, sizeof(values), NULL,
                           &tensor));
  check_tensor(tensor, DIST_INT16, dims, DIST_MAX_RANK, "/device:CPU:0", values);
  dist_value_destroy(tensor);
}

static void test_create_data_is_writable_in_place(void** state) {
  const int64_t dims[1] = {4};
  const uint8_t values[4] = {1, 2, 3, 4};
  dist_value_t* tensor = NULL;
  void* data = NULL;
  void* again = NULL;
  (void)state;
  DT_OK(dist_tensor_create(DIST_UINT8, dims, 1, values, sizeof(values), NULL, &tensor));
  DT_OK(dist_tensor_data(tensor, &data));
  ((uint8_t*)data)[2] = 99;
  DT_OK(dist_tensor_data(tensor, &again));
  assert_ptr_equal(again, data);
  assert_int_equal(((uint8_t*)again)[2], 99);
  assert_int_equal(((uint8_t*)again)[3], 4);
  dist_value_destroy(tensor);
}

static void test_create_rejects_bad_dtype(void** state) {
  const dist_dtype_t bad[] = {0, 7, 8, 11, 17, 100, -1};
  const int64_t dims[1] = {2};
  const int32_t values[2] = {1, 2};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_tensor_create(bad[i], dims, 1, values, sizeof(values), NULL, &tensor),
           DIST_INVALID_ARGUMENT, "dist_tensor_create", "dtype");
    assert_null(tensor);
  }
}

static void test_create_rejects_bad_shapes(void** state) {
  const int64_t negative[2] = {2, -1};
  const int64_t negative_big[1] = {INT64_MIN};
  const int64_t overflow_elements[2] = {INT64_MAX, 2};
  const int64_t overflow_square[2] = {(int64_t)1 << 32, (int64_t)1 << 32};
  const int64_t overflow_bytes[1] = {(int64_t)1 << 62}; /* 2^62 floats = 2^64 bytes */
  const int64_t overflow_with_zero_last[3] = {INT64_MAX, INT64_MAX, 0};
  const int64_t* shapes[] = {negative, negative_big, overflow_elements, overflow_square,
                             overflow_bytes};
  const int32_t ranks[] = {2, 1, 2, 2, 1};
  size_t i;
  float value = 1.0f;
  (void)state;
  for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); ++i) {
    dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
    print_message("shape case %d\n", (int)i);
    /* byte_size 0 with NULL data: only the shape can be wrong. */
    DT_ERR(dist_tensor_create(DIST_FLOAT32, shapes[i], ranks[i], NULL, 0, NULL, &tensor),
           DIST_INVALID_ARGUMENT, "dist_tensor_create", "shape");
    assert_null(tensor);
    tensor = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_tensor_create(DIST_FLOAT32, shapes[i], ranks[i], &value, sizeof(value), NULL,
                              &tensor),
           DIST_INVALID_ARGUMENT, "dist_tensor_create", NULL);
    assert_null(tensor);
  }
  /* A zero dimension makes the element count 0; the product of the others overflowing
   * on the way is not an error by the header (the count is 0), but must not crash. */
  {
    dist_value_t* tensor = NULL;
    dist_status_t status =
        dist_tensor_create(DIST_FLOAT32, overflow_with_zero_last, 3, NULL, 0, NULL, &tensor);
    if (status == DIST_OK) {
      check_tensor(tensor, DIST_FLOAT32, overflow_with_zero_last, 3, "/device:CPU:0", NULL);
    } else {
      assert_int_equal(status, DIST_INVALID_ARGUMENT);
      assert_null(tensor);
    }
    dist_value_destroy(tensor);
  }
}

static void test_create_rejects_null_shape_with_rank(void** state) {
  dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_tensor_create(DIST_FLOAT32, NULL, 2, NULL, 0, NULL, &tensor),
         DIST_INVALID_ARGUMENT, "dist_tensor_create", "shape");
  assert_null(tensor);
}

static void test_create_rejects_bad_rank(void** state) {
  int64_t dims[DIST_MAX_RANK + 1];
  const int32_t bad[] = {-1, DIST_MAX_RANK + 1, INT32_MIN};
  size_t i;
  (void)state;
  for (i = 0; i < DIST_MAX_RANK + 1; ++i) dims[i] = 1;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
    print_message("rank %d (must fail)\n", (int)bad[i]);
    DT_ERR(dist_tensor_create(DIST_FLOAT32, dims, bad[i], NULL, 0, NULL, &tensor),
           DIST_INVALID_ARGUMENT, "dist_tensor_create", "rank");
    assert_null(tensor);
  }
}

static void test_create_rejects_byte_size_mismatch(void** state) {
  const int64_t dims[2] = {2, 3};
  const int64_t empty[2] = {0, 3};
  float values[7] = {0};
  const size_t sizes[] = {6 * sizeof(float) - 1, 6 * sizeof(float) + 1, 5 * sizeof(float),
                          7 * sizeof(float), 6, 1};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); ++i) {
    dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
    print_message("byte_size %d for 24 (must fail)\n", (int)sizes[i]);
    DT_ERR(dist_tensor_create(DIST_FLOAT32, dims, 2, values, sizes[i], NULL, &tensor),
           DIST_INVALID_ARGUMENT, "dist_tensor_create", "byte_size");
    assert_null(tensor);
  }
  {
    /* Non-NULL data with byte_size 0 for a non-empty tensor: a mismatch, not zero-fill. */
    dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_tensor_create(DIST_FLOAT32, dims, 2, values, 0, NULL, &tensor),
           DIST_INVALID_ARGUMENT, "dist_tensor_create", "byte_size");
    assert_null(tensor);
  }
  {
    /* Bytes given for a tensor with no elements. */
    dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_tensor_create(DIST_FLOAT32, empty, 2, values, sizeof(float), NULL, &tensor),
           DIST_INVALID_ARGUMENT, "dist_tensor_create", "byte_size");
    assert_null(tensor);
  }
  {
    /* Rank 0 holds one element. */
    dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_tensor_create(DIST_FLOAT64, NULL, 0, values, sizeof(float), NULL, &tensor),
           DIST_INVALID_ARGUMENT, "dist_tensor_create", "byte_size");
    assert_null(tensor);
  }
}

static void test_create_rejects_null_data_with_bytes(void** state) {
  const int64_t dims[1] = {3};
  dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_tensor_create(DIST_INT8, dims, 1, NULL, 3, NULL, &tensor), DIST_INVALID_ARGUMENT,
         "dist_tensor_create", "data");
  assert_null(tensor);
}

static void test_create_rejects_null_out(void** state) {
  const int64_t dims[1] = {1};
  const int8_t value = 1;
  (void)state;
  DT_ERR(dist_tensor_create(DIST_INT8, dims, 1, &value, 1, NULL, NULL), DIST_INVALID_ARGUMENT,
         "dist_tensor_create", "out");
}

static void test_create_reports_allocation_failure(void** state) {
  /* Almost 2^60 bytes: no overflow, but no machine can allocate it. */
  const int64_t dims[2] = {(int64_t)1 << 40, ((int64_t)1 << 20) - 1};
  dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_tensor_create(DIST_UINT8, dims, 2, NULL, 0, NULL, &tensor),
         DIST_RESOURCE_EXHAUSTED, "dist_tensor_create", NULL);
  assert_null(tensor);
}

static void test_create_rejects_bad_devices(void** state) {
  static const struct {
    const char* device;
    dist_status_t code;
  } kBad[] = {
      {"CPU:x", DIST_INVALID_ARGUMENT},  {"TPU:0", DIST_INVALID_ARGUMENT},
      {"/job:1bad/device:CPU:0", DIST_INVALID_ARGUMENT},
      {"CPU:-1", DIST_INVALID_ARGUMENT}, {"CPU:99999999999", DIST_INVALID_ARGUMENT},
      {"CPU:999", DIST_NOT_FOUND},       {"CPU:3", DIST_NOT_FOUND}, /* N_CPUS == 3 */
      {"/device:CPU:255", DIST_NOT_FOUND},
  };
  const int64_t dims[1] = {2};
  const int32_t values[2] = {1, 2};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kBad) / sizeof(kBad[0]); ++i) {
    dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
    print_message("device \"%s\" (must fail with %s)\n", kBad[i].device,
                  dist_status_name(kBad[i].code));
    DT_ERR(dist_tensor_create(DIST_INT32, dims, 1, values, sizeof(values), kBad[i].device,
                              &tensor),
           kBad[i].code, "dist_tensor_create", "device");
    assert_null(tensor);
  }
}

/* "" is not a device name (dist_device_parse rejects it); only NULL means "CPU:0". */
static void test_empty_device_name_is_malformed(void** state) {
  const int64_t dims[1] = {2};
  int32_t values[2] = {1, 2};
  dt_release_counter counter = {0, NULL, NULL};
  dist_value_t* source = NULL;
  dist_value_t* tensor;
  dist_device_t* device = (dist_device_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_device_parse("", &device), DIST_INVALID_ARGUMENT, "dist_device_parse", "name");
  assert_null(device);

  tensor = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_tensor_create(DIST_INT32, dims, 1, values, sizeof(values), "", &tensor),
         DIST_INVALID_ARGUMENT, "dist_tensor_create", "device");
  assert_null(tensor);

  tensor = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_tensor_wrap(DIST_INT32, dims, 1, values, sizeof(values), "", dt_count_release,
                          &counter, &tensor),
         DIST_INVALID_ARGUMENT, "dist_tensor_wrap", "device");
  assert_null(tensor);
  assert_int_equal(counter.calls, 0);

  DT_OK(dist_tensor_create(DIST_INT32, dims, 1, values, sizeof(values), NULL, &source));
  tensor = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_tensor_copy_to_device(source, "", &tensor), DIST_INVALID_ARGUMENT,
         "dist_tensor_copy_to_device", "device");
  assert_null(tensor);
  dist_value_destroy(source);
}

static void test_create_on_gpu_without_gpu(void** state) {
  const int64_t dims[1] = {2};
  const float values[2] = {1.0f, 2.0f};
  const char* gpus[] = {"GPU:0", "/device:GPU:0", "gpu:1"};
  size_t i;
  (void)state;
  if (dt_have_gpu()) skip();
  for (i = 0; i < sizeof(gpus) / sizeof(gpus[0]); ++i) {
    dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
    /* The message names the GPU that was asked for. */
    DT_ERR(dist_tensor_create(DIST_FLOAT32, dims, 1, values, sizeof(values), gpus[i], &tensor),
           DIST_FAILED_PRECONDITION, "dist_tensor_create", "GPU:");
    assert_null(tensor);
  }
}

/* ---------------------------------------------------------------------------------------
 * dist_tensor_wrap */

static void test_wrap_borrows_and_releases_once(void** state) {
  const int64_t dims[2] = {3, 2};
  double buffer[6] = {1, 2, 3, 4, 5, 6};
  dt_release_counter counter = {0, NULL, NULL};
  dist_value_t* tensor = NULL;
  void* data;
  (void)state;
  DT_OK(dist_tensor_wrap(DIST_FLOAT64, dims, 2, buffer, sizeof(buffer), "CPU:1",
                         dt_count_release, &counter, &tensor));
  data = check_tensor(tensor, DIST_FLOAT64, dims, 2, "/device:CPU:1", buffer);
  /* No copy: the tensor's buffer is the caller's. */
  assert_ptr_equal(data, buffer);
  /* Writes go both ways. */
  buffer[0] = 42.0;
  assert_true(((double*)data)[0] == 42.0);
  ((double*)data)[5] = -1.0;
  assert_true(buffer[5] == -1.0);
  assert_int_equal(counter.calls, 0);
  dist_value_destroy(tensor);
  assert_int_equal(counter.calls, 1);
  assert_ptr_equal(counter.last_data, buffer);
  assert_ptr_equal(counter.last_user_data, &counter);
}

static void test_wrap_every_dtype(void** state) {
  const int64_t dims[1] = {24};
  int i;
  (void)state;
  for (i = 0; i < DT_NUM_DTYPES; ++i) {
    dist_dtype_t dtype = dt_dtype_at(i);
    unsigned char buffer[24 * 8];
    dt_release_counter counter = {0, NULL, NULL};
    dist_value_t* tensor = NULL;
    void* data;
    dt_fill(dtype, buffer, 24, i + 5);
    DT_OK(dist_tensor_wrap(dtype, dims, 1, buffer, 24 * dt_c_size(dtype), NULL,
                           dt_count_release, &counter, &tensor));
    data = check_tensor(tensor, dtype, dims, 1, "/device:CPU:0", buffer);
    assert_ptr_equal(data, buffer);
    dist_value_destroy(tensor);
    assert_int_equal(counter.calls, 1);
  }
}

static void test_wrap_with_null_release(void** state) {
  const int64_t dims[1] = {3};
  int64_t buffer[3] = {1, 2, 3};
  dist_value_t* tensor = NULL;
  (void)state;
  DT_OK(dist_tensor_wrap(DIST_INT64, dims, 1, buffer, sizeof(buffer), NULL, NULL, NULL,
                         &tensor));
  check_tensor(tensor, DIST_INT64, dims, 1, "/device:CPU:0", buffer);
  dist_value_destroy(tensor);
}

static void test_wrap_rank0_and_empty(void** state) {
  float scalar = 3.5f;
  float unused[1] = {0.0f};
  const int64_t empty[2] = {5, 0};
  dt_release_counter c1 = {0, NULL, NULL};
  dt_release_counter c2 = {0, NULL, NULL};
  dist_value_t* a = NULL;
  dist_value_t* b = NULL;
  (void)state;
  DT_OK(dist_tensor_wrap(DIST_FLOAT32, NULL, 0, &scalar, sizeof(scalar), NULL, dt_count_release,
                         &c1, &a));
  check_tensor(a, DIST_FLOAT32, NULL, 0, "/device:CPU:0", &scalar);
  DT_OK(dist_tensor_wrap(DIST_FLOAT32, empty, 2, unused, 0, NULL, dt_count_release, &c2, &b));
  check_tensor(b, DIST_FLOAT32, empty, 2, "/device:CPU:0", NULL);
  dist_value_destroy(b);
  dist_value_destroy(a);
  assert_int_equal(c1.calls, 1);
  assert_int_equal(c2.calls, 1);
  assert_ptr_equal(c1.last_data, &scalar);
  assert_ptr_equal(c2.last_data, unused);
}

static void test_wrap_release_waits_for_last_value(void** state) {
  const int64_t dims[1] = {4};
  int32_t buffer[4] = {10, 20, 30, 40};
  const int32_t expected[4] = {10, 20, 30, 40};
  dt_release_counter counter = {0, NULL, NULL};
  dist_value_t* wrapped = NULL;
  dist_value_t* copy = NULL;
  void* copy_data = NULL;
  (void)state;
  DT_OK(dist_tensor_wrap(DIST_INT32, dims, 1, buffer, sizeof(buffer), NULL, dt_count_release,
                         &counter, &wrapped));
  DT_OK(dist_tensor_copy_to_device(wrapped, "CPU:0", &copy));
  copy_data = check_tensor(copy, DIST_INT32, dims, 1, "/device:CPU:0", expected);
  /* The copy has its own buffer, so it does not keep the borrowed one. */
  assert_ptr_not_equal(copy_data, buffer);
  assert_int_equal(counter.calls, 0);
  dist_value_destroy(wrapped);
  assert_int_equal(counter.calls, 1);
  /* The borrowed buffer may now be reused; the copy is unaffected. */
  memset(buffer, 0, sizeof(buffer));
  check_tensor(copy, DIST_INT32, dims, 1, "/device:CPU:0", expected);
  dist_value_destroy(copy);
  assert_int_equal(counter.calls, 1);
}

static void test_wrap_failure_does_not_release(void** state) {
  const int64_t dims[2] = {2, 2};
  const int64_t negative[2] = {2, -2};
  int64_t too_many[DIST_MAX_RANK + 1];
  float buffer[4] = {1, 2, 3, 4};
  dt_release_counter counter = {0, NULL, NULL};
  dist_value_t* tensor;
  int i;
  (void)state;
  for (i = 0; i < DIST_MAX_RANK + 1; ++i) too_many[i] = 1;

#define EXPECT_WRAP_FAILS(call, code, arg)                                  \
  do {                                                                      \
    tensor = (dist_value_t*)DT_SENTINEL_PTR;                                \
    DT_ERR(call, code, "dist_tensor_wrap", arg);                            \
    assert_null(tensor);                                                    \
    assert_int_equal(counter.calls, 0);                                     \
  } while (0)

  EXPECT_WRAP_FAILS(dist_tensor_wrap(0, dims, 2, buffer, sizeof(buffer), NULL, dt_count_release,
                                     &counter, &tensor),
                    DIST_INVALID_ARGUMENT, "dtype");
  EXPECT_WRAP_FAILS(dist_tensor_wrap(DIST_FLOAT32, negative, 2, buffer, sizeof(buffer), NULL,
                                     dt_count_release, &counter, &tensor),
                    DIST_INVALID_ARGUMENT, "shape");
  EXPECT_WRAP_FAILS(dist_tensor_wrap(DIST_FLOAT32, NULL, 2, buffer, sizeof(buffer), NULL,
                                     dt_count_release, &counter, &tensor),
                    DIST_INVALID_ARGUMENT, "shape");
  EXPECT_WRAP_FAILS(dist_tensor_wrap(DIST_FLOAT32, too_many, DIST_MAX_RANK + 1, buffer,
                                     sizeof(float), NULL, dt_count_release, &counter, &tensor),
                    DIST_INVALID_ARGUMENT, "rank");
  EXPECT_WRAP_FAILS(dist_tensor_wrap(DIST_FLOAT32, dims, -1, buffer, sizeof(buffer), NULL,
                                     dt_count_release, &counter, &tensor),
                    DIST_INVALID_ARGUMENT, "rank");
  EXPECT_WRAP_FAILS(dist_tensor_wrap(DIST_FLOAT32, dims, 2, buffer, sizeof(buffer) - 1, NULL,
                                     dt_count_release, &counter, &tensor),
                    DIST_INVALID_ARGUMENT, "byte_size");
  EXPECT_WRAP_FAILS(dist_tensor_wrap(DIST_FLOAT64, dims, 2, buffer, sizeof(buffer), NULL,
                                     dt_count_release, &counter, &tensor),
                    DIST_INVALID_ARGUMENT, "byte_size");
  EXPECT_WRAP_FAILS(dist_tensor_wrap(DIST_FLOAT32, dims, 2, NULL, sizeof(buffer), NULL,
                                     dt_count_release, &counter, &tensor),
                    DIST_INVALID_ARGUMENT, "data");
  EXPECT_WRAP_FAILS(dist_tensor_wrap(DIST_FLOAT32, dims, 2, buffer, sizeof(buffer), "CPU:x",
                                     dt_count_release, &counter, &tensor),
                    DIST_INVALID_ARGUMENT, "device");
  EXPECT_WRAP_FAILS(dist_tensor_wrap(DIST_FLOAT32, dims, 2, buffer, sizeof(buffer), "TPU:0",
                                     dt_count_release, &counter, &tensor),
                    DIST_INVALID_ARGUMENT, "device");
  EXPECT_WRAP_FAILS(dist_tensor_wrap(DIST_FLOAT32, dims, 2, buffer, sizeof(buffer), "CPU:999",
                                     dt_count_release, &counter, &tensor),
                    DIST_NOT_FOUND, "device");
#undef EXPECT_WRAP_FAILS

  /* A GPU device is never accepted (wrap makes host tensors); without GPUs the library may
   * say so with FAILED_PRECONDITION. */
  tensor = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR2(dist_tensor_wrap(DIST_FLOAT32, dims, 2, buffer, sizeof(buffer), "GPU:0",
                           dt_count_release, &counter, &tensor),
          DIST_INVALID_ARGUMENT, DIST_FAILED_PRECONDITION, "dist_tensor_wrap", "GPU:0");
  assert_null(tensor);
  assert_int_equal(counter.calls, 0);

  /* NULL out. */
  DT_ERR(dist_tensor_wrap(DIST_FLOAT32, dims, 2, buffer, sizeof(buffer), NULL, dt_count_release,
                          &counter, NULL),
         DIST_INVALID_ARGUMENT, "dist_tensor_wrap", "out");
  assert_int_equal(counter.calls, 0);

  /* The caller still owns the buffer, untouched. */
  assert_true(buffer[0] == 1.0f && buffer[3] == 4.0f);
}

/* ---------------------------------------------------------------------------------------
 * Accessors: misuse */

static void test_accessors_reject_null(void** state) {
  const int64_t dims[2] = {2, 2};
  dist_value_t* tensor = NULL;
  dist_dtype_t dtype;
  int32_t rank;
  int64_t dims_out[4];
  int64_t count;
  size_t size;
  void* data;
  const char* device;
  (void)state;
  DT_OK(dist_tensor_create(DIST_INT8, dims, 2, NULL, 0, NULL, &tensor));

  dtype = 12345;
  DT_ERR(dist_tensor_dtype(NULL, &dtype), DIST_INVALID_ARGUMENT, "dist_tensor_dtype", "tensor");
  assert_int_equal(dtype, 0);
  DT_ERR(dist_tensor_dtype(tensor, NULL), DIST_INVALID_ARGUMENT, "dist_tensor_dtype",
         "out_dtype");

  rank = 12345;
  DT_ERR(dist_tensor_rank(NULL, &rank), DIST_INVALID_ARGUMENT, "dist_tensor_rank", "tensor");
  assert_int_equal(rank, 0);
  DT_ERR(dist_tensor_rank(tensor, NULL), DIST_INVALID_ARGUMENT, "dist_tensor_rank", "out_rank");

  DT_ERR(dist_tensor_shape(NULL, dims_out, 4), DIST_INVALID_ARGUMENT, "dist_tensor_shape",
         "tensor");
  DT_ERR(dist_tensor_shape(tensor, NULL, 4), DIST_INVALID_ARGUMENT, "dist_tensor_shape",
         "out_dims");

  count = 12345;
  DT_ERR(dist_tensor_num_elements(NULL, &count), DIST_INVALID_ARGUMENT,
         "dist_tensor_num_elements", "tensor");
  assert_int_equal(count, 0);
  DT_ERR(dist_tensor_num_elements(tensor, NULL), DIST_INVALID_ARGUMENT,
         "dist_tensor_num_elements", "out_count");

  size = 12345;
  DT_ERR(dist_tensor_byte_size(NULL, &size), DIST_INVALID_ARGUMENT, "dist_tensor_byte_size",
         "tensor");
  assert_int_equal(size, 0);
  DT_ERR(dist_tensor_byte_size(tensor, NULL), DIST_INVALID_ARGUMENT, "dist_tensor_byte_size",
         "out_size");

  data = DT_SENTINEL_PTR;
  DT_ERR(dist_tensor_data(NULL, &data), DIST_INVALID_ARGUMENT, "dist_tensor_data", "tensor");
  assert_null(data);
  DT_ERR(dist_tensor_data(tensor, NULL), DIST_INVALID_ARGUMENT, "dist_tensor_data", "out_borrowed_data");

  device = DT_SENTINEL_STR;
  DT_ERR(dist_tensor_device(NULL, &device), DIST_INVALID_ARGUMENT, "dist_tensor_device",
         "tensor");
  assert_null(device);
  DT_ERR(dist_tensor_device(tensor, NULL), DIST_INVALID_ARGUMENT, "dist_tensor_device",
         "out_borrowed_device");

  dist_value_destroy(tensor);
}

static void test_shape_capacity(void** state) {
  const int64_t dims[3] = {4, 5, 6};
  int64_t out[8];
  dist_value_t* tensor = NULL;
  dist_value_t* scalar = NULL;
  const float one = 1.0f;
  int i;
  (void)state;
  DT_OK(dist_tensor_create(DIST_UINT8, dims, 3, NULL, 0, NULL, &tensor));

  /* Exactly the rank. */
  for (i = 0; i < 8; ++i) out[i] = -9;
  DT_OK(dist_tensor_shape(tensor, out, 3));
  assert_int_equal(out[0], 4);
  assert_int_equal(out[1], 5);
  assert_int_equal(out[2], 6);
  assert_int_equal(out[3], -9);

  /* Too small: an error, and nothing written past the capacity. */
  for (i = 0; i < 8; ++i) out[i] = -9;
  DT_ERR(dist_tensor_shape(tensor, out, 2), DIST_INVALID_ARGUMENT, "dist_tensor_shape",
         "capacity");
  /* Never half-written: untouched or zeroed. */
  assert_true(out[0] == -9 || out[0] == 0);
  assert_true(out[1] == -9 || out[1] == 0);
  assert_int_equal(out[2], -9);
  assert_int_equal(out[3], -9);
  DT_ERR(dist_tensor_shape(tensor, out, 0), DIST_INVALID_ARGUMENT, "dist_tensor_shape",
         "capacity");
  assert_int_equal(out[0], -9);
  DT_ERR(dist_tensor_shape(tensor, out, -1), DIST_INVALID_ARGUMENT, "dist_tensor_shape",
         "capacity");
  assert_int_equal(out[0], -9);
  DT_ERR(dist_tensor_shape(tensor, NULL, 0), DIST_INVALID_ARGUMENT, "dist_tensor_shape", NULL);

  /* Rank 0: capacity 0 with NULL is fine, and so is a larger capacity. */
  DT_OK(dist_tensor_create(DIST_FLOAT32, NULL, 0, &one, sizeof(one), NULL, &scalar));
  DT_OK(dist_tensor_shape(scalar, NULL, 0));
  out[0] = -9;
  DT_OK(dist_tensor_shape(scalar, out, 8));
  assert_int_equal(out[0], -9);

  dist_value_destroy(scalar);
  dist_value_destroy(tensor);
}

static void test_device_string_lives_with_the_tensor(void** state) {
  const int64_t dims[1] = {1};
  const int8_t v = 3;
  dist_value_t* a = NULL;
  dist_value_t* b = NULL;
  const char* name_a = NULL;
  (void)state;
  DT_OK(dist_tensor_create(DIST_INT8, dims, 1, &v, 1, "CPU:2", &a));
  DT_OK(dist_tensor_device(a, &name_a));
  DT_OK(dist_tensor_create(DIST_INT8, dims, 1, &v, 1, "CPU:1", &b));
  dist_value_destroy(b);
  assert_string_equal(name_a, "/device:CPU:2");
  dist_value_destroy(a);
}

static void test_destroy_accepts_null(void** state) {
  (void)state;
  dist_value_destroy(NULL);
}

/* ---------------------------------------------------------------------------------------
 * dist_tensor_copy_to_device */

static void test_copy_cpu_to_cpu_every_dtype(void** state) {
  const int64_t dims[2] = {4, 6};
  int i;
  (void)state;
  for (i = 0; i < DT_NUM_DTYPES; ++i) {
    dist_dtype_t dtype = dt_dtype_at(i);
    size_t size = 24 * dt_c_size(dtype);
    unsigned char values[24 * 8];
    dist_value_t* source = NULL;
    dist_value_t* copy = NULL;
    void* source_data;
    void* copy_data;
    dt_fill(dtype, values, 24, 3 * i + 1);
    DT_OK(dist_tensor_create(dtype, dims, 2, values, size, "CPU:0", &source));
    DT_OK(dist_tensor_copy_to_device(source, "CPU:2", &copy));
    source_data = check_tensor(source, dtype, dims, 2, "/device:CPU:0", values);
    copy_data = check_tensor(copy, dtype, dims, 2, "/device:CPU:2", values);
    assert_ptr_not_equal(source_data, copy_data);
    /* Independent buffers: writes to one are not seen by the other. */
    memset(copy_data, 0, size);
    check_tensor(source, dtype, dims, 2, "/device:CPU:0", values);
    dist_value_destroy(source);
    /* The copy outlives its source. */
    assert_true(dt_all_zero(copy_data, size));
    dist_value_destroy(copy);
  }
}

static void test_copy_to_same_device_gets_own_buffer(void** state) {
  const int64_t dims[1] = {3};
  const float values[3] = {1.5f, 2.5f, 3.5f};
  dist_value_t* source = NULL;
  dist_value_t* copy = NULL;
  void* a;
  void* b;
  (void)state;
  DT_OK(dist_tensor_create(DIST_FLOAT32, dims, 1, values, sizeof(values), "CPU:1", &source));
  DT_OK(dist_tensor_copy_to_device(source, "/device:CPU:1", &copy));
  a = check_tensor(source, DIST_FLOAT32, dims, 1, "/device:CPU:1", values);
  b = check_tensor(copy, DIST_FLOAT32, dims, 1, "/device:CPU:1", values);
  assert_ptr_not_equal(a, b);
  dist_value_destroy(copy);
  dist_value_destroy(source);
}

static void test_copy_rank0_and_empty(void** state) {
  const int64_t empty[2] = {0, 7};
  const int64_t scalar_value = -123456789012345LL;
  dist_value_t* scalar = NULL;
  dist_value_t* scalar_copy = NULL;
  dist_value_t* nothing = NULL;
  dist_value_t* nothing_copy = NULL;
  (void)state;
  DT_OK(dist_tensor_create(DIST_INT64, NULL, 0, &scalar_value, sizeof(scalar_value), NULL,
                           &scalar));
  DT_OK(dist_tensor_copy_to_device(scalar, "CPU:1", &scalar_copy));
  check_tensor(scalar_copy, DIST_INT64, NULL, 0, "/device:CPU:1", &scalar_value);
  DT_OK(dist_tensor_create(DIST_BOOL, empty, 2, NULL, 0, NULL, &nothing));
  DT_OK(dist_tensor_copy_to_device(nothing, "CPU:2", &nothing_copy));
  check_tensor(nothing_copy, DIST_BOOL, empty, 2, "/device:CPU:2", NULL);
  dist_value_destroy(scalar);
  dist_value_destroy(scalar_copy);
  dist_value_destroy(nothing);
  dist_value_destroy(nothing_copy);
}

static void test_copy_rejects_misuse(void** state) {
  const int64_t dims[1] = {2};
  const int32_t values[2] = {1, 2};
  dist_value_t* source = NULL;
  dist_value_t* copy;
  (void)state;
  DT_OK(dist_tensor_create(DIST_INT32, dims, 1, values, sizeof(values), NULL, &source));

  copy = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_tensor_copy_to_device(NULL, "CPU:0", &copy), DIST_INVALID_ARGUMENT,
         "dist_tensor_copy_to_device", "tensor");
  assert_null(copy);
  DT_ERR(dist_tensor_copy_to_device(source, "CPU:0", NULL), DIST_INVALID_ARGUMENT,
         "dist_tensor_copy_to_device", "out");

  copy = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_tensor_copy_to_device(source, "CPU:x", &copy), DIST_INVALID_ARGUMENT,
         "dist_tensor_copy_to_device", "device");
  assert_null(copy);
  copy = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_tensor_copy_to_device(source, "TPU:0", &copy), DIST_INVALID_ARGUMENT,
         "dist_tensor_copy_to_device", "device");
  assert_null(copy);
  copy = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_tensor_copy_to_device(source, "CPU:999", &copy), DIST_NOT_FOUND,
         "dist_tensor_copy_to_device", "device");
  assert_null(copy);
  copy = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_tensor_copy_to_device(source, "CPU:3", &copy), DIST_NOT_FOUND,
         "dist_tensor_copy_to_device", "device");
  assert_null(copy);
  if (!dt_have_gpu()) {
    copy = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_tensor_copy_to_device(source, "GPU:0", &copy), DIST_FAILED_PRECONDITION,
           "dist_tensor_copy_to_device", "GPU:0");
    assert_null(copy);
  }
  /* The source is unchanged. */
  check_tensor(source, DIST_INT32, dims, 1, "/device:CPU:0", values);
  dist_value_destroy(source);
}

static void test_tensor_keeps_device_after_count_change(void** state) {
  const int64_t dims[1] = {2};
  const int32_t values[2] = {5, 6};
  dist_value_t* tensor = NULL;
  dist_value_t* copy = NULL;
  (void)state;
  DT_OK(dist_tensor_create(DIST_INT32, dims, 1, values, sizeof(values), "CPU:2", &tensor));
  DT_OK(dist_set_logical_cpu_device_count(1));
  check_tensor(tensor, DIST_INT32, dims, 1, "/device:CPU:2", values);
  /* CPU:2 no longer exists for new tensors. */
  copy = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_tensor_copy_to_device(tensor, "CPU:2", &copy), DIST_NOT_FOUND,
         "dist_tensor_copy_to_device", "device");
  assert_null(copy);
  DT_OK(dist_tensor_copy_to_device(tensor, "CPU:0", &copy));
  check_tensor(copy, DIST_INT32, dims, 1, "/device:CPU:0", values);
  dist_value_destroy(copy);
  DT_OK(dist_set_logical_cpu_device_count(N_CPUS));
  dist_value_destroy(tensor);
}

/* ---------------------------------------------------------------------------------------
 * GPU tensors (skipped without a GPU). */

static void test_gpu_create_and_copy_back(void** state) {
  const int64_t dims[2] = {16, 33};
  float values[16 * 33];
  dist_value_t* gpu = NULL;
  dist_value_t* gpu2 = NULL;
  dist_value_t* host = NULL;
  dist_value_t* host2 = NULL;
  const char* device = NULL;
  void* gpu_data = NULL;
  void* gpu2_data = NULL;
  size_t size = 0;
  (void)state;
  DT_REQUIRE_GPU();
  dt_fill(DIST_FLOAT32, values, 16 * 33, 9);
  DT_OK(dist_tensor_create(DIST_FLOAT32, dims, 2, values, sizeof(values), "GPU:0", &gpu));
  DT_OK(dist_tensor_device(gpu, &device));
  assert_string_equal(device, "/device:GPU:0");
  DT_OK(dist_tensor_byte_size(gpu, &size));
  assert_int_equal(size, sizeof(values));
  DT_OK(dist_tensor_data(gpu, &gpu_data));
  assert_non_null(gpu_data);

  DT_OK(dist_tensor_copy_to_device(gpu, "CPU:1", &host));
  check_tensor(host, DIST_FLOAT32, dims, 2, "/device:CPU:1", values);

  /* GPU to GPU: a new buffer with the same content. */
  DT_OK(dist_tensor_copy_to_device(gpu, "GPU:0", &gpu2));
  DT_OK(dist_tensor_data(gpu2, &gpu2_data));
  assert_ptr_not_equal(gpu_data, gpu2_data);
  dist_value_destroy(gpu);
  DT_OK(dist_tensor_copy_to_device(gpu2, "CPU:0", &host2));
  check_tensor(host2, DIST_FLOAT32, dims, 2, "/device:CPU:0", values);

  dist_value_destroy(gpu2);
  dist_value_destroy(host);
  dist_value_destroy(host2);
}

static void test_gpu_zero_filled(void** state) {
  const int64_t dims[1] = {1000};
  dist_value_t* gpu = NULL;
  dist_value_t* host = NULL;
  void* data = NULL;
  (void)state;
  DT_REQUIRE_GPU();
  DT_OK(dist_tensor_create(DIST_INT64, dims, 1, NULL, 0, "GPU:0", &gpu));
  DT_OK(dist_tensor_copy_to_device(gpu, "CPU:0", &host));
  DT_OK(dist_tensor_data(host, &data));
  assert_true(dt_all_zero(data, 1000 * sizeof(int64_t)));
  dist_value_destroy(gpu);
  dist_value_destroy(host);
}

static void test_gpu_nonexistent_index(void** state) {
  const int64_t dims[1] = {1};
  const float v = 1.0f;
  dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_REQUIRE_GPU();
  DT_ERR(dist_tensor_create(DIST_FLOAT32, dims, 1, &v, sizeof(v), "GPU:999", &tensor),
         DIST_NOT_FOUND, "dist_tensor_create", "device");
  assert_null(tensor);
}

int main(void) {
  const struct CMUnitTest create_tests[] = {
      cmocka_unit_test(test_create_roundtrip_every_dtype),
      cmocka_unit_test(test_create_on_named_cpu_devices),
      cmocka_unit_test(test_create_zero_filled),
      cmocka_unit_test(test_create_rank0),
      cmocka_unit_test(test_create_zero_elements),
      cmocka_unit_test(test_create_max_rank),
      cmocka_unit_test(test_create_data_is_writable_in_place),
      cmocka_unit_test(test_create_rejects_bad_dtype),
      cmocka_unit_test(test_create_rejects_bad_shapes),
      cmocka_unit_test(test_create_rejects_null_shape_with_rank),
      cmocka_unit_test(test_create_rejects_bad_rank),
      cmocka_unit_test(test_create_rejects_byte_size_mismatch),
      cmocka_unit_test(test_create_rejects_null_data_with_bytes),
      cmocka_unit_test(test_create_rejects_null_out),
      cmocka_unit_test(test_create_reports_allocation_failure),
      cmocka_unit_test(test_create_rejects_bad_devices),
      cmocka_unit_test(test_empty_device_name_is_malformed),
      cmocka_unit_test(test_create_on_gpu_without_gpu),
  };
  const struct CMUnitTest wrap_tests[] = {
      cmocka_unit_test(test_wrap_borrows_and_releases_once),
      cmocka_unit_test(test_wrap_every_dtype),
      cmocka_unit_test(test_wrap_with_null_release),
      cmocka_unit_test(test_wrap_rank0_and_empty),
      cmocka_unit_test(test_wrap_release_waits_for_last_value),
      cmocka_unit_test(test_wrap_failure_does_not_release),
  };
  const struct CMUnitTest accessor_tests[] = {
      cmocka_unit_test(test_accessors_reject_null),
      cmocka_unit_test(test_shape_capacity),
      cmocka_unit_test(test_device_string_lives_with_the_tensor),
      cmocka_unit_test(test_destroy_accepts_null),
  };
  const struct CMUnitTest copy_tests[] = {
      cmocka_unit_test(test_copy_cpu_to_cpu_every_dtype),
      cmocka_unit_test(test_copy_to_same_device_gets_own_buffer),
      cmocka_unit_test(test_copy_rank0_and_empty),
      cmocka_unit_test(test_copy_rejects_misuse),
      cmocka_unit_test(test_tensor_keeps_device_after_count_change),
  };
  const struct CMUnitTest gpu_tests[] = {
      cmocka_unit_test(test_gpu_create_and_copy_back),
      cmocka_unit_test(test_gpu_zero_filled),
      cmocka_unit_test(test_gpu_nonexistent_index),
  };
  int failures = 0;
  failures += cmocka_run_group_tests_name("tensor_create", create_tests, setup_three_cpus, NULL);
  failures += cmocka_run_group_tests_name("tensor_wrap", wrap_tests, setup_three_cpus, NULL);
  failures +=
      cmocka_run_group_tests_name("tensor_accessors", accessor_tests, setup_three_cpus, NULL);
  failures += cmocka_run_group_tests_name("tensor_copy", copy_tests, setup_three_cpus, NULL);
  failures += cmocka_run_group_tests_name("tensor_gpu", gpu_tests, setup_three_cpus, NULL);
  return failures;
}
