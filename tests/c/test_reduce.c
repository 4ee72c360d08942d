/* Tests for the cross-replica calls of strategy.h: reduce, reduce_axis, gather, reduce_to,
 * reduce_to_device, batch_reduce_to, update, colocate_vars_with and
 * variable_created_in_scope. Expectations are computed in the test from the inputs. */
#include <math.h>

#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

/* ---- reduce ---- */

static void expect_reduce(dist_strategy_t* s, dist_reduce_op_t op, const dist_value_t* value,
                          const float* expected, int64_t n) {
  dist_value_t* out = NULL;
  const char* first_worker = NULL;
  DT_OK(dist_strategy_reduce(s, op, value, &out));
  assert_non_null(out);
  assert_int_equal(dts_kind(out), DIST_VALUE_TENSOR);
  dts_expect_f32(out, expected, n);
  /* The result is on the first worker device. */
  DT_OK(dist_strategy_worker_device(s, 0, &first_worker));
  assert_string_equal(dts_device(out), first_worker);
  dist_value_destroy(out);
}

static void test_reduce_per_replica(void** state) {
  /* Replica 0: {1, 2, -3}, replica 1: {4, -5, 6}, replica 2: {0.5, 2, 2}. */
  const float inputs[9] = {1.0f, 2.0f, -3.0f, 4.0f, -5.0f, 6.0f, 0.5f, 2.0f, 2.0f};
  const int32_t counts[2] = {2, 3};
  int c;
  (void)state;
  for (c = 0; c < 2; ++c) {
    const int32_t n = counts[c];
    dist_strategy_t* s = dts_mirrored(n);
    dist_value_t* pr = dts_per_replica_f32(inputs, n, 3);
    float sum[3], mean[3], mn[3], mx[3], prod[3];
    int i;
    int32_t r;
    for (i = 0; i < 3; ++i) {
      double a = 0, p = 1, lo = 1e30, hi = -1e30;
      for (r = 0; r < n; ++r) {
        const double v = inputs[r * 3 + i];
        a += v;
        p *= v;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      sum[i] = (float)a;
      mean[i] = (float)(a / n);
      mn[i] = (float)lo;
      mx[i] = (float)hi;
      prod[i] = (float)p;
    }
    expect_reduce(s, DIST_REDUCE_SUM, pr, sum, 3);
    expect_reduce(s, DIST_REDUCE_MEAN, pr, mean, 3);
    expect_reduce(s, DIST_REDUCE_MIN, pr, mn, 3);
    expect_reduce(s, DIST_REDUCE_MAX, pr, mx, 3);
    expect_reduce(s, DIST_REDUCE_PRODUCT, pr, prod, 3);
    /* Inside the scope as well. */
    DT_OK(dist_strategy_scope_enter(s));
    expect_reduce(s, DIST_REDUCE_SUM, pr, sum, 3);
    DT_OK(dist_strategy_scope_exit(s));
    dist_value_destroy(pr);
    dist_strategy_destroy(s);
  }
}

static void test_reduce_mirrored_and_tensors(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float v[2] = {3.5f, -1.0f};
  dist_value_t* parts[2];
  dist_value_t* mirrored = NULL;
  dist_value_t* tensor = dts_f32(v, 2, "CPU:1");
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  parts[0] = dts_f32(v, 2, "CPU:0");
  parts[1] = dts_f32(v, 2, "CPU:1");
  DT_OK(dist_value_create_mirrored((const dist_value_t* const*)parts, 2, &mirrored));
  /* A Mirrored value under MEAN reduces to itself. */
  expect_reduce(s, DIST_REDUCE_MEAN, mirrored, v, 2);
  /* A plain tensor under MEAN, MIN or MAX reduces to itself ... */
  expect_reduce(s, DIST_REDUCE_MEAN, tensor, v, 2);
  expect_reduce(s, DIST_REDUCE_MIN, tensor, v, 2);
  expect_reduce(s, DIST_REDUCE_MAX, tensor, v, 2);
  /* ... SUM or PRODUCT of it across several replicas is an error, as in TF. */
  DT_ERR(dist_strategy_reduce(s, DIST_REDUCE_SUM, tensor, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", NULL);
  assert_null(out);
  DT_ERR(dist_strategy_reduce(s, DIST_REDUCE_PRODUCT, tensor, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", NULL);
  /* TF asserts that a mirrored value is not summed (only MEAN returns it). */
  DT_ERR(dist_strategy_reduce(s, DIST_REDUCE_SUM, mirrored, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", NULL);
  dist_value_destroy(parts[0]);
  dist_value_destroy(parts[1]);
  dist_value_destroy(mirrored);
  dist_value_destroy(tensor);
  dist_strategy_destroy(s);
}

static void test_reduce_with_one_replica(void** state) {
  dist_strategy_t* one = dts_one_device("CPU:2");
  dist_strategy_t* def = NULL;
  const float v[3] = {2.0f, -4.0f, 0.25f};
  dist_value_t* tensor = dts_f32(v, 3, "CPU:2");
  const dist_reduce_op_t ops[5] = {DIST_REDUCE_SUM, DIST_REDUCE_MEAN, DIST_REDUCE_MIN,
                                   DIST_REDUCE_MAX, DIST_REDUCE_PRODUCT};
  int i;
  (void)state;
  DT_OK(dist_strategy_get_default(&def));
  for (i = 0; i < 5; ++i) {
    /* Any op returns the value with one replica. */
    expect_reduce(one, ops[i], tensor, v, 3);
    expect_reduce(def, ops[i], tensor, v, 3);
  }
  {
    /* A one-component PerReplica value, too. */
    dist_value_t* pr = NULL;
    const dist_value_t* parts[1];
    parts[0] = tensor;
    DT_OK(dist_value_create_per_replica(parts, 1, &pr));
    expect_reduce(one, DIST_REDUCE_PRODUCT, pr, v, 3);
    dist_value_destroy(pr);
  }
  dist_value_destroy(tensor);
  dist_strategy_destroy(one);
  dist_strategy_destroy(def);
}

static void test_reduce_variables(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float v[2] = {1.0f, 5.0f};
  dist_value_t* init = dts_f32(v, 2, NULL);
  dist_value_t* mirrored_var = NULL;
  dist_value_t* out = NULL;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL,
                             &mirrored_var));
  DT_OK(dist_strategy_scope_exit(s));
  /* A MirroredVariable is the same on every replica: MEAN gives its value. */
  expect_reduce(s, DIST_REDUCE_MEAN, mirrored_var, v, 2);
  DT_ERR(dist_strategy_reduce(s, DIST_REDUCE_SUM, mirrored_var, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", NULL);
  dist_value_destroy(mirrored_var);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

/* A SyncOnRead variable is reduced over its (diverged) copies. */
typedef struct {
  dts_errors errors;
  dist_value_t* var;
} local_write_state;

static dist_status_t write_own_copy(dist_context_t* context, const dist_value_t* const* args,
                                    int32_t num_args, dist_value_t** results, int32_t num_results,
                                    void* user_data) {
  local_write_state* st = (local_write_state*)user_data;
  int32_t r = -1;
  float v[2];
  dist_value_t* t = NULL;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  v[0] = (float)(r + 1);
  v[1] = -2.0f * (float)(r + 1);
  t = dts_make_f32(v, 2, NULL);
  RCHECK(&st->errors, r, t != NULL, "make");
  RCALL(&st->errors, r, dist_variable_assign(st->var, t));
  dist_value_destroy(t);
  return DIST_OK;
}

static void test_reduce_sync_on_read_variable(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  const float zeros[2] = {0, 0};
  dist_value_t* init = dts_f32(zeros, 2, NULL);
  local_write_state st;
  const float sum[2] = {6, -12};
  const float mx[2] = {3, -2};
  const float mean[2] = {2, -4};
  (void)state;
  memset(&st, 0, sizeof(st));
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_READ, DIST_AGGREGATION_NONE, NULL, &st.var));
  DT_OK(dist_strategy_scope_exit(s));
  DTS_RUN_OK(&st.errors, 3, dist_strategy_run(s, write_own_copy, &st, NULL, 0, NULL, 0));
  expect_reduce(s, DIST_REDUCE_SUM, st.var, sum, 2);
  expect_reduce(s, DIST_REDUCE_MAX, st.var, mx, 2);
  expect_reduce(s, DIST_REDUCE_MEAN, st.var, mean, 2);
  dist_value_destroy(st.var);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

static void test_reduce_rejects_misuse(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float three[3] = {1.0f, 2.0f, 3.0f};
  dist_value_t* pr3 = dts_per_replica_f32(three, 3, -1);
  dist_value_t* pr2 = dts_per_replica_f32(three, 2, -1);
  dist_value_t* ragged = NULL;
  dist_value_t* parts[2];
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  parts[0] = dts_f32(three, 2, "CPU:0");
  parts[1] = dts_f32(three, 3, "CPU:1");
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 2, &ragged));
  DT_ERR(dist_strategy_reduce(NULL, DIST_REDUCE_SUM, pr2, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", "strategy");
  assert_null(out);
  DT_ERR(dist_strategy_reduce(s, DIST_REDUCE_SUM, NULL, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", "value");
  DT_ERR(dist_strategy_reduce(s, DIST_REDUCE_SUM, pr2, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", "out");
  DT_ERR(dist_strategy_reduce(s, 0, pr2, &out), DIST_INVALID_ARGUMENT, "dist_strategy_reduce",
         "op");
  DT_ERR(dist_strategy_reduce(s, 6, pr2, &out), DIST_INVALID_ARGUMENT, "dist_strategy_reduce",
         "op");
  /* Component count must match the replicas. */
  DT_ERR(dist_strategy_reduce(s, DIST_REDUCE_SUM, pr3, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", "3 components");
  /* Components must agree without an axis. */
  DT_ERR(dist_strategy_reduce(s, DIST_REDUCE_SUM, ragged, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", NULL);
  assert_null(out);
  dist_value_destroy(parts[0]);
  dist_value_destroy(parts[1]);
  dist_value_destroy(ragged);
  dist_value_destroy(pr2);
  dist_value_destroy(pr3);
  dist_strategy_destroy(s);
}

static void test_reduce_bool(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const uint8_t a[4] = {0, 1, 1, 0};
  const uint8_t b[4] = {0, 1, 0, 1};
  const int64_t dims[1] = {4};
  dist_value_t* parts[2];
  dist_value_t* pr = NULL;
  dist_value_t* out = NULL;
  uint8_t* data = NULL;
  (void)state;
  parts[0] = dts_tensor(DIST_BOOL, dims, 1, a, "CPU:0");
  parts[1] = dts_tensor(DIST_BOOL, dims, 1, b, "CPU:1");
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 2, &pr));
  DT_OK(dist_strategy_reduce(s, DIST_REDUCE_MIN, pr, &out));
  DT_OK(dist_tensor_data(out, (void**)&data));
  assert_int_equal(data[0], 0);
  assert_int_equal(data[1], 1);
  assert_int_equal(data[2], 0);
  assert_int_equal(data[3], 0);
  dist_value_destroy(out);
  DT_OK(dist_strategy_reduce(s, DIST_REDUCE_MAX, pr, &out));
  DT_OK(dist_tensor_data(out, (void**)&data));
  assert_int_equal(data[0], 0);
  assert_int_equal(data[1], 1);
  assert_int_equal(data[2], 1);
  assert_int_equal(data[3], 1);
  dist_value_destroy(out);
  out = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_reduce(s, DIST_REDUCE_SUM, pr, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", NULL);
  assert_null(out);
  DT_ERR(dist_strategy_reduce(s, DIST_REDUCE_MEAN, pr, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", NULL);
  DT_ERR(dist_strategy_reduce_axis(s, DIST_REDUCE_SUM, pr, 0, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce_axis", NULL);
  dist_value_destroy(parts[0]);
  dist_value_destroy(parts[1]);
  dist_value_destroy(pr);
  dist_strategy_destroy(s);
}

/* ---- reduce_axis: the reference's global batch ---- */

static void expect_reduce_axis(dist_strategy_t* s, dist_reduce_op_t op, const dist_value_t* value,
                               int32_t axis, const float* expected, int64_t n) {
  dist_value_t* out = NULL;
  DT_OK(dist_strategy_reduce_axis(s, op, value, axis, &out));
  assert_int_equal(dts_kind(out), DIST_VALUE_TENSOR);
  dts_expect_f32(out, expected, n);
  dist_value_destroy(out);
}

static void test_reduce_axis_reference_batches(void** state) {
  /* Global batch 8 over 2 replicas: examples 0..3 on replica 0, 4..7 on replica 1. */
  dist_strategy_t* s = dts_mirrored(2);
  const float full[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  dist_value_t* batch = dts_per_replica_f32(full, 2, 4);
  const float across[4] = {0 + 4, 1 + 5, 2 + 6, 3 + 7};
  const float total = 0 + 1 + 2 + 3 + 4 + 5 + 6 + 7;
  const float mean = total / 8.0f;
  /* Last partial batch of 6 examples, split [0, 1, 2, 3] and [4, 5]. */
  dist_value_t* parts[2];
  dist_value_t* partial = NULL;
  const float partial_total = 0 + 1 + 2 + 3 + 4 + 5;
  const float partial_mean = 2.5f; /* 15 / 6: the correct denominator */
  float mn = 0.0f, mx = 5.0f, prod = 0.0f;
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  /* reduce with axis=None: across replicas only. */
  expect_reduce(s, DIST_REDUCE_SUM, batch, across, 4);
  /* axis 0: the whole global batch. */
  expect_reduce_axis(s, DIST_REDUCE_SUM, batch, 0, &total, -1);
  expect_reduce_axis(s, DIST_REDUCE_MEAN, batch, 0, &mean, -1);
  expect_reduce_axis(s, DIST_REDUCE_SUM, batch, -1, &total, -1);

  parts[0] = dts_f32(full, 4, "CPU:0");
  parts[1] = dts_f32(full + 4, 2, "CPU:1");
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 2, &partial));
  /* Without an axis the shapes do not match ... */
  DT_ERR(dist_strategy_reduce(s, DIST_REDUCE_SUM, partial, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce", NULL);
  assert_null(out);
  /* ... with axis 0 they do, and MEAN divides by 6 (not the mean of the two means). */
  expect_reduce_axis(s, DIST_REDUCE_MEAN, partial, 0, &partial_mean, -1);
  expect_reduce_axis(s, DIST_REDUCE_SUM, partial, 0, &partial_total, -1);
  expect_reduce_axis(s, DIST_REDUCE_MEAN, partial, -1, &partial_mean, -1);
  expect_reduce_axis(s, DIST_REDUCE_MIN, partial, 0, &mn, -1);
  expect_reduce_axis(s, DIST_REDUCE_MAX, partial, 0, &mx, -1);
  expect_reduce_axis(s, DIST_REDUCE_PRODUCT, partial, 0, &prod, -1);
  {
    /* Averaging the per-replica means would give (1.5 + 4.5) / 2 = 3, not 2.5. */
    dist_value_t* m = NULL;
    DT_OK(dist_strategy_reduce_axis(s, DIST_REDUCE_MEAN, partial, 0, &m));
    assert_true(dts_scalar_f32(m) != 3.0f);
    dist_value_destroy(m);
  }
  dist_value_destroy(parts[0]);
  dist_value_destroy(parts[1]);
  dist_value_destroy(partial);
  dist_value_destroy(batch);
  dist_strategy_destroy(s);
}

static void test_reduce_axis_rank2(void** state) {
  /* Per-example losses with 3 features: replica 0 has 3 examples, replica 1 has 1. */
  dist_strategy_t* s = dts_mirrored(2);
  const float a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const float b[3] = {-1, 10, 0.5f};
  const int64_t da[2] = {3, 3};
  const int64_t db[2] = {1, 3};
  dist_value_t* parts[2];
  dist_value_t* pr = NULL;
  float sum0[3], mean0[3], max0[3];
  int j;
  (void)state;
  parts[0] = dts_tensor(DIST_FLOAT32, da, 2, a, "CPU:0");
  parts[1] = dts_tensor(DIST_FLOAT32, db, 2, b, "CPU:1");
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 2, &pr));
  for (j = 0; j < 3; ++j) {
    const double s0 = (double)a[j] + a[3 + j] + a[6 + j] + b[j];
    double m = a[j];
    m = a[3 + j] > m ? a[3 + j] : m;
    m = a[6 + j] > m ? a[6 + j] : m;
    m = b[j] > m ? b[j] : m;
    sum0[j] = (float)s0;
    mean0[j] = (float)(s0 / 4.0);
    max0[j] = (float)m;
  }
  expect_reduce_axis(s, DIST_REDUCE_SUM, pr, 0, sum0, 3);
  expect_reduce_axis(s, DIST_REDUCE_SUM, pr, -2, sum0, 3);
  expect_reduce_axis(s, DIST_REDUCE_MEAN, pr, 0, mean0, 3);
  expect_reduce_axis(s, DIST_REDUCE_MAX, pr, 0, max0, 3);
  /* Along axis 1 the components differ in axis 0: an error. */
  {
    dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_strategy_reduce_axis(s, DIST_REDUCE_SUM, pr, 1, &out), DIST_INVALID_ARGUMENT,
           "dist_strategy_reduce_axis", NULL);
    assert_null(out);
    DT_ERR(dist_strategy_reduce_axis(s, DIST_REDUCE_SUM, pr, 2, &out), DIST_INVALID_ARGUMENT,
           "dist_strategy_reduce_axis", "axis");
    DT_ERR(dist_strategy_reduce_axis(s, DIST_REDUCE_SUM, pr, -3, &out), DIST_INVALID_ARGUMENT,
           "dist_strategy_reduce_axis", "axis");
    DT_ERR(dist_strategy_reduce_axis(NULL, DIST_REDUCE_SUM, pr, 0, &out), DIST_INVALID_ARGUMENT,
           "dist_strategy_reduce_axis", "strategy");
    DT_ERR(dist_strategy_reduce_axis(s, DIST_REDUCE_SUM, NULL, 0, &out), DIST_INVALID_ARGUMENT,
           "dist_strategy_reduce_axis", "value");
    DT_ERR(dist_strategy_reduce_axis(s, DIST_REDUCE_SUM, pr, 0, NULL), DIST_INVALID_ARGUMENT,
           "dist_strategy_reduce_axis", "out");
    DT_ERR(dist_strategy_reduce_axis(s, 99, pr, 0, &out), DIST_INVALID_ARGUMENT,
           "dist_strategy_reduce_axis", "op");
  }
  /* Reducing along axis 1 of components [2, 2] and [2, 3] works (they agree in axis 0). */
  {
    const float c[4] = {1, 2, 3, 4};
    const float d[6] = {10, 20, 30, 40, 50, 60};
    const int64_t dc[2] = {2, 2};
    const int64_t dd[2] = {2, 3};
    dist_value_t* q[2];
    dist_value_t* pr2 = NULL;
    const float sum1[2] = {1 + 2 + 10 + 20 + 30, 3 + 4 + 40 + 50 + 60};
    const float mean1[2] = {(1 + 2 + 10 + 20 + 30) / 5.0f, (3 + 4 + 40 + 50 + 60) / 5.0f};
    q[0] = dts_tensor(DIST_FLOAT32, dc, 2, c, "CPU:0");
    q[1] = dts_tensor(DIST_FLOAT32, dd, 2, d, "CPU:1");
    DT_OK(dist_value_create_per_replica((const dist_value_t* const*)q, 2, &pr2));
    expect_reduce_axis(s, DIST_REDUCE_SUM, pr2, 1, sum1, 2);
    expect_reduce_axis(s, DIST_REDUCE_SUM, pr2, -1, sum1, 2);
    expect_reduce_axis(s, DIST_REDUCE_MEAN, pr2, 1, mean1, 2);
    dist_value_destroy(q[0]);
    dist_value_destroy(q[1]);
    dist_value_destroy(pr2);
  }
  dist_value_destroy(parts[0]);
  dist_value_destroy(parts[1]);
  dist_value_destroy(pr);
  dist_strategy_destroy(s);
}

/* One replica's part of the last batch is empty: MEAN divides by the elements there are. */
static void test_reduce_axis_empty_component(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float a[3] = {1, 2, 6};
  const int64_t da[1] = {3};
  const int64_t d0[1] = {0};
  dist_value_t* parts[2];
  dist_value_t* pr = NULL;
  const float mean = 3.0f, sum = 9.0f;
  dist_value_t* out = NULL;
  (void)state;
  parts[0] = dts_tensor(DIST_FLOAT32, da, 1, a, "CPU:0");
  parts[1] = dts_tensor(DIST_FLOAT32, d0, 1, NULL, "CPU:1");
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 2, &pr));
  expect_reduce_axis(s, DIST_REDUCE_MEAN, pr, 0, &mean, -1);
  expect_reduce_axis(s, DIST_REDUCE_SUM, pr, 0, &sum, -1);
  DT_OK(dist_strategy_gather(s, pr, 0, &out));
  dts_expect_f32(out, a, 3);
  dist_value_destroy(out);
  dist_value_destroy(parts[0]);
  dist_value_destroy(parts[1]);
  dist_value_destroy(pr);
  dist_strategy_destroy(s);
}

/* ---- MEAN of integers: a float, as TF's truediv gives ---- */

static dist_value_t* int_per_replica(dist_dtype_t dtype, const int64_t* values,
                                     const int64_t* lengths, int32_t n) {
  dist_value_t* parts[DTS_MAX_REPLICAS];
  dist_value_t* pr = NULL;
  unsigned char buffer[64];
  int32_t r;
  int64_t offset = 0, i;
  size_t element = 0;
  DT_OK(dist_dtype_size(dtype, &element));
  for (r = 0; r < n; ++r) {
    for (i = 0; i < lengths[r]; ++i) {
      const int64_t v = values[offset + i];
      switch (dtype) {
        case DIST_INT8: ((int8_t*)buffer)[i] = (int8_t)v; break;
        case DIST_INT32: ((int32_t*)buffer)[i] = (int32_t)v; break;
        default: ((int64_t*)buffer)[i] = v; break;
      }
    }
    offset += lengths[r];
    {
      char device[16];
      dts_cpu_name(r, device, sizeof(device));
      parts[r] = dts_tensor(dtype, &lengths[r], 1, buffer, device);
    }
  }
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, n, &pr));
  for (r = 0; r < n; ++r) dist_value_destroy(parts[r]);
  return pr;
}

/* Checks that `out` is a tensor of `dtype` holding `expected` (count elements). */
static void expect_float_tensor(const dist_value_t* out, dist_dtype_t dtype,
                                const double* expected, int64_t count) {
  dist_dtype_t got = 0;
  void* data = NULL;
  int64_t i;
  DT_OK(dist_tensor_dtype(out, &got));
  assert_int_equal(got, dtype);
  DT_OK(dist_tensor_data(out, &data));
  for (i = 0; i < count; ++i) {
    const double v = dtype == DIST_FLOAT32 ? (double)((const float*)data)[i]
                                           : ((const double*)data)[i];
    if (expected[i] != expected[i]) {
      assert_true(v != v); /* NaN */
    } else {
      assert_true(v == expected[i]);
    }
  }
}

/* reduce_axis to a float64 scalar. */
static void expect_scalar_f64(dist_strategy_t* s, dist_reduce_op_t op, const dist_value_t* value,
                              int32_t axis, double expected) {
  dist_value_t* out = NULL;
  DT_OK(dist_strategy_reduce_axis(s, op, value, axis, &out));
  expect_float_tensor(out, DIST_FLOAT64, &expected, 1);
  dist_value_destroy(out);
}

static void test_integer_mean_is_float(void** state) {
  dist_strategy_t* s = dts_mirrored(4);
  dist_value_t* out = NULL;
  (void)state;
  {
    /* TF: strategy.reduce(MEAN, per_replica, axis=0) of int64 rows [8], [9], [], [] (the
     * last batch of range(10).batch(4) over 4 replicas) -> tf.float64 8.5. */
    const int64_t values[2] = {8, 9};
    const int64_t lengths[4] = {1, 1, 0, 0};
    dist_value_t* pr = int_per_replica(DIST_INT64, values, lengths, 4);
    expect_scalar_f64(s, DIST_REDUCE_MEAN, pr, 0, 8.5);
    dist_value_destroy(pr);
  }
  {
    /* TF: strategy.reduce(MEAN, per_replica, axis=0) of int32 [] on every replica
     * -> 0 / 0 = NaN (float64). */
    const int64_t lengths[4] = {0, 0, 0, 0};
    dist_value_t* pr = int_per_replica(DIST_INT32, NULL, lengths, 4);
    expect_scalar_f64(s, DIST_REDUCE_MEAN, pr, 0, (double)NAN);
    dist_value_destroy(pr);
  }
  {
    /* TF: strategy.reduce(MEAN, per_replica, axis=None) of int32 [1], [2], [3], [4]
     * -> tf.float64 [2.5]; reduce_to and batch_reduce_to give the same. */
    const int64_t values[4] = {1, 2, 3, 4};
    const int64_t lengths[4] = {1, 1, 1, 1};
    const double mean = 2.5;
    dist_value_t* pr = int_per_replica(DIST_INT32, values, lengths, 4);
    const dist_value_t* batch[2];
    dist_value_t* outs[2] = {NULL, NULL};
    DT_OK(dist_strategy_reduce(s, DIST_REDUCE_MEAN, pr, &out));
    expect_float_tensor(out, DIST_FLOAT64, &mean, 1);
    dist_value_destroy(out);
    DT_OK(dist_strategy_reduce_to_device(s, DIST_REDUCE_MEAN, pr, "CPU:1", &out));
    expect_float_tensor(out, DIST_FLOAT64, &mean, 1);
    dist_value_destroy(out);
    batch[0] = pr;
    batch[1] = pr;
    DT_OK(dist_strategy_batch_reduce_to(s, DIST_REDUCE_MEAN, batch, batch, 2, outs));
    {
      dist_value_t* copy3 = dts_component(outs[1], 3);
      expect_float_tensor(copy3, DIST_FLOAT64, &mean, 1);
      dist_value_destroy(copy3);
    }
    dist_value_destroy(outs[0]);
    dist_value_destroy(outs[1]);
    /* SUM keeps the dtype: tf.int32 [10]. */
    DT_OK(dist_strategy_reduce(s, DIST_REDUCE_SUM, pr, &out));
    {
      dist_dtype_t dtype = 0;
      DT_OK(dist_tensor_dtype(out, &dtype));
      assert_int_equal(dtype, DIST_INT32);
    }
    dist_value_destroy(out);
    dist_value_destroy(pr);
  }
  {
    /* 8- and 16-bit integers divide in float32: tf.constant(10, tf.int8) / 4 -> float32
     * 2.5. The sum wraps in int8 first, as add_n does: 100 + 100 + 100 + 1 = 301 wraps to
     * 45, and 45 / 4 = 11.25. */
    const int64_t values[4] = {100, 100, 100, 1};
    const int64_t lengths[4] = {1, 1, 1, 1};
    const double mean = 11.25;
    dist_value_t* pr = int_per_replica(DIST_INT8, values, lengths, 4);
    DT_OK(dist_strategy_reduce(s, DIST_REDUCE_MEAN, pr, &out));
    expect_float_tensor(out, DIST_FLOAT32, &mean, 1);
    dist_value_destroy(out);
    dist_value_destroy(pr);
  }
  {
    /* One replica: TF's reduce returns the value itself (int32); along an axis it still
     * divides (int32 [1, 2] -> float64 1.5). */
    dist_strategy_t* one = dts_one_device("CPU:0");
    const int64_t values[2] = {1, 2};
    const int64_t length = 2;
    const double mean = 1.5;
    dist_value_t* pr = int_per_replica(DIST_INT32, values, &length, 1);
    dist_dtype_t dtype = 0;
    DT_OK(dist_strategy_reduce(one, DIST_REDUCE_MEAN, pr, &out));
    DT_OK(dist_tensor_dtype(out, &dtype));
    assert_int_equal(dtype, DIST_INT32);
    dist_value_destroy(out);
    DT_OK(dist_strategy_reduce_axis(one, DIST_REDUCE_MEAN, pr, 0, &out));
    expect_float_tensor(out, DIST_FLOAT64, &mean, 1);
    dist_value_destroy(out);
    dist_value_destroy(pr);
    dist_strategy_destroy(one);
  }
  dist_strategy_destroy(s);
}

/* replica_ctx.all_reduce(MEAN, x) of int32 {r+1, 10(r+1)} (+1 on replica 3's second
 * element) over 4 replicas -> tf.float64 {2.5, 25.25}; a batch that mixes float32 and
 * int32 keeps the float32 MEAN and divides the int32 one. */
typedef struct {
  dts_errors errors;
} int_mean_state;

static dist_status_t all_reduce_int_mean(dist_context_t* context, const dist_value_t* const* args,
                                         int32_t num_args, dist_value_t** results,
                                         int32_t num_results, void* user_data) {
  int_mean_state* st = (int_mean_state*)user_data;
  int32_t r = -1;
  const char* device = NULL;
  int32_t ints[2];
  const float floats[1] = {1.0f};
  const int64_t two = 2, one = 1;
  dist_value_t* x = NULL;
  dist_value_t* f = NULL;
  dist_value_t* y = NULL;
  dist_value_t* outs[2] = {NULL, NULL};
  const dist_value_t* batch[2];
  dist_dtype_t dtype = 0;
  double* data = NULL;
  float* fdata = NULL;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_context_device(context, &device));
  ints[0] = r + 1;
  ints[1] = 10 * (r + 1) + (r == 3 ? 1 : 0);
  RCALL(&st->errors, r, dist_tensor_create(DIST_INT32, &two, 1, ints, sizeof(ints), device, &x));
  RCALL(&st->errors, r,
        dist_tensor_create(DIST_FLOAT32, &one, 1, floats, sizeof(floats), device, &f));
  RCALL(&st->errors, r, dist_context_all_reduce(context, DIST_REDUCE_MEAN, x, &y));
  RCALL(&st->errors, r, dist_tensor_dtype(y, &dtype));
  RCHECK(&st->errors, r, dtype == DIST_FLOAT64, "all_reduce(MEAN) of int32 is %s",
         dist_dtype_name(dtype));
  RCALL(&st->errors, r, dist_tensor_data(y, (void**)&data));
  RCHECK(&st->errors, r, data[0] == 2.5 && data[1] == 25.25, "got {%g, %g}", data[0], data[1]);
  batch[0] = f;
  batch[1] = x;
  RCALL(&st->errors, r, dist_context_batch_all_reduce(context, DIST_REDUCE_MEAN, batch, 2, outs));
  RCALL(&st->errors, r, dist_tensor_dtype(outs[0], &dtype));
  RCHECK(&st->errors, r, dtype == DIST_FLOAT32, "batch MEAN of float32 is %s",
         dist_dtype_name(dtype));
  RCALL(&st->errors, r, dist_tensor_data(outs[0], (void**)&fdata));
  RCHECK(&st->errors, r, fdata[0] == 1.0f, "float32 mean %g", (double)fdata[0]);
  RCALL(&st->errors, r, dist_tensor_data(outs[1], (void**)&data));
  RCHECK(&st->errors, r, data[0] == 2.5 && data[1] == 25.25, "batch got {%g, %g}", data[0],
         data[1]);
  dist_value_destroy(outs[0]);
  dist_value_destroy(outs[1]);
  dist_value_destroy(x);
  dist_value_destroy(f);
  dist_value_destroy(y);
  return DIST_OK;
}

static void test_integer_mean_all_reduce(void** state) {
  dist_strategy_t* s = dts_mirrored(4);
  int_mean_state st;
  (void)state;
  memset(&st, 0, sizeof(st));
  DTS_RUN_OK(&st.errors, 4, dist_strategy_run(s, all_reduce_int_mean, &st, NULL, 0, NULL, 0));
  dist_strategy_destroy(s);
}

static void test_reduce_axis_int(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const int32_t a[3] = {7, -2, 100};
  const int32_t b[2] = {5, 10};
  const int64_t da[1] = {3};
  const int64_t db[1] = {2};
  dist_value_t* parts[2];
  dist_value_t* pr = NULL;
  dist_value_t* out = NULL;
  int32_t* data = NULL;
  (void)state;
  parts[0] = dts_tensor(DIST_INT32, da, 1, a, "CPU:0");
  parts[1] = dts_tensor(DIST_INT32, db, 1, b, "CPU:1");
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 2, &pr));
  DT_OK(dist_strategy_reduce_axis(s, DIST_REDUCE_SUM, pr, 0, &out));
  DT_OK(dist_tensor_data(out, (void**)&data));
  assert_int_equal(data[0], 7 - 2 + 100 + 5 + 10);
  dist_value_destroy(out);
  DT_OK(dist_strategy_reduce_axis(s, DIST_REDUCE_MIN, pr, 0, &out));
  DT_OK(dist_tensor_data(out, (void**)&data));
  assert_int_equal(data[0], -2);
  dist_value_destroy(out);
  DT_OK(dist_strategy_reduce_axis(s, DIST_REDUCE_PRODUCT, pr, 0, &out));
  DT_OK(dist_tensor_data(out, (void**)&data));
  assert_int_equal(data[0], 7 * -2 * 100 * 5 * 10);
  dist_value_destroy(out);
  /* TF divides with truediv: an int32 MEAN is float64 (120 / 5). */
  expect_scalar_f64(s, DIST_REDUCE_MEAN, pr, 0, 24.0);
  dist_value_destroy(parts[0]);
  dist_value_destroy(parts[1]);
  dist_value_destroy(pr);
  dist_strategy_destroy(s);
}

/* A plain tensor reduced along an axis counts once per replica (TF runs the per-replica
 * reduction on every replica): SUM doubles with 2 replicas, MEAN is the tensor's mean. */
static void test_reduce_axis_plain_tensor(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float v[3] = {1.0f, 2.0f, 6.0f};
  dist_value_t* t = dts_f32(v, 3, NULL);
  const float sum = 2.0f * 9.0f;
  const float mean = 3.0f;
  (void)state;
  expect_reduce_axis(s, DIST_REDUCE_SUM, t, 0, &sum, -1);
  expect_reduce_axis(s, DIST_REDUCE_MEAN, t, 0, &mean, -1);
  dist_value_destroy(t);
  dist_strategy_destroy(s);
}

/* ---- gather ---- */

static void test_gather(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  const float a[4] = {1, 2, 3, 4};        /* [2, 2] */
  const float b[2] = {5, 6};              /* [1, 2] */
  const float c[6] = {7, 8, 9, 10, 11, 12}; /* [3, 2] */
  const int64_t da[2] = {2, 2}, db[2] = {1, 2}, dc[2] = {3, 2};
  dist_value_t* parts[3];
  dist_value_t* pr = NULL;
  dist_value_t* out = NULL;
  int64_t dims[2];
  const float rows[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  (void)state;
  parts[0] = dts_tensor(DIST_FLOAT32, da, 2, a, "CPU:0");
  parts[1] = dts_tensor(DIST_FLOAT32, db, 2, b, "CPU:1");
  parts[2] = dts_tensor(DIST_FLOAT32, dc, 2, c, "CPU:2");
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 3, &pr));
  DT_OK(dist_strategy_gather(s, pr, 0, &out));
  DT_OK(dist_tensor_shape(out, dims, 2));
  assert_int_equal(dims[0], 6);
  assert_int_equal(dims[1], 2);
  dts_expect_f32(out, rows, 12);
  assert_string_equal(dts_device(out), "/device:CPU:0");
  dist_value_destroy(out);
  DT_OK(dist_strategy_gather(s, pr, -2, &out));
  dts_expect_f32(out, rows, 12);
  dist_value_destroy(out);
  /* Along axis 1 these components disagree in axis 0. */
  out = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_strategy_gather(s, pr, 1, &out), DIST_INVALID_ARGUMENT, "dist_strategy_gather",
         NULL);
  assert_null(out);
  DT_ERR(dist_strategy_gather(s, pr, 2, &out), DIST_INVALID_ARGUMENT, "dist_strategy_gather",
         "axis");
  DT_ERR(dist_strategy_gather(NULL, pr, 0, &out), DIST_INVALID_ARGUMENT, "dist_strategy_gather",
         "strategy");
  DT_ERR(dist_strategy_gather(s, NULL, 0, &out), DIST_INVALID_ARGUMENT, "dist_strategy_gather",
         "value");
  DT_ERR(dist_strategy_gather(s, pr, 0, NULL), DIST_INVALID_ARGUMENT, "dist_strategy_gather",
         "out");
  dist_value_destroy(pr);
  dist_value_destroy(parts[0]);
  dist_value_destroy(parts[1]);
  dist_value_destroy(parts[2]);

  /* Axis 1 / -1 with [2, r+1] components: rows concatenated per row. */
  {
    const float p0[2] = {1, 2};             /* [[1], [2]] */
    const float p1[4] = {3, 4, 5, 6};       /* [[3, 4], [5, 6]] */
    const float p2[6] = {7, 8, 9, 10, 11, 12};
    const int64_t d0[2] = {2, 1}, d1[2] = {2, 2}, d2[2] = {2, 3};
    const float expected[12] = {1, 3, 4, 7, 8, 9, 2, 5, 6, 10, 11, 12};
    parts[0] = dts_tensor(DIST_FLOAT32, d0, 2, p0, "CPU:0");
    parts[1] = dts_tensor(DIST_FLOAT32, d1, 2, p1, "CPU:1");
    parts[2] = dts_tensor(DIST_FLOAT32, d2, 2, p2, "CPU:2");
    DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 3, &pr));
    DT_OK(dist_strategy_gather(s, pr, 1, &out));
    DT_OK(dist_tensor_shape(out, dims, 2));
    assert_int_equal(dims[0], 2);
    assert_int_equal(dims[1], 6);
    dts_expect_f32(out, expected, 12);
    dist_value_destroy(out);
    DT_OK(dist_strategy_gather(s, pr, -1, &out));
    dts_expect_f32(out, expected, 12);
    dist_value_destroy(out);
    dist_value_destroy(pr);
    dist_value_destroy(parts[0]);
    dist_value_destroy(parts[1]);
    dist_value_destroy(parts[2]);
  }
  /* Scalars cannot be gathered along an axis. */
  {
    const float sc[3] = {1, 2, 3};
    pr = dts_per_replica_f32(sc, 3, -1);
    out = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_strategy_gather(s, pr, 0, &out), DIST_INVALID_ARGUMENT, "dist_strategy_gather",
           NULL);
    assert_null(out);
    dist_value_destroy(pr);
  }
  dist_strategy_destroy(s);
}

/* ---- reduce_to, reduce_to_device, batch_reduce_to ---- */

static void expect_mirrored_f32(const dist_value_t* value, const char* const* devices,
                                int32_t count, const float* expected, int64_t n) {
  int32_t i;
  assert_int_equal(dts_kind(value), DIST_VALUE_MIRRORED);
  assert_int_equal(dts_num_components(value), count);
  for (i = 0; i < count; ++i) {
    dist_value_t* c = dts_component(value, i);
    dts_expect_f32(c, expected, n);
    assert_string_equal(dts_device(c), devices[i]);
    dist_value_destroy(c);
  }
}

static void test_reduce_to(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float in[4] = {1, 2, 3, 4};
  const float sum[2] = {4, 6};
  const float mean[2] = {2, 3};
  const float init_values[2] = {-7, -8};
  const char* both[2] = {"/device:CPU:0", "/device:CPU:1"};
  dist_value_t* pr = dts_per_replica_f32(in, 2, 2);
  dist_value_t* init = dts_f32(init_values, 2, NULL);
  dist_value_t* mirrored_var = NULL;
  dist_value_t* plain_var = NULL;
  dist_value_t* on_cpu1 = dts_f32(init_values, 2, "CPU:1");
  dist_value_t* out = NULL;
  (void)state;
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &plain_var));
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL,
                             &mirrored_var));
  /* Destination: a MirroredVariable -> Mirrored over its devices. */
  DT_OK(dist_strategy_reduce_to(s, DIST_REDUCE_SUM, pr, mirrored_var, &out));
  expect_mirrored_f32(out, both, 2, sum, 2);
  dist_value_destroy(out);
  DT_OK(dist_strategy_reduce_to(s, DIST_REDUCE_MEAN, pr, mirrored_var, &out));
  expect_mirrored_f32(out, both, 2, mean, 2);
  dist_value_destroy(out);
  /* reduce_to does not update the variable. */
  dts_expect_components_f32(mirrored_var, init_values, 2);
  /* Destination: the value itself (all-reduce). */
  DT_OK(dist_strategy_reduce_to(s, DIST_REDUCE_SUM, pr, pr, &out));
  expect_mirrored_f32(out, both, 2, sum, 2);
  dist_value_destroy(out);
  /* Destination: a tensor on CPU:1 -> a tensor there. */
  DT_OK(dist_strategy_reduce_to(s, DIST_REDUCE_SUM, pr, on_cpu1, &out));
  assert_int_equal(dts_kind(out), DIST_VALUE_TENSOR);
  dts_expect_f32(out, sum, 2);
  assert_string_equal(dts_device(out), "/device:CPU:1");
  dist_value_destroy(out);
  /* Destination: a plain variable on CPU:0. */
  DT_OK(dist_strategy_reduce_to(s, DIST_REDUCE_SUM, pr, plain_var, &out));
  assert_int_equal(dts_kind(out), DIST_VALUE_TENSOR);
  dts_expect_f32(out, sum, 2);
  assert_string_equal(dts_device(out), "/device:CPU:0");
  dist_value_destroy(out);
  /* A device string. */
  DT_OK(dist_strategy_reduce_to_device(s, DIST_REDUCE_SUM, pr, "CPU:1", &out));
  assert_int_equal(dts_kind(out), DIST_VALUE_TENSOR);
  dts_expect_f32(out, sum, 2);
  assert_string_equal(dts_device(out), "/device:CPU:1");
  dist_value_destroy(out);
  DT_OK(dist_strategy_reduce_to_device(s, DIST_REDUCE_MAX, pr, "/device:CPU:3", &out));
  {
    const float mx[2] = {3, 4};
    dts_expect_f32(out, mx, 2);
  }
  assert_string_equal(dts_device(out), "/device:CPU:3");
  dist_value_destroy(out);
  /* A tensor value under MEAN reduces to itself. */
  DT_OK(dist_strategy_reduce_to(s, DIST_REDUCE_MEAN, init, mirrored_var, &out));
  expect_mirrored_f32(out, both, 2, init_values, 2);
  dist_value_destroy(out);
  DT_OK(dist_strategy_scope_exit(s));

  /* Outside the scope as well. */
  DT_OK(dist_strategy_reduce_to_device(s, DIST_REDUCE_SUM, pr, "CPU:0", &out));
  dts_expect_f32(out, sum, 2);
  dist_value_destroy(out);

  dist_value_destroy(pr);
  dist_value_destroy(init);
  dist_value_destroy(mirrored_var);
  dist_value_destroy(plain_var);
  dist_value_destroy(on_cpu1);
  dist_strategy_destroy(s);
}

static void test_reduce_to_rejects_misuse(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float in[2] = {1, 2};
  dist_value_t* pr = dts_per_replica_f32(in, 2, -1);
  dist_value_t* t = dts_f32_scalar(1.0f, NULL);
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_strategy_reduce_to(NULL, DIST_REDUCE_SUM, pr, t, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce_to", "strategy");
  assert_null(out);
  DT_ERR(dist_strategy_reduce_to(s, DIST_REDUCE_SUM, NULL, t, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce_to", "value");
  DT_ERR(dist_strategy_reduce_to(s, DIST_REDUCE_SUM, pr, NULL, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce_to", "destinations");
  DT_ERR(dist_strategy_reduce_to(s, DIST_REDUCE_SUM, pr, t, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce_to", "out");
  DT_ERR(dist_strategy_reduce_to(s, 42, pr, t, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce_to", "op");
  /* A plain tensor summed over 2 replicas. */
  DT_ERR(dist_strategy_reduce_to(s, DIST_REDUCE_SUM, t, t, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce_to", NULL);
  assert_null(out);
  DT_ERR(dist_strategy_reduce_to_device(NULL, DIST_REDUCE_SUM, pr, "CPU:0", &out),
         DIST_INVALID_ARGUMENT, "dist_strategy_reduce_to_device", "strategy");
  DT_ERR(dist_strategy_reduce_to_device(s, DIST_REDUCE_SUM, NULL, "CPU:0", &out),
         DIST_INVALID_ARGUMENT, "dist_strategy_reduce_to_device", "value");
  DT_ERR(dist_strategy_reduce_to_device(s, DIST_REDUCE_SUM, pr, NULL, &out),
         DIST_INVALID_ARGUMENT, "dist_strategy_reduce_to_device", "device");
  DT_ERR(dist_strategy_reduce_to_device(s, DIST_REDUCE_SUM, pr, "CPU:0", NULL),
         DIST_INVALID_ARGUMENT, "dist_strategy_reduce_to_device", "out");
  DT_ERR(dist_strategy_reduce_to_device(s, DIST_REDUCE_SUM, pr, "not a device", &out),
         DIST_INVALID_ARGUMENT, "dist_strategy_reduce_to_device", NULL);
  DT_ERR2(dist_strategy_reduce_to_device(s, DIST_REDUCE_SUM, pr, "CPU:99", &out),
          DIST_INVALID_ARGUMENT, DIST_NOT_FOUND, "dist_strategy_reduce_to_device", NULL);
  DT_ERR(dist_strategy_reduce_to_device(s, -1, pr, "CPU:0", &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_reduce_to_device", "op");
  assert_null(out);
  dist_value_destroy(pr);
  dist_value_destroy(t);
  dist_strategy_destroy(s);
}

static void test_batch_reduce_to(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float a[4] = {1, 2, 10, 20};
  const float b[2] = {0.5f, 1.5f};
  const float sum_a[2] = {11, 22};
  const float sum_b = 2.0f;
  const char* both[2] = {"/device:CPU:0", "/device:CPU:1"};
  dist_value_t* pa = dts_per_replica_f32(a, 2, 2);
  dist_value_t* pb = dts_per_replica_f32(b, 2, -1);
  dist_value_t* ints = NULL;
  dist_value_t* init = dts_f32_scalar(0.0f, NULL);
  dist_value_t* var = NULL;
  dist_value_t* on_cpu1 = dts_f32_scalar(0.0f, "CPU:1");
  const dist_value_t* values[3];
  const dist_value_t* destinations[3];
  dist_value_t* outs[3];
  (void)state;
  {
    const int32_t i0[3] = {1, -2, 3}, i1[3] = {100, 200, -300};
    const int64_t d[1] = {3};
    dist_value_t* parts[2];
    parts[0] = dts_tensor(DIST_INT32, d, 1, i0, "CPU:0");
    parts[1] = dts_tensor(DIST_INT32, d, 1, i1, "CPU:1");
    DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, 2, &ints));
    dist_value_destroy(parts[0]);
    dist_value_destroy(parts[1]);
  }
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &var));
  values[0] = pa;
  values[1] = pb;
  values[2] = ints;
  destinations[0] = var;
  destinations[1] = on_cpu1;
  destinations[2] = pa;
  outs[0] = outs[1] = outs[2] = (dist_value_t*)DT_SENTINEL_PTR;
  DT_OK(dist_strategy_batch_reduce_to(s, DIST_REDUCE_SUM, values, destinations, 3, outs));
  expect_mirrored_f32(outs[0], both, 2, sum_a, 2);
  assert_int_equal(dts_kind(outs[1]), DIST_VALUE_TENSOR);
  assert_true(dts_scalar_f32(outs[1]) == sum_b);
  assert_string_equal(dts_device(outs[1]), "/device:CPU:1");
  assert_int_equal(dts_kind(outs[2]), DIST_VALUE_MIRRORED);
  {
    int32_t q;
    for (q = 0; q < 2; ++q) {
      dist_value_t* c = dts_component(outs[2], q);
      int32_t* data = NULL;
      DT_OK(dist_tensor_data(c, (void**)&data));
      assert_int_equal(data[0], 101);
      assert_int_equal(data[1], 198);
      assert_int_equal(data[2], -297);
      dist_value_destroy(c);
    }
  }
  dist_value_destroy(outs[0]);
  dist_value_destroy(outs[1]);
  dist_value_destroy(outs[2]);

  /* Misuse: nothing is returned when any pair fails. */
  {
    dist_value_t* t = dts_f32_scalar(1.0f, NULL);
    const dist_value_t* bad[2];
    const dist_value_t* with_null[2];
    bad[0] = pb;
    bad[1] = t; /* a plain tensor summed over 2 replicas */
    with_null[0] = pb;
    with_null[1] = NULL;
    outs[0] = outs[1] = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_strategy_batch_reduce_to(s, DIST_REDUCE_SUM, bad, destinations, 2, outs),
           DIST_INVALID_ARGUMENT, "dist_strategy_batch_reduce_to", NULL);
    assert_null(outs[0]);
    assert_null(outs[1]);
    DT_ERR(dist_strategy_batch_reduce_to(NULL, DIST_REDUCE_SUM, values, destinations, 2, outs),
           DIST_INVALID_ARGUMENT, "dist_strategy_batch_reduce_to", "strategy");
    DT_ERR(dist_strategy_batch_reduce_to(s, DIST_REDUCE_SUM, NULL, destinations, 2, outs),
           DIST_INVALID_ARGUMENT, "dist_strategy_batch_reduce_to", "values");
    DT_ERR(dist_strategy_batch_reduce_to(s, DIST_REDUCE_SUM, values, NULL, 2, outs),
           DIST_INVALID_ARGUMENT, "dist_strategy_batch_reduce_to", "destinations");
    DT_ERR(dist_strategy_batch_reduce_to(s, DIST_REDUCE_SUM, values, destinations, 2, NULL),
           DIST_INVALID_ARGUMENT, "dist_strategy_batch_reduce_to", "outs");
    DT_ERR(dist_strategy_batch_reduce_to(s, DIST_REDUCE_SUM, with_null, destinations, 2, outs),
           DIST_INVALID_ARGUMENT, "dist_strategy_batch_reduce_to", "values[1]");
    DT_ERR(dist_strategy_batch_reduce_to(s, DIST_REDUCE_SUM, values, with_null, 2, outs),
           DIST_INVALID_ARGUMENT, "dist_strategy_batch_reduce_to", "destinations[1]");
    DT_ERR(dist_strategy_batch_reduce_to(s, DIST_REDUCE_SUM, values, destinations, 0, outs),
           DIST_INVALID_ARGUMENT, "dist_strategy_batch_reduce_to", "count");
    DT_ERR(dist_strategy_batch_reduce_to(s, 0, values, destinations, 2, outs),
           DIST_INVALID_ARGUMENT, "dist_strategy_batch_reduce_to", "op");
    assert_null(outs[0]);
    dist_value_destroy(t);
  }
  DT_OK(dist_strategy_scope_exit(s));
  dist_value_destroy(pa);
  dist_value_destroy(pb);
  dist_value_destroy(ints);
  dist_value_destroy(init);
  dist_value_destroy(var);
  dist_value_destroy(on_cpu1);
  dist_strategy_destroy(s);
}

/* ---- update ---- */

typedef struct {
  int32_t calls;
  char devices[DTS_MAX_REPLICAS][64];
  int32_t num_args[DTS_MAX_REPLICAS];
  int failures;
  char failure[256];
  int store_result;
  int fail;
  int assign_add; /* 1: assign_add args[0], 0: assign args[0] */
} update_state;

static dist_status_t update_fn(dist_value_t* variable, const dist_value_t* const* args,
                               int32_t num_args, dist_value_t** out, void* user_data) {
  update_state* st = (update_state*)user_data;
  dist_value_t* read = NULL;
  dist_value_kind_t kind = 0;
  int32_t in_cross = -1;
  const int32_t call = st->calls++;
  if (call >= DTS_MAX_REPLICAS) return DIST_INTERNAL;
  if (*out != NULL) {
    snprintf(st->failure, sizeof(st->failure), "out not pre-set to NULL");
    st->failures += 1;
  }
  st->num_args[call] = num_args;
  if (st->fail) {
    dist_device_t* parsed = NULL;
    return dist_device_parse("update-fn-failure", &parsed);
  }
  /* Update context is not replica context. */
  if (dist_in_cross_replica_context(&in_cross) != DIST_OK || in_cross != 1) {
    snprintf(st->failure, sizeof(st->failure), "in_cross_replica is %d in update fn", in_cross);
    st->failures += 1;
  }
  if (dist_value_kind(variable, &kind) != DIST_OK || kind != DIST_VALUE_VARIABLE) {
    snprintf(st->failure, sizeof(st->failure), "update fn got a value of kind %d", kind);
    st->failures += 1;
  }
  /* args[0] is unwrapped for this copy's device. */
  if (num_args > 0) {
    const char* device = NULL;
    dist_value_t* copy = NULL;
    if (dist_value_kind(args[0], &kind) != DIST_OK || kind != DIST_VALUE_TENSOR) {
      snprintf(st->failure, sizeof(st->failure), "args[0] has kind %d", kind);
      st->failures += 1;
      return DIST_INTERNAL;
    }
    if (dist_tensor_device(args[0], &device) == DIST_OK) {
      snprintf(st->devices[call], sizeof(st->devices[call]), "%s", device);
    }
    (void)copy;
    if ((st->assign_add ? dist_variable_assign_add(variable, args[0])
                        : dist_variable_assign(variable, args[0])) != DIST_OK) {
      snprintf(st->failure, sizeof(st->failure), "assign in update fn: %s",
               dist_last_error_message());
      st->failures += 1;
      return DIST_INTERNAL;
    }
  }
  if (st->store_result) {
    if (dist_variable_read(variable, &read) != DIST_OK) return DIST_INTERNAL;
    *out = read;
  }
  return DIST_OK;
}

static void test_update(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  const float five = 5.0f, seven = 7.0f, fourteen = 14.0f, twenty_one = 21.0f;
  dist_value_t* init = dts_f32_scalar(five, NULL);
  dist_value_t* var = NULL;
  dist_value_t* parts[2];
  dist_value_t* mirrored = NULL;
  dist_value_t* tensor = dts_f32_scalar(seven, "CPU:1");
  dist_value_t* out = NULL;
  const dist_value_t* args[1];
  update_state st;
  int32_t q;
  (void)state;
  parts[0] = dts_f32_scalar(seven, "CPU:0");
  parts[1] = dts_f32_scalar(seven, "CPU:1");
  DT_OK(dist_value_create_mirrored((const dist_value_t* const*)parts, 2, &mirrored));
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &var));
  DT_OK(dist_strategy_scope_exit(s));

  /* group 1: the results merge into a Mirrored value; the Mirrored arg is unwrapped to the
   * component on each copy's device. */
  memset(&st, 0, sizeof(st));
  st.store_result = 1;
  args[0] = mirrored;
  DT_OK(dist_strategy_update(s, var, update_fn, &st, args, 1, 1, &out));
  assert_int_equal(st.failures, 0);
  assert_int_equal(st.calls, 2);
  assert_string_equal(st.devices[0], "/device:CPU:0");
  assert_string_equal(st.devices[1], "/device:CPU:1");
  assert_int_equal(dts_kind(out), DIST_VALUE_MIRRORED);
  assert_int_equal(dts_num_components(out), 2);
  dts_expect_components_f32(out, &seven, -1);
  dts_expect_components_f32(var, &seven, -1);
  dist_value_destroy(out);

  /* group 0: a PerReplica value of the results; a tensor arg is passed as it is. */
  memset(&st, 0, sizeof(st));
  st.store_result = 1;
  st.assign_add = 1;
  args[0] = tensor;
  DT_OK(dist_strategy_update(s, var, update_fn, &st, args, 1, 0, &out));
  assert_int_equal(st.failures, 0);
  assert_int_equal(st.calls, 2);
  for (q = 0; q < 2; ++q) assert_string_equal(st.devices[q], "/device:CPU:1");
  assert_int_equal(dts_kind(out), DIST_VALUE_PER_REPLICA);
  assert_int_equal(dts_num_components(out), 2);
  dts_expect_components_f32(out, &fourteen, -1);
  dts_expect_components_f32(var, &fourteen, -1);
  dist_value_destroy(out);

  /* Nothing stored: *out is NULL. Inside the scope this time. */
  DT_OK(dist_strategy_scope_enter(s));
  memset(&st, 0, sizeof(st));
  st.assign_add = 1;
  args[0] = mirrored;
  out = (dist_value_t*)DT_SENTINEL_PTR;
  DT_OK(dist_strategy_update(s, var, update_fn, &st, args, 1, 1, &out));
  assert_null(out);
  assert_int_equal(st.calls, 2);
  dts_expect_components_f32(var, &twenty_one, -1);
  DT_OK(dist_strategy_scope_exit(s));

  dist_value_destroy(parts[0]);
  dist_value_destroy(parts[1]);
  dist_value_destroy(mirrored);
  dist_value_destroy(tensor);
  dist_value_destroy(init);
  dist_value_destroy(var);
  dist_strategy_destroy(s);
}

static void test_update_single_copy(void** state) {
  dist_strategy_t* cs = dts_central_storage(2, "CPU:1");
  const float one = 1.0f, three = 3.0f;
  dist_value_t* init = dts_f32_scalar(one, NULL);
  dist_value_t* var = NULL;
  dist_value_t* value = dts_f32_scalar(three, NULL);
  dist_value_t* out = NULL;
  const dist_value_t* args[1];
  update_state st;
  (void)state;
  DT_OK(dist_strategy_scope_enter(cs));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &var));
  DT_OK(dist_strategy_scope_exit(cs));
  assert_int_equal(dts_kind(var), DIST_VALUE_VARIABLE);
  memset(&st, 0, sizeof(st));
  st.store_result = 1;
  args[0] = value;
  /* One copy: fn is called once, and a single result is the tensor itself (both groups). */
  DT_OK(dist_strategy_update(cs, var, update_fn, &st, args, 1, 1, &out));
  assert_int_equal(st.failures, 0);
  assert_int_equal(st.calls, 1);
  assert_int_equal(dts_kind(out), DIST_VALUE_TENSOR);
  assert_true(dts_scalar_f32(out) == three);
  dist_value_destroy(out);
  dts_expect_variable_f32(var, &three, -1);
  dist_value_destroy(init);
  dist_value_destroy(var);
  dist_value_destroy(value);
  dist_strategy_destroy(cs);
}

static void test_update_rejects_misuse(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_strategy_t* three = dts_mirrored(3);
  const float pr_values[3] = {1, 2, 3};
  dist_value_t* init = dts_f32_scalar(0.0f, NULL);
  dist_value_t* var = NULL;
  dist_value_t* pr = dts_per_replica_f32(pr_values, 2, -1);
  dist_value_t* mirrored3 = NULL;
  dist_value_t* parts[3];
  dist_value_t* tensor = dts_f32_scalar(1.0f, NULL);
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  const dist_value_t* args[2];
  const dist_value_t* with_null[1] = {NULL};
  update_state st;
  int i;
  (void)state;
  for (i = 0; i < 3; ++i) parts[i] = dts_f32_scalar(1.0f, "CPU:0");
  DT_OK(dist_value_create_mirrored((const dist_value_t* const*)parts, 3, &mirrored3));
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &var));
  DT_OK(dist_strategy_scope_exit(s));
  memset(&st, 0, sizeof(st));
  /* PerReplica arguments are rejected before fn runs. */
  args[0] = tensor;
  args[1] = pr;
  DT_ERR(dist_strategy_update(s, var, update_fn, &st, args, 2, 1, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_update", "args[1]");
  assert_null(out);
  assert_int_equal(st.calls, 0);
  /* A Mirrored argument with the wrong number of components. */
  args[0] = mirrored3;
  DT_ERR(dist_strategy_update(s, var, update_fn, &st, args, 1, 1, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_update", "args[0]");
  assert_int_equal(st.calls, 0);
  /* Not a variable. */
  DT_ERR(dist_strategy_update(s, tensor, update_fn, &st, NULL, 0, 1, &out),
         DIST_INVALID_ARGUMENT, "dist_strategy_update", "variable");
  /* NULLs. */
  DT_ERR(dist_strategy_update(NULL, var, update_fn, &st, NULL, 0, 1, &out),
         DIST_INVALID_ARGUMENT, "dist_strategy_update", "strategy");
  DT_ERR(dist_strategy_update(s, NULL, update_fn, &st, NULL, 0, 1, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_update", "variable");
  DT_ERR(dist_strategy_update(s, var, NULL, &st, NULL, 0, 1, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_update", "fn");
  DT_ERR(dist_strategy_update(s, var, update_fn, &st, NULL, 0, 1, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_update", "out");
  DT_ERR(dist_strategy_update(s, var, update_fn, &st, NULL, 1, 1, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_update", "args");
  DT_ERR(dist_strategy_update(s, var, update_fn, &st, with_null, 1, 1, &out),
         DIST_INVALID_ARGUMENT, "dist_strategy_update", "args[0]");
  assert_int_equal(st.calls, 0);
  /* fn fails: its status and message come back. */
  memset(&st, 0, sizeof(st));
  st.fail = 1;
  DT_ERR(dist_strategy_update(s, var, update_fn, &st, NULL, 0, 1, &out), DIST_INVALID_ARGUMENT,
         "dist_strategy_update", "update-fn-failure");
  assert_null(out);
  for (i = 0; i < 3; ++i) dist_value_destroy(parts[i]);
  dist_value_destroy(mirrored3);
  dist_value_destroy(init);
  dist_value_destroy(var);
  dist_value_destroy(pr);
  dist_value_destroy(tensor);
  dist_strategy_destroy(s);
  dist_strategy_destroy(three);
}

/* ---- Cross-replica calls from replica context ---- */

typedef struct {
  dts_errors errors;
  dist_strategy_t* strategy;
  const dist_value_t* per_replica;
  dist_value_t* var;
} wrong_context_state;

static dist_status_t cross_replica_calls_in_replica(dist_context_t* context,
                                                    const dist_value_t* const* args,
                                                    int32_t num_args, dist_value_t** results,
                                                    int32_t num_results, void* user_data) {
  wrong_context_state* st = (wrong_context_state*)user_data;
  int32_t r = -1;
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  dist_value_t* outs[1];
  const dist_value_t* values[1];
  const dist_value_t* destinations[1];
  update_state ust;
  dist_strategy_t* s = st->strategy;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  memset(&ust, 0, sizeof(ust));
  values[0] = st->per_replica;
  destinations[0] = st->var;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCHECK_ERR(&st->errors, r, dist_strategy_reduce(s, DIST_REDUCE_SUM, st->per_replica, &out),
             DIST_FAILED_PRECONDITION, "cross-replica");
  RCHECK(&st->errors, r, out == NULL, "out not reset");
  RCHECK_ERR(&st->errors, r,
             dist_strategy_reduce_axis(s, DIST_REDUCE_SUM, st->per_replica, 0, &out),
             DIST_FAILED_PRECONDITION, "cross-replica");
  RCHECK_ERR(&st->errors, r, dist_strategy_gather(s, st->per_replica, 0, &out),
             DIST_FAILED_PRECONDITION, "cross-replica");
  RCHECK_ERR(&st->errors, r,
             dist_strategy_reduce_to(s, DIST_REDUCE_SUM, st->per_replica, st->var, &out),
             DIST_FAILED_PRECONDITION, "cross-replica");
  RCHECK_ERR(&st->errors, r,
             dist_strategy_reduce_to_device(s, DIST_REDUCE_SUM, st->per_replica, "CPU:0", &out),
             DIST_FAILED_PRECONDITION, "cross-replica");
  outs[0] = (dist_value_t*)DT_SENTINEL_PTR;
  RCHECK_ERR(&st->errors, r,
             dist_strategy_batch_reduce_to(s, DIST_REDUCE_SUM, values, destinations, 1, outs),
             DIST_FAILED_PRECONDITION, "cross-replica");
  RCHECK(&st->errors, r, outs[0] == NULL, "outs not reset");
  RCHECK_ERR(&st->errors, r, dist_strategy_update(s, st->var, update_fn, &ust, NULL, 0, 1, &out),
             DIST_FAILED_PRECONDITION, "cross-replica");
  RCHECK(&st->errors, r, ust.calls == 0, "update fn ran in replica context");
  RCHECK_ERR(&st->errors, r, dist_strategy_colocate_vars_with_enter(s, st->var),
             DIST_FAILED_PRECONDITION, "dist_strategy_colocate_vars_with_enter");
  return DIST_OK;
}

static void test_cross_replica_calls_in_replica_context(void** state) {
  wrong_context_state st;
  const float v[2] = {1, 2};
  dist_value_t* init = dts_f32_scalar(0.0f, NULL);
  (void)state;
  memset(&st, 0, sizeof(st));
  st.strategy = dts_mirrored(2);
  st.per_replica = dts_per_replica_f32(v, 2, 1);
  DT_OK(dist_strategy_scope_enter(st.strategy));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &st.var));
  DTS_RUN_OK(&st.errors, 2,
             dist_strategy_run(st.strategy, cross_replica_calls_in_replica, &st, NULL, 0, NULL,
                               0));
  DT_OK(dist_strategy_scope_exit(st.strategy));
  dist_value_destroy((dist_value_t*)st.per_replica);
  dist_value_destroy(st.var);
  dist_value_destroy(init);
  dist_strategy_destroy(st.strategy);
}

/* A cross-replica call on a strategy inside another strategy's scope. */
static void test_cross_replica_call_in_other_scope(void** state) {
  dist_strategy_t* a = dts_mirrored(2);
  dist_strategy_t* b = dts_mirrored(2);
  const float v[2] = {1, 2};
  dist_value_t* pr = dts_per_replica_f32(v, 2, -1);
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_OK(dist_strategy_scope_enter(a));
  DT_ERR(dist_strategy_reduce(b, DIST_REDUCE_SUM, pr, &out), DIST_FAILED_PRECONDITION,
         "dist_strategy_reduce", NULL);
  assert_null(out);
  DT_OK(dist_strategy_reduce(a, DIST_REDUCE_SUM, pr, &out));
  assert_true(dts_scalar_f32(out) == 3.0f);
  dist_value_destroy(out);
  DT_OK(dist_strategy_scope_exit(a));
  dist_value_destroy(pr);
  dist_strategy_destroy(a);
  dist_strategy_destroy(b);
}

/* ---- colocate_vars_with and variable_created_in_scope ---- */

static void expect_variable_devices(const dist_value_t* var, int32_t count,
                                    const char* const* devices) {
  int32_t i;
  assert_int_equal(dts_num_components(var), count);
  for (i = 0; i < count; ++i) {
    dist_value_t* c = dts_component(var, i);
    dist_value_t* read = NULL;
    DT_OK(dist_variable_read(c, &read));
    assert_string_equal(dts_device(read), devices[i]);
    dist_value_destroy(read);
    dist_value_destroy(c);
  }
}

static void test_colocate_vars_with(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  dist_value_t* init = dts_f32_scalar(1.0f, NULL);
  dist_value_t* v1 = NULL;
  dist_value_t* v2 = NULL;
  dist_value_t* v4 = NULL;
  const char* all3[3] = {"/device:CPU:0", "/device:CPU:1", "/device:CPU:2"};
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &v1));
  expect_variable_devices(v1, 3, all3);
  /* Variables created while colocated live where v1 lives. */
  DT_OK(dist_strategy_colocate_vars_with_enter(s, v1));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &v2));
  assert_int_equal(dts_kind(v2), DIST_VALUE_MIRRORED_VARIABLE);
  expect_variable_devices(v2, 3, all3);
  DT_OK(dist_strategy_colocate_vars_with_exit(s));
  /* After the exit, placement is back to normal. */
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &v4));
  expect_variable_devices(v4, 3, all3);
  /* Misuse. */
  DT_ERR(dist_strategy_colocate_vars_with_exit(s), DIST_FAILED_PRECONDITION,
         "dist_strategy_colocate_vars_with_exit", NULL);
  DT_ERR(dist_strategy_colocate_vars_with_enter(s, init), DIST_INVALID_ARGUMENT,
         "dist_strategy_colocate_vars_with_enter", "variable");
  DT_ERR(dist_strategy_colocate_vars_with_enter(NULL, v1), DIST_INVALID_ARGUMENT,
         "dist_strategy_colocate_vars_with_enter", "strategy");
  DT_ERR(dist_strategy_colocate_vars_with_enter(s, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_colocate_vars_with_enter", "variable");
  DT_ERR(dist_strategy_colocate_vars_with_exit(NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_colocate_vars_with_exit", "strategy");
  {
    /* Another strategy's colocation inside s's scope. */
    dist_strategy_t* other = dts_mirrored(3);
    DT_ERR(dist_strategy_colocate_vars_with_enter(other, v1), DIST_FAILED_PRECONDITION,
           "dist_strategy_colocate_vars_with_enter", NULL);
    DT_OK(dist_strategy_colocate_vars_with_enter(s, v1));
    DT_ERR(dist_strategy_colocate_vars_with_exit(other), DIST_FAILED_PRECONDITION,
           "dist_strategy_colocate_vars_with_exit", NULL);
    DT_OK(dist_strategy_colocate_vars_with_exit(s));
    dist_strategy_destroy(other);
  }
  DT_OK(dist_strategy_scope_exit(s));
  /* Must be inside the scope. */
  DT_ERR(dist_strategy_colocate_vars_with_enter(s, v1), DIST_FAILED_PRECONDITION,
         "dist_strategy_colocate_vars_with_enter", "scope");
  DT_ERR(dist_strategy_colocate_vars_with_exit(s), DIST_FAILED_PRECONDITION,
         "dist_strategy_colocate_vars_with_exit", NULL);
  dist_value_destroy(v1);
  dist_value_destroy(v2);
  dist_value_destroy(v4);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

static void test_variable_created_in_scope(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_strategy_t* other = dts_one_device("CPU:1");
  dist_value_t* init = dts_f32_scalar(1.0f, NULL);
  dist_value_t* inside = NULL;
  dist_value_t* outside = NULL;
  dist_value_t* elsewhere = NULL;
  int32_t created = -1;
  (void)state;
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &outside));
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &inside));
  DT_OK(dist_strategy_scope_exit(s));
  DT_OK(dist_strategy_scope_enter(other));
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, NULL, &elsewhere));
  DT_OK(dist_strategy_scope_exit(other));
  DT_OK(dist_strategy_variable_created_in_scope(s, inside, &created));
  assert_int_equal(created, 1);
  DT_OK(dist_strategy_variable_created_in_scope(s, outside, &created));
  assert_int_equal(created, 0);
  DT_OK(dist_strategy_variable_created_in_scope(s, elsewhere, &created));
  assert_int_equal(created, 0);
  DT_OK(dist_strategy_variable_created_in_scope(other, elsewhere, &created));
  assert_int_equal(created, 1);
  DT_OK(dist_strategy_variable_created_in_scope(other, inside, &created));
  assert_int_equal(created, 0);
  created = 77;
  DT_ERR(dist_strategy_variable_created_in_scope(s, init, &created), DIST_INVALID_ARGUMENT,
         "dist_strategy_variable_created_in_scope", "variable");
  assert_int_equal(created, 0);
  DT_ERR(dist_strategy_variable_created_in_scope(NULL, inside, &created), DIST_INVALID_ARGUMENT,
         "dist_strategy_variable_created_in_scope", "strategy");
  DT_ERR(dist_strategy_variable_created_in_scope(s, NULL, &created), DIST_INVALID_ARGUMENT,
         "dist_strategy_variable_created_in_scope", "variable");
  DT_ERR(dist_strategy_variable_created_in_scope(s, inside, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_variable_created_in_scope", "out_created");
  dist_value_destroy(inside);
  dist_value_destroy(outside);
  dist_value_destroy(elsewhere);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
  dist_strategy_destroy(other);
}

/* Colocating with one copy of a MirroredVariable (dist_value_component: "a plain variable"
 * on one device) places new variables on that one device. The scope is left before the
 * assertions so that a failure does not leak into other tests. */
static void test_colocate_vars_with_component(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  dist_value_t* init = dts_f32_scalar(1.0f, NULL);
  dist_value_t* v1 = NULL;
  dist_value_t* v3 = NULL;
  dist_value_t* component = NULL;
  const char* cpu2[1] = {"/device:CPU:2"};
  dist_status_t entered;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &v1));
  component = dts_component(v1, 2);
  entered = dist_strategy_colocate_vars_with_enter(s, component);
  if (entered == DIST_OK) {
    if (dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &v3) !=
        DIST_OK) {
      v3 = NULL;
    }
    DT_OK(dist_strategy_colocate_vars_with_exit(s));
  }
  DT_OK(dist_strategy_scope_exit(s));
  dist_value_destroy(component);
  dist_value_destroy(v1);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
  {
    /* Observe v3, release it, then assert (a failure leaks nothing). */
    dist_value_kind_t kind = 0;
    int32_t copies = 0;
    char device[64] = "";
    if (v3 != NULL && dist_value_kind(v3, &kind) == DIST_OK &&
        dist_value_num_components(v3, &copies) == DIST_OK) {
      dist_value_t* c = NULL;
      dist_value_t* read = NULL;
      const char* name = NULL;
      if (dist_value_component(v3, 0, &c) == DIST_OK && dist_variable_read(c, &read) == DIST_OK &&
          dist_tensor_device(read, &name) == DIST_OK) {
        snprintf(device, sizeof(device), "%s", name);
      }
      dist_value_destroy(read);
      dist_value_destroy(c);
    }
    dist_value_destroy(v3);
    assert_int_equal(entered, DIST_OK);
    if (kind != DIST_VALUE_VARIABLE || copies != 1 || strcmp(device, cpu2[0]) != 0) {
      fail_msg("a variable created while colocated with copy 2 of a MirroredVariable is of kind "
               "%d with %d copies (the first on %s); expected one plain variable on %s",
               kind, copies, device, cpu2[0]);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reduce_per_replica),
      cmocka_unit_test(test_reduce_mirrored_and_tensors),
      cmocka_unit_test(test_reduce_with_one_replica),
      cmocka_unit_test(test_reduce_variables),
      cmocka_unit_test(test_reduce_sync_on_read_variable),
      cmocka_unit_test(test_reduce_rejects_misuse),
      cmocka_unit_test(test_reduce_bool),
      cmocka_unit_test(test_reduce_axis_reference_batches),
      cmocka_unit_test(test_reduce_axis_rank2),
      cmocka_unit_test(test_reduce_axis_empty_component),
      cmocka_unit_test(test_reduce_axis_int),
      cmocka_unit_test(test_integer_mean_is_float),
      cmocka_unit_test(test_integer_mean_all_reduce),
      cmocka_unit_test(test_reduce_axis_plain_tensor),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_reduce_to),
      cmocka_unit_test(test_reduce_to_rejects_misuse),
      cmocka_unit_test(test_batch_reduce_to),
      cmocka_unit_test(test_update),
      cmocka_unit_test(test_update_single_copy),
      cmocka_unit_test(test_update_rejects_misuse),
      cmocka_unit_test(test_cross_replica_calls_in_replica_context),
      cmocka_unit_test(test_cross_replica_call_in_other_scope),
      cmocka_unit_test(test_colocate_vars_with),
      cmocka_unit_test(test_colocate_vars_with_component),
      cmocka_unit_test(test_variable_created_in_scope),
  };
  return cmocka_run_group_tests_name("reduce", tests, setup, NULL);
}
