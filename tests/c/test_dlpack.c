/* Tests for dlpack_interop.h: dist_tensor_to_dlpack and dist_tensor_from_dlpack. */
#include "dist_test.h"

#include "distribute/dlpack_interop.h"

/* kDLBool is DLPack >= 0.8; the installed header (0.6 ABI) may not define it. */
#define DT_KDLBOOL 6

/* The DLPack type of every dtype, written from DLPack's DLDataTypeCode. */
static const struct {
  dist_dtype_t dtype;
  uint8_t code;
  uint8_t bits;
} kDlTypes[] = {
    {DIST_FLOAT16, kDLFloat, 16}, {DIST_FLOAT32, kDLFloat, 32}, {DIST_FLOAT64, kDLFloat, 64},
    {DIST_BFLOAT16, kDLBfloat, 16}, {DIST_INT8, kDLInt, 8},     {DIST_INT16, kDLInt, 16},
    {DIST_INT32, kDLInt, 32},     {DIST_INT64, kDLInt, 64},     {DIST_UINT8, kDLUInt, 8},
    {DIST_BOOL, DT_KDLBOOL, 8},
};
#define N_DL_TYPES (sizeof(kDlTypes) / sizeof(kDlTypes[0]))

static int setup_two_cpus(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(2) == DIST_OK ? 0 : -1;
}

/* ---------------------------------------------------------------------------------------
 * Export */

static void check_exported(const DLManagedTensor* managed, dist_value_t* tensor,
                           uint8_t code, uint8_t bits, const int64_t* dims, int ndim) {
  const DLTensor* dl = &managed->dl_tensor;
  void* data = NULL;
  int i;
  DT_OK(dist_tensor_data(tensor, &data));
  assert_int_equal(dl->ndim, ndim);
  for (i = 0; i < ndim; ++i) assert_int_equal(dl->shape[i], dims[i]);
  assert_null(dl->strides);
  assert_int_equal(dl->dtype.code, code);
  assert_int_equal(dl->dtype.bits, bits);
  assert_int_equal(dl->dtype.lanes, 1);
  assert_int_equal(dl->device.device_type, kDLCPU);
  assert_ptr_equal((char*)dl->data + dl->byte_offset, data);
  assert_non_null(managed->deleter);
}

static void test_export_every_dtype(void** state) {
  const int64_t dims[2] = {2, 3};
  size_t i;
  (void)state;
  for (i = 0; i < N_DL_TYPES; ++i) {
    dist_dtype_t dtype = kDlTypes[i].dtype;
    size_t size = 6 * dt_c_size(dtype);
    unsigned char values[6 * 8];
    dist_value_t* tensor = NULL;
    DLManagedTensor* managed = NULL;
    print_message("export %s\n", dist_dtype_name(dtype));
    dt_fill(dtype, values, 6, (int)i);
    DT_OK(dist_tensor_create(dtype, dims, 2, values, size, NULL, &tensor));
    DT_OK(dist_tensor_to_dlpack(tensor, &managed));
    assert_non_null(managed);
    check_exported(managed, tensor, kDlTypes[i].code, kDlTypes[i].bits, dims, 2);
    assert_int_equal(managed->dl_tensor.device.device_id, 0);
    /* The buffer outlives the tensor until the deleter runs. */
    dist_value_destroy(tensor);
    assert_memory_equal((char*)managed->dl_tensor.data + managed->dl_tensor.byte_offset, values,
                        size);
    managed->deleter(managed);
  }
}

static void test_export_bool_is_kdlbool_8(void** state) {
  const int64_t dims[1] = {4};
  const uint8_t values[4] = {1, 0, 0, 1};
  dist_value_t* tensor = NULL;
  DLManagedTensor* managed = NULL;
  (void)state;
  DT_OK(dist_tensor_create(DIST_BOOL, dims, 1, values, sizeof(values), NULL, &tensor));
  DT_OK(dist_tensor_to_dlpack(tensor, &managed));
  assert_int_equal(managed->dl_tensor.dtype.code, 6);
  assert_int_equal(managed->dl_tensor.dtype.bits, 8);
  assert_int_equal(managed->dl_tensor.dtype.lanes, 1);
  managed->deleter(managed);
  dist_value_destroy(tensor);
}

static void test_export_rank0_and_empty(void** state) {
  const int64_t empty[3] = {2, 0, 5};
  const int32_t scalar_value = 77;
  dist_value_t* scalar = NULL;
  dist_value_t* nothing = NULL;
  DLManagedTensor* m1 = NULL;
  DLManagedTensor* m2 = NULL;
  (void)state;
  DT_OK(dist_tensor_create(DIST_INT32, NULL, 0, &scalar_value, sizeof(scalar_value), NULL,
                           &scalar));
  DT_OK(dist_tensor_to_dlpack(scalar, &m1));
  check_exported(m1, scalar, kDLInt, 32, NULL, 0);
  assert_int_equal(*(const int32_t*)((char*)m1->dl_tensor.data + m1->dl_tensor.byte_offset), 77);

  DT_OK(dist_tensor_create(DIST_FLOAT32, empty, 3, NULL, 0, NULL, &nothing));
  DT_OK(dist_tensor_to_dlpack(nothing, &m2));
  assert_int_equal(m2->dl_tensor.ndim, 3);
  assert_int_equal(m2->dl_tensor.shape[0], 2);
  assert_int_equal(m2->dl_tensor.shape[1], 0);
  assert_int_equal(m2->dl_tensor.shape[2], 5);
  assert_null(m2->dl_tensor.strides);
  assert_int_equal(m2->dl_tensor.device.device_type, kDLCPU);

  dist_value_destroy(scalar);
  dist_value_destroy(nothing);
  m1->deleter(m1);
  m2->deleter(m2);
}

static void test_export_from_other_cpu_device(void** state) {
  const int64_t dims[1] = {2};
  const double values[2] = {1.0, 2.0};
  dist_value_t* tensor = NULL;
  DLManagedTensor* managed = NULL;
  (void)state;
  DT_OK(dist_tensor_create(DIST_FLOAT64, dims, 1, values, sizeof(values), "CPU:1", &tensor));
  DT_OK(dist_tensor_to_dlpack(tensor, &managed));
  check_exported(managed, tensor, kDLFloat, 64, dims, 1);
  managed->deleter(managed);
  dist_value_destroy(tensor);
}

static void test_export_shares_buffer(void** state) {
  const int64_t dims[1] = {3};
  const int64_t values[3] = {1, 2, 3};
  dist_value_t* tensor = NULL;
  DLManagedTensor* a = NULL;
  DLManagedTensor* b = NULL;
  void* data = NULL;
  (void)state;
  DT_OK(dist_tensor_create(DIST_INT64, dims, 1, values, sizeof(values), NULL, &tensor));
  DT_OK(dist_tensor_to_dlpack(tensor, &a));
  DT_OK(dist_tensor_to_dlpack(tensor, &b));
  assert_ptr_not_equal(a, b);
  assert_ptr_equal((char*)a->dl_tensor.data + a->dl_tensor.byte_offset,
                   (char*)b->dl_tensor.data + b->dl_tensor.byte_offset);
  /* A write through DLPack is seen by the tensor. */
  ((int64_t*)((char*)a->dl_tensor.data + a->dl_tensor.byte_offset))[1] = 200;
  DT_OK(dist_tensor_data(tensor, &data));
  assert_int_equal(((int64_t*)data)[1], 200);
  /* Deleters in any order relative to the tensor. */
  a->deleter(a);
  dist_value_destroy(tensor);
  assert_int_equal(((int64_t*)((char*)b->dl_tensor.data + b->dl_tensor.byte_offset))[1], 200);
  b->deleter(b);
}

static void test_export_of_wrapped_buffer_delays_release(void** state) {
  const int64_t dims[1] = {4};
  float buffer[4] = {1, 2, 3, 4};
  dt_release_counter counter = {0, NULL, NULL};
  dist_value_t* tensor = NULL;
  DLManagedTensor* managed = NULL;
  (void)state;
  DT_OK(dist_tensor_wrap(DIST_FLOAT32, dims, 1, buffer, sizeof(buffer), NULL, dt_count_release,
                         &counter, &tensor));
  DT_OK(dist_tensor_to_dlpack(tensor, &managed));
  assert_ptr_equal((char*)managed->dl_tensor.data + managed->dl_tensor.byte_offset, buffer);
  dist_value_destroy(tensor);
  /* The DLManagedTensor still uses the buffer. */
  assert_int_equal(counter.calls, 0);
  managed->deleter(managed);
  assert_int_equal(counter.calls, 1);
  assert_ptr_equal(counter.last_data, buffer);
}

static void test_export_rejects_misuse(void** state) {
  const int64_t dims[1] = {1};
  const float v = 1.0f;
  dist_value_t* tensor = NULL;
  DLManagedTensor* managed = (DLManagedTensor*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_tensor_to_dlpack(NULL, &managed), DIST_INVALID_ARGUMENT, "dist_tensor_to_dlpack",
         "tensor");
  assert_null(managed);
  DT_OK(dist_tensor_create(DIST_FLOAT32, dims, 1, &v, sizeof(v), NULL, &tensor));
  DT_ERR(dist_tensor_to_dlpack(tensor, NULL), DIST_INVALID_ARGUMENT, "dist_tensor_to_dlpack",
         "out");
  dist_value_destroy(tensor);
}

static void test_export_gpu_tensor(void** state) {
  const int64_t dims[1] = {8};
  float values[8];
  dist_value_t* tensor = NULL;
  DLManagedTensor* managed = NULL;
  void* data = NULL;
  (void)state;
  DT_REQUIRE_GPU();
  dt_fill(DIST_FLOAT32, values, 8, 2);
  DT_OK(dist_tensor_create(DIST_FLOAT32, dims, 1, values, sizeof(values), "GPU:0", &tensor));
  DT_OK(dist_tensor_to_dlpack(tensor, &managed));
  DT_OK(dist_tensor_data(tensor, &data));
  assert_int_equal(managed->dl_tensor.device.device_type, kDLCUDA);
  assert_int_equal(managed->dl_tensor.device.device_id, 0);
  assert_ptr_equal((char*)managed->dl_tensor.data + managed->dl_tensor.byte_offset, data);
  dist_value_destroy(tensor);
  managed->deleter(managed);
}

/* ---------------------------------------------------------------------------------------
 * Import of hand-made DLManagedTensors */

typedef struct {
  DLManagedTensor managed;
  int64_t shape[DIST_MAX_RANK + 2];
  int64_t strides[DIST_MAX_RANK + 2];
  double storage[64]; /* 512 aligned bytes */
  int deleter_calls;
} hand_made;

static void hand_made_deleter(DLManagedTensor* self) {
  hand_made* h = (hand_made*)self->manager_ctx;
  h->deleter_calls += 1;
}

/* A compact CPU tensor of `ndim` dims over h->storage; strides NULL. */
static void make(hand_made* h, uint8_t code, uint8_t bits, const int64_t* dims, int ndim) {
  int i;
  memset(h, 0, sizeof(*h));
  for (i = 0; i < ndim; ++i) h->shape[i] = dims[i];
  h->managed.dl_tensor.data = h->storage;
  h->managed.dl_tensor.device.device_type = kDLCPU;
  h->managed.dl_tensor.device.device_id = 0;
  h->managed.dl_tensor.ndim = ndim;
  h->managed.dl_tensor.dtype.code = code;
  h->managed.dl_tensor.dtype.bits = bits;
  h->managed.dl_tensor.dtype.lanes = 1;
  h->managed.dl_tensor.shape = ndim > 0 ? h->shape : NULL;
  h->managed.dl_tensor.strides = NULL;
  h->managed.dl_tensor.byte_offset = 0;
  h->managed.manager_ctx = h;
  h->managed.deleter = hand_made_deleter;
}

static void check_imported(dist_value_t* tensor, dist_dtype_t dtype, const int64_t* dims,
                           int32_t rank, const void* data, const char* device) {
  dist_dtype_t got_dtype = 0;
  int32_t got_rank = -1;
  int64_t got_dims[DIST_MAX_RANK];
  int64_t count = 1;
  size_t size = 0;
  void* got_data = NULL;
  const char* got_device = NULL;
  dist_value_kind_t kind = 0;
  int32_t i;
  for (i = 0; i < rank; ++i) count *= dims[i];
  DT_OK(dist_value_kind(tensor, &kind));
  assert_int_equal(kind, DIST_VALUE_TENSOR);
  DT_OK(dist_tensor_dtype(tensor, &got_dtype));
  assert_int_equal(got_dtype, dtype);
  DT_OK(dist_tensor_rank(tensor, &got_rank));
  assert_int_equal(got_rank, rank);
  DT_OK(dist_tensor_shape(tensor, got_dims, DIST_MAX_RANK));
  for (i = 0; i < rank; ++i) assert_int_equal(got_dims[i], dims[i]);
  DT_OK(dist_tensor_byte_size(tensor, &size));
  assert_int_equal(size, (size_t)count * dt_c_size(dtype));
  DT_OK(dist_tensor_data(tensor, &got_data));
  /* No copy. */
  assert_ptr_equal(got_data, data);
  DT_OK(dist_tensor_device(tensor, &got_device));
  assert_string_equal(got_device, device);
}

static void test_import_every_dtype(void** state) {
  const int64_t dims[2] = {2, 3};
  size_t i;
  (void)state;
  for (i = 0; i < N_DL_TYPES; ++i) {
    hand_made h;
    dist_value_t* tensor = NULL;
    unsigned char expected[6 * 8];
    void* data = NULL;
    print_message("import %s (code %d bits %d)\n", dist_dtype_name(kDlTypes[i].dtype),
                  kDlTypes[i].code, kDlTypes[i].bits);
    make(&h, kDlTypes[i].code, kDlTypes[i].bits, dims, 2);
    dt_fill(kDlTypes[i].dtype, h.storage, 6, (int)i);
    memcpy(expected, h.storage, 6 * dt_c_size(kDlTypes[i].dtype));
    DT_OK(dist_tensor_from_dlpack(&h.managed, &tensor));
    assert_non_null(tensor);
    check_imported(tensor, kDlTypes[i].dtype, dims, 2, h.storage, "/device:CPU:0");
    DT_OK(dist_tensor_data(tensor, &data));
    assert_memory_equal(data, expected, 6 * dt_c_size(kDlTypes[i].dtype));
    assert_int_equal(h.deleter_calls, 0);
    dist_value_destroy(tensor);
    assert_int_equal(h.deleter_calls, 1);
  }
}

static void test_import_bool(void** state) {
  const int64_t dims[1] = {3};
  hand_made h;
  dist_value_t* tensor = NULL;
  (void)state;
  make(&h, DT_KDLBOOL, 8, dims, 1);
  DT_OK(dist_tensor_from_dlpack(&h.managed, &tensor));
  check_imported(tensor, DIST_BOOL, dims, 1, h.storage, "/device:CPU:0");
  dist_value_destroy(tensor);
  assert_int_equal(h.deleter_calls, 1);
}

static void test_import_cuda_host_is_cpu0(void** state) {
  const int64_t dims[1] = {4};
  hand_made h;
  dist_value_t* tensor = NULL;
  (void)state;
  make(&h, kDLFloat, 32, dims, 1);
  h.managed.dl_tensor.device.device_type = kDLCUDAHost;
  DT_OK(dist_tensor_from_dlpack(&h.managed, &tensor));
  check_imported(tensor, DIST_FLOAT32, dims, 1, h.storage, "/device:CPU:0");
  dist_value_destroy(tensor);
  assert_int_equal(h.deleter_calls, 1);
}

static void test_import_compact_strides(void** state) {
  const int64_t dims2[2] = {2, 3};
  const int64_t strides2[2] = {3, 1};
  const int64_t dims3[3] = {2, 3, 4};
  const int64_t strides3[3] = {12, 4, 1};
  hand_made h;
  dist_value_t* tensor = NULL;
  (void)state;

  make(&h, kDLInt, 32, dims2, 2);
  memcpy(h.strides, strides2, sizeof(strides2));
  h.managed.dl_tensor.strides = h.strides;
  DT_OK(dist_tensor_from_dlpack(&h.managed, &tensor));
  check_imported(tensor, DIST_INT32, dims2, 2, h.storage, "/device:CPU:0");
  dist_value_destroy(tensor);
  assert_int_equal(h.deleter_calls, 1);

  make(&h, kDLFloat, 16, dims3, 3);
  memcpy(h.strides, strides3, sizeof(strides3));
  h.managed.dl_tensor.strides = h.strides;
  DT_OK(dist_tensor_from_dlpack(&h.managed, &tensor));
  check_imported(tensor, DIST_FLOAT16, dims3, 3, h.storage, "/device:CPU:0");
  dist_value_destroy(tensor);
  assert_int_equal(h.deleter_calls, 1);
}

static void test_import_byte_offset(void** state) {
  const int64_t dims[1] = {6};
  hand_made h;
  dist_value_t* tensor = NULL;
  void* data = NULL;
  float* floats;
  int i;
  (void)state;
  make(&h, kDLFloat, 32, dims, 1);
  floats = (float*)(void*)h.storage;
  for (i = 0; i < 8; ++i) floats[i] = (float)i;
  h.managed.dl_tensor.byte_offset = 2 * sizeof(float);
  DT_OK(dist_tensor_from_dlpack(&h.managed, &tensor));
  check_imported(tensor, DIST_FLOAT32, dims, 1, floats + 2, "/device:CPU:0");
  DT_OK(dist_tensor_data(tensor, &data));
  for (i = 0; i < 6; ++i) assert_true(((float*)data)[i] == (float)(i + 2));
  dist_value_destroy(tensor);
  assert_int_equal(h.deleter_calls, 1);
}

static void test_import_rank0_and_empty(void** state) {
  const int64_t empty[2] = {0, 9};
  hand_made h1;
  hand_made h2;
  dist_value_t* scalar = NULL;
  dist_value_t* nothing = NULL;
  (void)state;
  make(&h1, kDLInt, 64, NULL, 0);
  h1.storage[0] = 0.0;
  DT_OK(dist_tensor_from_dlpack(&h1.managed, &scalar));
  check_imported(scalar, DIST_INT64, NULL, 0, h1.storage, "/device:CPU:0");

  make(&h2, kDLUInt, 8, empty, 2);
  DT_OK(dist_tensor_from_dlpack(&h2.managed, &nothing));
  {
    int64_t count = -1;
    size_t size = 99;
    DT_OK(dist_tensor_num_elements(nothing, &count));
    assert_int_equal(count, 0);
    DT_OK(dist_tensor_byte_size(nothing, &size));
    assert_int_equal(size, 0);
  }
  dist_value_destroy(scalar);
  dist_value_destroy(nothing);
  assert_int_equal(h1.deleter_calls, 1);
  assert_int_equal(h2.deleter_calls, 1);
}

static void test_import_shares_buffer_and_copy_does_not(void** state) {
  const int64_t dims[1] = {4};
  hand_made h;
  dist_value_t* tensor = NULL;
  dist_value_t* copy = NULL;
  void* data = NULL;
  void* copy_data = NULL;
  int32_t* ints;
  (void)state;
  make(&h, kDLInt, 32, dims, 1);
  ints = (int32_t*)(void*)h.storage;
  ints[0] = 1; ints[1] = 2; ints[2] = 3; ints[3] = 4;
  DT_OK(dist_tensor_from_dlpack(&h.managed, &tensor));
  /* Writes go both ways. */
  DT_OK(dist_tensor_data(tensor, &data));
  ((int32_t*)data)[0] = 100;
  assert_int_equal(ints[0], 100);
  ints[3] = 400;
  assert_int_equal(((int32_t*)data)[3], 400);

  DT_OK(dist_tensor_copy_to_device(tensor, "CPU:1", &copy));
  DT_OK(dist_tensor_data(copy, &copy_data));
  assert_ptr_not_equal(copy_data, ints);
  dist_value_destroy(tensor);
  /* The copy owns its buffer: the managed tensor is released now. */
  assert_int_equal(h.deleter_calls, 1);
  assert_int_equal(((int32_t*)copy_data)[0], 100);
  assert_int_equal(((int32_t*)copy_data)[3], 400);
  dist_value_destroy(copy);
  assert_int_equal(h.deleter_calls, 1);
}

static void test_import_then_export(void** state) {
  const int64_t dims[2] = {3, 2};
  hand_made h;
  dist_value_t* tensor = NULL;
  DLManagedTensor* exported = NULL;
  (void)state;
  make(&h, kDLFloat, 64, dims, 2);
  DT_OK(dist_tensor_from_dlpack(&h.managed, &tensor));
  DT_OK(dist_tensor_to_dlpack(tensor, &exported));
  assert_ptr_equal((char*)exported->dl_tensor.data + exported->dl_tensor.byte_offset, h.storage);
  assert_int_equal(exported->dl_tensor.dtype.code, kDLFloat);
  assert_int_equal(exported->dl_tensor.dtype.bits, 64);
  dist_value_destroy(tensor);
  /* The export still shares the buffer. */
  assert_int_equal(h.deleter_calls, 0);
  exported->deleter(exported);
  assert_int_equal(h.deleter_calls, 1);
}

/* Failures take nothing: the deleter is not called and *out is NULL. */
static void expect_import_fails(hand_made* h, dist_status_t code, const char* field) {
  dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_tensor_from_dlpack(&h->managed, &tensor), code, "dist_tensor_from_dlpack", field);
  assert_null(tensor);
  assert_int_equal(h->deleter_calls, 0);
}

static void test_import_rejects_bad_dtypes(void** state) {
  static const struct {
    uint8_t code;
    uint8_t bits;
  } kBad[] = {
      {kDLComplex, 64}, {kDLComplex, 128}, {kDLFloat, 8},   {kDLFloat, 128}, {kDLInt, 1},
      {kDLInt, 4},      {kDLInt, 128},     {kDLUInt, 16},   {kDLUInt, 32},   {kDLUInt, 64},
      {kDLUInt, 1},     {kDLBfloat, 32},   {kDLOpaqueHandle, 64}, {DT_KDLBOOL, 1},
      {DT_KDLBOOL, 16}, {99, 32},
  };
  const int64_t dims[1] = {2};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kBad) / sizeof(kBad[0]); ++i) {
    hand_made h;
    print_message("import code %d bits %d (must fail)\n", kBad[i].code, kBad[i].bits);
    make(&h, kBad[i].code, kBad[i].bits, dims, 1);
    expect_import_fails(&h, DIST_INVALID_ARGUMENT, "dtype");
  }
}

static void test_import_rejects_lanes(void** state) {
  const int64_t dims[1] = {2};
  const uint16_t lanes[] = {0, 2, 4};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(lanes) / sizeof(lanes[0]); ++i) {
    hand_made h;
    make(&h, kDLFloat, 32, dims, 1);
    h.managed.dl_tensor.dtype.lanes = lanes[i];
    expect_import_fails(&h, DIST_INVALID_ARGUMENT, "lanes");
  }
}

static void test_import_rejects_non_compact_strides(void** state) {
  const int64_t dims[2] = {2, 3};
  static const int64_t kBadStrides[][2] = {
      {1, 2},  /* column-major */
      {4, 1},  /* padded rows */
      {3, 2},  /* every other element */
      {-3, 1}, /* negative */
      {0, 0},  /* broadcast */
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kBadStrides) / sizeof(kBadStrides[0]); ++i) {
    hand_made h;
    print_message("strides {%d, %d} (must fail)\n", (int)kBadStrides[i][0],
                  (int)kBadStrides[i][1]);
    make(&h, kDLFloat, 32, dims, 2);
    h.strides[0] = kBadStrides[i][0];
    h.strides[1] = kBadStrides[i][1];
    h.managed.dl_tensor.strides = h.strides;
    expect_import_fails(&h, DIST_INVALID_ARGUMENT, "strides");
  }
}

static void test_import_rejects_devices(void** state) {
  const int64_t dims[1] = {2};
  const DLDeviceType bad[] = {kDLOpenCL, kDLVulkan, kDLMetal, kDLVPI,
                              kDLROCM,   kDLROCMHost, kDLExtDev, kDLCUDAManaged};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    hand_made h;
    print_message("device type %d (must fail)\n", (int)bad[i]);
    make(&h, kDLFloat, 32, dims, 1);
    h.managed.dl_tensor.device.device_type = bad[i];
    expect_import_fails(&h, DIST_INVALID_ARGUMENT, "device");
  }
  {
    hand_made h;
    make(&h, kDLFloat, 32, dims, 1);
    h.managed.dl_tensor.device.device_type = (DLDeviceType)0;
    expect_import_fails(&h, DIST_INVALID_ARGUMENT, "device");
  }
}

static void test_import_cuda_without_gpu(void** state) {
  const int64_t dims[1] = {2};
  hand_made h;
  dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  if (dt_have_gpu()) skip();
  make(&h, kDLFloat, 32, dims, 1);
  h.managed.dl_tensor.device.device_type = kDLCUDA;
  /* dlpack_interop.h lists only INVALID_ARGUMENT; tensor.h uses FAILED_PRECONDITION for a
   * GPU device without the plugin. Either way nothing is taken. */
  DT_ERR2(dist_tensor_from_dlpack(&h.managed, &tensor), DIST_INVALID_ARGUMENT,
          DIST_FAILED_PRECONDITION, "dist_tensor_from_dlpack", "GPU:0");
  assert_null(tensor);
  assert_int_equal(h.deleter_calls, 0);
}

static void test_import_rejects_bad_shapes(void** state) {
  const int64_t dims[2] = {2, 3};
  const int64_t negative[2] = {2, -3};
  int64_t ones[DIST_MAX_RANK + 1];
  hand_made h;
  int i;
  (void)state;
  for (i = 0; i < DIST_MAX_RANK + 1; ++i) ones[i] = 1;

  make(&h, kDLFloat, 32, dims, 2);
  h.managed.dl_tensor.ndim = -1;
  expect_import_fails(&h, DIST_INVALID_ARGUMENT, "ndim");

  make(&h, kDLFloat, 32, ones, DIST_MAX_RANK + 1);
  expect_import_fails(&h, DIST_INVALID_ARGUMENT, "ndim");

  make(&h, kDLFloat, 32, dims, 2);
  h.managed.dl_tensor.shape = NULL;
  expect_import_fails(&h, DIST_INVALID_ARGUMENT, "shape");

  make(&h, kDLFloat, 32, negative, 2);
  expect_import_fails(&h, DIST_INVALID_ARGUMENT, "shape");

  make(&h, kDLFloat, 32, dims, 2);
  h.managed.dl_tensor.data = NULL;
  expect_import_fails(&h, DIST_INVALID_ARGUMENT, "data");
}

static void test_import_max_rank(void** state) {
  int64_t ones[DIST_MAX_RANK];
  hand_made h;
  dist_value_t* tensor = NULL;
  int i;
  (void)state;
  for (i = 0; i < DIST_MAX_RANK; ++i) ones[i] = 1;
  ones[3] = 5;
  make(&h, kDLInt, 8, ones, DIST_MAX_RANK);
  DT_OK(dist_tensor_from_dlpack(&h.managed, &tensor));
  check_imported(tensor, DIST_INT8, ones, DIST_MAX_RANK, h.storage, "/device:CPU:0");
  dist_value_destroy(tensor);
  assert_int_equal(h.deleter_calls, 1);
}

static void test_import_rejects_null(void** state) {
  const int64_t dims[1] = {2};
  hand_made h;
  dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_tensor_from_dlpack(NULL, &tensor), DIST_INVALID_ARGUMENT,
         "dist_tensor_from_dlpack", "managed");
  assert_null(tensor);
  make(&h, kDLFloat, 32, dims, 1);
  DT_ERR(dist_tensor_from_dlpack(&h.managed, NULL), DIST_INVALID_ARGUMENT,
         "dist_tensor_from_dlpack", "out");
  assert_int_equal(h.deleter_calls, 0);
}

static void test_import_cuda_roundtrip(void** state) {
  const int64_t dims[1] = {16};
  float values[16];
  dist_value_t* gpu = NULL;
  dist_value_t* imported = NULL;
  dist_value_t* host = NULL;
  DLManagedTensor* managed = NULL;
  void* gpu_data = NULL;
  void* imported_data = NULL;
  void* host_data = NULL;
  const char* device = NULL;
  (void)state;
  DT_REQUIRE_GPU();
  dt_fill(DIST_FLOAT32, values, 16, 4);
  DT_OK(dist_tensor_create(DIST_FLOAT32, dims, 1, values, sizeof(values), "GPU:0", &gpu));
  DT_OK(dist_tensor_data(gpu, &gpu_data));
  DT_OK(dist_tensor_to_dlpack(gpu, &managed));
  dist_value_destroy(gpu);
  DT_OK(dist_tensor_from_dlpack(managed, &imported));
  DT_OK(dist_tensor_device(imported, &device));
  assert_string_equal(device, "/device:GPU:0");
  DT_OK(dist_tensor_data(imported, &imported_data));
  assert_ptr_equal(imported_data, gpu_data);
  DT_OK(dist_tensor_copy_to_device(imported, "CPU:0", &host));
  DT_OK(dist_tensor_data(host, &host_data));
  assert_memory_equal(host_data, values, sizeof(values));
  dist_value_destroy(imported);
  dist_value_destroy(host);
}

int main(void) {
  const struct CMUnitTest export_tests[] = {
      cmocka_unit_test(test_export_every_dtype),
      cmocka_unit_test(test_export_bool_is_kdlbool_8),
      cmocka_unit_test(test_export_rank0_and_empty),
      cmocka_unit_test(test_export_from_other_cpu_device),
      cmocka_unit_test(test_export_shares_buffer),
      cmocka_unit_test(test_export_of_wrapped_buffer_delays_release),
      cmocka_unit_test(test_export_rejects_misuse),
      cmocka_unit_test(test_export_gpu_tensor),
  };
  const struct CMUnitTest import_tests[] = {
      cmocka_unit_test(test_import_every_dtype),
      cmocka_unit_test(test_import_bool),
      cmocka_unit_test(test_import_cuda_host_is_cpu0),
      cmocka_unit_test(test_import_compact_strides),
      cmocka_unit_test(test_import_byte_offset),
      cmocka_unit_test(test_import_rank0_and_empty),
      cmocka_unit_test(test_import_shares_buffer_and_copy_does_not),
      cmocka_unit_test(test_import_then_export),
      cmocka_unit_test(test_import_rejects_bad_dtypes),
      cmocka_unit_test(test_import_rejects_lanes),
      cmocka_unit_test(test_import_rejects_non_compact_strides),
      cmocka_unit_test(test_import_rejects_devices),
      cmocka_unit_test(test_import_cuda_without_gpu),
      cmocka_unit_test(test_import_rejects_bad_shapes),
      cmocka_unit_test(test_import_max_rank),
      cmocka_unit_test(test_import_rejects_null),
      cmocka_unit_test(test_import_cuda_roundtrip),
  };
  int failures = 0;
  failures += cmocka_run_group_tests_name("dlpack_export", export_tests, setup_two_cpus, NULL);
  failures += cmocka_run_group_tests_name("dlpack_import", import_tests, setup_two_cpus, NULL);
  return failures;
}
