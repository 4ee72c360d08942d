/* The "Done when" of the input issue, from C: a dataset from host arrays and one from
 * TFRecord files (written here, with the test's own CRC32C) are distributed over 4 CPU
 * replicas with a global batch that leaves a partial last batch, iterated to the end, and
 * every element is seen exactly once: checked with a bitmap and with checksums (the count,
 * the sum of the element ids and the sum of their squares) against the closed forms
 * n, n (n - 1) / 2 and (n - 1) n (2n - 1) / 6, both on the main thread and through
 * dist_strategy_run + reduce(SUM) over the PerReplica values. */
#define _POSIX_C_SOURCE 200809L
#include "dist_dataset_test.h"

#define NUM_REPLICAS 4

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

typedef struct {
  int64_t count, sum, sum_squares;
} checksum;

static checksum closed_form(int64_t n) {
  checksum c;
  c.count = n;
  c.sum = n * (n - 1) / 2;
  c.sum_squares = (n - 1) * n * (2 * n - 1) / 6;
  return c;
}

/* Reads id `row` of an int32 or int64 vector tensor. */
static int64_t id_at(const void* data, dist_dtype_t dtype, int64_t row) {
  if (dtype == DIST_INT32) return ((const int32_t*)data)[row];
  return ((const int64_t*)data)[row];
}

/* ---- The replica function: each replica sums the ids of its batch ---- */

typedef struct {
  dts_errors errors;
  int32_t id_arg; /* which argument holds the ids */
} sum_job;

/* results[0] = float64 [3] {count, sum of ids, sum of squares} of this replica's batch. */
static dist_status_t sum_ids_fn(dist_context_t* context, const dist_value_t* const* args,
                                int32_t num_args, dist_value_t** results, int32_t num_results,
                                void* user_data) {
  sum_job* job = (sum_job*)user_data;
  int32_t r = 0;
  dist_dtype_t dtype = 0;
  int64_t rows = 0, i;
  void* data = NULL;
  double sums[3] = {0, 0, 0};
  const int64_t three = 3;
  RCALL(&job->errors, 0, dist_context_replica_id(context, &r));
  RCHECK(&job->errors, r, num_args > job->id_arg && num_results == 1, "args %d", num_args);
  RCALL(&job->errors, r, dist_tensor_dtype(args[job->id_arg], &dtype));
  RCALL(&job->errors, r, dist_tensor_num_elements(args[job->id_arg], &rows));
  if (rows > 0) RCALL(&job->errors, r, dist_tensor_data(args[job->id_arg], &data));
  for (i = 0; i < rows; ++i) {
    const double id = (double)id_at(data, dtype, i);
    sums[0] += 1;
    sums[1] += id;
    sums[2] += id * id;
  }
  RCALL(&job->errors, r,
        dist_tensor_create(DIST_FLOAT64, &three, 1, sums, sizeof(sums), NULL, &results[0]));
  return DIST_OK;
}

/* Iterates a distributed dataset whose component `id_component` holds element ids
 * 0 ... n-1 (int32 or int64 vectors); `check_row` (may be NULL) checks the other
 * components of each row. Checks the per-replica batch sizes of every step against
 * `per` (the last step: filled in order), the end on every replica together, and the
 * checksums both ways. */
typedef void (*row_check_fn)(dist_value_t* const* components, int64_t row, int64_t id);

static void iterate_and_check(dist_strategy_t* s, const dist_distributed_dataset_t* dist, int32_t count,
                              int32_t id_component, int64_t n, int64_t per,
                              row_check_fn check_row) {
  dist_iterator_t* it = NULL;
  dist_value_t* outs[4];
  dist_value_t* parts[4];
  dist_value_t* result = NULL;
  dist_value_t* total = NULL;
  unsigned char* seen = (unsigned char*)calloc((size_t)n, 1);
  const int64_t global = per * NUM_REPLICAS;
  int64_t steps = 0, consumed = 0, i;
  checksum main_thread = {0, 0, 0};
  double via_run[3] = {0, 0, 0};
  const checksum expected = closed_form(n);
  dist_status_t status;
  sum_job job;
  assert_non_null(seen);
  assert_true(count <= 4);
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  while ((status = dist_iterator_get_next(it, outs, count)) == DIST_OK) {
    const int64_t actual = n - consumed < global ? n - consumed : global;
    int32_t r;
    for (i = 0; i < count; ++i) {
      assert_int_equal(dts_kind(outs[i]), DIST_VALUE_PER_REPLICA);
      assert_int_equal(dts_num_components(outs[i]), NUM_REPLICAS);
    }
    for (r = 0; r < NUM_REPLICAS; ++r) {
      int64_t rows, expected_rows = actual - r * per;
      dist_dtype_t dtype = 0;
      const void* ids;
      char device[32];
      expected_rows = expected_rows < 0 ? 0 : expected_rows > per ? per : expected_rows;
      for (i = 0; i < count; ++i) parts[i] = dts_component(outs[i], r);
      snprintf(device, sizeof(device), "/device:CPU:%d", (int)r);
      rows = ddt_dim0(parts[id_component]);
      if (rows != expected_rows) {
        fail_msg("step %lld replica %d has %lld rows, expected %lld", (long long)steps, (int)r,
                 (long long)rows, (long long)expected_rows);
      }
      for (i = 0; i < count; ++i) {
        assert_int_equal(ddt_dim0(parts[i]), rows);
        assert_string_equal(dts_device(parts[i]), device);
      }
      DT_OK(dist_tensor_dtype(parts[id_component], &dtype));
      ids = rows > 0 ? ddt_data(parts[id_component]) : NULL;
      for (i = 0; i < rows; ++i) {
        const int64_t id = id_at(ids, dtype, i);
        if (id < 0 || id >= n) fail_msg("id %lld out of range", (long long)id);
        if (seen[id]) fail_msg("id %lld seen twice", (long long)id);
        seen[id] = 1;
        main_thread.count += 1;
        main_thread.sum += id;
        main_thread.sum_squares += id * id;
        if (check_row != NULL) check_row(parts, i, id);
      }
      ddt_destroy_all(parts, count);
    }
    /* The same checksums computed by the replicas themselves. */
    memset(&job, 0, sizeof(job));
    job.id_arg = id_component;
    DTS_RUN_OK(&job.errors, NUM_REPLICAS,
               dist_strategy_run(s, sum_ids_fn, &job, (const dist_value_t* const*)outs, count,
                                 &result, 1));
    DT_OK(dist_strategy_reduce(s, DIST_REDUCE_SUM, result, &total));
    {
      double step_sums[3];
      const int64_t three = 3;
      ddt_expect_tensor(total, DIST_FLOAT64, 1, &three);
      memcpy(step_sums, ddt_data(total), sizeof(step_sums));
      for (i = 0; i < 3; ++i) via_run[i] += step_sums[i];
    }
    dist_value_destroy(total);
    dist_value_destroy(result);
    ddt_destroy_all(outs, count);
    consumed += actual;
    ++steps;
    assert_true(steps <= (n + global - 1) / global);
  }
  assert_int_equal(status, DIST_OUT_OF_RANGE);
  ddt_expect_end(it, count);
  dist_iterator_destroy(it);

  assert_int_equal(steps, (n + global - 1) / global);
  for (i = 0; i < n; ++i) {
    if (!seen[i]) fail_msg("id %lld never seen", (long long)i);
  }
  free(seen);
  assert_int_equal(main_thread.count, expected.count);
  assert_int_equal(main_thread.sum, expected.sum);
  assert_int_equal(main_thread.sum_squares, expected.sum_squares);
  assert_true(via_run[0] == (double)expected.count);
  assert_true(via_run[1] == (double)expected.sum);
  assert_true(via_run[2] == (double)expected.sum_squares);
}

/* ---- Host arrays: 1003 rows of 3 float32 features and an int32 label ---- */

#define HOST_ROWS 1003
#define HOST_PER_REPLICA 16 /* global batch 64: 15 full steps, then 16, 16, 11, 0 */

static void check_host_row(dist_value_t* const* components, int64_t row, int64_t id) {
  const float* x = (const float*)ddt_data(components[0]) + row * 3;
  if (x[0] != (float)id || x[1] != (float)(2 * id + 1) || x[2] != -(float)id) {
    fail_msg("features of id %lld are %g %g %g", (long long)id, (double)x[0], (double)x[1],
             (double)x[2]);
  }
}

static void test_host_arrays(void** state) {
  static float x[HOST_ROWS][3];
  static int32_t labels[HOST_ROWS];
  const int64_t dx[2] = {HOST_ROWS, 3}, dl[1] = {HOST_ROWS};
  dist_strategy_t* s = dts_mirrored(NUM_REPLICAS);
  dist_value_t* parts[2];
  dist_dataset_t* ds = NULL;
  dist_dataset_t* batched = NULL;
  dist_distributed_dataset_t* dist = NULL;
  int i;
  (void)state;
  for (i = 0; i < HOST_ROWS; ++i) {
    x[i][0] = (float)i;
    x[i][1] = (float)(2 * i + 1);
    x[i][2] = -(float)i;
    labels[i] = i;
  }
  parts[0] = dts_tensor(DIST_FLOAT32, dx, 2, x, NULL);
  parts[1] = dts_tensor(DIST_INT32, dl, 1, labels, NULL);
  DT_OK(dist_dataset_from_tensor_slices((const dist_value_t* const*)parts, 2, &ds));
  ddt_destroy_all(parts, 2);
  DT_OK(dist_dataset_batch(ds, HOST_PER_REPLICA * NUM_REPLICAS, 0, &batched));
  DT_OK(dist_strategy_distribute_dataset(s, batched, NULL, &dist));
  iterate_and_check(s, dist, 2, 1, HOST_ROWS, HOST_PER_REPLICA, check_host_row);
  /* A second pass over the same distributed dataset sees everything again. */
  iterate_and_check(s, dist, 2, 1, HOST_ROWS, HOST_PER_REPLICA, check_host_row);
  dist_distributed_dataset_destroy(dist);
  dist_dataset_destroy(batched);
  dist_dataset_destroy(ds);
  dist_strategy_destroy(s);
}

/* ---- TFRecord files: 517 records in 5 files (one empty) ---- */

#define NUM_FILES 5
#define TFR_PER_REPLICA 8 /* global batch 32: 16 full steps, then 5, 0, 0, 0 */

static const int records_per_file[NUM_FILES] = {100, 37, 0, 250, 130};

/* Record of id: 8 little-endian id bytes, then id % 17 bytes (id * 7 + k) & 0xff. */
static size_t make_record(int64_t id, unsigned char* out) {
  const size_t extra = (size_t)(id % 17);
  size_t k;
  ddt_put_u64(out, (uint64_t)id);
  for (k = 0; k < extra; ++k) out[8 + k] = (unsigned char)((id * 7 + (int64_t)k) & 0xff);
  return 8 + extra;
}

/* record -> (id int64, payload length int64); checks the payload bytes. */
static dist_status_t parse_record(const dist_value_t* const* inputs, int32_t num_inputs,
                                  dist_value_t** outputs, int32_t num_outputs, void* user_data) {
  void* data = NULL;
  int64_t size = 0, id = 0, extra;
  int64_t k;
  const unsigned char* p;
  (void)user_data;
  if (num_inputs != 1 || num_outputs != 2) return DIST_INTERNAL;
  if (dist_tensor_num_elements(inputs[0], &size) != DIST_OK || size < 8) return DIST_INTERNAL;
  if (dist_tensor_data(inputs[0], &data) != DIST_OK) return DIST_INTERNAL;
  p = (const unsigned char*)data;
  for (k = 7; k >= 0; --k) id = (id << 8) | p[k];
  extra = size - 8;
  if (extra != id % 17) return DIST_DATA_LOSS;
  for (k = 0; k < extra; ++k) {
    if (p[8 + k] != (unsigned char)((id * 7 + k) & 0xff)) return DIST_DATA_LOSS;
  }
  if (dist_tensor_create(DIST_INT64, NULL, 0, &id, sizeof(id), NULL, &outputs[0]) != DIST_OK)
    return DIST_INTERNAL;
  return dist_tensor_create(DIST_INT64, NULL, 0, &extra, sizeof(extra), NULL, &outputs[1]);
}

static void check_tfrecord_row(dist_value_t* const* components, int64_t row, int64_t id) {
  const int64_t extra = ((const int64_t*)ddt_data(components[1]))[row];
  if (extra != id % 17) fail_msg("id %lld has %lld payload bytes", (long long)id, (long long)extra);
}

static void test_tfrecord_files(void** state) {
  ddt_tmpdir* t = ddt_tmp();
  char p[NUM_FILES][128];
  const char* paths[NUM_FILES];
  dist_strategy_t* s = dts_mirrored(NUM_REPLICAS);
  dist_dataset_t* files = NULL;
  dist_dataset_t* parsed = NULL;
  dist_dataset_t* batched = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_input_options_t* o = NULL;
  unsigned char record[8 + 17];
  int64_t id = 0;
  int f, j, policy;
  (void)state;
  for (f = 0; f < NUM_FILES; ++f) {
    ddt_bytes b = {NULL, 0, 0};
    char name[32];
    for (j = 0; j < records_per_file[f]; ++j, ++id) {
      const size_t size = make_record(id, record);
      ddt_tfrecord_append(&b, record, size);
    }
    snprintf(name, sizeof(name), "part-%05d.tfrecord", f);
    paths[f] = ddt_write_file(t, name, b.data, b.size, p[f]);
    ddt_bytes_free(&b);
  }
  assert_int_equal(id, 517);
  DT_OK(dist_dataset_from_tfrecord_files(paths, NUM_FILES, &files));
  DT_OK(dist_dataset_map(files, parse_record, NULL, NULL, 2, 3, &parsed));
  DT_OK(dist_dataset_batch(parsed, TFR_PER_REPLICA * NUM_REPLICAS, 0, &batched));
  /* The default options (AUTO sharding: FILE for this source, a no-op on one worker), and
   * explicit ones with deeper prefetching. */
  for (policy = 0; policy < 2; ++policy) {
    if (policy == 1) {
      DT_OK(dist_input_options_create(&o));
      DT_OK(dist_input_options_set_auto_shard_policy(o, DIST_AUTO_SHARD_FILE));
      DT_OK(dist_input_options_set_prefetch_depth(o, 3));
    }
    DT_OK(dist_strategy_distribute_dataset(s, batched, o, &dist));
    iterate_and_check(s, dist, 2, 0, 517, TFR_PER_REPLICA, check_tfrecord_row);
    dist_distributed_dataset_destroy(dist);
    dist_input_options_destroy(o);
    o = NULL;
  }
  dist_dataset_destroy(batched);
  dist_dataset_destroy(parsed);
  dist_dataset_destroy(files);
  dist_strategy_destroy(s);
  ddt_tmpdir_remove(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_host_arrays),
      cmocka_unit_test_teardown(test_tfrecord_files, ddt_tmp_teardown),
  };
  return cmocka_run_group_tests_name("input_done_when", tests, setup, NULL);
}
