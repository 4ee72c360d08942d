/* Misuse: tensor functions given a value that is not a tensor (tensor.h and
 * dlpack_interop.h: "DIST_INVALID_ARGUMENT for NULL or a value that is not a tensor").
 * The non-tensor values are made with dist_value_create_per_replica / _mirrored (value.h). */
#include "dist_test.h"

#include "distribute/dlpack_interop.h"

typedef struct {
  dist_value_t* parts[2];
  dist_value_t* per_replica;
  dist_value_t* mirrored;
} fixture;

static int setup(void** state) {
  static fixture f;
  const int64_t dims[1] = {2};
  const float a[2] = {1.0f, 2.0f};
  const float b[2] = {3.0f, 4.0f};
  memset(&f, 0, sizeof(f));
  if (dist_set_logical_cpu_device_count(2) != DIST_OK) return -1;
  if (dist_tensor_create(DIST_FLOAT32, dims, 1, a, sizeof(a), "CPU:0", &f.parts[0]) != DIST_OK)
    return -1;
  if (dist_tensor_create(DIST_FLOAT32, dims, 1, b, sizeof(b), "CPU:1", &f.parts[1]) != DIST_OK)
    return -1;
  if (dist_value_create_per_replica((const dist_value_t* const*)f.parts, 2, &f.per_replica) !=
      DIST_OK)
    return -1;
  if (dist_value_create_mirrored((const dist_value_t* const*)f.parts, 2, &f.mirrored) != DIST_OK)
    return -1;
  *state = &f;
  return 0;
}

static int teardown(void** state) {
  fixture* f = (fixture*)*state;
  dist_value_destroy(f->per_replica);
  dist_value_destroy(f->mirrored);
  dist_value_destroy(f->parts[0]);
  dist_value_destroy(f->parts[1]);
  return 0;
}

static void test_kinds_are_reported(void** state) {
  fixture* f = (fixture*)*state;
  dist_value_kind_t kind = 0;
  DT_OK(dist_value_kind(f->per_replica, &kind));
  assert_int_equal(kind, DIST_VALUE_PER_REPLICA);
  DT_OK(dist_value_kind(f->mirrored, &kind));
  assert_int_equal(kind, DIST_VALUE_MIRRORED);
}

static void check_not_a_tensor(dist_value_t* value) {
  dist_dtype_t dtype = 12345;
  int32_t rank = 12345;
  int64_t dims[4] = {-9, -9, -9, -9};
  int64_t count = 12345;
  size_t size = 12345;
  void* data = DT_SENTINEL_PTR;
  const char* device = DT_SENTINEL_STR;
  dist_value_t* copy = (dist_value_t*)DT_SENTINEL_PTR;
  DLManagedTensor* managed = (DLManagedTensor*)DT_SENTINEL_PTR;

  DT_ERR(dist_tensor_dtype(value, &dtype), DIST_INVALID_ARGUMENT, "dist_tensor_dtype", "tensor");
  assert_int_equal(dtype, 0);
  DT_ERR(dist_tensor_rank(value, &rank), DIST_INVALID_ARGUMENT, "dist_tensor_rank", "tensor");
  assert_int_equal(rank, 0);
  DT_ERR(dist_tensor_shape(value, dims, 4), DIST_INVALID_ARGUMENT, "dist_tensor_shape",
         "tensor");
  assert_true(dims[0] == -9 || dims[0] == 0);
  DT_ERR(dist_tensor_num_elements(value, &count), DIST_INVALID_ARGUMENT,
         "dist_tensor_num_elements", "tensor");
  assert_int_equal(count, 0);
  DT_ERR(dist_tensor_byte_size(value, &size), DIST_INVALID_ARGUMENT, "dist_tensor_byte_size",
         "tensor");
  assert_int_equal(size, 0);
  DT_ERR(dist_tensor_data(value, &data), DIST_INVALID_ARGUMENT, "dist_tensor_data", "tensor");
  assert_null(data);
  DT_ERR(dist_tensor_device(value, &device), DIST_INVALID_ARGUMENT, "dist_tensor_device",
         "tensor");
  assert_null(device);
  DT_ERR(dist_tensor_copy_to_device(value, "CPU:0", &copy), DIST_INVALID_ARGUMENT,
         "dist_tensor_copy_to_device", "tensor");
  assert_null(copy);
  DT_ERR(dist_tensor_to_dlpack(value, &managed), DIST_INVALID_ARGUMENT, "dist_tensor_to_dlpack",
         "tensor");
  assert_null(managed);
}

static void test_per_replica_is_not_a_tensor(void** state) {
  check_not_a_tensor(((fixture*)*state)->per_replica);
}

static void test_mirrored_is_not_a_tensor(void** state) {
  check_not_a_tensor(((fixture*)*state)->mirrored);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kinds_are_reported),
      cmocka_unit_test(test_per_replica_is_not_a_tensor),
      cmocka_unit_test(test_mirrored_is_not_a_tensor),
  };
  return cmocka_run_group_tests_name("wrong_kind", tests, setup, teardown);
}
