/* Tests for input.h: distribute_dataset over MirroredStrategy with 2 and 4 CPU replicas
 * (the split of each global batch, the partial last batch and empty batches, the end on
 * every replica together, reduce_axis over a partial batch, run over the PerReplica
 * values), distribute_datasets_from_function (PER_WORKER and PER_REPLICA, input
 * contexts), input options, auto-shard policies on one worker, the contrib entry points
 * (make_dataset_iterator, make_input_fn_iterator, per-replica batches), with misuse. */
#define _POSIX_C_SOURCE 200809L
#include "dist_dataset_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

/* ---- The reference example: 14 elements, global batch 8 ---- */

#define N_ROWS 14
#define GLOBAL_BATCH 8

typedef struct {
  float x[N_ROWS][2]; /* x[i] = {i, 100 + i / 2} */
  int32_t y[N_ROWS];  /* y[i] = 10 i */
} example_data;

static void example_init(example_data* d) {
  int i;
  for (i = 0; i < N_ROWS; ++i) {
    d->x[i][0] = (float)i;
    d->x[i][1] = 100.0f + (float)i * 0.5f;
    d->y[i] = 10 * i;
  }
}

/* from_tensor_slices((x, y)).batch(batch) over the first n rows. */
static dist_dataset_t* example_dataset(const example_data* d, int64_t n, int64_t batch) {
  const int64_t dx[2] = {n, 2};
  const int64_t dy[1] = {n};
  dist_value_t* parts[2];
  dist_dataset_t* ds = NULL;
  dist_dataset_t* batched = NULL;
  parts[0] = dts_tensor(DIST_FLOAT32, dx, 2, d->x, NULL);
  parts[1] = dts_tensor(DIST_INT32, dy, 1, d->y, NULL);
  DT_OK(dist_dataset_from_tensor_slices((const dist_value_t* const*)parts, 2, &ds));
  ddt_destroy_all(parts, 2);
  DT_OK(dist_dataset_batch(ds, batch, 0, &batched));
  dist_dataset_destroy(ds);
  return batched;
}

/* Rows of replica r in a step that starts at row `first` with `actual` rows, for a global
 * batch split into per-replica batches of `per` rows: the replicas fill in order. */
static int64_t rows_of(int64_t actual, int64_t per, int32_t r) {
  int64_t left = actual - (int64_t)r * per;
  if (left < 0) left = 0;
  return left < per ? left : per;
}

/* Checks one step's PerReplica values (x and y) against rows first ... first + actual - 1
 * of `d`, split over n replicas with per-replica batch `per`. */
static void expect_example_step(const example_data* d, dist_value_t* const* outs, int32_t n,
                                int64_t first, int64_t actual, int64_t per) {
  int32_t r;
  for (r = 0; r < 2; ++r) {
    assert_int_equal(dts_kind(outs[r]), DIST_VALUE_PER_REPLICA);
    assert_int_equal(dts_num_components(outs[r]), n);
  }
  for (r = 0; r < n; ++r) {
    dist_value_t* cx = dts_component(outs[0], r);
    dist_value_t* cy = dts_component(outs[1], r);
    const int64_t rows = rows_of(actual, per, r);
    const int64_t start = first + (int64_t)r * per;
    const int64_t ex[2] = {rows, 2};
    char device[32];
    snprintf(device, sizeof(device), "/device:CPU:%d", (int)r);
    ddt_expect_tensor(cx, DIST_FLOAT32, 2, ex);
    ddt_expect_tensor(cy, DIST_INT32, 1, &rows);
    assert_string_equal(dts_device(cx), device);
    assert_string_equal(dts_device(cy), device);
    if (rows > 0) {
      assert_memory_equal(ddt_data(cx), d->x[start], (size_t)rows * 2 * sizeof(float));
      assert_memory_equal(ddt_data(cy), &d->y[start], (size_t)rows * sizeof(int32_t));
    }
    dist_value_destroy(cx);
    dist_value_destroy(cy);
  }
}

/* The reference example's two steps over 2 replicas, distributed with `o`: a full batch
 * of 4 + 4, then the last 6 rows split with `last_per` rows per replica; then the end. */
static void expect_example_pass(const example_data* d, dist_strategy_t* s,
                                const dist_dataset_t* ds, const dist_input_options_t* o,
                                int64_t last_per) {
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  DT_OK(dist_strategy_distribute_dataset(s, ds, o, &dist));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(d, outs, 2, 0, 8, 4);
  ddt_destroy_all(outs, 2);
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(d, outs, 2, 8, 6, last_per);
  ddt_destroy_all(outs, 2);
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
}

static void check_example(int32_t n) {
  example_data d;
  dist_strategy_t* s = dts_mirrored(n);
  dist_dataset_t* ds = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  dist_value_t* mean = NULL;
  dist_value_t* sum = NULL;
  const int64_t per = GLOBAL_BATCH / n;
  int32_t count = 0;
  double expected_mean[2] = {0, 0}, expected_sum[2] = {0, 0};
  float got[2];
  int i;
  example_init(&d);
  ds = example_dataset(&d, N_ROWS, GLOBAL_BATCH);
  DT_OK(dist_strategy_distribute_dataset(s, ds, NULL, &dist));
  assert_non_null(dist);
  DT_OK(dist_distributed_dataset_num_components(dist, &count));
  assert_int_equal(count, 2);
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));

  /* Step 0: a full batch, per rows each. */
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(&d, outs, n, 0, GLOBAL_BATCH, per);
  ddt_destroy_all(outs, 2);
  /* Step 1: the last 6 rows: 4 + 2 over 2 replicas, 2 + 2 + 2 + 0 over 4. */
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(&d, outs, n, GLOBAL_BATCH, N_ROWS - GLOBAL_BATCH, per);
  if (n == 2) {
    dist_value_t* c1 = dts_component(outs[0], 1);
    assert_int_equal(ddt_dim0(c1), 2);
    dist_value_destroy(c1);
  } else {
    dist_value_t* c3 = dts_component(outs[0], 3);
    assert_int_equal(ddt_dim0(c3), 0); /* the empty batch */
    dist_value_destroy(c3);
  }

  /* reduce(MEAN, axis=0) of the last step divides by the 6 rows, not by 8 or per-replica
   * means: computed here in double over rows 8 ... 13. */
  for (i = GLOBAL_BATCH; i < N_ROWS; ++i) {
    expected_sum[0] += d.x[i][0];
    expected_sum[1] += d.x[i][1];
  }
  expected_mean[0] = expected_sum[0] / 6.0;
  expected_mean[1] = expected_sum[1] / 6.0;
  DT_OK(dist_strategy_reduce_axis(s, DIST_REDUCE_MEAN, outs[0], 0, &mean));
  dts_read_f32(mean, got, 2);
  assert_float_equal(got[0], expected_mean[0], 1e-5);
  assert_float_equal(got[1], expected_mean[1], 1e-4);
  assert_float_equal(got[0], 10.5, 1e-6); /* (8 + ... + 13) / 6 */
  DT_OK(dist_strategy_reduce_axis(s, DIST_REDUCE_SUM, outs[0], 0, &sum));
  dts_read_f32(sum, got, 2);
  assert_float_equal(got[0], expected_sum[0], 1e-4);
  assert_float_equal(got[1], expected_sum[1], 1e-3);
  dist_value_destroy(sum);
  dist_value_destroy(mean);
  ddt_destroy_all(outs, 2);

  /* The end, on every replica in the same step. */
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_dataset_destroy(ds);
  dist_strategy_destroy(s);
}

static void test_reference_example_2_replicas(void** state) {
  (void)state;
  check_example(2);
}

static void test_reference_example_4_replicas(void** state) {
  (void)state;
  check_example(4);
}

/* Every step split over n replicas, for several dataset lengths and batch sizes; the end
 * comes on all replicas in the same step, and the optional form ends with has_value 0. */
static void check_split(int32_t n, int64_t rows, int64_t batch, int drop) {
  example_data d;
  dist_strategy_t* s = dts_mirrored(n);
  dist_dataset_t* ds = NULL;
  dist_dataset_t* b = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  int64_t first = 0, steps = 0, expected_steps;
  int32_t has_value = 0;
  example_init(&d);
  assert_true(rows <= N_ROWS);
  {
    const int64_t dx[2] = {rows, 2};
    const int64_t dy[1] = {rows};
    dist_value_t* parts[2];
    parts[0] = dts_tensor(DIST_FLOAT32, dx, 2, d.x, NULL);
    parts[1] = dts_tensor(DIST_INT32, dy, 1, d.y, NULL);
    DT_OK(dist_dataset_from_tensor_slices((const dist_value_t* const*)parts, 2, &ds));
    ddt_destroy_all(parts, 2);
  }
  DT_OK(dist_dataset_batch(ds, batch, drop, &b));
  DT_OK(dist_strategy_distribute_dataset(s, b, NULL, &dist));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  expected_steps = drop ? rows / batch : (rows + batch - 1) / batch;
  for (;;) {
    DT_OK(dist_iterator_get_next_as_optional(it, outs, 2, &has_value));
    if (!has_value) break;
    {
      const int64_t actual = rows - first < batch ? rows - first : batch;
      expect_example_step(&d, outs, n, first, actual, batch / n);
      first += actual;
    }
    ddt_destroy_all(outs, 2);
    ++steps;
    assert_true(steps <= expected_steps);
  }
  assert_null(outs[0]);
  assert_null(outs[1]);
  assert_int_equal(steps, expected_steps);
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_dataset_destroy(b);
  dist_dataset_destroy(ds);
  dist_strategy_destroy(s);
}

static void test_split_cases(void** state) {
  (void)state;
  check_split(2, 14, 8, 1);  /* the remainder dropped: one step */
  check_split(2, 12, 4, 0);  /* no remainder */
  check_split(4, 9, 8, 0);   /* last batch of 1: 1, 0, 0, 0 */
  check_split(4, 13, 4, 0);  /* last batch of 1 with per-replica batch 1 */
  check_split(4, 14, 12, 0); /* last batch of 2: 2, 0, 0, 0 with per 3 */
  check_split(2, 3, 8, 0);   /* one partial batch: 3 + 0 */
  check_split(2, 0, 8, 0);   /* nothing at all */
}

/* The global batch size is that of the batch, even when transformations follow it
 * (batch(8) -> map / take / prefetch / repeat): the partial last batch still fills the
 * replicas in order with the per-replica batch size (4 + 2, and 2 + 2 + 2 + 0). */
static dist_status_t copy_fn(const dist_value_t* const* inputs, int32_t num_inputs,
                             dist_value_t** outputs, int32_t num_outputs, void* user_data) {
  int32_t i;
  dist_status_t status;
  (void)user_data;
  if (num_inputs != num_outputs) return DIST_INTERNAL;
  for (i = 0; i < num_inputs; ++i) {
    status = dist_tensor_copy_to_device(inputs[i], "CPU:0", &outputs[i]);
    if (status != DIST_OK) return status;
  }
  return DIST_OK;
}

static void check_after_batch(int32_t n, int which) {
  example_data d;
  dist_strategy_t* s = dts_mirrored(n);
  dist_dataset_t* batched = NULL;
  dist_dataset_t* after = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  example_init(&d);
  batched = example_dataset(&d, N_ROWS, GLOBAL_BATCH);
  switch (which) {
    case 0: DT_OK(dist_dataset_map(batched, copy_fn, NULL, NULL, 2, 1, &after)); break;
    case 1: DT_OK(dist_dataset_take(batched, -1, &after)); break;
    case 2: DT_OK(dist_dataset_prefetch(batched, 2, &after)); break;
    default: DT_OK(dist_dataset_repeat(batched, 1, &after)); break;
  }
  DT_OK(dist_strategy_distribute_dataset(s, after, NULL, &dist));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(&d, outs, n, 0, GLOBAL_BATCH, GLOBAL_BATCH / n);
  ddt_destroy_all(outs, 2);
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(&d, outs, n, GLOBAL_BATCH, N_ROWS - GLOBAL_BATCH, GLOBAL_BATCH / n);
  ddt_destroy_all(outs, 2);
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_dataset_destroy(after);
  dist_dataset_destroy(batched);
  dist_strategy_destroy(s);
}

/* One partial batch of 3 rows (global batch 8) behind a map: 3 + 0 over 2 replicas, as
 * with the batch alone (check_split(2, 3, 8, 0)); the per-replica batch size comes from
 * the batch transformation, not from the first (partial) batch seen. */
static void check_single_partial_after_map(int32_t n) {
  example_data d;
  dist_strategy_t* s = dts_mirrored(n);
  dist_dataset_t* batched = NULL;
  dist_dataset_t* mapped = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  example_init(&d);
  batched = example_dataset(&d, 3, GLOBAL_BATCH);
  DT_OK(dist_dataset_map(batched, copy_fn, NULL, NULL, 2, 1, &mapped));
  DT_OK(dist_strategy_distribute_dataset(s, mapped, NULL, &dist));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(&d, outs, n, 0, 3, GLOBAL_BATCH / n);
  ddt_destroy_all(outs, 2);
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_dataset_destroy(mapped);
  dist_dataset_destroy(batched);
  dist_strategy_destroy(s);
}

static void test_partial_batch_after_map(void** state) {
  (void)state;
  check_after_batch(2, 0);
  check_after_batch(4, 0);
  check_single_partial_after_map(2);
  check_single_partial_after_map(4);
}

static void test_partial_batch_after_take_prefetch_repeat(void** state) {
  int which;
  (void)state;
  for (which = 1; which <= 3; ++which) {
    check_after_batch(2, which);
    check_after_batch(4, which);
  }
}

/* ---- run over the PerReplica values ---- */

typedef struct {
  dts_errors errors;
  const example_data* d;
  int64_t first, actual, per;
} run_check;

/* Each replica checks it received its own slice and returns the sum of its labels. */
static dist_status_t slice_fn(dist_context_t* context, const dist_value_t* const* args,
                              int32_t num_args, dist_value_t** results, int32_t num_results,
                              void* user_data) {
  run_check* rc = (run_check*)user_data;
  int32_t r = -1;
  int64_t dims[2] = {-1, -1}, rows, start, i;
  int32_t rank = 0;
  void* data = NULL;
  float sum = 0;
  RCALL(&rc->errors, 0, dist_context_replica_id(context, &r));
  RCHECK(&rc->errors, r, num_args == 2 && num_results == 1, "args %d results %d", num_args,
         num_results);
  rows = rows_of(rc->actual, rc->per, r);
  start = rc->first + (int64_t)r * rc->per;
  RCALL(&rc->errors, r, dist_tensor_rank(args[0], &rank));
  RCHECK(&rc->errors, r, rank == 2, "rank %d", rank);
  RCALL(&rc->errors, r, dist_tensor_shape(args[0], dims, 2));
  RCHECK(&rc->errors, r, dims[0] == rows && dims[1] == 2, "x is [%lld, %lld], expected [%lld, 2]",
         (long long)dims[0], (long long)dims[1], (long long)rows);
  RCALL(&rc->errors, r, dist_tensor_shape(args[1], dims, 1));
  RCHECK(&rc->errors, r, dims[0] == rows, "y has %lld rows, expected %lld", (long long)dims[0],
         (long long)rows);
  if (rows > 0) {
    RCALL(&rc->errors, r, dist_tensor_data(args[0], &data));
    RCHECK(&rc->errors, r,
           memcmp(data, rc->d->x[start], (size_t)rows * 2 * sizeof(float)) == 0,
           "x is not rows %lld ...", (long long)start);
    RCALL(&rc->errors, r, dist_tensor_data(args[1], &data));
    for (i = 0; i < rows; ++i) {
      RCHECK(&rc->errors, r, ((const int32_t*)data)[i] == rc->d->y[start + i], "y[%lld]",
             (long long)i);
      sum += (float)((const int32_t*)data)[i];
    }
  }
  results[0] = dts_make_f32(&sum, -1, NULL);
  RCHECK(&rc->errors, r, results[0] != NULL, "making the result failed");
  return DIST_OK;
}

static void check_run_over_iterator(int32_t n) {
  example_data d;
  dist_strategy_t* s = dts_mirrored(n);
  dist_dataset_t* ds = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  dist_value_t* result = NULL;
  dist_value_t* total = NULL;
  run_check rc;
  int step;
  example_init(&d);
  ds = example_dataset(&d, N_ROWS, GLOBAL_BATCH);
  DT_OK(dist_strategy_distribute_dataset(s, ds, NULL, &dist));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  for (step = 0; step < 2; ++step) {
    double expected = 0;
    int64_t i;
    memset(&rc, 0, sizeof(rc));
    rc.d = &d;
    rc.first = step * GLOBAL_BATCH;
    rc.actual = step == 0 ? GLOBAL_BATCH : N_ROWS - GLOBAL_BATCH;
    rc.per = GLOBAL_BATCH / n;
    DT_OK(dist_iterator_get_next(it, outs, 2));
    DTS_RUN_OK(&rc.errors, n,
               dist_strategy_run(s, slice_fn, &rc, (const dist_value_t* const*)outs, 2, &result,
                                 1));
    for (i = rc.first; i < rc.first + rc.actual; ++i) expected += d.y[i];
    DT_OK(dist_strategy_reduce(s, DIST_REDUCE_SUM, result, &total));
    assert_float_equal(dts_scalar_f32(total), expected, 1e-3);
    dist_value_destroy(total);
    dist_value_destroy(result);
    ddt_destroy_all(outs, 2);
  }
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_dataset_destroy(ds);
  dist_strategy_destroy(s);
}

static void test_run_over_iterator(void** state) {
  (void)state;
  check_run_over_iterator(2);
  check_run_over_iterator(4);
}

/* ---- Independent iterators, options, misuse ---- */

static void test_two_distributed_iterators(void** state) {
  example_data d;
  dist_strategy_t* s = dts_mirrored(2);
  dist_dataset_t* ds = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* a = NULL;
  dist_iterator_t* b = NULL;
  dist_value_t* outs[2];
  (void)state;
  example_init(&d);
  ds = example_dataset(&d, N_ROWS, GLOBAL_BATCH);
  DT_OK(dist_strategy_distribute_dataset(s, ds, NULL, &dist));
  dist_dataset_destroy(ds); /* the distributed dataset keeps it */
  DT_OK(dist_distributed_dataset_make_iterator(dist, &a));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &b));
  DT_OK(dist_iterator_get_next(a, outs, 2));
  expect_example_step(&d, outs, 2, 0, 8, 4);
  ddt_destroy_all(outs, 2);
  DT_OK(dist_iterator_get_next(a, outs, 2));
  expect_example_step(&d, outs, 2, 8, 6, 4);
  ddt_destroy_all(outs, 2);
  DT_OK(dist_iterator_get_next(b, outs, 2));
  expect_example_step(&d, outs, 2, 0, 8, 4);
  ddt_destroy_all(outs, 2);
  ddt_expect_end(a, 2);
  dist_iterator_destroy(a);
  DT_OK(dist_iterator_get_next(b, outs, 2));
  expect_example_step(&d, outs, 2, 8, 6, 4);
  ddt_destroy_all(outs, 2);
  ddt_expect_end(b, 2);
  dist_iterator_destroy(b);
  /* An iterator destroyed mid-epoch, with prefetching (the default depth 1). */
  DT_OK(dist_distributed_dataset_make_iterator(dist, &a));
  DT_OK(dist_iterator_get_next(a, outs, 2));
  ddt_destroy_all(outs, 2);
  dist_iterator_destroy(a);
  dist_distributed_dataset_destroy(dist);
  dist_strategy_destroy(s);
}

static void test_options(void** state) {
  example_data d;
  dist_strategy_t* s = dts_mirrored(2);
  dist_input_options_t* o = NULL;
  dist_dataset_t* ds = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  const int64_t depths[3] = {0, 1, 5};
  int k;
  (void)state;
  example_init(&d);
  ds = example_dataset(&d, N_ROWS, GLOBAL_BATCH);
  DT_OK(dist_input_options_create(&o));
  assert_non_null(o);
  /* Every accepted value of every setter. */
  DT_OK(dist_input_options_set_replication_mode(o, DIST_INPUT_PER_REPLICA));
  DT_OK(dist_input_options_set_replication_mode(o, DIST_INPUT_PER_WORKER));
  DT_OK(dist_input_options_set_auto_shard_policy(o, DIST_AUTO_SHARD_OFF));
  DT_OK(dist_input_options_set_auto_shard_policy(o, DIST_AUTO_SHARD_FILE));
  DT_OK(dist_input_options_set_auto_shard_policy(o, DIST_AUTO_SHARD_DATA));
  DT_OK(dist_input_options_set_auto_shard_policy(o, DIST_AUTO_SHARD_AUTO));
  DT_OK(dist_input_options_set_fetch_to_device(o, 0));
  DT_OK(dist_input_options_set_per_replica_batches(o, 1));
  DT_OK(dist_input_options_set_per_replica_batches(o, 0));
  /* Prefetch depths (0 disables) and fetch to device (accepted for CPU replicas) change
   * nothing in what the replicas get. */
  for (k = 0; k < 6; ++k) {
    DT_OK(dist_input_options_set_prefetch_depth(o, depths[k % 3]));
    DT_OK(dist_input_options_set_fetch_to_device(o, k >= 3));
    expect_example_pass(&d, s, ds, o, 4);
  }
  /* The options were copied: changing or destroying them later changes nothing. */
  DT_OK(dist_input_options_set_prefetch_depth(o, 2));
  DT_OK(dist_strategy_distribute_dataset(s, ds, o, &dist));
  DT_OK(dist_input_options_set_per_replica_batches(o, 1));
  dist_input_options_destroy(o);
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(&d, outs, 2, 0, 8, 4);
  ddt_destroy_all(outs, 2);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_input_options_destroy(NULL);
  dist_dataset_destroy(ds);
  dist_strategy_destroy(s);
}

/* ---- The split of a partial batch: in order (default) or TF 2.x's even split ---- */

/* Distributes range(10).batch(4) over `s` with `o` and checks the replicas' rows of the
 * last step, [8, 9]: replica r gets expected[r] rows starting at first[r]. */
static void expect_last_of_range(dist_strategy_t* s, const dist_input_options_t* o,
                                 const int64_t* counts, const int64_t* first) {
  dist_dataset_t* range = ddt_range(0, 10, 1);
  dist_dataset_t* batched = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* out = NULL;
  int step;
  int32_t r;
  DT_OK(dist_dataset_batch(range, 4, 0, &batched));
  DT_OK(dist_strategy_distribute_dataset(s, batched, o, &dist));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  for (step = 0; step < 3; ++step) {
    DT_OK(dist_iterator_get_next(it, &out, 1));
    if (step < 2) {
      dist_value_destroy(out);
      continue;
    }
    for (r = 0; r < 2; ++r) {
      dist_value_t* c = dts_component(out, r);
      const int64_t* data = (const int64_t*)ddt_data(c);
      int64_t i;
      assert_int_equal(ddt_dim0(c), counts[r]);
      for (i = 0; i < counts[r]; ++i) assert_int_equal(data[i], first[r] + i);
      dist_value_destroy(c);
    }
    dist_value_destroy(out);
  }
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_dataset_destroy(batched);
  dist_dataset_destroy(range);
}

static void test_partial_batch_split(void** state) {
  dist_strategy_t* strategies[2];
  dist_input_options_t* even = NULL;
  dist_input_options_t* in_order = NULL;
  /* The reference page (reduce with axis): [8, 9] and []. TF 2.x:
   * list(strategy.experimental_distribute_dataset(tf.data.Dataset.range(10).batch(4)))[-1]
   * over 2 replicas gives PerReplica {0: [8], 1: [9]}. */
  const int64_t in_order_counts[2] = {2, 0}, in_order_first[2] = {8, 10};
  const int64_t even_counts[2] = {1, 1}, even_first[2] = {8, 9};
  int k;
  (void)state;
  strategies[0] = dts_mirrored(2);
  strategies[1] = dts_central_storage(2, "CPU:0");
  DT_OK(dist_input_options_create(&even));
  DT_OK(dist_input_options_create(&in_order));
  DT_OK(dist_input_options_set_partial_batch_split(even, DIST_PARTIAL_BATCH_EVEN));
  DT_OK(dist_input_options_set_partial_batch_split(in_order, DIST_PARTIAL_BATCH_IN_ORDER));
  for (k = 0; k < 2; ++k) {
    expect_last_of_range(strategies[k], NULL, in_order_counts, in_order_first);
    expect_last_of_range(strategies[k], in_order, in_order_counts, in_order_first);
    expect_last_of_range(strategies[k], even, even_counts, even_first);
  }
  {
    /* The reference example's last batch of 6 of 8: 4 + 2 in order, 3 + 3 in TF 2.x. */
    example_data d;
    dist_dataset_t* ds = NULL;
    example_init(&d);
    ds = example_dataset(&d, N_ROWS, GLOBAL_BATCH);
    expect_example_pass(&d, strategies[0], ds, even, 3);
    expect_example_pass(&d, strategies[0], ds, in_order, 4);
    dist_dataset_destroy(ds);
  }
  /* Misuse: a bad value names the argument and leaves the options as they were. */
  DT_ERR(dist_input_options_set_partial_batch_split(NULL, DIST_PARTIAL_BATCH_EVEN),
         DIST_INVALID_ARGUMENT, "dist_input_options_set_partial_batch_split", "options");
  DT_ERR(dist_input_options_set_partial_batch_split(even, 2), DIST_INVALID_ARGUMENT,
         "dist_input_options_set_partial_batch_split", "split");
  DT_ERR(dist_input_options_set_partial_batch_split(even, -1), DIST_INVALID_ARGUMENT,
         "dist_input_options_set_partial_batch_split", "split");
  expect_last_of_range(strategies[0], even, even_counts, even_first);
  dist_input_options_destroy(even);
  dist_input_options_destroy(in_order);
  dist_strategy_destroy(strategies[0]);
  dist_strategy_destroy(strategies[1]);
}

static void test_options_misuse(void** state) {
  dist_input_options_t* o = NULL;
  (void)state;
  DT_ERR(dist_input_options_create(NULL), DIST_INVALID_ARGUMENT, "dist_input_options_create",
         "out");
  DT_OK(dist_input_options_create(&o));
  DT_ERR(dist_input_options_set_prefetch_depth(NULL, 1), DIST_INVALID_ARGUMENT,
         "dist_input_options_set_prefetch_depth", "options");
  DT_ERR(dist_input_options_set_prefetch_depth(o, -1), DIST_INVALID_ARGUMENT,
         "dist_input_options_set_prefetch_depth", "depth");
  DT_ERR(dist_input_options_set_replication_mode(NULL, DIST_INPUT_PER_WORKER),
         DIST_INVALID_ARGUMENT, "dist_input_options_set_replication_mode", "options");
  DT_ERR(dist_input_options_set_replication_mode(o, 0), DIST_INVALID_ARGUMENT,
         "dist_input_options_set_replication_mode", "mode");
  DT_ERR(dist_input_options_set_replication_mode(o, 3), DIST_INVALID_ARGUMENT,
         "dist_input_options_set_replication_mode", "mode");
  DT_ERR(dist_input_options_set_auto_shard_policy(NULL, DIST_AUTO_SHARD_OFF),
         DIST_INVALID_ARGUMENT, "dist_input_options_set_auto_shard_policy", "options");
  DT_ERR(dist_input_options_set_auto_shard_policy(o, -1), DIST_INVALID_ARGUMENT,
         "dist_input_options_set_auto_shard_policy", "policy");
  DT_ERR(dist_input_options_set_auto_shard_policy(o, 4), DIST_INVALID_ARGUMENT,
         "dist_input_options_set_auto_shard_policy", "policy");
  DT_ERR(dist_input_options_set_fetch_to_device(NULL, 1), DIST_INVALID_ARGUMENT,
         "dist_input_options_set_fetch_to_device", "options");
  DT_ERR(dist_input_options_set_per_replica_batches(NULL, 1), DIST_INVALID_ARGUMENT,
         "dist_input_options_set_per_replica_batches", "options");
  dist_input_options_destroy(o);
}

static void test_distribute_dataset_misuse(void** state) {
  example_data d;
  dist_strategy_t* s = dts_mirrored(2);
  dist_dataset_t* ds = NULL;
  dist_dataset_t* r = NULL;
  dist_distributed_dataset_t* dist = (dist_distributed_dataset_t*)DT_SENTINEL_PTR;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[4]; /* room for the largest (wrong) count passed below */
  (void)state;
  example_init(&d);
  ds = example_dataset(&d, N_ROWS, GLOBAL_BATCH);
  DT_ERR(dist_strategy_distribute_dataset(NULL, ds, NULL, &dist), DIST_INVALID_ARGUMENT,
         "dist_strategy_distribute_dataset", "strategy");
  assert_null(dist);
  DT_ERR(dist_strategy_distribute_dataset(s, NULL, NULL, &dist), DIST_INVALID_ARGUMENT,
         "dist_strategy_distribute_dataset", "dataset");
  DT_ERR(dist_strategy_distribute_dataset(s, ds, NULL, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_distribute_dataset", "out");

  /* Elements that are not batches (int64 scalars): the first get_next fails, and the
   * iterator stays destroyable. */
  r = ddt_range(0, 10, 1);
  DT_OK(dist_strategy_distribute_dataset(s, r, NULL, &dist));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  outs[0] = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_iterator_get_next(it, outs, 1), DIST_INVALID_ARGUMENT, NULL, NULL);
  assert_null(outs[0]);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);

  /* A wrong count on a distributed iterator. */
  DT_OK(dist_strategy_distribute_dataset(s, ds, NULL, &dist));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  DT_ERR(dist_iterator_get_next(it, outs, 1), DIST_INVALID_ARGUMENT, "dist_iterator_get_next",
         "count");
  DT_ERR(dist_iterator_get_next(it, outs, 3), DIST_INVALID_ARGUMENT, "dist_iterator_get_next",
         "count");
  /* ... consumed nothing. */
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(&d, outs, 2, 0, 8, 4);
  ddt_destroy_all(outs, 2);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_dataset_destroy(r);
  dist_dataset_destroy(ds);
  dist_strategy_destroy(s);
}

/* A generator failing at element 10 behind a batch of 4, distributed: the first two steps
 * arrive, the third fails with the generator's message. */
static dist_status_t failing_gen(int64_t index, dist_value_t** components,
                                 int32_t num_components, int32_t* out_end, void* user_data) {
  (void)num_components;
  (void)out_end;
  (void)user_data;
  if (index == 10) {
    dist_value_t* never = NULL;
    return dist_tensor_create(999, NULL, 0, NULL, 0, NULL, &never);
  }
  return dist_tensor_create(DIST_INT64, NULL, 0, &index, sizeof(index), NULL, &components[0]);
}

static void test_distributed_source_error(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_dataset_t* g = NULL;
  dist_dataset_t* b = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* v = NULL;
  int step;
  (void)state;
  DT_OK(dist_dataset_from_generator(failing_gen, NULL, NULL, 1, &g));
  DT_OK(dist_dataset_batch(g, 4, 0, &b));
  DT_OK(dist_strategy_distribute_dataset(s, b, NULL, &dist));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  for (step = 0; step < 2; ++step) {
    int32_t r;
    DT_OK(dist_iterator_get_next(it, &v, 1));
    for (r = 0; r < 2; ++r) {
      dist_value_t* c = dts_component(v, r);
      const int64_t two = 2;
      const int64_t* values;
      ddt_expect_tensor(c, DIST_INT64, 1, &two);
      values = (const int64_t*)ddt_data(c);
      assert_int_equal(values[0], step * 4 + r * 2);
      assert_int_equal(values[1], step * 4 + r * 2 + 1);
      dist_value_destroy(c);
    }
    dist_value_destroy(v);
  }
  v = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_iterator_get_next(it, &v, 1), DIST_INVALID_ARGUMENT, "dist_tensor_create", NULL);
  assert_null(v);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_dataset_destroy(b);
  dist_dataset_destroy(g);
  dist_strategy_destroy(s);
}

/* A distributed dataset is its own type (transforming or distributing it again does not
 * compile); the strategy and the datasets may be released before its iterators. */
static void test_distributed_dataset_lifetime_and_misuse(void** state) {
  example_data d;
  dist_strategy_t* s = dts_mirrored(2);
  dist_dataset_t* ds = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = (dist_iterator_t*)DT_SENTINEL_PTR;
  dist_value_t* outs[2];
  int32_t count = -1;
  (void)state;
  example_init(&d);
  ds = example_dataset(&d, N_ROWS, GLOBAL_BATCH);
  DT_OK(dist_strategy_distribute_dataset(s, ds, NULL, &dist));
  DT_OK(dist_distributed_dataset_num_components(dist, &count));
  assert_int_equal(count, 2);
  DT_ERR(dist_distributed_dataset_num_components(NULL, &count), DIST_INVALID_ARGUMENT,
         "dist_distributed_dataset_num_components", "dataset");
  DT_ERR(dist_distributed_dataset_num_components(dist, NULL), DIST_INVALID_ARGUMENT,
         "dist_distributed_dataset_num_components", "out_count");
  DT_ERR(dist_distributed_dataset_make_iterator(NULL, &it), DIST_INVALID_ARGUMENT,
         "dist_distributed_dataset_make_iterator", "dataset");
  assert_null(it);
  DT_ERR(dist_distributed_dataset_make_iterator(dist, NULL), DIST_INVALID_ARGUMENT,
         "dist_distributed_dataset_make_iterator", "out");
  dist_distributed_dataset_destroy(NULL);

  /* Children keep their parents alive: the strategy and the datasets go first. */
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  dist_distributed_dataset_destroy(dist);
  dist_dataset_destroy(ds);
  dist_strategy_destroy(s);
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(&d, outs, 2, 0, 8, 4);
  ddt_destroy_all(outs, 2);
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(&d, outs, 2, 8, 6, 4);
  ddt_destroy_all(outs, 2);
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
}

/* One replica (OneDeviceStrategy on CPU:1): whole batches, on that device. */
static void test_one_device(void** state) {
  example_data d;
  dist_strategy_t* s = dts_one_device("CPU:1");
  dist_dataset_t* ds = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  int step;
  (void)state;
  example_init(&d);
  ds = example_dataset(&d, N_ROWS, GLOBAL_BATCH);
  DT_OK(dist_strategy_distribute_dataset(s, ds, NULL, &dist));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  for (step = 0; step < 2; ++step) {
    const int64_t rows = step == 0 ? 8 : 6;
    const int64_t ex[2] = {rows, 2};
    dist_value_t* cx;
    dist_value_t* cy;
    DT_OK(dist_iterator_get_next(it, outs, 2));
    assert_int_equal(dts_num_components(outs[0]), 1);
    cx = dts_component(outs[0], 0);
    cy = dts_component(outs[1], 0);
    ddt_expect_tensor(cx, DIST_FLOAT32, 2, ex);
    ddt_expect_tensor(cy, DIST_INT32, 1, &rows);
    assert_string_equal(dts_device(cx), "/device:CPU:1");
    assert_memory_equal(ddt_data(cx), d.x[step * 8], (size_t)rows * 2 * sizeof(float));
    assert_memory_equal(ddt_data(cy), &d.y[step * 8], (size_t)rows * sizeof(int32_t));
    dist_value_destroy(cx);
    dist_value_destroy(cy);
    ddt_destroy_all(outs, 2);
  }
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_dataset_destroy(ds);
  dist_strategy_destroy(s);
}

/* ---- Auto-shard policies on one worker: no-ops ---- */

/* Record bytes -> int64 id (the record holds the id's 8 little-endian bytes). */
static dist_status_t parse_id(const dist_value_t* const* inputs, int32_t num_inputs,
                              dist_value_t** outputs, int32_t num_outputs, void* user_data) {
  void* data = NULL;
  int64_t count = 0, id = 0;
  int k;
  (void)num_inputs;
  (void)num_outputs;
  (void)user_data;
  if (dist_tensor_num_elements(inputs[0], &count) != DIST_OK || count != 8) return DIST_INTERNAL;
  if (dist_tensor_data(inputs[0], &data) != DIST_OK) return DIST_INTERNAL;
  for (k = 7; k >= 0; --k) id = (id << 8) | ((const unsigned char*)data)[k];
  return dist_tensor_create(DIST_INT64, NULL, 0, &id, sizeof(id), NULL, &outputs[0]);
}

/* Flattens the int64 components of every step (replica by replica) into out. */
static int64_t flatten_i64(dist_iterator_t* it, int32_t n, int64_t* out, int64_t capacity,
                           int64_t* out_steps) {
  dist_value_t* v = NULL;
  int64_t total = 0, steps = 0;
  dist_status_t status;
  while ((status = dist_iterator_get_next(it, &v, 1)) == DIST_OK) {
    int32_t r;
    assert_int_equal(dts_num_components(v), n);
    for (r = 0; r < n; ++r) {
      dist_value_t* c = dts_component(v, r);
      const int64_t rows = ddt_dim0(c);
      char device[32];
      snprintf(device, sizeof(device), "/device:CPU:%d", (int)r);
      assert_string_equal(dts_device(c), device);
      assert_true(total + rows <= capacity);
      if (rows > 0) memcpy(out + total, ddt_data(c), (size_t)rows * sizeof(int64_t));
      total += rows;
      dist_value_destroy(c);
    }
    dist_value_destroy(v);
    ++steps;
  }
  assert_int_equal(status, DIST_OUT_OF_RANGE);
  ddt_expect_end(it, 1);
  if (out_steps != NULL) *out_steps = steps;
  return total;
}

static void test_auto_shard_single_worker(void** state) {
  ddt_tmpdir* t = ddt_tmp();
  char p[2][128];
  const char* paths[2];
  const dist_auto_shard_policy_t policies[4] = {DIST_AUTO_SHARD_OFF, DIST_AUTO_SHARD_AUTO,
                                                DIST_AUTO_SHARD_FILE, DIST_AUTO_SHARD_DATA};
  dist_strategy_t* s = dts_mirrored(2);
  dist_dataset_t* files = NULL;
  dist_dataset_t* ids = NULL;
  dist_dataset_t* fb = NULL;
  dist_dataset_t* rb = NULL;
  dist_dataset_t* r = NULL;
  dist_input_options_t* o = NULL;
  int64_t got[64], expected[64];
  int f, k, i;
  (void)state;
  /* Two files of 9 and 6 records: ids 0 ... 14. */
  for (f = 0; f < 2; ++f) {
    ddt_bytes b = {NULL, 0, 0};
    char name[32];
    const int first = f == 0 ? 0 : 9, count = f == 0 ? 9 : 6;
    for (i = first; i < first + count; ++i) {
      unsigned char rec[8];
      ddt_put_u64(rec, (uint64_t)i);
      ddt_tfrecord_append(&b, rec, 8);
    }
    snprintf(name, sizeof(name), "ids%d.tfrecord", f);
    paths[f] = ddt_write_file(t, name, b.data, b.size, p[f]);
    ddt_bytes_free(&b);
  }
  for (i = 0; i < 15; ++i) expected[i] = i;
  DT_OK(dist_dataset_from_tfrecord_files(paths, 2, &files));
  DT_OK(dist_dataset_map(files, parse_id, NULL, NULL, 1, 2, &ids));
  DT_OK(dist_dataset_batch(ids, 4, 0, &fb));
  r = ddt_range(0, 15, 1);
  DT_OK(dist_dataset_batch(r, 4, 0, &rb));
  DT_OK(dist_input_options_create(&o));
  for (k = 0; k < 4; ++k) {
    dist_distributed_dataset_t* dist = NULL;
    dist_iterator_t* it = NULL;
    int64_t n, steps = 0;
    DT_OK(dist_input_options_set_auto_shard_policy(o, policies[k]));
    DT_OK(dist_strategy_distribute_dataset(s, fb, o, &dist));
    DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
    n = flatten_i64(it, 2, got, 64, &steps);
    ddt_expect_i64s(got, n, expected, 15);
    assert_int_equal(steps, 4);
    dist_iterator_destroy(it);
    dist_distributed_dataset_destroy(dist);
    if (policies[k] != DIST_AUTO_SHARD_FILE) { /* FILE needs a source that reads files */
      DT_OK(dist_strategy_distribute_dataset(s, rb, o, &dist));
      DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
      n = flatten_i64(it, 2, got, 64, &steps);
      ddt_expect_i64s(got, n, expected, 15);
      dist_iterator_destroy(it);
      dist_distributed_dataset_destroy(dist);
    }
  }
  dist_input_options_destroy(o);
  dist_dataset_destroy(rb);
  dist_dataset_destroy(r);
  dist_dataset_destroy(fb);
  dist_dataset_destroy(ids);
  dist_dataset_destroy(files);
  dist_strategy_destroy(s);
  ddt_tmpdir_remove(t);
}

/* ---- distribute_datasets_from_function ---- */

#define MAX_CALLS 8

typedef struct {
  ddt_free_counter freed; /* first: ddt_count_free gets the struct */
  int calls;
  int32_t num_pipelines[MAX_CALLS];
  int32_t pipeline_id[MAX_CALLS];
  int32_t num_replicas[MAX_CALLS];
  int64_t per_replica_batch[MAX_CALLS];
  dist_status_t indivisible_status[MAX_CALLS];
  int indivisible_message_ok[MAX_CALLS];
  dist_status_t misuse_status[MAX_CALLS][4];
  int misuse_message_ok[MAX_CALLS][4];
  int64_t global_batch;
  int64_t rows;         /* rows of each pipeline's dataset */
  int64_t stride;       /* pipeline i holds stride * i + 0 ... rows - 1 */
  int fail;             /* 1: fail through a failing dist_ call */
} fn_state;

static int message_names(const char* fn, const char* arg) {
  const char* message = dist_last_error_message();
  return strstr(message, fn) != NULL && strstr(message, arg) != NULL;
}

static dist_status_t dataset_fn(const dist_input_context_t* context, dist_dataset_t** out,
                                void* user_data) {
  fn_state* st = (fn_state*)user_data;
  const int c = st->calls < MAX_CALLS ? st->calls : MAX_CALLS - 1;
  dist_dataset_t* r = NULL;
  dist_status_t status;
  int64_t ignored = 0;
  int32_t ignored32 = 0;
  st->calls += 1;
  if (st->fail) {
    dist_value_t* never = NULL;
    return dist_tensor_create(999, NULL, 0, NULL, 0, NULL, &never);
  }
  if (dist_input_context_num_input_pipelines(context, &st->num_pipelines[c]) != DIST_OK ||
      dist_input_context_input_pipeline_id(context, &st->pipeline_id[c]) != DIST_OK ||
      dist_input_context_num_replicas_in_sync(context, &st->num_replicas[c]) != DIST_OK ||
      dist_input_context_per_replica_batch_size(context, st->global_batch,
                                                &st->per_replica_batch[c]) != DIST_OK) {
    return DIST_INTERNAL;
  }
  /* A global batch that does not divide: 7 over 2 or 4 replicas. */
  st->indivisible_status[c] = dist_input_context_per_replica_batch_size(context, 7, &ignored);
  st->indivisible_message_ok[c] =
      strstr(dist_last_error_message(), "dist_input_context_per_replica_batch_size") != NULL;
  /* Misuse of the accessors (checked by the test afterwards): the status, and whether
   * the message names the function and the argument. */
  st->misuse_status[c][0] = dist_input_context_num_input_pipelines(NULL, &ignored32);
  st->misuse_message_ok[c][0] = message_names("dist_input_context_num_input_pipelines", "context");
  st->misuse_status[c][1] = dist_input_context_input_pipeline_id(context, NULL);
  st->misuse_message_ok[c][1] = message_names("dist_input_context_input_pipeline_id", "out_id");
  st->misuse_status[c][2] = dist_input_context_num_replicas_in_sync(NULL, &ignored32);
  st->misuse_message_ok[c][2] = message_names("dist_input_context_num_replicas_in_sync", "context");
  st->misuse_status[c][3] = dist_input_context_per_replica_batch_size(context, 8, NULL);
  st->misuse_message_ok[c][3] =
      message_names("dist_input_context_per_replica_batch_size", "out_size");
  status = dist_dataset_range(st->stride * st->pipeline_id[c],
                              st->stride * st->pipeline_id[c] + st->rows, 1, &r);
  if (status != DIST_OK) return status;
  status = dist_dataset_batch(r, st->per_replica_batch[c], 0, out);
  dist_dataset_destroy(r);
  return status;
}

static void fn_state_init(fn_state* st, int64_t global_batch, int64_t rows, int64_t stride) {
  memset(st, 0, sizeof(*st));
  st->global_batch = global_batch;
  st->rows = rows;
  st->stride = stride;
}

static void expect_context_misuse(const fn_state* st, int c) {
  int k;
  assert_int_equal(st->indivisible_status[c], DIST_INVALID_ARGUMENT);
  assert_true(st->indivisible_message_ok[c]);
  for (k = 0; k < 4; ++k) {
    assert_int_equal(st->misuse_status[c][k], DIST_INVALID_ARGUMENT);
    if (!st->misuse_message_ok[c][k]) fail_msg("misuse %d: the message names the wrong call", k);
  }
}

static void check_per_worker(int32_t n, int use_input_fn_iterator) {
  dist_strategy_t* s = dts_mirrored(n);
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  fn_state st;
  int64_t got[64], expected[64], i, total, steps = 0;
  fn_state_init(&st, 8, 18, 0);
  if (use_input_fn_iterator) {
    DT_OK(dist_strategy_make_input_fn_iterator(s, dataset_fn, &st, &it));
  } else {
    DT_OK(dist_strategy_distribute_datasets_from_function(s, dataset_fn, &st, ddt_count_free,
                                                          NULL, &dist));
    assert_int_equal(st.freed.calls, 1); /* released before the call returned */
    DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  }
  /* Once per worker: one input pipeline, id 0, n replicas, 8 / n per replica. */
  assert_int_equal(st.calls, 1);
  assert_int_equal(st.num_pipelines[0], 1);
  assert_int_equal(st.pipeline_id[0], 0);
  assert_int_equal(st.num_replicas[0], n);
  assert_int_equal(st.per_replica_batch[0], 8 / n);
  expect_context_misuse(&st, 0);
  /* The dataset is batched by 8 / n; the replicas take consecutive batches (TF: "each
   * replica on that worker will dequeue one batch of inputs from the local Dataset"), so
   * flattened step by step, replica by replica, the 18 elements come in order, 8 per
   * step: 3 steps, the last one 2 elements on replica 0 and empty batches elsewhere. */
  total = flatten_i64(it, n, got, 64, &steps);
  for (i = 0; i < 18; ++i) expected[i] = i;
  ddt_expect_i64s(got, total, expected, 18);
  assert_int_equal(steps, 3);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_strategy_destroy(s);
}

static void test_from_function_per_worker(void** state) {
  (void)state;
  check_per_worker(2, 0);
  check_per_worker(4, 0);
}

static void test_from_function_per_replica(void** state) {
  const int32_t n = 4;
  dist_strategy_t* s = dts_mirrored(n);
  dist_input_options_t* o = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* v = NULL;
  fn_state st;
  int seen_id[MAX_CALLS];
  int c, step;
  int32_t r;
  (void)state;
  fn_state_init(&st, 8, 6, 100); /* pipeline i: i*100 ... i*100+5, batched by 2 */
  DT_OK(dist_input_options_create(&o));
  DT_OK(dist_input_options_set_replication_mode(o, DIST_INPUT_PER_REPLICA));
  DT_OK(dist_strategy_distribute_datasets_from_function(s, dataset_fn, &st, ddt_count_free, o,
                                                        &dist));
  dist_input_options_destroy(o);
  assert_int_equal(st.freed.calls, 1);
  /* Once per replica: n pipelines with ids 0 ... n-1, each once. */
  assert_int_equal(st.calls, n);
  memset(seen_id, 0, sizeof(seen_id));
  for (c = 0; c < n; ++c) {
    assert_int_equal(st.num_pipelines[c], n);
    assert_int_equal(st.num_replicas[c], n);
    assert_int_equal(st.per_replica_batch[c], 2);
    assert_true(st.pipeline_id[c] >= 0 && st.pipeline_id[c] < n);
    seen_id[st.pipeline_id[c]] += 1;
    expect_context_misuse(&st, c);
  }
  for (c = 0; c < n; ++c) assert_int_equal(seen_id[c], 1);
  /* Replica r iterates the dataset of pipeline r: step k gives r*100 + 2k, r*100 + 2k + 1. */
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  for (step = 0; step < 3; ++step) {
    DT_OK(dist_iterator_get_next(it, &v, 1));
    assert_int_equal(dts_kind(v), DIST_VALUE_PER_REPLICA);
    assert_int_equal(dts_num_components(v), n);
    for (r = 0; r < n; ++r) {
      dist_value_t* comp = dts_component(v, r);
      const int64_t two = 2;
      const int64_t* values;
      char device[32];
      ddt_expect_tensor(comp, DIST_INT64, 1, &two);
      values = (const int64_t*)ddt_data(comp);
      assert_int_equal(values[0], r * 100 + 2 * step);
      assert_int_equal(values[1], r * 100 + 2 * step + 1);
      snprintf(device, sizeof(device), "/device:CPU:%d", (int)r);
      assert_string_equal(dts_device(comp), device);
      dist_value_destroy(comp);
    }
    dist_value_destroy(v);
  }
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_strategy_destroy(s);
}

static void test_from_function_misuse(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_distributed_dataset_t* dist = (dist_distributed_dataset_t*)DT_SENTINEL_PTR;
  dist_iterator_t* it = (dist_iterator_t*)DT_SENTINEL_PTR;
  fn_state st;
  dist_status_t status;
  (void)state;
  fn_state_init(&st, 8, 16, 0);
  DT_ERR(dist_strategy_distribute_datasets_from_function(NULL, dataset_fn, &st, NULL, NULL,
                                                         &dist),
         DIST_INVALID_ARGUMENT, "dist_strategy_distribute_datasets_from_function", "strategy");
  assert_null(dist);
  DT_ERR(dist_strategy_distribute_datasets_from_function(s, NULL, &st, NULL, NULL, &dist),
         DIST_INVALID_ARGUMENT, "dist_strategy_distribute_datasets_from_function", "fn");
  DT_ERR(dist_strategy_distribute_datasets_from_function(s, dataset_fn, &st, NULL, NULL, NULL),
         DIST_INVALID_ARGUMENT, "dist_strategy_distribute_datasets_from_function", "out");
  assert_int_equal(st.calls, 0);

  /* The function fails: its status and message reach the caller; free_fn runs at most
   * once. */
  st.fail = 1;
  dist = (dist_distributed_dataset_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_distribute_datasets_from_function(s, dataset_fn, &st, ddt_count_free,
                                                         NULL, &dist),
         DIST_INVALID_ARGUMENT, "dist_tensor_create", NULL);
  assert_null(dist);
  assert_true(st.freed.calls <= 1);
  /* A global batch the replicas do not divide, used by the function: it fails there. */
  fn_state_init(&st, 7, 16, 0);
  status = dist_strategy_distribute_datasets_from_function(s, dataset_fn, &st, NULL, NULL, &dist);
  assert_int_not_equal(status, DIST_OK);
  assert_null(dist);

  DT_ERR(dist_strategy_make_input_fn_iterator(NULL, dataset_fn, &st, &it), DIST_INVALID_ARGUMENT,
         "dist_strategy_make_input_fn_iterator", "strategy");
  assert_null(it);
  DT_ERR(dist_strategy_make_input_fn_iterator(s, NULL, &st, &it), DIST_INVALID_ARGUMENT,
         "dist_strategy_make_input_fn_iterator", "fn");
  DT_ERR(dist_strategy_make_input_fn_iterator(s, dataset_fn, &st, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_make_input_fn_iterator", "out");
  dist_strategy_destroy(s);
}

/* ---- The contrib entry points ---- */

static void test_make_dataset_iterator(void** state) {
  example_data d;
  dist_strategy_t* s = dts_mirrored(2);
  dist_dataset_t* ds = NULL;
  dist_iterator_t* it = (dist_iterator_t*)DT_SENTINEL_PTR;
  dist_value_t* outs[2];
  (void)state;
  example_init(&d);
  ds = example_dataset(&d, N_ROWS, GLOBAL_BATCH);
  DT_ERR(dist_strategy_make_dataset_iterator(NULL, ds, &it), DIST_INVALID_ARGUMENT,
         "dist_strategy_make_dataset_iterator", "strategy");
  assert_null(it);
  DT_ERR(dist_strategy_make_dataset_iterator(s, NULL, &it), DIST_INVALID_ARGUMENT,
         "dist_strategy_make_dataset_iterator", "dataset");
  DT_ERR(dist_strategy_make_dataset_iterator(s, ds, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_make_dataset_iterator", "out");
  DT_OK(dist_strategy_make_dataset_iterator(s, ds, &it));
  dist_dataset_destroy(ds); /* the iterator keeps what it needs */
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(&d, outs, 2, 0, 8, 4);
  ddt_destroy_all(outs, 2);
  DT_OK(dist_iterator_get_next(it, outs, 2));
  expect_example_step(&d, outs, 2, 8, 6, 4);
  ddt_destroy_all(outs, 2);
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
  dist_strategy_destroy(s);
}

static void test_make_input_fn_iterator(void** state) {
  (void)state;
  check_per_worker(2, 1);
  check_per_worker(4, 1);
}

/* The contrib semantics: the dataset is batched by the per-replica batch size and the
 * replicas take consecutive batches; a replica left without a batch gets an empty one. */
static void test_per_replica_batches(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_input_options_t* o = NULL;
  dist_dataset_t* r = ddt_range(0, 15, 1);
  dist_dataset_t* b = NULL;
  dist_distributed_dataset_t* dist = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* v = NULL;
  int step;
  (void)state;
  DT_OK(dist_dataset_batch(r, 3, 0, &b)); /* 5 batches of 3 */
  DT_OK(dist_input_options_create(&o));
  DT_OK(dist_input_options_set_per_replica_batches(o, 1));
  DT_OK(dist_strategy_distribute_dataset(s, b, o, &dist));
  DT_OK(dist_distributed_dataset_make_iterator(dist, &it));
  for (step = 0; step < 3; ++step) {
    int32_t rep;
    DT_OK(dist_iterator_get_next(it, &v, 1));
    assert_int_equal(dts_num_components(v), 2);
    for (rep = 0; rep < 2; ++rep) {
      dist_value_t* c = dts_component(v, rep);
      const int64_t batch_index = step * 2 + rep;
      const int64_t rows = batch_index < 5 ? 3 : 0;
      const int64_t* values;
      int64_t k;
      ddt_expect_tensor(c, DIST_INT64, 1, &rows);
      values = (const int64_t*)ddt_data(c);
      for (k = 0; k < rows; ++k) assert_int_equal(values[k], batch_index * 3 + k);
      dist_value_destroy(c);
    }
    dist_value_destroy(v);
  }
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(dist);
  dist_input_options_destroy(o);
  dist_dataset_destroy(b);
  dist_dataset_destroy(r);
  dist_strategy_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reference_example_2_replicas),
      cmocka_unit_test(test_reference_example_4_replicas),
      cmocka_unit_test(test_split_cases),
      cmocka_unit_test(test_partial_batch_after_map),
      cmocka_unit_test(test_partial_batch_after_take_prefetch_repeat),
      cmocka_unit_test(test_run_over_iterator),
      cmocka_unit_test(test_two_distributed_iterators),
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_options_misuse),
      cmocka_unit_test(test_partial_batch_split),
      cmocka_unit_test(test_distribute_dataset_misuse),
      cmocka_unit_test(test_distributed_source_error),
      cmocka_unit_test(test_distributed_dataset_lifetime_and_misuse),
      cmocka_unit_test(test_one_device),
      cmocka_unit_test_teardown(test_auto_shard_single_worker, ddt_tmp_teardown),
      cmocka_unit_test(test_from_function_per_worker),
      cmocka_unit_test(test_from_function_per_replica),
      cmocka_unit_test(test_from_function_misuse),
      cmocka_unit_test(test_make_dataset_iterator),
      cmocka_unit_test(test_make_input_fn_iterator),
      cmocka_unit_test(test_per_replica_batches),
  };
  return cmocka_run_group_tests_name("distributed_input", tests, setup, NULL);
}
