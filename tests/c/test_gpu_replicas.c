/* Strategies over GPU replicas through the public API: Mirrored over every GPU (the default
 * device list), OneDevice on a GPU, every cross-device ops on GPUs (NcclAllReduce too),
 * replica-context collectives (all_reduce_into too), cross-replica reduce / reduce_axis / gather, mirrored and
 * sync-on-read variables, and the misuse cases (NcclAllReduce on CPU replicas, mixed CPU
 * and GPU replicas, bad num_packs).
 *
 * ctest runs it twice: `c.test_gpu_replicas` on the fake GPU plugin (tests/gpu_fake, two
 * fake GPUs whose memory faults when the library reads it from the host), and
 * `c.test_gpu_replicas.real` on the real CUDA plugin, where every test that needs a GPU
 * reports SKIPPED without one. Values are small integers in float32, so every reduction
 * order gives the same bits and the expectations are exact. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "dist_strategy_test.h"

#define MAX_GPUS 8

/* The GPUs of this process: the local devices after the CPUs. */
static int32_t gpu_count(void) {
  int32_t total = 0;
  int32_t i;
  int32_t gpus = 0;
  DT_OK(dist_local_device_count(&total));
  for (i = 0; i < total; ++i) {
    dist_device_t* device = NULL;
    dist_device_type_t type = 0;
    DT_OK(dist_local_device_get(i, &device));
    DT_OK(dist_device_type(device, &type));
    if (type == DIST_DEVICE_GPU) ++gpus;
    dist_device_destroy(device);
  }
  return gpus;
}

/* A host copy of `tensor` (on any device) read as float32. */
static dist_status_t read_f32_anywhere(const dist_value_t* tensor, float* out, int64_t n) {
  dist_value_t* host = NULL;
  void* data = NULL;
  int64_t count = -1;
  dist_status_t status = dist_tensor_copy_to_device(tensor, "CPU:0", &host);
  if (status != DIST_OK) return status;
  status = dist_tensor_num_elements(host, &count);
  if (status == DIST_OK && count != n) status = DIST_INTERNAL;
  if (status == DIST_OK) status = dist_tensor_data(host, &data);
  if (status == DIST_OK) memcpy(out, data, (size_t)n * sizeof(float));
  dist_value_destroy(host);
  return status;
}

static int on_gpu(const dist_value_t* tensor, int index) {
  const char* device = NULL;
  char want[32];
  if (dist_tensor_device(tensor, &device) != DIST_OK || device == NULL) return 0;
  snprintf(want, sizeof(want), "device:GPU:%d", index);
  return strstr(device, want) != NULL;
}

static dist_strategy_t* mirrored_gpus(const dist_cross_device_ops_t* ops) {
  dist_strategy_t* strategy = NULL;
  DT_OK(dist_strategy_create_mirrored(NULL, 0, ops, &strategy));
  assert_non_null(strategy);
  DT_OK(dist_strategy_set_timeout_ms(strategy, DTS_TIMEOUT_MS));
  return strategy;
}

/* ---- Replica context ---- */

typedef struct {
  dts_errors errors;
  int32_t n;
} collectives_case;

/* Replica r holds [r+1, 10]; SUM is [n(n+1)/2, 10n], MEAN [(n+1)/2, 10]. */
static dist_status_t replica_collectives(dist_context_t* ctx, const dist_value_t* const* args,
                                         int32_t num_args, dist_value_t** results,
                                         int32_t num_results, void* user_data) {
  collectives_case* c = (collectives_case*)user_data;
  int32_t r = -1;
  const char* device = NULL;
  const int64_t two = 2;
  float mine[2];
  float got[6];
  dist_value_t* in = NULL;
  dist_value_t* sum = NULL;
  dist_value_t* mean = NULL;
  dist_value_t* gathered = NULL;
  dist_value_t* copy = NULL;
  dist_value_t* into = NULL;
  dist_value_t* host_into = NULL;
  dist_value_t* wrong = NULL;
  const int64_t three = 3;
  const float zeros[3] = {0, 0, 0};
  const float n = (float)c->n;
  (void)args;
  (void)num_args;
  (void)num_results;
  RCALL(&c->errors, 0, dist_context_replica_id(ctx, &r));
  RCALL(&c->errors, r, dist_context_device(ctx, &device));
  mine[0] = (float)(r + 1);
  mine[1] = 10.0f;
  RCALL(&c->errors, r, dist_tensor_create(DIST_FLOAT32, &two, 1, mine, sizeof(mine), device, &in));
  RCHECK(&c->errors, r, on_gpu(in, r), "input not on GPU:%d", (int)r);
  RCALL(&c->errors, r, dist_context_all_reduce(ctx, DIST_REDUCE_SUM, in, &sum));
  RCHECK(&c->errors, r, on_gpu(sum, r), "the sum is not on this replica's GPU");
  RCALL(&c->errors, r, read_f32_anywhere(sum, got, 2));
  RCHECK(&c->errors, r, got[0] == n * (n + 1) / 2 && got[1] == 10 * n, "sum %g %g", got[0], got[1]);
  /* Into a tensor on this replica's GPU (written by the collective), into host memory
   * (copied in), in place, and into a wrong shape (refused on every replica). */
  RCALL(&c->errors, r, dist_tensor_create(DIST_FLOAT32, &two, 1, zeros, 2 * sizeof(float), device, &into));
  RCALL(&c->errors, r, dist_context_all_reduce_into(ctx, DIST_REDUCE_SUM, in, into));
  RCHECK(&c->errors, r, on_gpu(into, r), "the target moved off this replica's GPU");
  RCALL(&c->errors, r, read_f32_anywhere(into, got, 2));
  RCHECK(&c->errors, r, got[0] == n * (n + 1) / 2 && got[1] == 10 * n, "into %g %g", got[0], got[1]);
  RCALL(&c->errors, r, dist_tensor_create(DIST_FLOAT32, &two, 1, zeros, 2 * sizeof(float), "CPU:0", &host_into));
  RCALL(&c->errors, r, dist_context_all_reduce_into(ctx, DIST_REDUCE_MAX, in, host_into));
  RCALL(&c->errors, r, read_f32_anywhere(host_into, got, 2));
  RCHECK(&c->errors, r, got[0] == n && got[1] == 10, "max into host %g %g", got[0], got[1]);
  RCALL(&c->errors, r, dist_context_all_reduce_into(ctx, DIST_REDUCE_SUM, into, into));
  RCALL(&c->errors, r, read_f32_anywhere(into, got, 2));
  RCHECK(&c->errors, r, got[0] == n * n * (n + 1) / 2 && got[1] == 10 * n * n, "in place %g %g", got[0], got[1]);
  RCALL(&c->errors, r, dist_tensor_create(DIST_FLOAT32, &three, 1, zeros, sizeof(zeros), device, &wrong));
  RCHECK(&c->errors, r, dist_context_all_reduce_into(ctx, DIST_REDUCE_SUM, in, wrong) == DIST_INVALID_ARGUMENT,
         "a target of the wrong shape was not refused");
  RCALL(&c->errors, r, read_f32_anywhere(wrong, got, 3));
  RCHECK(&c->errors, r, got[0] == 0 && got[1] == 0 && got[2] == 0, "the refused target was written");
  RCALL(&c->errors, r, dist_context_all_reduce(ctx, DIST_REDUCE_MEAN, in, &mean));
  RCALL(&c->errors, r, read_f32_anywhere(mean, got, 2));
  RCHECK(&c->errors, r, got[0] == (n + 1) / 2 && got[1] == 10, "mean %g %g", got[0], got[1]);
  RCALL(&c->errors, r, dist_context_all_gather(ctx, in, 0, &gathered));
  RCALL(&c->errors, r, read_f32_anywhere(gathered, got, 2 * c->n));
  RCHECK(&c->errors, r, got[0] == 1 && got[2 * c->n - 2] == n, "gathered %g ... %g", got[0], got[2 * c->n - 2]);
  RCALL(&c->errors, r, dist_context_broadcast(ctx, in, c->n - 1, &copy));
  RCHECK(&c->errors, r, on_gpu(copy, r), "the broadcast copy is not on this replica's GPU");
  RCALL(&c->errors, r, read_f32_anywhere(copy, got, 2));
  RCHECK(&c->errors, r, got[0] == n, "broadcast %g", got[0]);
  results[0] = sum;
  dist_value_destroy(in);
  dist_value_destroy(mean);
  dist_value_destroy(gathered);
  dist_value_destroy(copy);
  dist_value_destroy(into);
  dist_value_destroy(host_into);
  dist_value_destroy(wrong);
  return DIST_OK;
}

static void run_collectives(dist_strategy_t* strategy) {
  collectives_case c;
  dist_value_t* result = NULL;
  int32_t r;
  dts_errors_clear(&c.errors);
  c.n = dts_num_replicas(strategy);
  DTS_RUN_OK(&c.errors, c.n, dist_strategy_run(strategy, replica_collectives, &c, NULL, 0, &result, 1));
  assert_int_equal(dts_num_components(result), c.n);
  for (r = 0; r < c.n; ++r) {
    dist_value_t* component = dts_component(result, r);
    assert_true(on_gpu(component, r));
    dist_value_destroy(component);
  }
  dist_value_destroy(result);
}

static void test_mirrored_defaults_to_every_gpu(void** state) {
  dist_strategy_t* strategy;
  const char* device = NULL;
  int32_t i;
  (void)state;
  DT_REQUIRE_GPU();
  strategy = mirrored_gpus(NULL);
  assert_int_equal(dts_num_replicas(strategy), gpu_count());
  for (i = 0; i < gpu_count(); ++i) {
    char want[32];
    snprintf(want, sizeof(want), "device:GPU:%d", (int)i);
    DT_OK(dist_strategy_worker_device(strategy, i, &device));
    assert_non_null(strstr(device, want));
  }
  run_collectives(strategy);
  dist_strategy_destroy(strategy);
}

static void test_gpu_wildcard_names_every_gpu(void** state) {
  const char* devices[1] = {"GPU:*"};
  dist_strategy_t* strategy = NULL;
  (void)state;
  DT_REQUIRE_GPU();
  DT_OK(dist_strategy_create_mirrored(devices, 1, NULL, &strategy));
  assert_int_equal(dts_num_replicas(strategy), gpu_count());
  dist_strategy_destroy(strategy);
}

static void test_every_cross_device_ops_on_gpus(void** state) {
  dist_cross_device_ops_t* ops[5] = {NULL, NULL, NULL, NULL, NULL};
  int i;
  (void)state;
  DT_REQUIRE_GPU();
  DT_OK(dist_cross_device_ops_create_nccl_all_reduce(0, &ops[0]));
  DT_OK(dist_cross_device_ops_create_nccl_all_reduce(2, &ops[1]));
  DT_OK(dist_cross_device_ops_create_reduction_to_one_device("GPU:0", &ops[2]));
  DT_OK(dist_cross_device_ops_create_hierarchical_copy(1, &ops[3]));
  DT_OK(dist_cross_device_ops_create_shared_memory(0, &ops[4]));
  for (i = 0; i < 5; ++i) {
    dist_strategy_t* strategy = mirrored_gpus(ops[i]);
    run_collectives(strategy);
    dist_strategy_destroy(strategy);
    dist_cross_device_ops_destroy(ops[i]);
  }
}

static void test_one_device_on_a_gpu(void** state) {
  char name[16];
  dist_strategy_t* strategy;
  (void)state;
  DT_REQUIRE_GPU();
  snprintf(name, sizeof(name), "GPU:%d", (int)(gpu_count() - 1));
  strategy = dts_one_device(name);
  assert_int_equal(dts_num_replicas(strategy), 1);
  dist_strategy_destroy(strategy);
}

/* ---- Cross-replica context ---- */

/* Replica r returns [[r, 1], [r, 1]] (2x2) on its GPU. */
static dist_status_t replica_rows(dist_context_t* ctx, const dist_value_t* const* args,
                                  int32_t num_args, dist_value_t** results, int32_t num_results,
                                  void* user_data) {
  dts_errors* errors = (dts_errors*)user_data;
  int32_t r = -1;
  const char* device = NULL;
  const int64_t dims[2] = {2, 2};
  float values[4];
  (void)args;
  (void)num_args;
  (void)num_results;
  RCALL(errors, 0, dist_context_replica_id(ctx, &r));
  RCALL(errors, r, dist_context_device(ctx, &device));
  values[0] = values[2] = (float)r;
  values[1] = values[3] = 1.0f;
  RCALL(errors, r, dist_tensor_create(DIST_FLOAT32, dims, 2, values, sizeof(values), device, &results[0]));
  return DIST_OK;
}

static void test_cross_replica_reductions_of_gpu_values(void** state) {
  dist_strategy_t* strategy;
  dts_errors errors;
  dist_value_t* rows = NULL;
  dist_value_t* out = NULL;
  float got[8];
  int32_t n;
  float sum_r;
  (void)state;
  DT_REQUIRE_GPU();
  strategy = mirrored_gpus(NULL);
  n = dts_num_replicas(strategy);
  sum_r = (float)(n * (n - 1) / 2);
  dts_errors_clear(&errors);
  DTS_RUN_OK(&errors, n, dist_strategy_run(strategy, replica_rows, &errors, NULL, 0, &rows, 1));
  DT_OK(dist_strategy_reduce(strategy, DIST_REDUCE_SUM, rows, &out));
  assert_true(on_gpu(out, 0));
  DT_OK(read_f32_anywhere(out, got, 4));
  assert_true(got[0] == sum_r && got[1] == (float)n && got[2] == sum_r);
  dist_value_destroy(out);
  DT_OK(dist_strategy_reduce(strategy, DIST_REDUCE_MEAN, rows, &out));
  DT_OK(read_f32_anywhere(out, got, 4));
  assert_true(got[0] == sum_r / (float)n && got[1] == 1.0f);
  dist_value_destroy(out);
  /* Along axis 0: 2n rows; SUM per column [2 sum_r, 2n], MEAN [sum_r / n, 1]. */
  DT_OK(dist_strategy_reduce_axis(strategy, DIST_REDUCE_SUM, rows, 0, &out));
  DT_OK(read_f32_anywhere(out, got, 2));
  assert_true(got[0] == 2 * sum_r && got[1] == (float)(2 * n));
  dist_value_destroy(out);
  DT_OK(dist_strategy_reduce_axis(strategy, DIST_REDUCE_MEAN, rows, 0, &out));
  DT_OK(read_f32_anywhere(out, got, 2));
  assert_true(got[0] == sum_r / (float)n && got[1] == 1.0f);
  dist_value_destroy(out);
  DT_OK(dist_strategy_gather(strategy, rows, 0, &out));
  DT_OK(read_f32_anywhere(out, got, 4 * n));
  assert_true(got[0] == 0.0f && got[4 * n - 2] == (float)(n - 1));
  dist_value_destroy(out);
  /* reduce_to the replicas' own devices (the rows value itself as destinations): a
   * Mirrored value with the sum on every GPU; batch_reduce_to the same; reduce_to_device
   * onto the host. */
  {
    const dist_value_t* values[2];
    const dist_value_t* destinations[2];
    dist_value_t* outs[2] = {NULL, NULL};
    int32_t r;
    int k;
    DT_OK(dist_strategy_reduce_to(strategy, DIST_REDUCE_SUM, rows, rows, &out));
    values[0] = values[1] = rows;
    destinations[0] = destinations[1] = rows;
    DT_OK(dist_strategy_batch_reduce_to(strategy, DIST_REDUCE_MAX, values, destinations, 2, outs));
    for (r = 0; r < n; ++r) {
      dist_value_t* mine = dts_component(out, r);
      assert_true(on_gpu(mine, r));
      DT_OK(read_f32_anywhere(mine, got, 4));
      assert_true(got[0] == sum_r && got[1] == (float)n);
      dist_value_destroy(mine);
      for (k = 0; k < 2; ++k) {
        mine = dts_component(outs[k], r);
        assert_true(on_gpu(mine, r));
        DT_OK(read_f32_anywhere(mine, got, 4));
        assert_true(got[0] == (float)(n - 1) && got[1] == 1.0f);
        dist_value_destroy(mine);
      }
    }
    dist_value_destroy(out);
    dist_value_destroy(outs[0]);
    dist_value_destroy(outs[1]);
    DT_OK(dist_strategy_reduce_to_device(strategy, DIST_REDUCE_SUM, rows, "CPU:0", &out));
    assert_non_null(strstr(dts_device(out), "CPU:0"));
    DT_OK(read_f32_anywhere(out, got, 4));
    assert_true(got[2] == sum_r);
    dist_value_destroy(out);
  }
  dist_value_destroy(rows);
  dist_strategy_destroy(strategy);
}

/* ---- Variables ---- */

typedef struct {
  dts_errors errors;
  dist_value_t* variable;
} variable_case;

/* Every replica adds r+1: the aggregated (SUM) update adds n(n+1)/2 to every copy. */
static dist_status_t replica_add(dist_context_t* ctx, const dist_value_t* const* args,
                                 int32_t num_args, dist_value_t** results, int32_t num_results,
                                 void* user_data) {
  variable_case* c = (variable_case*)user_data;
  int32_t r = -1;
  const char* device = NULL;
  dist_value_t* delta = NULL;
  float one;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&c->errors, 0, dist_context_replica_id(ctx, &r));
  RCALL(&c->errors, r, dist_context_device(ctx, &device));
  one = (float)(r + 1);
  RCALL(&c->errors, r, dist_tensor_create(DIST_FLOAT32, NULL, 0, &one, sizeof(one), device, &delta));
  RCALL(&c->errors, r, dist_variable_assign_add(c->variable, delta));
  dist_value_destroy(delta);
  return DIST_OK;
}

/* A SUM-aggregated float32 scalar variable of `strategy`, starting at `initial`. */
static dist_value_t* sum_variable(dist_strategy_t* strategy, dist_variable_sync_t sync, float initial,
                                  const char* name) {
  dist_value_t* value = dts_f32_scalar(initial, "CPU:0");
  dist_value_t* variable = NULL;
  DT_OK(dist_strategy_scope_enter(strategy));
  DT_OK(dist_variable_create(value, sync, DIST_AGGREGATION_SUM, name, &variable));
  DT_OK(dist_strategy_scope_exit(strategy));
  dist_value_destroy(value);
  return variable;
}

static void test_mirrored_variables_on_gpus(void** state) {
  dist_strategy_t* strategy;
  variable_case c;
  dist_value_t* read = NULL;
  float got;
  int32_t n;
  int32_t r;
  (void)state;
  DT_REQUIRE_GPU();
  strategy = mirrored_gpus(NULL);
  n = dts_num_replicas(strategy);
  c.variable = sum_variable(strategy, DIST_SYNC_ON_WRITE, 5.0f, "v");
  for (r = 0; r < n; ++r) {
    dist_value_t* copy = dts_component(c.variable, r);
    DT_OK(dist_variable_read(copy, &read));
    assert_true(on_gpu(read, r));
    DT_OK(read_f32_anywhere(read, &got, 1));
    assert_true(got == 5.0f);
    dist_value_destroy(read);
    dist_value_destroy(copy);
  }
  dts_errors_clear(&c.errors);
  DTS_RUN_OK(&c.errors, n, dist_strategy_run(strategy, replica_add, &c, NULL, 0, NULL, 0));
  for (r = 0; r < n; ++r) {
    dist_value_t* copy = dts_component(c.variable, r);
    DT_OK(dist_variable_read(copy, &read));
    DT_OK(read_f32_anywhere(read, &got, 1));
    assert_true(got == 5.0f + (float)(n * (n + 1) / 2));
    dist_value_destroy(read);
    dist_value_destroy(copy);
  }
  /* Cross-replica assign_sub and assign update every copy on its GPU. */
  {
    dist_value_t* three = dts_f32_scalar(3.0f, "CPU:0");
    DT_OK(dist_variable_assign_sub(c.variable, three));
    DT_OK(dist_variable_read(c.variable, &read));
    DT_OK(read_f32_anywhere(read, &got, 1));
    assert_true(got == 2.0f + (float)(n * (n + 1) / 2));
    dist_value_destroy(read);
    DT_OK(dist_variable_assign(c.variable, three));
    DT_OK(dist_variable_read(c.variable, &read));
    DT_OK(read_f32_anywhere(read, &got, 1));
    assert_true(got == 3.0f);
    dist_value_destroy(read);
    dist_value_destroy(three);
  }
  /* Saved from the GPUs (through the host) and restored onto every GPU copy. */
  {
    char path[] = "/tmp/dist_gpu_vars_XXXXXX";
    const int fd = mkstemp(path);
    dist_value_t* seven = dts_f32_scalar(7.0f, "CPU:0");
    assert_true(fd >= 0);
    close(fd);
    DT_OK(dist_strategy_save_variables(strategy, path));
    DT_OK(dist_variable_assign(c.variable, seven));
    DT_OK(dist_strategy_restore_variables(strategy, path));
    for (r = 0; r < n; ++r) {
      dist_value_t* copy = dts_component(c.variable, r);
      DT_OK(dist_variable_read(copy, &read));
      assert_true(on_gpu(read, r));
      DT_OK(read_f32_anywhere(read, &got, 1));
      assert_true(got == 3.0f);
      dist_value_destroy(read);
      dist_value_destroy(copy);
    }
    unlink(path);
    dist_value_destroy(seven);
  }
  dist_value_destroy(c.variable);
  dist_strategy_destroy(strategy);
}

static void test_sync_on_read_variables_on_gpus(void** state) {
  dist_strategy_t* strategy;
  variable_case c;
  dist_value_t* read = NULL;
  float got;
  int32_t n;
  (void)state;
  DT_REQUIRE_GPU();
  strategy = mirrored_gpus(NULL);
  n = dts_num_replicas(strategy);
  c.variable = sum_variable(strategy, DIST_SYNC_ON_READ, 0.0f, "counter");
  dts_errors_clear(&c.errors);
  DTS_RUN_OK(&c.errors, n, dist_strategy_run(strategy, replica_add, &c, NULL, 0, NULL, 0));
  /* Each replica added r+1 to its own copy; reading in cross-replica context sums them. */
  DT_OK(dist_variable_read(c.variable, &read));
  DT_OK(read_f32_anywhere(read, &got, 1));
  assert_true(got == (float)(n * (n + 1) / 2));
  dist_value_destroy(read);
  dist_value_destroy(c.variable);
  dist_strategy_destroy(strategy);
}

/* ---- Input ---- */

/* A distributed dataset of `steps` global batches of 2n rows [i, i, i] (row i of the
 * whole pass), float32 [rows, 3]. */
static dist_distributed_dataset_t* rows_dataset(dist_strategy_t* strategy, int32_t n, int steps,
                                                int fetch_to_device) {
  const int64_t rows = (int64_t)steps * 2 * n;
  const int64_t dims[2] = {rows, 3};
  float* values = (float*)calloc((size_t)(rows * 3), sizeof(float));
  dist_value_t* table;
  dist_dataset_t* slices = NULL;
  dist_dataset_t* batches = NULL;
  dist_input_options_t* options = NULL;
  dist_distributed_dataset_t* out = NULL;
  int64_t i;
  for (i = 0; i < rows * 3; ++i) values[i] = (float)(i / 3);
  table = dts_tensor(DIST_FLOAT32, dims, 2, values, "CPU:0");
  free(values);
  DT_OK(dist_dataset_from_tensor_slices((const dist_value_t* const*)&table, 1, &slices));
  DT_OK(dist_dataset_batch(slices, 2 * n, 0, &batches));
  DT_OK(dist_input_options_create(&options));
  DT_OK(dist_input_options_set_fetch_to_device(options, fetch_to_device));
  DT_OK(dist_strategy_distribute_dataset(strategy, batches, options, &out));
  dist_input_options_destroy(options);
  dist_dataset_destroy(batches);
  dist_dataset_destroy(slices);
  dist_value_destroy(table);
  return out;
}

/* With fetch_to_device every replica's rows arrive on its GPU (copied ahead, while the
 * previous step runs); without, they stay in host memory. Either way step k gives replica
 * r rows 2nk + 2r and 2nk + 2r + 1, and the pass ends after the last batch. */
static void test_fetch_to_device_puts_batches_on_the_gpus(void** state) {
  const int steps = 4;
  int fetch;
  (void)state;
  DT_REQUIRE_GPU();
  for (fetch = 1; fetch >= 0; --fetch) {
    dist_strategy_t* strategy = mirrored_gpus(NULL);
    const int32_t n = dts_num_replicas(strategy);
    dist_distributed_dataset_t* dataset = rows_dataset(strategy, n, steps, fetch);
    dist_iterator_t* it = NULL;
    dist_value_t* batch = NULL;
    int k;
    DT_OK(dist_distributed_dataset_make_iterator(dataset, &it));
    for (k = 0; k < steps; ++k) {
      int32_t r;
      DT_OK(dist_iterator_get_next(it, &batch, 1));
      assert_int_equal(dts_num_components(batch), n);
      for (r = 0; r < n; ++r) {
        dist_value_t* mine = dts_component(batch, r);
        float got[6];
        const float first = (float)(2 * n * k + 2 * r);
        assert_int_equal(on_gpu(mine, r), fetch);
        DT_OK(read_f32_anywhere(mine, got, 6));
        assert_true(got[0] == first && got[2] == first && got[3] == first + 1 && got[5] == first + 1);
        dist_value_destroy(mine);
      }
      dist_value_destroy(batch);
      batch = NULL;
    }
    DT_ERR(dist_iterator_get_next(it, &batch, 1), DIST_OUT_OF_RANGE, "dist_iterator_get_next", NULL);
    DT_ERR(dist_iterator_get_next(it, &batch, 1), DIST_OUT_OF_RANGE, "dist_iterator_get_next", NULL);
    dist_iterator_destroy(it);
    dist_distributed_dataset_destroy(dataset);
    dist_strategy_destroy(strategy);
  }
}

/* Elements 0, 1, ... as float32 scalars [index]; index 5 fails. */
static dist_status_t failing_rows(int64_t index, dist_value_t** components, int32_t num_components,
                                  int32_t* out_end, void* user_data) {
  const float value = (float)index;
  (void)num_components;
  (void)user_data;
  if (index == 5) return DIST_DATA_LOSS;
  if (index >= 16) {
    *out_end = 1;
    return DIST_OK;
  }
  return dist_tensor_create(DIST_FLOAT32, NULL, 0, &value, sizeof(value), "CPU:0", &components[0]);
}

/* A batch that fails to come while the one before it is being used: the earlier batch is
 * delivered whole, the failure comes with the next call, in order. */
static void test_fetch_to_device_reports_a_failure_in_order(void** state) {
  dist_strategy_t* strategy;
  dist_dataset_t* source = NULL;
  dist_dataset_t* batches = NULL;
  dist_input_options_t* options = NULL;
  dist_distributed_dataset_t* dataset = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* batch = NULL;
  dist_value_t* first = NULL;
  float got[2];
  int32_t n;
  (void)state;
  DT_REQUIRE_GPU();
  strategy = mirrored_gpus(NULL);
  n = dts_num_replicas(strategy);
  DT_OK(dist_dataset_from_generator(failing_rows, NULL, NULL, 1, &source));
  DT_OK(dist_dataset_batch(source, 4, 0, &batches));
  DT_OK(dist_input_options_create(&options));
  DT_OK(dist_input_options_set_fetch_to_device(options, 1));
  DT_OK(dist_strategy_distribute_dataset(strategy, batches, options, &dataset));
  DT_OK(dist_distributed_dataset_make_iterator(dataset, &it));
  DT_OK(dist_iterator_get_next(it, &batch, 1));
  first = n > 1 ? dts_component(batch, 0) : NULL;
  DT_OK(read_f32_anywhere(first != NULL ? first : batch, got, n > 1 ? 4 / n : 4));
  assert_true(got[0] == 0.0f && got[1] == 1.0f);
  dist_value_destroy(first);
  dist_value_destroy(batch);
  DT_ERR(dist_iterator_get_next(it, &batch, 1), DIST_DATA_LOSS, "dist_iterator_get_next", NULL);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dataset);
  dist_input_options_destroy(options);
  dist_dataset_destroy(batches);
  dist_dataset_destroy(source);
  dist_strategy_destroy(strategy);
}

/* ---- Misuse ---- */

static void test_nccl_all_reduce_ops_and_misuse(void** state) {
  dist_cross_device_ops_t* ops = DT_SENTINEL_PTR;
  dist_cross_device_ops_kind_t kind = 0;
  const char* cpus[2] = {"CPU:0", "CPU:1"};
  dist_strategy_t* strategy = DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_cross_device_ops_create_nccl_all_reduce(-1, &ops), DIST_INVALID_ARGUMENT,
         "dist_cross_device_ops_create_nccl_all_reduce", "num_packs");
  assert_null(ops);
  DT_ERR(dist_cross_device_ops_create_nccl_all_reduce(1, NULL), DIST_INVALID_ARGUMENT,
         "dist_cross_device_ops_create_nccl_all_reduce", "out");
  DT_OK(dist_cross_device_ops_create_nccl_all_reduce(1, &ops));
  DT_OK(dist_cross_device_ops_kind(ops, &kind));
  assert_int_equal(kind, DIST_CROSS_DEVICE_OPS_NCCL_ALL_REDUCE);
  /* NCCL reduces between GPUs: CPU replicas refuse it, whatever the machine has. */
  DT_OK(dist_set_logical_cpu_device_count(2));
  DT_ERR(dist_strategy_create_mirrored(cpus, 2, ops, &strategy), DIST_FAILED_PRECONDITION,
         "dist_strategy_create_mirrored", "NcclAllReduce");
  assert_null(strategy);
  dist_cross_device_ops_destroy(ops);
}

static void test_mixed_cpu_and_gpu_replicas_are_refused(void** state) {
  const char* devices[2] = {"CPU:0", "GPU:0"};
  dist_strategy_t* strategy = DT_SENTINEL_PTR;
  (void)state;
  DT_REQUIRE_GPU();
  DT_ERR(dist_strategy_create_mirrored(devices, 2, NULL, &strategy), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_mirrored", "all CPU devices or all GPUs");
  assert_null(strategy);
}

/* ---- Device memory ---- */

#define OOM_MAX_TENSORS 4096

/* Creates zero-filled float32 tensors of `elements` on GPU:0 until the device is full; the
 * failure must be DIST_RESOURCE_EXHAUSTED naming the device, with no tensor made. */
static int fill_gpu0(int64_t elements, dist_value_t** tensors) {
  int k;
  for (k = 0; k < OOM_MAX_TENSORS; ++k) {
    dist_value_t* tensor = NULL;
    const dist_status_t status = dist_tensor_create(DIST_FLOAT32, &elements, 1, NULL, 0, "GPU:0", &tensor);
    if (status != DIST_OK) {
      assert_int_equal(status, DIST_RESOURCE_EXHAUSTED);
      assert_non_null(strstr(dist_last_error_message(), "GPU:0"));
      assert_null(tensor);
      break;
    }
    tensors[k] = tensor;
  }
  assert_true(k < OOM_MAX_TENSORS);
  return k;
}

/* A full GPU is a status, not a crash, and nothing is lost: once the tensors are freed the
 * memory serves requests of another size (the CUDA plugin keeps freed blocks for reuse by
 * size, and must hand them back when a request finds the device full), and the collectives
 * run again. 128 MiB then 64 MiB tensors: about 600 and 1200 on an 80 GB GPU, 8 and 16 on
 * the fake plugin's 1 GiB. */
static void test_a_full_gpu_is_reported_and_its_memory_reused(void** state) {
  dist_value_t** tensors = NULL;
  int first;
  int second;
  int i;
  (void)state;
  if (!dt_have_gpu()) skip();
  tensors = calloc(OOM_MAX_TENSORS, sizeof(*tensors));
  assert_non_null(tensors);
  first = fill_gpu0(32 << 20, tensors);
  assert_true(first > 0);
  for (i = 0; i < first; ++i) dist_value_destroy(tensors[i]);
  second = fill_gpu0(16 << 20, tensors);
  for (i = 0; i < second; ++i) dist_value_destroy(tensors[i]);
  free(tensors);
  /* Half-size tensors fill what the first round filled, less the part of a block that the
   * first round's last failed request left over. */
  if (second < 2 * first - 1) fail_msg("%d tensors of 64 MiB after %d of 128 MiB: memory was lost", second, first);
  {
    dist_strategy_t* strategy = mirrored_gpus(NULL);
    run_collectives(strategy);
    dist_strategy_destroy(strategy);
  }
}

/* Without a GPU, GPU replicas fail creation with the reason, and the default device list
 * is the CPU's. */
static void test_without_gpus_gpu_replicas_are_refused(void** state) {
  const char* devices[1] = {"GPU:0"};
  dist_strategy_t* strategy = DT_SENTINEL_PTR;
  (void)state;
  if (dt_have_gpu()) skip();
  DT_ERR(dist_strategy_create_mirrored(devices, 1, NULL, &strategy), DIST_FAILED_PRECONDITION,
         "dist_strategy_create_mirrored", "GPU:0");
  assert_null(strategy);
  DT_OK(dist_strategy_create_mirrored(NULL, 0, NULL, &strategy));
  {
    const char* worker = NULL;
    DT_OK(dist_strategy_worker_device(strategy, 0, &worker));
    assert_non_null(strstr(worker, "CPU"));
  }
  dist_strategy_destroy(strategy);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mirrored_defaults_to_every_gpu),
      cmocka_unit_test(test_gpu_wildcard_names_every_gpu),
      cmocka_unit_test(test_every_cross_device_ops_on_gpus),
      cmocka_unit_test(test_one_device_on_a_gpu),
      cmocka_unit_test(test_cross_replica_reductions_of_gpu_values),
      cmocka_unit_test(test_mirrored_variables_on_gpus),
      cmocka_unit_test(test_sync_on_read_variables_on_gpus),
      cmocka_unit_test(test_fetch_to_device_puts_batches_on_the_gpus),
      cmocka_unit_test(test_fetch_to_device_reports_a_failure_in_order),
      cmocka_unit_test(test_nccl_all_reduce_ops_and_misuse),
      cmocka_unit_test(test_mixed_cpu_and_gpu_replicas_are_refused),
      cmocka_unit_test(test_a_full_gpu_is_reported_and_its_memory_reused),
      cmocka_unit_test(test_without_gpus_gpu_replicas_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
