/* dist_strategy_save_variables / dist_strategy_restore_variables: the safetensors file
 * layout (checked byte by byte against the format, not against our reader), TF's
 * SyncOnRead restore rule, and that a file that does not fit changes nothing. */
#include "dist_test.h"

#include <unistd.h>

static dist_value_t* make_f32(const int64_t* shape, int32_t rank, const float* data, size_t bytes) {
  dist_value_t* t = NULL;
  DT_OK(dist_tensor_create(DIST_FLOAT32, shape, rank, data, bytes, "CPU:0", &t));
  return t;
}

static float read_scalar(const dist_value_t* variable) {
  dist_value_t* value = NULL;
  DT_OK(dist_variable_read(variable, &value));
  void* data = NULL;
  DT_OK(dist_tensor_data(value, &data));
  const float result = *(const float*)data;
  dist_value_destroy(value);
  return result;
}

static float read_component(const dist_value_t* variable, int32_t index) {
  dist_value_t* component = NULL;
  DT_OK(dist_value_component(variable, index, &component));
  const float result = read_scalar(component);
  dist_value_destroy(component);
  return result;
}

static void temp_path(char* out, size_t size, const char* name) {
  snprintf(out, size, "/tmp/dist_checkpoint_%d_%s.safetensors", (int)getpid(), name);
}

/* Replica r adds r + 1 to its own copy of every SyncOnRead variable passed in. */
static dist_status_t add_replica_share(dist_context_t* context, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** results,
                                       int32_t num_results, void* user_data) {
  (void)results;
  (void)num_results;
  (void)user_data;
  int32_t replica = 0;
  dist_status_t status = dist_context_replica_id(context, &replica);
  if (status != DIST_OK) return status;
  const float share = (float)(replica + 1);
  dist_value_t* delta = NULL;
  status = dist_tensor_create(DIST_FLOAT32, NULL, 0, &share, sizeof share, "CPU:0", &delta);
  for (int32_t i = 0; status == DIST_OK && i < num_args; ++i) {
    status = dist_variable_assign_add((dist_value_t*)args[i], delta);
  }
  dist_value_destroy(delta);
  return status;
}

typedef struct {
  dist_strategy_t* strategy;
  dist_value_t* weights; /* Mirrored, float32 [2, 3] */
  dist_value_t* total;   /* SyncOnRead SUM, scalar */
  dist_value_t* average; /* SyncOnRead MEAN, scalar */
} model_t;

static void model_create(model_t* m) {
  const char* devices[2] = {"CPU:0", "CPU:1"};
  DT_OK(dist_set_logical_cpu_device_count(4));
  DT_OK(dist_strategy_create_mirrored(devices, 2, NULL, &m->strategy));
  DT_OK(dist_strategy_scope_enter(m->strategy));
  const int64_t shape[2] = {2, 3};
  const float w[6] = {1, 2, 3, 4, 5, 6};
  const float zero = 0;
  dist_value_t* initial_w = make_f32(shape, 2, w, sizeof w);
  dist_value_t* initial_zero = make_f32(NULL, 0, &zero, sizeof zero);
  DT_OK(dist_variable_create(initial_w, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN, "weights",
                             &m->weights));
  DT_OK(dist_variable_create(initial_zero, DIST_SYNC_ON_READ, DIST_AGGREGATION_SUM, "total",
                             &m->total));
  DT_OK(dist_variable_create(initial_zero, DIST_SYNC_ON_READ, DIST_AGGREGATION_MEAN, "average",
                             &m->average));
  DT_OK(dist_strategy_scope_exit(m->strategy));
  dist_value_destroy(initial_w);
  dist_value_destroy(initial_zero);
}

static void model_destroy(model_t* m) {
  dist_value_destroy(m->weights);
  dist_value_destroy(m->total);
  dist_value_destroy(m->average);
  dist_strategy_destroy(m->strategy);
}

static int contains(const unsigned char* haystack, size_t size, const void* needle, size_t length) {
  for (size_t i = 0; i + length <= size; ++i) {
    if (memcmp(haystack + i, needle, length) == 0) return 1;
  }
  return 0;
}

static uint64_t read_u64_le(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

static void test_save_writes_safetensors(void** state) {
  (void)state;
  model_t m;
  model_create(&m);
  const dist_value_t* sync_vars[2] = {m.total, m.average};
  DT_OK(dist_strategy_run(m.strategy, add_replica_share, NULL, sync_vars, 2, NULL, 0));
  /* Copies now hold 1 and 2: SUM reads 3, MEAN reads 1.5. */
  assert_float_equal(read_scalar(m.total), 3.0f, 0.0f);
  assert_float_equal(read_scalar(m.average), 1.5f, 0.0f);

  char path[256];
  temp_path(path, sizeof path, "save");
  DT_OK(dist_strategy_save_variables(m.strategy, path));

  FILE* f = fopen(path, "rb");
  assert_non_null(f);
  unsigned char buffer[4096];
  const size_t size = fread(buffer, 1, sizeof buffer, f);
  fclose(f);
  assert_true(size > 8);
  const uint64_t header = read_u64_le(buffer);
  assert_true(8 + header <= size);
  /* Data: average (1 float), total (1 float), weights (6 floats): 32 bytes. */
  assert_int_equal(size - 8 - header, 32);
  char json[4096];
  memcpy(json, buffer + 8, (size_t)header);
  json[header] = '\0';
  assert_non_null(strstr(json, "\"weights\""));
  assert_non_null(strstr(json, "\"total\""));
  assert_non_null(strstr(json, "\"average\""));
  assert_non_null(strstr(json, "\"F32\""));
  /* The saved values are the cross-replica ones, somewhere in the data section. */
  const float expected_total = 3.0f;
  const float expected_average = 1.5f;
  const float expected_weights[6] = {1, 2, 3, 4, 5, 6};
  const unsigned char* data = buffer + 8 + header;
  assert_true(contains(data, 32, &expected_total, sizeof expected_total));
  assert_true(contains(data, 32, &expected_average, sizeof expected_average));
  assert_true(contains(data, 32, expected_weights, sizeof expected_weights));

  unlink(path);
  model_destroy(&m);
}

static void test_restore_applies_sync_on_read_rule(void** state) {
  (void)state;
  model_t m;
  model_create(&m);
  const dist_value_t* sync_vars[2] = {m.total, m.average};
  DT_OK(dist_strategy_run(m.strategy, add_replica_share, NULL, sync_vars, 2, NULL, 0));
  char path[256];
  temp_path(path, sizeof path, "restore");
  DT_OK(dist_strategy_save_variables(m.strategy, path));

  /* A fresh model with the same names restores from the file. */
  model_t fresh;
  model_create(&fresh);
  DT_OK(dist_strategy_restore_variables(fresh.strategy, path));
  /* SUM: the saved total 3 is divided by 2 replicas; MEAN: 1.5 is copied. */
  assert_float_equal(read_component(fresh.total, 0), 1.5f, 0.0f);
  assert_float_equal(read_component(fresh.total, 1), 1.5f, 0.0f);
  assert_float_equal(read_scalar(fresh.total), 3.0f, 0.0f);
  assert_float_equal(read_component(fresh.average, 0), 1.5f, 0.0f);
  assert_float_equal(read_component(fresh.average, 1), 1.5f, 0.0f);
  for (int32_t c = 0; c < 2; ++c) {
    dist_value_t* component = NULL;
    dist_value_t* value = NULL;
    void* data = NULL;
    DT_OK(dist_value_component(fresh.weights, c, &component));
    DT_OK(dist_variable_read(component, &value));
    DT_OK(dist_tensor_data(value, &data));
    for (int i = 0; i < 6; ++i) assert_float_equal(((float*)data)[i], (float)(i + 1), 0.0f);
    dist_value_destroy(value);
    dist_value_destroy(component);
  }
  unlink(path);
  model_destroy(&fresh);
  model_destroy(&m);
}

/* Saves, to `path`, variables named names[i] (count of them): the first with the given
 * shape and data, the others scalars. */
static void save_variables(const char* path, const char* const* names, int count,
                           const int64_t* shape, int32_t rank, const float* data, size_t bytes) {
  dist_strategy_t* strategy = NULL;
  DT_OK(dist_strategy_create_one_device("CPU:0", &strategy));
  DT_OK(dist_strategy_scope_enter(strategy));
  dist_value_t* variables[3] = {NULL, NULL, NULL};
  const float zero = 0;
  for (int i = 0; i < count; ++i) {
    dist_value_t* initial = i == 0 ? make_f32(shape, rank, data, bytes) : make_f32(NULL, 0, &zero, sizeof zero);
    DT_OK(dist_variable_create(initial, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, names[i], &variables[i]));
    dist_value_destroy(initial);
  }
  DT_OK(dist_strategy_scope_exit(strategy));
  DT_OK(dist_strategy_save_variables(strategy, path));
  for (int i = 0; i < count; ++i) dist_value_destroy(variables[i]);
  dist_strategy_destroy(strategy);
}

static void test_restore_mismatch_changes_nothing(void** state) {
  (void)state;
  char wrong_shape[256], wrong_name[256];
  temp_path(wrong_shape, sizeof wrong_shape, "shape");
  temp_path(wrong_name, sizeof wrong_name, "name");
  const int64_t shape3[1] = {3};
  const float three[3] = {7, 8, 9};
  const char* all_names[3] = {"weights", "total", "average"};
  const char* other_names[1] = {"other"};
  save_variables(wrong_shape, all_names, 3, shape3, 1, three, sizeof three);
  save_variables(wrong_name, other_names, 1, shape3, 1, three, sizeof three);

  model_t m;
  model_create(&m);
  DT_ERR(dist_strategy_restore_variables(m.strategy, wrong_shape), DIST_INVALID_ARGUMENT,
         "dist_strategy_restore_variables", "weights");
  DT_ERR(dist_strategy_restore_variables(m.strategy, wrong_name), DIST_NOT_FOUND,
         "dist_strategy_restore_variables", "average");
  /* Nothing changed. */
  dist_value_t* value = NULL;
  void* data = NULL;
  DT_OK(dist_variable_read(m.weights, &value));
  DT_OK(dist_tensor_data(value, &data));
  for (int i = 0; i < 6; ++i) assert_float_equal(((float*)data)[i], (float)(i + 1), 0.0f);
  dist_value_destroy(value);
  assert_float_equal(read_scalar(m.total), 0.0f, 0.0f);

  assert_int_not_equal(dist_strategy_restore_variables(m.strategy, "/nonexistent/dir/x.st"), DIST_OK);
  assert_non_null(strstr(dist_last_error_message(), "/nonexistent/dir/x.st"));
  assert_int_not_equal(dist_strategy_save_variables(m.strategy, "/nonexistent/dir/x.st"), DIST_OK);
  assert_non_null(strstr(dist_last_error_message(), "/nonexistent/dir/x.st"));

  unlink(wrong_shape);
  unlink(wrong_name);
  model_destroy(&m);
}

static dist_status_t save_inside_replica(dist_context_t* context, const dist_value_t* const* args,
                                         int32_t num_args, dist_value_t** results,
                                         int32_t num_results, void* user_data) {
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  dist_strategy_t* strategy = NULL;
  int32_t replica = -1;
  dist_status_t status = dist_context_replica_id(context, &replica);
  if (status == DIST_OK) status = dist_context_strategy(context, &strategy);
  if (status != DIST_OK) return status;
  const dist_status_t saved = dist_strategy_save_variables(strategy, "/tmp/never.safetensors");
  if (replica == 0) *(dist_status_t*)user_data = saved;  /* one writer: no data race */
  dist_strategy_destroy(strategy);
  return DIST_OK;
}

/* Writes a safetensors file as the Python safetensors package lays it out: the 8-byte
 * header length, the JSON header padded with spaces to a multiple of 8, the data. */
static void write_safetensors(const char* path, const char* header_json, const void* data,
                              size_t data_bytes) {
  char header[2048];
  size_t length = strlen(header_json);
  unsigned char prefix[8];
  FILE* f = fopen(path, "wb");
  assert_non_null(f);
  assert_true(length + 8 < sizeof header);
  memcpy(header, header_json, length);
  while (length % 8 != 0) header[length++] = ' ';
  for (int i = 0; i < 8; ++i) prefix[i] = (unsigned char)((uint64_t)length >> (8 * i));
  assert_int_equal(fwrite(prefix, 1, 8, f), 8);
  assert_int_equal(fwrite(header, 1, length, f), length);
  assert_int_equal(fwrite(data, 1, data_bytes, f), data_bytes);
  fclose(f);
}

/* A checkpoint from another producer: besides the model's tensors it holds U64, U16, U32,
 * C64 and F8_E4M3 tensors (safetensors.numpy.save_file({"weights": ..., "total": ...,
 * "average": ..., "step": np.uint64([7]), "ids": np.uint16([1, 2]), ...}) writes such a
 * file). No variable asks for them, so the restore skips them whatever their dtype; a
 * variable whose own tensor has such a dtype is refused, changing nothing. */
static void test_restore_skips_tensors_no_variable_uses(void** state) {
  (void)state;
  struct {
    float weights[6];
    float total;
    float average;
    uint64_t step;
    uint16_t ids[2];
    uint32_t mask;
    float complex_parts[2];
    unsigned char f8[2];
  } data = {{10, 11, 12, 13, 14, 15}, 4.0f, 1.5f, 7, {1, 2}, 0xffu, {1.0f, 2.0f}, {0x38, 0x40}};
  const char* header =
      "{\"__metadata__\":{\"format\":\"np\"},"
      "\"weights\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"total\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[24,28]},"
      "\"average\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[28,32]},"
      "\"step\":{\"dtype\":\"U64\",\"shape\":[1],\"data_offsets\":[32,40]},"
      "\"ids\":{\"dtype\":\"U16\",\"shape\":[2],\"data_offsets\":[40,44]},"
      "\"mask\":{\"dtype\":\"U32\",\"shape\":[1],\"data_offsets\":[44,48]},"
      "\"z\":{\"dtype\":\"C64\",\"shape\":[1],\"data_offsets\":[48,56]},"
      "\"f8\":{\"dtype\":\"F8_E4M3\",\"shape\":[2],\"data_offsets\":[56,58]}}";
  const char* bad_header =
      "{\"weights\":{\"dtype\":\"U32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
      "\"total\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[24,28]},"
      "\"average\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[28,32]}}";
  char path[256], bad[256];
  temp_path(path, sizeof path, "foreign");
  temp_path(bad, sizeof bad, "foreign_bad");
  write_safetensors(path, header, &data, 58);
  write_safetensors(bad, bad_header, &data, 32);

  model_t m;
  model_create(&m);
  DT_ERR(dist_strategy_restore_variables(m.strategy, bad), DIST_INVALID_ARGUMENT,
         "dist_strategy_restore_variables", "U32");
  assert_float_equal(read_scalar(m.total), 0.0f, 0.0f); /* nothing changed */
  DT_OK(dist_strategy_restore_variables(m.strategy, path));
  /* TF's restore rule: SUM shares the saved 4 out over 2 replicas; MEAN copies 1.5. */
  assert_float_equal(read_component(m.total, 0), 2.0f, 0.0f);
  assert_float_equal(read_scalar(m.total), 4.0f, 0.0f);
  assert_float_equal(read_component(m.average, 1), 1.5f, 0.0f);
  {
    dist_value_t* value = NULL;
    void* weights = NULL;
    DT_OK(dist_variable_read(m.weights, &value));
    DT_OK(dist_tensor_data(value, &weights));
    for (int i = 0; i < 6; ++i) assert_float_equal(((float*)weights)[i], (float)(10 + i), 0.0f);
    dist_value_destroy(value);
  }
  unlink(path);
  unlink(bad);
  model_destroy(&m);
}

static void test_misuse(void** state) {
  (void)state;
  model_t m;
  model_create(&m);
  DT_ERR(dist_strategy_save_variables(NULL, "/tmp/x"), DIST_INVALID_ARGUMENT,
         "dist_strategy_save_variables", "strategy");
  DT_ERR(dist_strategy_save_variables(m.strategy, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_save_variables", "path");
  DT_ERR(dist_strategy_restore_variables(NULL, "/tmp/x"), DIST_INVALID_ARGUMENT,
         "dist_strategy_restore_variables", "strategy");
  DT_ERR(dist_strategy_restore_variables(m.strategy, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_restore_variables", "path");
  dist_status_t inside = DIST_OK;
  DT_OK(dist_strategy_run(m.strategy, save_inside_replica, &inside, NULL, 0, NULL, 0));
  assert_int_equal(inside, DIST_FAILED_PRECONDITION);
  model_destroy(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_save_writes_safetensors),
      cmocka_unit_test(test_restore_applies_sync_on_read_rule),
      cmocka_unit_test(test_restore_mismatch_changes_nothing),
      cmocka_unit_test(test_restore_skips_tensors_no_variable_uses),
      cmocka_unit_test(test_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
