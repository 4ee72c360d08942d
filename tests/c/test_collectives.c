/* Tests for the collectives of context.h (all_reduce, batch_all_reduce, all_gather,
 * broadcast, merge_call) and for cross_device_ops.h. Every reduction is checked against a
 * reference computed here in double precision from the inputs' formula; results must be
 * bit-identical on every replica and across runs. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <time.h>

#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

/* ---- Scalar conversions, written independently of the library ---- */

static double pow2(int e) {
  double v = 1.0;
  while (e > 0) {
    v *= 2.0;
    --e;
  }
  while (e < 0) {
    v *= 0.5;
    ++e;
  }
  return v;
}

static double half_to_double(uint16_t h) {
  const int sign = h >> 15;
  const int exponent = (h >> 10) & 0x1f;
  const int mantissa = h & 0x3ff;
  double v;
  if (exponent == 0) {
    v = (double)mantissa * pow2(-24);
  } else if (exponent == 31) {
    v = 1e300 * 1e300; /* inf or NaN: never expected here */
  } else {
    v = (double)(mantissa + 1024) * pow2(exponent - 25);
  }
  return sign ? -v : v;
}

/* float16 bits of v, which must be exactly representable (returns 0 and sets *ok = 0 if not). */
static uint16_t double_to_half_exact(double v, int* ok) {
  uint16_t sign = 0;
  int e = 0;
  double m;
  if (v == 0.0) return 0;
  if (v < 0) {
    sign = 0x8000;
    v = -v;
  }
  /* v = m * 2^e with m in [1, 2) */
  m = v;
  while (m >= 2.0) {
    m *= 0.5;
    ++e;
  }
  while (m < 1.0) {
    m *= 2.0;
    --e;
  }
  if (e < -14 || e > 15) {
    *ok = 0;
    return 0;
  }
  {
    const double f = (m - 1.0) * 1024.0;
    const long fi = (long)f;
    if ((double)fi != f) {
      *ok = 0;
      return 0;
    }
    return (uint16_t)(sign | (uint16_t)((e + 15) << 10) | (uint16_t)fi);
  }
}

static double bfloat16_to_double(uint16_t b) {
  const uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof(f));
  return (double)f;
}

static uint16_t double_to_bfloat16_exact(double v, int* ok) {
  const float f = (float)v;
  uint32_t bits;
  memcpy(&bits, &f, sizeof(bits));
  if ((double)f != v || (bits & 0xffffu) != 0) *ok = 0;
  return (uint16_t)(bits >> 16);
}

/* Stores v (exactly representable in dtype) as element i of buffer; 0 when it is not. */
static int store_element(dist_dtype_t dtype, void* buffer, size_t i, double v) {
  int ok = 1;
  switch (dtype) {
    case DIST_FLOAT32: ((float*)buffer)[i] = (float)v; break;
    case DIST_FLOAT64: ((double*)buffer)[i] = v; break;
    case DIST_INT32: ((int32_t*)buffer)[i] = (int32_t)v; break;
    case DIST_UINT8: ((uint8_t*)buffer)[i] = (uint8_t)v; break;
    case DIST_INT16: ((int16_t*)buffer)[i] = (int16_t)v; break;
    case DIST_INT8: ((int8_t*)buffer)[i] = (int8_t)v; break;
    case DIST_INT64: ((int64_t*)buffer)[i] = (int64_t)v; break;
    case DIST_BOOL: ((uint8_t*)buffer)[i] = (uint8_t)(v != 0.0); break;
    case DIST_FLOAT16: ((uint16_t*)buffer)[i] = double_to_half_exact(v, &ok); break;
    case DIST_BFLOAT16: ((uint16_t*)buffer)[i] = double_to_bfloat16_exact(v, &ok); break;
    default: return 0;
  }
  return ok;
}

static double load_element(dist_dtype_t dtype, const void* buffer, size_t i) {
  switch (dtype) {
    case DIST_FLOAT32: return (double)((const float*)buffer)[i];
    case DIST_FLOAT64: return ((const double*)buffer)[i];
    case DIST_INT32: return (double)((const int32_t*)buffer)[i];
    case DIST_UINT8: return (double)((const uint8_t*)buffer)[i];
    case DIST_INT16: return (double)((const int16_t*)buffer)[i];
    case DIST_INT8: return (double)((const int8_t*)buffer)[i];
    case DIST_INT64: return (double)((const int64_t*)buffer)[i];
    case DIST_BOOL: return (double)((const uint8_t*)buffer)[i];
    case DIST_FLOAT16: return half_to_double(((const uint16_t*)buffer)[i]);
    case DIST_BFLOAT16: return bfloat16_to_double(((const uint16_t*)buffer)[i]);
    default: return 0.0;
  }
}

static int is_float_dtype(dist_dtype_t dtype) {
  return dtype == DIST_FLOAT32 || dtype == DIST_FLOAT64 || dtype == DIST_FLOAT16 ||
         dtype == DIST_BFLOAT16;
}

/* The allowed error: float32 accumulates a few roundings; the 16-bit floats accumulate in
 * float32 and round once to their own precision. */
static double tolerance(dist_dtype_t dtype, double expected) {
  const double magnitude = (expected < 0 ? -expected : expected) + 1.0;
  switch (dtype) {
    case DIST_FLOAT32: return 4e-6 * magnitude;
    case DIST_FLOAT64: return 1e-13 * magnitude;
    case DIST_FLOAT16: return 1.0 / 1024.0 * magnitude;
    case DIST_BFLOAT16: return 1.0 / 128.0 * magnitude;
    default: return 0.0;
  }
}

/* ---- The inputs: replica r contributes value(dtype, op, r, i) to element i ---- */

static const dist_reduce_op_t all_ops[5] = {DIST_REDUCE_SUM, DIST_REDUCE_MEAN, DIST_REDUCE_MIN,
                                            DIST_REDUCE_MAX, DIST_REDUCE_PRODUCT};

static double input_value(dist_dtype_t dtype, dist_reduce_op_t op, int32_t n, int32_t r,
                          int64_t i) {
  const int64_t k = (int64_t)r * 5 + i * 3;
  if (dtype == DIST_BOOL) return (double)((r + i) % 3 == 0);
  if (op == DIST_REDUCE_MEAN && !is_float_dtype(dtype)) {
    /* c_i + d_r with the d_r summing to n/2 (rounded down): a mean with a fraction. */
    return (double)(3 + i % 5) + (double)(2 * r - (n - 1)) + (r == 0 ? (double)(n / 2) : 0.0);
  }
  if (dtype == DIST_UINT8) return (double)((r + 2 * i) % 4);
  if (!is_float_dtype(dtype)) return (double)(k % 5 - 2);
  if (dtype == DIST_FLOAT32 || dtype == DIST_FLOAT64) {
    /* Not exactly representable sums: rounding is within tolerance. */
    return (double)(k % 5 - 2) * 0.5 + 0.001 * (double)(i % 7) * (double)(r + 1);
  }
  return (double)(k % 5 - 2) * 0.5;
}

static double reference(dist_dtype_t dtype, dist_reduce_op_t op, int32_t n, int64_t i) {
  double acc = input_value(dtype, op, n, 0, i);
  int32_t r;
  for (r = 1; r < n; ++r) {
    const double v = input_value(dtype, op, n, r, i);
    switch (op) {
      case DIST_REDUCE_SUM:
      case DIST_REDUCE_MEAN: acc += v; break;
      case DIST_REDUCE_MIN: acc = v < acc ? v : acc; break;
      case DIST_REDUCE_MAX: acc = v > acc ? v : acc; break;
      case DIST_REDUCE_PRODUCT: acc *= v; break;
      default: break;
    }
  }
  if (op == DIST_REDUCE_MEAN) acc /= (double)n;
  return acc;
}

/* The dtype of the result: TF's MEAN of integers across several replicas is a true
 * division, which gives float32 for 8- and 16-bit integers and float64 for wider ones
 * (tf.constant([3], tf.int8) / 2 -> float32 1.5; tf.constant([3]) / 2 -> float64 1.5). */
static dist_dtype_t result_dtype(dist_dtype_t dtype, dist_reduce_op_t op, int32_t n) {
  if (op != DIST_REDUCE_MEAN || n == 1 || is_float_dtype(dtype) || dtype == DIST_BOOL) {
    return dtype;
  }
  return dt_c_size(dtype) <= 2 ? DIST_FLOAT32 : DIST_FLOAT64;
}

/* Makes replica r's input tensor of `count` elements; NULL on failure. */
static dist_value_t* make_input(dist_dtype_t dtype, dist_reduce_op_t op, int32_t n, int32_t r,
                                int64_t count, const char* device) {
  size_t element = dt_c_size(dtype);
  void* buffer = malloc((size_t)(count > 0 ? count : 1) * element);
  dist_value_t* out = NULL;
  int64_t i;
  int ok = buffer != NULL;
  for (i = 0; ok && i < count; ++i) {
    ok = store_element(dtype, buffer, (size_t)i, input_value(dtype, op, n, r, i));
  }
  if (ok && dist_tensor_create(dtype, &count, 1, buffer, (size_t)count * element, device,
                               &out) != DIST_OK) {
    out = NULL;
  }
  free(buffer);
  return out;
}

/* ---- all_reduce over every op and dtype ---- */

#define N_SIZES 3
static const int64_t sizes[N_SIZES] = {1, 37, 3001};

typedef struct {
  dts_errors errors;
  dist_dtype_t dtype;
  int32_t n;
  /* out[r][op][size]: replica r's result bytes, NULL when the op is rejected */
  unsigned char* out[DTS_MAX_REPLICAS][5][N_SIZES];
  dist_status_t status[DTS_MAX_REPLICAS][5];
} reduce_state;

static dist_status_t all_reduce_everything(dist_context_t* context,
                                           const dist_value_t* const* args, int32_t num_args,
                                           dist_value_t** results, int32_t num_results,
                                           void* user_data) {
  static const int op_order[5] = {2, 3, 0, 1, 4};
  reduce_state* st = (reduce_state*)user_data;
  int32_t r = -1, z;
  int k;
  const char* device = NULL;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_context_device(context, &device));
  /* MIN and MAX first: a rejected bool op fails the collective (releasing the group), so
   * it comes last. */
  for (k = 0; k < 5; ++k) {
    const int o = op_order[k];
    const dist_reduce_op_t op = all_ops[o];
    const int rejected = st->dtype == DIST_BOOL && op != DIST_REDUCE_MIN && op != DIST_REDUCE_MAX;
    for (z = 0; z < N_SIZES; ++z) {
      dist_value_t* x = make_input(st->dtype, op, st->n, r, sizes[z], device);
      dist_value_t* y = (dist_value_t*)DT_SENTINEL_PTR;
      dist_status_t status;
      RCHECK(&st->errors, r, x != NULL, "cannot make the input: %s", dist_last_error_message());
      status = dist_context_all_reduce(context, op, x, &y);
      dist_value_destroy(x);
      st->status[r][o] = status;
      if (rejected) {
        RCHECK(&st->errors, r, status == DIST_INVALID_ARGUMENT && y == NULL,
               "bool op %d returned %s", op, dist_status_name(status));
        RCHECK(&st->errors, r, strstr(dist_last_error_message(), "dist_context_all_reduce") != NULL,
               "message \"%s\"", dist_last_error_message());
        break;
      }
      RCHECK(&st->errors, r, status == DIST_OK, "all_reduce(%d) of %s[%d]: %s: \"%s\"", op,
             dist_dtype_name(st->dtype), (int)sizes[z], dist_status_name(status),
             dist_last_error_message());
      {
        dist_dtype_t dtype = 0;
        int64_t dims[2] = {0, 0};
        int32_t rank = 0;
        const char* out_device = NULL;
        void* data = NULL;
        size_t bytes = 0;
        RCALL(&st->errors, r, dist_tensor_dtype(y, &dtype));
        RCALL(&st->errors, r, dist_tensor_rank(y, &rank));
        RCALL(&st->errors, r, dist_tensor_shape(y, dims, 2));
        RCHECK(&st->errors, r, dtype == result_dtype(st->dtype, op, st->n) && rank == 1 &&
               dims[0] == sizes[z],
               "result is %s rank %d dim %d", dist_dtype_name(dtype), rank, (int)dims[0]);
        RCALL(&st->errors, r, dist_tensor_device(y, &out_device));
        RCHECK(&st->errors, r, strcmp(out_device, device) == 0, "result on %s, replica on %s",
               out_device, device);
        RCALL(&st->errors, r, dist_tensor_data(y, &data));
        RCALL(&st->errors, r, dist_tensor_byte_size(y, &bytes));
        memcpy(st->out[r][o][z], data, bytes);
      }
      dist_value_destroy(y);
    }
  }
  return DIST_OK;
}

/* Runs the all_reduce of every op on `s` three times and checks the results. */
static void check_all_reduce(dist_strategy_t* s, dist_dtype_t dtype, const char* label) {
  const int32_t n = dts_num_replicas(s);
  const size_t element = 8; /* room for any result (an integer MEAN is a float) */
  unsigned char* first[5][N_SIZES];
  reduce_state* st = (reduce_state*)calloc(1, sizeof(reduce_state));
  int run, o, z;
  int32_t r;
  assert_non_null(st);
  st->dtype = dtype;
  st->n = n;
  for (o = 0; o < 5; ++o) {
    for (z = 0; z < N_SIZES; ++z) {
      first[o][z] = (unsigned char*)calloc((size_t)sizes[z], element);
      for (r = 0; r < n; ++r) st->out[r][o][z] = (unsigned char*)calloc((size_t)sizes[z], element);
    }
  }
  for (run = 0; run < 3; ++run) {
    for (r = 0; r < n; ++r) {
      for (o = 0; o < 5; ++o) {
        for (z = 0; z < N_SIZES; ++z) memset(st->out[r][o][z], 0xAB, (size_t)sizes[z] * element);
      }
    }
    DTS_RUN_OK(&st->errors, n, dist_strategy_run(s, all_reduce_everything, st, NULL, 0, NULL, 0));
    for (o = 0; o < 5; ++o) {
      if (dtype == DIST_BOOL && all_ops[o] != DIST_REDUCE_MIN && all_ops[o] != DIST_REDUCE_MAX) {
        continue;
      }
      for (z = 0; z < N_SIZES; ++z) {
        const dist_dtype_t out_dtype = result_dtype(dtype, all_ops[o], n);
        const size_t bytes = (size_t)sizes[z] * dt_c_size(out_dtype);
        int64_t i;
        /* Bit-identical on every replica ... */
        for (r = 1; r < n; ++r) {
          if (memcmp(st->out[r][o][z], st->out[0][o][z], bytes) != 0) {
            fail_msg("%s: %s op %d size %d: replica %d differs from replica 0", label,
                     dist_dtype_name(dtype), all_ops[o], (int)sizes[z], (int)r);
          }
        }
        /* ... and across runs ... */
        if (run == 0) {
          memcpy(first[o][z], st->out[0][o][z], bytes);
        } else if (memcmp(first[o][z], st->out[0][o][z], bytes) != 0) {
          fail_msg("%s: %s op %d size %d: run %d differs from run 0", label,
                   dist_dtype_name(dtype), all_ops[o], (int)sizes[z], run);
        }
        /* ... and equal to the double reference. */
        for (i = 0; i < sizes[z]; ++i) {
          const double expected = reference(dtype, all_ops[o], n, i);
          const double got = load_element(out_dtype, st->out[0][o][z], (size_t)i);
          const double diff = got > expected ? got - expected : expected - got;
          if (!(diff <= tolerance(out_dtype, expected))) {
            fail_msg("%s: %s op %d, %d replicas, element %d of %d: got %.17g, expected %.17g",
                     label, dist_dtype_name(dtype), all_ops[o], (int)n, (int)i, (int)sizes[z],
                     got, expected);
          }
        }
      }
    }
  }
  for (o = 0; o < 5; ++o) {
    for (z = 0; z < N_SIZES; ++z) {
      free(first[o][z]);
      for (r = 0; r < n; ++r) free(st->out[r][o][z]);
    }
  }
  free(st);
}

/* The cross-device ops configurations checked; index 0 is "none given". */
#define N_CONFIGS 8
static const char* config_names[N_CONFIGS] = {
    "automatic",          "reduction_to_one_device(NULL)", "reduction_to_one_device(CPU:1)",
    "hierarchical_copy(1)", "hierarchical_copy(3)",        "shared_memory(0)",
    "shared_memory(64)",  "reduction_to_one_device(CPU:3)"};

static dist_cross_device_ops_t* make_config(int c) {
  dist_cross_device_ops_t* ops = NULL;
  dist_cross_device_ops_kind_t kind = 0, expected = 0;
  switch (c) {
    case 0: return NULL;
    case 1:
      DT_OK(dist_cross_device_ops_create_reduction_to_one_device(NULL, &ops));
      expected = DIST_CROSS_DEVICE_OPS_REDUCTION_TO_ONE_DEVICE;
      break;
    case 2:
      DT_OK(dist_cross_device_ops_create_reduction_to_one_device("CPU:1", &ops));
      expected = DIST_CROSS_DEVICE_OPS_REDUCTION_TO_ONE_DEVICE;
      break;
    case 3:
      DT_OK(dist_cross_device_ops_create_hierarchical_copy(1, &ops));
      expected = DIST_CROSS_DEVICE_OPS_HIERARCHICAL_COPY;
      break;
    case 4:
      DT_OK(dist_cross_device_ops_create_hierarchical_copy(3, &ops));
      expected = DIST_CROSS_DEVICE_OPS_HIERARCHICAL_COPY;
      break;
    case 5:
      DT_OK(dist_cross_device_ops_create_shared_memory(0, &ops));
      expected = DIST_CROSS_DEVICE_OPS_SHARED_MEMORY;
      break;
    case 6:
      DT_OK(dist_cross_device_ops_create_shared_memory(64, &ops));
      expected = DIST_CROSS_DEVICE_OPS_SHARED_MEMORY;
      break;
    default:
      /* A device that holds no replica when the strategy has fewer than 4. */
      DT_OK(dist_cross_device_ops_create_reduction_to_one_device("CPU:3", &ops));
      expected = DIST_CROSS_DEVICE_OPS_REDUCTION_TO_ONE_DEVICE;
      break;
  }
  assert_non_null(ops);
  DT_OK(dist_cross_device_ops_kind(ops, &kind));
  assert_int_equal(kind, expected);
  return ops;
}

static void all_reduce_every_dtype(int32_t n) {
  int c, d;
  for (c = 0; c < N_CONFIGS; ++c) {
    dist_cross_device_ops_t* ops = make_config(c);
    dist_strategy_t* s = dts_mirrored_with(n, ops);
    char label[96];
    dist_cross_device_ops_destroy(ops); /* the strategy keeps its own reference */
    snprintf(label, sizeof(label), "%s, %d replicas", config_names[c], (int)n);
    for (d = 0; d < DT_NUM_DTYPES; ++d) check_all_reduce(s, dt_dtype_at(d), label);
    dist_strategy_destroy(s);
  }
}

static void test_all_reduce_4_replicas(void** state) {
  (void)state;
  all_reduce_every_dtype(4);
}

static void test_all_reduce_3_replicas(void** state) {
  (void)state;
  all_reduce_every_dtype(3);
}

static void test_all_reduce_2_replicas(void** state) {
  (void)state;
  all_reduce_every_dtype(2);
}

static void test_all_reduce_1_replica(void** state) {
  dist_strategy_t* s = dts_mirrored(1);
  int d;
  (void)state;
  for (d = 0; d < DT_NUM_DTYPES; ++d) check_all_reduce(s, dt_dtype_at(d), "1 replica");
  dist_strategy_destroy(s);
}

/* int64 sums beyond 32 bits. */
typedef struct {
  dts_errors errors;
  int64_t got[DTS_MAX_REPLICAS][3];
} int64_state;

static dist_status_t sum_large_int64(dist_context_t* context, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** results, int32_t num_results,
                                     void* user_data) {
  int64_state* st = (int64_state*)user_data;
  int32_t r = -1;
  int64_t v[3];
  const int64_t dims[1] = {3};
  dist_value_t* x = NULL;
  dist_value_t* y = NULL;
  void* data = NULL;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  v[0] = ((int64_t)1 << 40) * (r + 1) + r;
  v[1] = -((int64_t)3 << 50) + r;
  v[2] = (int64_t)r - 2;
  RCALL(&st->errors, r, dist_tensor_create(DIST_INT64, dims, 1, v, sizeof(v), NULL, &x));
  RCALL(&st->errors, r, dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &y));
  RCALL(&st->errors, r, dist_tensor_data(y, &data));
  memcpy(st->got[r], data, sizeof(v));
  dist_value_destroy(x);
  dist_value_destroy(y);
  return DIST_OK;
}

static void test_all_reduce_large_int64(void** state) {
  dist_strategy_t* s = dts_mirrored(4);
  int64_state st;
  int32_t r;
  (void)state;
  memset(&st, 0, sizeof(st));
  DTS_RUN_OK(&st.errors, 4, dist_strategy_run(s, sum_large_int64, &st, NULL, 0, NULL, 0));
  for (r = 0; r < 4; ++r) {
    assert_true(st.got[r][0] == ((int64_t)1 << 40) * 10 + 6);
    assert_true(st.got[r][1] == -((int64_t)3 << 50) * 4 + 6);
    assert_true(st.got[r][2] == -2);
  }
  dist_strategy_destroy(s);
}

/* ---- batch_all_reduce with mixed dtypes and shapes ---- */

#define N_BATCH 6
typedef struct {
  dts_errors errors;
  dist_reduce_op_t op;
} batch_state;

static const dist_dtype_t batch_dtypes[N_BATCH] = {DIST_FLOAT32, DIST_INT32, DIST_FLOAT64,
                                                   DIST_FLOAT16, DIST_INT64, DIST_FLOAT32};
static const int32_t batch_ranks[N_BATCH] = {2, 1, 0, 1, 2, 1};
static const int64_t batch_dims[N_BATCH][2] = {{3, 4}, {7, 0}, {0, 0}, {5, 0}, {2, 2}, {0, 0}};

static int64_t batch_count(int t) {
  int64_t count = 1;
  int32_t d;
  for (d = 0; d < batch_ranks[t]; ++d) count *= batch_dims[t][d];
  return count;
}

static double batch_input(int t, int32_t r, int64_t i) {
  /* Exact in every dtype used, small enough for float16. */
  return (double)((r * 3 + i * 5 + t) % 9 - 4) * 0.5 * (batch_dtypes[t] == DIST_INT32 ||
                                                         batch_dtypes[t] == DIST_INT64 ? 2.0 : 1.0);
}

static dist_status_t batch_reduce(dist_context_t* context, const dist_value_t* const* args,
                                  int32_t num_args, dist_value_t** results, int32_t num_results,
                                  void* user_data) {
  batch_state* st = (batch_state*)user_data;
  int32_t r = -1, n = 0;
  int t;
  dist_value_t* in[N_BATCH];
  dist_value_t* out[N_BATCH];
  (void)args;
  (void)num_args;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_context_num_replicas_in_sync(context, &n));
  for (t = 0; t < N_BATCH; ++t) {
    const size_t element = dt_c_size(batch_dtypes[t]);
    const int64_t count = batch_count(t);
    unsigned char buffer[64 * 8];
    int64_t i;
    for (i = 0; i < count; ++i) {
      RCHECK(&st->errors, r, store_element(batch_dtypes[t], buffer, (size_t)i, batch_input(t, r, i)),
             "input not representable");
    }
    RCALL(&st->errors, r,
          dist_tensor_create(batch_dtypes[t], batch_dims[t], batch_ranks[t],
                             count ? buffer : NULL, (size_t)count * element, NULL, &in[t]));
    out[t] = (dist_value_t*)DT_SENTINEL_PTR;
  }
  RCALL(&st->errors, r,
        dist_context_batch_all_reduce(context, st->op, (const dist_value_t* const*)in, N_BATCH,
                                      out));
  for (t = 0; t < N_BATCH; ++t) {
    /* Result t keeps input t's dtype and shape. The results go back through run. */
    dist_dtype_t dtype = 0;
    int32_t rank = -1;
    int64_t dims[2] = {-1, -1};
    RCALL(&st->errors, r, dist_tensor_dtype(out[t], &dtype));
    RCALL(&st->errors, r, dist_tensor_rank(out[t], &rank));
    RCALL(&st->errors, r, dist_tensor_shape(out[t], dims, 2));
    RCHECK(&st->errors, r, dtype == batch_dtypes[t] && rank == batch_ranks[t],
           "result %d is %s of rank %d", t, dist_dtype_name(dtype), rank);
    RCHECK(&st->errors, r, rank < 1 || dims[0] == batch_dims[t][0], "result %d dim 0", t);
    RCHECK(&st->errors, r, rank < 2 || dims[1] == batch_dims[t][1], "result %d dim 1", t);
    results[t] = out[t];
    dist_value_destroy(in[t]);
  }
  return DIST_OK;
}

static void check_batch(dist_strategy_t* s, dist_reduce_op_t op, const char* label) {
  const int32_t n = dts_num_replicas(s);
  dist_value_t* results[N_BATCH];
  batch_state st;
  int t;
  memset(&st, 0, sizeof(st));
  st.op = op;
  DTS_RUN_OK(&st.errors, n, dist_strategy_run(s, batch_reduce, &st, NULL, 0, results, N_BATCH));
  for (t = 0; t < N_BATCH; ++t) {
    const int64_t count = batch_count(t);
    int32_t r;
    for (r = 0; r < n; ++r) {
      dist_value_t* c = n == 1 ? results[t] : dts_component(results[t], r);
      void* data = NULL;
      int64_t i;
      DT_OK(dist_tensor_data(c, &data));
      for (i = 0; i < count; ++i) {
        double expected = batch_input(t, 0, i);
        double got = load_element(batch_dtypes[t], data, (size_t)i);
        int32_t q;
        for (q = 1; q < n; ++q) {
          const double v = batch_input(t, q, i);
          if (op == DIST_REDUCE_SUM) expected += v;
          if (op == DIST_REDUCE_MAX) expected = v > expected ? v : expected;
        }
        if (got != expected) {
          fail_msg("%s: batch tensor %d (%s) element %d on replica %d: got %g, expected %g",
                   label, t, dist_dtype_name(batch_dtypes[t]), (int)i, (int)r, got, expected);
        }
      }
      if (n != 1) dist_value_destroy(c);
    }
    dist_value_destroy(results[t]);
  }
}

static void test_batch_all_reduce_mixed(void** state) {
  int c;
  (void)state;
  for (c = 0; c < N_CONFIGS; ++c) {
    dist_cross_device_ops_t* ops = make_config(c);
    dist_strategy_t* s = dts_mirrored_with(4, ops);
    dist_strategy_t* three = dts_mirrored_with(3, ops);
    dist_cross_device_ops_destroy(ops);
    check_batch(s, DIST_REDUCE_SUM, config_names[c]);
    check_batch(s, DIST_REDUCE_MAX, config_names[c]);
    check_batch(three, DIST_REDUCE_SUM, config_names[c]);
    dist_strategy_destroy(s);
    dist_strategy_destroy(three);
  }
}

/* ---- all_gather ---- */

typedef struct {
  dts_errors errors;
  int32_t axis;
} gather_state;

/* Replica r's tensor: int32 [r+1, 3] for axis 0, [2, r+1] for axis 1 / -1, element
 * (a, b) = 1000 r + 10 a + b. */
static dist_status_t gather_rows(dist_context_t* context, const dist_value_t* const* args,
                                 int32_t num_args, dist_value_t** results, int32_t num_results,
                                 void* user_data) {
  gather_state* st = (gather_state*)user_data;
  int32_t r = -1;
  int64_t dims[2];
  int32_t values[64];
  int64_t a, b;
  dist_value_t* x = NULL;
  const char* device = NULL;
  const char* out_device = NULL;
  (void)args;
  (void)num_args;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_context_device(context, &device));
  /* rank 2: axis 0 is also -2, axis 1 also -1 */
  dims[0] = (st->axis == 0 || st->axis == -2) ? r + 1 : 2;
  dims[1] = (st->axis == 0 || st->axis == -2) ? 3 : r + 1;
  for (a = 0; a < dims[0]; ++a) {
    for (b = 0; b < dims[1]; ++b) values[a * dims[1] + b] = (int32_t)(1000 * r + 10 * a + b);
  }
  RCALL(&st->errors, r,
        dist_tensor_create(DIST_INT32, dims, 2, values,
                           (size_t)(dims[0] * dims[1]) * sizeof(int32_t), device, &x));
  RCALL(&st->errors, r, dist_context_all_gather(context, x, st->axis, &results[0]));
  RCALL(&st->errors, r, dist_tensor_device(results[0], &out_device));
  RCHECK(&st->errors, r, strcmp(out_device, device) == 0, "gathered on %s", out_device);
  dist_value_destroy(x);
  return DIST_OK;
}

static void check_gather(int32_t n, int32_t axis) {
  dist_strategy_t* s = dts_mirrored(n);
  gather_state st;
  dist_value_t* result = NULL;
  int32_t r, total = n * (n + 1) / 2;
  (void)total;
  memset(&st, 0, sizeof(st));
  st.axis = axis;
  DTS_RUN_OK(&st.errors, n, dist_strategy_run(s, gather_rows, &st, NULL, 0, &result, 1));
  for (r = 0; r < n; ++r) {
    dist_value_t* c = n == 1 ? result : dts_component(result, r);
    int64_t dims[2] = {0, 0};
    int32_t* data = NULL;
    int64_t a, b;
    DT_OK(dist_tensor_shape(c, dims, 2));
    if (axis == 0 || axis == -2) {
      assert_int_equal(dims[0], n * (n + 1) / 2);
      assert_int_equal(dims[1], 3);
      /* Rows in replica order: replica q contributes q+1 rows. */
      DT_OK(dist_tensor_data(c, (void**)&data));
      {
        int64_t row = 0;
        int32_t q;
        for (q = 0; q < n; ++q) {
          for (a = 0; a <= q; ++a, ++row) {
            for (b = 0; b < 3; ++b) assert_int_equal(data[row * 3 + b], 1000 * q + 10 * a + b);
          }
        }
      }
    } else {
      const int64_t width = n * (n + 1) / 2;
      assert_int_equal(dims[0], 2);
      assert_int_equal(dims[1], width);
      DT_OK(dist_tensor_data(c, (void**)&data));
      for (a = 0; a < 2; ++a) {
        int64_t col = 0;
        int32_t q;
        for (q = 0; q < n; ++q) {
          for (b = 0; b <= q; ++b, ++col) {
            assert_int_equal(data[a * width + col], 1000 * q + 10 * a + b);
          }
        }
      }
    }
    if (n != 1) dist_value_destroy(c);
  }
  dist_value_destroy(result);
  dist_strategy_destroy(s);
}

static void test_all_gather(void** state) {
  (void)state;
  check_gather(4, 0);
  check_gather(4, 1);
  check_gather(4, -1);
  check_gather(3, -2);
  check_gather(2, 1);
  check_gather(1, 0);
}

typedef struct {
  dts_errors errors;
  int case_id;
} gather_error_state;

static dist_status_t gather_errors(dist_context_t* context, const dist_value_t* const* args,
                                   int32_t num_args, dist_value_t** results, int32_t num_results,
                                   void* user_data) {
  gather_error_state* st = (gather_error_state*)user_data;
  int32_t r = -1;
  dist_value_t* x = NULL;
  dist_value_t* y = (dist_value_t*)DT_SENTINEL_PTR;
  float values[8] = {0};
  int64_t dims[2] = {2, 2};
  dist_status_t status;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  if (st->case_id == 0) {
    /* Axis out of range on every replica. */
    RCALL(&st->errors, r, dist_tensor_create(DIST_FLOAT32, dims, 2, values, 16, NULL, &x));
    RCHECK_ERR(&st->errors, r, dist_context_all_gather(context, x, 2, &y), DIST_INVALID_ARGUMENT,
               "axis");
    RCHECK_ERR(&st->errors, r, dist_context_all_gather(context, x, -3, &y),
               DIST_INVALID_ARGUMENT, "axis");
  } else if (st->case_id == 1) {
    /* Scalars have no axis. */
    RCALL(&st->errors, r, dist_tensor_create(DIST_FLOAT32, NULL, 0, values, 4, NULL, &x));
    RCHECK_ERR(&st->errors, r, dist_context_all_gather(context, x, 0, &y), DIST_INVALID_ARGUMENT,
               "dist_context_all_gather");
  } else {
    /* Replicas differ in a dimension other than the axis. */
    dims[1] = r == 0 ? 2 : 3;
    RCALL(&st->errors, r,
          dist_tensor_create(DIST_FLOAT32, dims, 2, values,
                             (size_t)(dims[0] * dims[1]) * sizeof(float), NULL, &x));
    status = dist_context_all_gather(context, x, 0, &y);
    RCHECK(&st->errors, r, status == DIST_INVALID_ARGUMENT, "all_gather returned %s",
           dist_status_name(status));
    RCHECK(&st->errors, r, strstr(dist_last_error_message(), "replica 0") != NULL &&
                               strstr(dist_last_error_message(), "replica 1") != NULL,
           "message \"%s\" does not name the replicas", dist_last_error_message());
  }
  RCHECK(&st->errors, r, y == NULL, "out not reset");
  dist_value_destroy(x);
  return DIST_OK;
}

static void test_all_gather_errors(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  gather_error_state st;
  int c;
  (void)state;
  for (c = 0; c < 3; ++c) {
    memset(&st, 0, sizeof(st));
    st.case_id = c;
    DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, gather_errors, &st, NULL, 0, NULL, 0));
  }
  check_gather(2, 0);
  dist_strategy_destroy(s);
}

/* Replica r contributes r rows of int32 [r, 2] (replica 0 contributes none). */
typedef struct {
  dts_errors errors;
} empty_gather_state;

static dist_status_t gather_with_empty(dist_context_t* context, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** results,
                                       int32_t num_results, void* user_data) {
  empty_gather_state* st = (empty_gather_state*)user_data;
  int32_t r = -1;
  int64_t dims[2];
  int32_t values[16];
  int64_t a;
  dist_value_t* x = NULL;
  (void)args;
  (void)num_args;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  dims[0] = r;
  dims[1] = 2;
  for (a = 0; a < 2 * r; ++a) values[a] = (int32_t)(100 * r + a);
  RCALL(&st->errors, r,
        dist_tensor_create(DIST_INT32, dims, 2, r == 0 ? NULL : values,
                           (size_t)(2 * r) * sizeof(int32_t), NULL, &x));
  RCALL(&st->errors, r, dist_context_all_gather(context, x, 0, &results[0]));
  dist_value_destroy(x);
  return DIST_OK;
}

static void test_all_gather_with_empty_contribution(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  empty_gather_state st;
  dist_value_t* result = NULL;
  const int32_t expected[6] = {100, 101, 200, 201, 202, 203};
  int32_t r;
  (void)state;
  memset(&st, 0, sizeof(st));
  DTS_RUN_OK(&st.errors, 3, dist_strategy_run(s, gather_with_empty, &st, NULL, 0, &result, 1));
  for (r = 0; r < 3; ++r) {
    dist_value_t* c = dts_component(result, r);
    int64_t dims[2] = {0, 0};
    int32_t* data = NULL;
    DT_OK(dist_tensor_shape(c, dims, 2));
    assert_int_equal(dims[0], 3);
    assert_int_equal(dims[1], 2);
    DT_OK(dist_tensor_data(c, (void**)&data));
    assert_memory_equal(data, expected, sizeof(expected));
    dist_value_destroy(c);
  }
  dist_value_destroy(result);
  dist_strategy_destroy(s);
}

/* all_reduce of a variable reduces this replica's value of it. */
typedef struct {
  dts_errors errors;
  dist_value_t* mirrored_var;
  dist_value_t* on_read_var;
  float got[DTS_MAX_REPLICAS][2];
} variable_reduce_state;

static dist_status_t reduce_variables(dist_context_t* context, const dist_value_t* const* args,
                                      int32_t num_args, dist_value_t** results,
                                      int32_t num_results, void* user_data) {
  variable_reduce_state* st = (variable_reduce_state*)user_data;
  int32_t r = -1;
  float local = 0.0f;
  dist_value_t* t = NULL;
  dist_value_t* y = NULL;
  dist_value_t* ys[2];
  const dist_value_t* xs[2];
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  /* Make the SyncOnRead copies differ: copy r holds 10 (r + 1). */
  local = 10.0f * (float)(r + 1);
  t = dts_make_f32(&local, -1, NULL);
  RCHECK(&st->errors, r, t != NULL, "make");
  RCALL(&st->errors, r, dist_variable_assign(st->on_read_var, t));
  dist_value_destroy(t);
  RCALL(&st->errors, r, dist_context_all_reduce(context, DIST_REDUCE_SUM, st->on_read_var, &y));
  RCHECK(&st->errors, r, dts_get_f32(y, &st->got[r][0], 1) == 1, "result");
  dist_value_destroy(y);
  xs[0] = st->mirrored_var;
  xs[1] = st->on_read_var;
  ys[0] = ys[1] = NULL;
  RCALL(&st->errors, r, dist_context_batch_all_reduce(context, DIST_REDUCE_MAX, xs, 2, ys));
  RCHECK(&st->errors, r, dts_get_f32(ys[0], &st->got[r][1], 1) == 1, "result");
  RCHECK(&st->errors, r, dts_get_f32(ys[1], &local, 1) == 1 && local == 10.0f * 3.0f,
         "MAX of the SyncOnRead copies is %g", (double)local);
  dist_value_destroy(ys[0]);
  dist_value_destroy(ys[1]);
  return DIST_OK;
}

static void test_all_reduce_of_variables(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  dist_value_t* init = dts_f32_scalar(2.5f, NULL);
  variable_reduce_state st;
  int32_t r;
  (void)state;
  memset(&st, 0, sizeof(st));
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL,
                             &st.mirrored_var));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_READ, DIST_AGGREGATION_SUM, NULL,
                             &st.on_read_var));
  DT_OK(dist_strategy_scope_exit(s));
  DTS_RUN_OK(&st.errors, 3, dist_strategy_run(s, reduce_variables, &st, NULL, 0, NULL, 0));
  for (r = 0; r < 3; ++r) {
    assert_true(st.got[r][0] == 10.0f + 20.0f + 30.0f);
    assert_true(st.got[r][1] == 2.5f);
  }
  dist_value_destroy(st.mirrored_var);
  dist_value_destroy(st.on_read_var);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

/* ---- broadcast ---- */

typedef struct {
  dts_errors errors;
  int32_t source;
} broadcast_state;

static dist_status_t broadcast_from(dist_context_t* context, const dist_value_t* const* args,
                                    int32_t num_args, dist_value_t** results, int32_t num_results,
                                    void* user_data) {
  broadcast_state* st = (broadcast_state*)user_data;
  int32_t r = -1;
  const char* device = NULL;
  const char* out_device = NULL;
  float v[3];
  dist_value_t* x = NULL;
  (void)args;
  (void)num_args;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_context_device(context, &device));
  v[0] = (float)r;
  v[1] = 10.0f * (float)r;
  v[2] = -1.0f - (float)r;
  x = dts_make_f32(v, 3, device);
  RCHECK(&st->errors, r, x != NULL, "make");
  RCALL(&st->errors, r, dist_context_broadcast(context, x, st->source, &results[0]));
  RCALL(&st->errors, r, dist_tensor_device(results[0], &out_device));
  RCHECK(&st->errors, r, strcmp(out_device, device) == 0, "broadcast result on %s", out_device);
  dist_value_destroy(x);
  return DIST_OK;
}

static void test_broadcast(void** state) {
  dist_strategy_t* s = dts_mirrored(4);
  broadcast_state st;
  int32_t source, r;
  (void)state;
  for (source = 0; source < 4; ++source) {
    dist_value_t* result = NULL;
    const float expected[3] = {(float)source, 10.0f * (float)source, -1.0f - (float)source};
    memset(&st, 0, sizeof(st));
    st.source = source;
    DTS_RUN_OK(&st.errors, 4, dist_strategy_run(s, broadcast_from, &st, NULL, 0, &result, 1));
    for (r = 0; r < 4; ++r) {
      dist_value_t* c = dts_component(result, r);
      dts_expect_f32(c, expected, 3);
      dist_value_destroy(c);
    }
    dist_value_destroy(result);
  }
  dist_strategy_destroy(s);
}

static dist_status_t broadcast_bad_source(dist_context_t* context,
                                          const dist_value_t* const* args, int32_t num_args,
                                          dist_value_t** results, int32_t num_results,
                                          void* user_data) {
  broadcast_state* st = (broadcast_state*)user_data;
  int32_t r = -1;
  float v = 1.0f;
  dist_value_t* x = NULL;
  dist_value_t* y = (dist_value_t*)DT_SENTINEL_PTR;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  x = dts_make_f32(&v, 1, NULL);
  RCHECK(&st->errors, r, x != NULL, "make");
  RCHECK_ERR(&st->errors, r, dist_context_broadcast(context, x, st->source, &y),
             DIST_INVALID_ARGUMENT, "source_replica");
  RCHECK(&st->errors, r, y == NULL, "out not reset");
  dist_value_destroy(x);
  return DIST_OK;
}

static void test_broadcast_bad_source(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  broadcast_state st;
  const int32_t sources[3] = {-1, 2, 100};
  int i;
  (void)state;
  for (i = 0; i < 3; ++i) {
    memset(&st, 0, sizeof(st));
    st.source = sources[i];
    DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, broadcast_bad_source, &st, NULL, 0, NULL, 0));
  }
  dist_strategy_destroy(s);
}

/* ---- merge_call ---- */

typedef struct {
  dts_errors errors;
  const dist_value_t* var;
  int32_t n;
  int32_t merge_calls;
  int32_t mode; /* 0: PerReplica result, 1: tensor result, 2: nothing, 3: Mirrored result */
  dist_context_t* contexts[DTS_MAX_REPLICAS];
} merge_state;

static dist_status_t merge_fn(dist_strategy_t* strategy, const dist_value_t* const* args,
                              int32_t num_args, dist_value_t** out, void* user_data) {
  merge_state* st = (merge_state*)user_data;
  dist_value_kind_t kind = 0;
  int32_t count = 0, q, in_cross = -1;
  const char* name = NULL;
  dist_value_t* sum = NULL;
  float total = 0.0f;
  st->merge_calls += 1;
  RCHECK(&st->errors, 0, num_args == 3, "merge fn got %d args", num_args);
  RCHECK(&st->errors, 0, *out == NULL, "out is not pre-set to NULL");
  RCALL(&st->errors, 0, dist_in_cross_replica_context(&in_cross));
  RCHECK(&st->errors, 0, in_cross == 1, "merge fn not in cross-replica context");
  /* args[0]: each replica's own tensor, gathered into a PerReplica value. */
  RCALL(&st->errors, 0, dist_value_kind(args[0], &kind));
  RCHECK(&st->errors, 0, kind == DIST_VALUE_PER_REPLICA, "args[0] kind %d", kind);
  RCALL(&st->errors, 0, dist_value_num_components(args[0], &count));
  RCHECK(&st->errors, 0, count == st->n, "args[0] has %d components", count);
  for (q = 0; q < count; ++q) {
    dist_value_t* c = NULL;
    float v = -1.0f;
    RCALL(&st->errors, 0, dist_value_component(args[0], q, &c));
    RCHECK(&st->errors, 0, dts_get_f32(c, &v, 1) == 1 && v == 3.0f * (float)q + 1.0f,
           "args[0] component %d is %g", q, (double)v);
    dist_value_destroy(c);
  }
  /* args[1]: the same variable from every replica arrives as that variable. */
  RCALL(&st->errors, 0, dist_value_kind(args[1], &kind));
  RCHECK(&st->errors, 0, kind == DIST_VALUE_MIRRORED_VARIABLE, "args[1] kind %d", kind);
  RCALL(&st->errors, 0, dist_variable_name(args[1], &name));
  RCHECK(&st->errors, 0, strcmp(name, "merge_var") == 0, "args[1] is %s", name);
  /* args[2]: the same tensor from every replica: a PerReplica value of it. */
  RCALL(&st->errors, 0, dist_value_kind(args[2], &kind));
  RCHECK(&st->errors, 0, kind == DIST_VALUE_PER_REPLICA, "args[2] kind %d", kind);
  /* Cross-replica calls are legal here. */
  RCALL(&st->errors, 0, dist_strategy_reduce(strategy, DIST_REDUCE_SUM, args[0], &sum));
  RCHECK(&st->errors, 0, dts_get_f32(sum, &total, 1) == 1, "reduce result");
  dist_value_destroy(sum);
  {
    float expected = 0.0f;
    for (q = 0; q < st->n; ++q) expected += 3.0f * (float)q + 1.0f;
    RCHECK(&st->errors, 0, total == expected, "reduce gave %g", (double)total);
  }
  if (st->mode == 0 || st->mode == 3) {
    dist_value_t* parts[DTS_MAX_REPLICAS];
    for (q = 0; q < st->n; ++q) {
      const float v = st->mode == 0 ? 100.0f * (float)q + total : total;
      char device[16];
      dts_cpu_name(q, device, sizeof(device));
      parts[q] = dts_make_f32(&v, -1, device);
      RCHECK(&st->errors, 0, parts[q] != NULL, "make");
    }
    if (st->mode == 0) {
      RCALL(&st->errors, 0,
            dist_value_create_per_replica((const dist_value_t* const*)parts, st->n, out));
    } else {
      RCALL(&st->errors, 0,
            dist_value_create_mirrored((const dist_value_t* const*)parts, st->n, out));
    }
    for (q = 0; q < st->n; ++q) dist_value_destroy(parts[q]);
  } else if (st->mode == 1) {
    *out = dts_make_f32(&total, -1, NULL);
  }
  return DIST_OK;
}

static dist_status_t call_merge(dist_context_t* context, const dist_value_t* const* args,
                                int32_t num_args, dist_value_t** results, int32_t num_results,
                                void* user_data) {
  merge_state* st = (merge_state*)user_data;
  int32_t r = -1;
  float v;
  const dist_value_t* merge_args[3];
  dist_value_t* mine = NULL;
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  float got = 0.0f, total = 0.0f;
  int32_t q;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  st->contexts[r] = context;
  v = 3.0f * (float)r + 1.0f;
  mine = dts_make_f32(&v, -1, NULL);
  merge_args[0] = mine;
  merge_args[1] = st->var;
  merge_args[2] = args[0];
  RCALL(&st->errors, r, dist_context_merge_call(context, merge_fn, st, merge_args, 3, &out));
  for (q = 0; q < st->n; ++q) total += 3.0f * (float)q + 1.0f;
  if (st->mode == 2) {
    RCHECK(&st->errors, r, out == NULL, "merge fn stored nothing, out is not NULL");
  } else {
    dist_value_kind_t kind = 0;
    RCALL(&st->errors, r, dist_value_kind(out, &kind));
    RCHECK(&st->errors, r, kind == DIST_VALUE_TENSOR, "replica's part is of kind %d", kind);
    RCHECK(&st->errors, r, dts_get_f32(out, &got, 1) == 1, "part is not a float scalar");
    if (st->mode == 0) {
      RCHECK(&st->errors, r, got == 100.0f * (float)r + total, "part is %g", (double)got);
    } else {
      RCHECK(&st->errors, r, got == total, "part is %g", (double)got);
    }
  }
  dist_value_destroy(out);
  dist_value_destroy(mine);
  return DIST_OK;
}

static void test_merge_call(void** state) {
  const int counts[2] = {2, 4};
  int i, mode;
  (void)state;
  for (i = 0; i < 2; ++i) {
    dist_strategy_t* s = dts_mirrored(counts[i]);
    dist_value_t* init = dts_f32_scalar(0.0f, NULL);
    dist_value_t* var = NULL;
    dist_value_t* shared = dts_f32_scalar(42.0f, NULL);
    const dist_value_t* args[1];
    merge_state st;
    DT_OK(dist_strategy_scope_enter(s));
    DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "merge_var", &var));
    DT_OK(dist_strategy_scope_exit(s));
    args[0] = shared;
    for (mode = 0; mode < 4; ++mode) {
      memset(&st, 0, sizeof(st));
      st.var = var;
      st.n = counts[i];
      st.mode = mode;
      DTS_RUN_OK(&st.errors, counts[i], dist_strategy_run(s, call_merge, &st, args, 1, NULL, 0));
      assert_int_equal(st.merge_calls, 1);
    }
    dist_value_destroy(var);
    dist_value_destroy(init);
    dist_value_destroy(shared);
    dist_strategy_destroy(s);
  }
}

/* merge_call errors: a merge fn failure reaches every replica; a different number of
 * arguments, or different variables, across replicas is INVALID_ARGUMENT. */
typedef struct {
  dts_errors errors;
  int case_id;
  const dist_value_t* vars[2];
  dist_status_t seen[DTS_MAX_REPLICAS];
  int32_t fn_calls;
} merge_error_state;

static dist_status_t failing_merge_fn(dist_strategy_t* strategy, const dist_value_t* const* args,
                                      int32_t num_args, dist_value_t** out, void* user_data) {
  merge_error_state* st = (merge_error_state*)user_data;
  dist_device_t* parsed = NULL;
  (void)strategy;
  (void)args;
  (void)num_args;
  (void)out;
  st->fn_calls += 1;
  if (st->case_id == 0) return dist_device_parse("merge-fn-failure", &parsed);
  return DIST_OK;
}

static dist_status_t merge_errors(dist_context_t* context, const dist_value_t* const* args,
                                  int32_t num_args, dist_value_t** results, int32_t num_results,
                                  void* user_data) {
  merge_error_state* st = (merge_error_state*)user_data;
  int32_t r = -1;
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  const dist_value_t* merge_args[2];
  dist_status_t status;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  if (st->case_id == 0) {
    status = dist_context_merge_call(context, failing_merge_fn, st, NULL, 0, &out);
    st->seen[r] = status;
    RCHECK(&st->errors, r, status == DIST_INVALID_ARGUMENT, "merge_call returned %s",
           dist_status_name(status));
    RCHECK(&st->errors, r, strstr(dist_last_error_message(), "merge-fn-failure") != NULL,
           "message \"%s\" lacks the merge fn's", dist_last_error_message());
  } else if (st->case_id == 1) {
    merge_args[0] = st->vars[0];
    merge_args[1] = st->vars[0];
    status = dist_context_merge_call(context, failing_merge_fn, st, merge_args, r == 0 ? 1 : 2,
                                     &out);
    RCHECK(&st->errors, r, status == DIST_INVALID_ARGUMENT, "merge_call returned %s",
           dist_status_name(status));
    RCHECK(&st->errors, r, strstr(dist_last_error_message(), "replica 0") != NULL &&
                               strstr(dist_last_error_message(), "replica 1") != NULL,
           "message \"%s\" does not name the replicas", dist_last_error_message());
  } else {
    merge_args[0] = st->vars[r == 0 ? 0 : 1];
    status = dist_context_merge_call(context, failing_merge_fn, st, merge_args, 1, &out);
    RCHECK(&st->errors, r, status == DIST_INVALID_ARGUMENT, "merge_call returned %s",
           dist_status_name(status));
  }
  RCHECK(&st->errors, r, out == NULL, "out not reset");
  return status;
}

static void test_merge_call_errors(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_value_t* init = dts_f32_scalar(0.0f, NULL);
  dist_value_t* a = NULL;
  dist_value_t* b = NULL;
  merge_error_state st;
  int c;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &a));
  DT_OK(dist_variable_create(init, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &b));
  DT_OK(dist_strategy_scope_exit(s));
  for (c = 0; c < 3; ++c) {
    dist_status_t status;
    memset(&st, 0, sizeof(st));
    st.case_id = c;
    st.vars[0] = a;
    st.vars[1] = b;
    status = dist_strategy_run(s, merge_errors, &st, NULL, 0, NULL, 0);
    dts_check_errors(&st.errors, 2);
    assert_int_equal(status, DIST_INVALID_ARGUMENT);
    if (c == 0) {
      assert_int_equal(st.fn_calls, 1);
      assert_non_null(strstr(dist_last_error_message(), "merge-fn-failure"));
    } else {
      assert_int_equal(st.fn_calls, 0);
    }
  }
  dist_value_destroy(a);
  dist_value_destroy(b);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

/* ---- Mismatched collectives across replicas ---- */

typedef struct {
  dts_errors errors;
  int case_id;
  char messages[DTS_MAX_REPLICAS][512];
} mismatch_state;

static dist_status_t mismatched_call(dist_context_t* context, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** results,
                                     int32_t num_results, void* user_data) {
  mismatch_state* st = (mismatch_state*)user_data;
  int32_t r = -1;
  dist_value_t* x = NULL;
  dist_value_t* x2 = NULL;
  dist_value_t* y = (dist_value_t*)DT_SENTINEL_PTR;
  dist_value_t* ys[2];
  const dist_value_t* xs[2];
  float values[4] = {1, 2, 3, 4};
  int32_t ints[4] = {1, 2, 3, 4};
  int64_t n3 = 3, n4 = 4;
  dist_status_t status = DIST_OK;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  switch (st->case_id) {
    case 0: /* shapes */
      RCALL(&st->errors, r,
            dist_tensor_create(DIST_FLOAT32, r == 0 ? &n3 : &n4, 1, values, r == 0 ? 12 : 16,
                               NULL, &x));
      status = dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &y);
      break;
    case 1: /* dtypes */
      if (r == 0) {
        RCALL(&st->errors, r, dist_tensor_create(DIST_FLOAT32, &n4, 1, values, 16, NULL, &x));
      } else {
        RCALL(&st->errors, r, dist_tensor_create(DIST_INT32, &n4, 1, ints, 16, NULL, &x));
      }
      status = dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &y);
      break;
    case 2: /* ops */
      RCALL(&st->errors, r, dist_tensor_create(DIST_FLOAT32, &n4, 1, values, 16, NULL, &x));
      status = dist_context_all_reduce(context, r == 0 ? DIST_REDUCE_SUM : DIST_REDUCE_MAX, x, &y);
      break;
    case 3: /* different collectives */
      RCALL(&st->errors, r, dist_tensor_create(DIST_FLOAT32, &n4, 1, values, 16, NULL, &x));
      if (r == 0) {
        status = dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &y);
      } else {
        status = dist_context_broadcast(context, x, 0, &y);
      }
      break;
    case 4: /* batch counts */
      RCALL(&st->errors, r, dist_tensor_create(DIST_FLOAT32, &n4, 1, values, 16, NULL, &x));
      RCALL(&st->errors, r, dist_tensor_create(DIST_FLOAT32, &n4, 1, values, 16, NULL, &x2));
      xs[0] = x;
      xs[1] = x2;
      ys[0] = ys[1] = (dist_value_t*)DT_SENTINEL_PTR;
      status = dist_context_batch_all_reduce(context, DIST_REDUCE_SUM, xs, r == 0 ? 1 : 2, ys);
      y = NULL;
      RCHECK(&st->errors, r, ys[0] == NULL, "outs[0] not reset");
      break;
    case 5: /* broadcast sources */
      RCALL(&st->errors, r, dist_tensor_create(DIST_FLOAT32, &n4, 1, values, 16, NULL, &x));
      status = dist_context_broadcast(context, x, r == 0 ? 0 : 1, &y);
      break;
    default: /* all_gather axes */
      {
        int64_t dims[2] = {2, 2};
        RCALL(&st->errors, r, dist_tensor_create(DIST_FLOAT32, dims, 2, values, 16, NULL, &x));
        status = dist_context_all_gather(context, x, r == 0 ? 0 : 1, &y);
      }
      break;
  }
  snprintf(st->messages[r], sizeof(st->messages[r]), "%s", dist_last_error_message());
  dist_value_destroy(x);
  dist_value_destroy(x2);
  RCHECK(&st->errors, r, status == DIST_INVALID_ARGUMENT, "case %d: returned %s: \"%s\"",
         st->case_id, dist_status_name(status), st->messages[r]);
  RCHECK(&st->errors, r, y == NULL, "out not reset");
  return status;
}

static void test_mismatched_collectives(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  mismatch_state st;
  int c;
  int32_t r;
  (void)state;
  for (c = 0; c < 7; ++c) {
    dist_status_t status;
    memset(&st, 0, sizeof(st));
    st.case_id = c;
    status = dist_strategy_run(s, mismatched_call, &st, NULL, 0, NULL, 0);
    dts_check_errors(&st.errors, 2);
    assert_int_equal(status, DIST_INVALID_ARGUMENT);
    for (r = 0; r < 2; ++r) {
      if (strstr(st.messages[r], "replica 0") == NULL ||
          strstr(st.messages[r], "replica 1") == NULL) {
        fail_msg("case %d, replica %d: message \"%s\" does not name replica 0 and replica 1", c,
                 (int)r, st.messages[r]);
      }
    }
    /* The strategy recovers. */
    check_gather(2, 0);
  }
  dist_strategy_destroy(s);
}

/* ---- Timeouts ---- */

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

typedef struct {
  dts_errors errors;
  int32_t absent;   /* the replica that skips the collective */
  int use_merge;    /* 1: the collective is a merge_call */
  dist_status_t seen[DTS_MAX_REPLICAS];
  double elapsed_ms[DTS_MAX_REPLICAS];
} timeout_state;

static dist_status_t nothing_merge(dist_strategy_t* strategy, const dist_value_t* const* args,
                                   int32_t num_args, dist_value_t** out, void* user_data) {
  (void)strategy;
  (void)args;
  (void)num_args;
  (void)out;
  (void)user_data;
  return DIST_OK;
}

static dist_status_t skip_collective(dist_context_t* context, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** results,
                                     int32_t num_results, void* user_data) {
  timeout_state* st = (timeout_state*)user_data;
  int32_t r = -1;
  float v = 1.0f;
  dist_value_t* x = NULL;
  dist_value_t* y = NULL;
  double start;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  if (r == st->absent) return DIST_OK;
  x = dts_make_f32(&v, 1, NULL);
  start = now_ms();
  if (st->use_merge) {
    st->seen[r] = dist_context_merge_call(context, nothing_merge, NULL, NULL, 0, &y);
  } else {
    st->seen[r] = dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &y);
  }
  st->elapsed_ms[r] = now_ms() - start;
  dist_value_destroy(x);
  dist_value_destroy(y);
  return st->seen[r];
}

static void test_absent_replica_times_out(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  timeout_state st;
  int use_merge;
  int32_t r;
  (void)state;
  for (use_merge = 0; use_merge < 2; ++use_merge) {
    dist_status_t status;
    DT_OK(dist_strategy_set_timeout_ms(s, 200));
    memset(&st, 0, sizeof(st));
    st.absent = 1;
    st.use_merge = use_merge;
    status = dist_strategy_run(s, skip_collective, &st, NULL, 0, NULL, 0);
    dts_check_errors(&st.errors, 3);
    assert_int_equal(status, DIST_DEADLINE_EXCEEDED);
    assert_non_null(strstr(dist_last_error_message(), "dist_strategy_run"));
    for (r = 0; r < 3; ++r) {
      if (r == st.absent) continue;
      /* Each waiting replica expires (or is released by the first that expired). */
      if (st.seen[r] != DIST_DEADLINE_EXCEEDED && st.seen[r] != DIST_ABORTED) {
        fail_msg("replica %d returned %s", (int)r, dist_status_name(st.seen[r]));
      }
    }
    /* The wait that expired lasted the whole timeout. */
    {
      double longest = 0.0;
      for (r = 0; r < 3; ++r) {
        if (st.seen[r] == DIST_DEADLINE_EXCEEDED && st.elapsed_ms[r] > longest) {
          longest = st.elapsed_ms[r];
        }
      }
      if (longest < 200.0) fail_msg("the collective expired after %.3f ms (< 200 ms)", longest);
    }
    /* With a long timeout again, the strategy works. */
    DT_OK(dist_strategy_set_timeout_ms(s, DTS_TIMEOUT_MS));
    {
      broadcast_state bst;
      dist_value_t* result = NULL;
      memset(&bst, 0, sizeof(bst));
      bst.source = 2;
      DTS_RUN_OK(&bst.errors, 3, dist_strategy_run(s, broadcast_from, &bst, NULL, 0, &result, 1));
      dist_value_destroy(result);
    }
  }
  dist_strategy_destroy(s);
}

/* ---- Misuse of the collectives ---- */

typedef struct {
  dts_errors errors;
  dist_context_t* contexts[DTS_MAX_REPLICAS];
  int32_t n;
} collective_misuse_state;

static dist_status_t misuse_in_merge(dist_strategy_t* strategy, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** out, void* user_data) {
  collective_misuse_state* st = (collective_misuse_state*)user_data;
  float v = 1.0f;
  dist_value_t* x = dts_make_f32(&v, 1, NULL);
  dist_value_t* y = (dist_value_t*)DT_SENTINEL_PTR;
  dist_value_t* ys[1];
  const dist_value_t* xs[1];
  int32_t q;
  (void)strategy;
  (void)args;
  (void)num_args;
  (void)out;
  xs[0] = x;
  /* merge_call's fn is cross-replica context: no replica's context may be used here. */
  for (q = 0; q < st->n; ++q) {
    RCHECK_ERR(&st->errors, 0, dist_context_all_reduce(st->contexts[q], DIST_REDUCE_SUM, x, &y),
               DIST_FAILED_PRECONDITION, "replica context");
    RCHECK(&st->errors, 0, y == NULL, "out not reset");
    ys[0] = (dist_value_t*)DT_SENTINEL_PTR;
    RCHECK_ERR(&st->errors, 0,
               dist_context_batch_all_reduce(st->contexts[q], DIST_REDUCE_SUM, xs, 1, ys),
               DIST_FAILED_PRECONDITION, "dist_context_batch_all_reduce");
    RCHECK(&st->errors, 0, ys[0] == NULL, "outs not reset");
    RCHECK_ERR(&st->errors, 0, dist_context_all_gather(st->contexts[q], x, 0, &y),
               DIST_FAILED_PRECONDITION, "dist_context_all_gather");
    RCHECK_ERR(&st->errors, 0, dist_context_broadcast(st->contexts[q], x, 0, &y),
               DIST_FAILED_PRECONDITION, "dist_context_broadcast");
    RCHECK_ERR(&st->errors, 0,
               dist_context_merge_call(st->contexts[q], nothing_merge, NULL, NULL, 0, &y),
               DIST_FAILED_PRECONDITION, "dist_context_merge_call");
  }
  dist_value_destroy(x);
  return DIST_OK;
}

static dist_status_t collective_misuse(dist_context_t* context, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** results,
                                       int32_t num_results, void* user_data) {
  collective_misuse_state* st = (collective_misuse_state*)user_data;
  int32_t r = -1;
  float v = 1.0f;
  dist_value_t* x = NULL;
  dist_value_t* y = (dist_value_t*)DT_SENTINEL_PTR;
  dist_value_t* ys[2];
  const dist_value_t* xs[2];
  const dist_value_t* with_null[2];
  dist_value_t* merged = NULL;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  st->contexts[r] = context;
  x = dts_make_f32(&v, 1, NULL);
  RCHECK(&st->errors, r, x != NULL, "make");
  xs[0] = x;
  xs[1] = x;
  with_null[0] = x;
  with_null[1] = NULL;
  /* NULL handles and outs, bad ops: every replica makes the same mistake, so nobody waits. */
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce(NULL, DIST_REDUCE_SUM, x, &y),
             DIST_INVALID_ARGUMENT, "dist_context_all_reduce: context");
  RCHECK(&st->errors, r, y == NULL, "out not reset");
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce(context, DIST_REDUCE_SUM, NULL, &y),
             DIST_INVALID_ARGUMENT, "value");
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce(context, DIST_REDUCE_SUM, x, NULL),
             DIST_INVALID_ARGUMENT, "out");
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce(context, 0, x, &y), DIST_INVALID_ARGUMENT,
             "op");
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce(context, 6, x, &y), DIST_INVALID_ARGUMENT,
             "op");
  ys[0] = ys[1] = (dist_value_t*)DT_SENTINEL_PTR;
  RCHECK_ERR(&st->errors, r, dist_context_batch_all_reduce(NULL, DIST_REDUCE_SUM, xs, 2, ys),
             DIST_INVALID_ARGUMENT, "context");
  RCHECK(&st->errors, r, ys[0] == NULL && ys[1] == NULL, "outs not reset");
  RCHECK_ERR(&st->errors, r, dist_context_batch_all_reduce(context, DIST_REDUCE_SUM, NULL, 2, ys),
             DIST_INVALID_ARGUMENT, "values");
  RCHECK_ERR(&st->errors, r, dist_context_batch_all_reduce(context, DIST_REDUCE_SUM, xs, 2, NULL),
             DIST_INVALID_ARGUMENT, "outs");
  RCHECK_ERR(&st->errors, r,
             dist_context_batch_all_reduce(context, DIST_REDUCE_SUM, with_null, 2, ys),
             DIST_INVALID_ARGUMENT, "values[1]");
  RCHECK_ERR(&st->errors, r, dist_context_batch_all_reduce(context, DIST_REDUCE_SUM, xs, 0, ys),
             DIST_INVALID_ARGUMENT, "count");
  RCHECK_ERR(&st->errors, r, dist_context_batch_all_reduce(context, 17, xs, 2, ys),
             DIST_INVALID_ARGUMENT, "op");
  RCHECK_ERR(&st->errors, r, dist_context_all_gather(NULL, x, 0, &y), DIST_INVALID_ARGUMENT,
             "context");
  RCHECK_ERR(&st->errors, r, dist_context_all_gather(context, NULL, 0, &y),
             DIST_INVALID_ARGUMENT, "value");
  RCHECK_ERR(&st->errors, r, dist_context_all_gather(context, x, 0, NULL), DIST_INVALID_ARGUMENT,
             "out");
  RCHECK_ERR(&st->errors, r, dist_context_broadcast(NULL, x, 0, &y), DIST_INVALID_ARGUMENT,
             "context");
  RCHECK_ERR(&st->errors, r, dist_context_broadcast(context, NULL, 0, &y), DIST_INVALID_ARGUMENT,
             "value");
  RCHECK_ERR(&st->errors, r, dist_context_broadcast(context, x, 0, NULL), DIST_INVALID_ARGUMENT,
             "out");
  RCHECK_ERR(&st->errors, r, dist_context_merge_call(NULL, nothing_merge, NULL, NULL, 0, &y),
             DIST_INVALID_ARGUMENT, "context");
  RCHECK_ERR(&st->errors, r, dist_context_merge_call(context, NULL, NULL, NULL, 0, &y),
             DIST_INVALID_ARGUMENT, "fn");
  RCHECK_ERR(&st->errors, r, dist_context_merge_call(context, nothing_merge, NULL, NULL, 0, NULL),
             DIST_INVALID_ARGUMENT, "out");
  RCHECK_ERR(&st->errors, r, dist_context_merge_call(context, nothing_merge, NULL, NULL, 1, &y),
             DIST_INVALID_ARGUMENT, "args");
  RCHECK_ERR(&st->errors, r,
             dist_context_merge_call(context, nothing_merge, NULL, with_null, 2, &y),
             DIST_INVALID_ARGUMENT, "args[1]");
  /* The context of another replica, from the merge fn (cross-replica context). */
  RCALL(&st->errors, r, dist_context_merge_call(context, misuse_in_merge, st, NULL, 0, &merged));
  /* After all that, a real collective still works. */
  RCALL(&st->errors, r, dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &y));
  {
    float got = 0.0f;
    RCHECK(&st->errors, r, dts_get_f32(y, &got, 1) == 1 && got == (float)st->n, "sum is %g",
           (double)got);
  }
  dist_value_destroy(y);
  dist_value_destroy(x);
  return DIST_OK;
}

static void test_collectives_reject_misuse(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  collective_misuse_state st;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.n = 2;
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, collective_misuse, &st, NULL, 0, NULL, 0));
  dist_strategy_destroy(s);
}

/* A context used outside its replica function: inside the strategy's scope (cross-replica
 * context), the default replica context of the thread is not current. */
static void test_collective_in_cross_replica_context(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_context_t* context = NULL;
  dist_value_t* x = dts_f32_scalar(1.0f, NULL);
  dist_value_t* y = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  context = dist_current_replica_context();
  assert_non_null(context);
  DT_OK(dist_strategy_scope_enter(s));
  DT_ERR(dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &y), DIST_FAILED_PRECONDITION,
         "dist_context_all_reduce", "replica context");
  assert_null(y);
  DT_OK(dist_strategy_scope_exit(s));
  dist_value_destroy(x);
  dist_strategy_destroy(s);
}

/* ---- cross_device_ops.h ---- */

static void test_cross_device_ops_create_and_kind(void** state) {
  int c;
  (void)state;
  for (c = 1; c < N_CONFIGS; ++c) {
    dist_cross_device_ops_t* ops = make_config(c); /* checks the kind */
    dist_cross_device_ops_destroy(ops);
  }
  {
    dist_cross_device_ops_t* ops = NULL;
    DT_OK(dist_cross_device_ops_create_reduction_to_one_device("/device:CPU:0", &ops));
    dist_cross_device_ops_destroy(ops);
    ops = NULL;
    DT_OK(dist_cross_device_ops_create_shared_memory(1, &ops));
    dist_cross_device_ops_destroy(ops);
    ops = NULL;
    DT_OK(dist_cross_device_ops_create_hierarchical_copy(1000, &ops));
    dist_cross_device_ops_destroy(ops);
  }
  dist_cross_device_ops_destroy(NULL);
}

static void test_cross_device_ops_reject_misuse(void** state) {
  dist_cross_device_ops_t* ops = (dist_cross_device_ops_t*)DT_SENTINEL_PTR;
  dist_cross_device_ops_t* good = NULL;
  dist_cross_device_ops_kind_t kind = 77;
  (void)state;
  DT_ERR(dist_cross_device_ops_create_reduction_to_one_device(NULL, NULL), DIST_INVALID_ARGUMENT,
         "dist_cross_device_ops_create_reduction_to_one_device", "out");
  DT_ERR(dist_cross_device_ops_create_reduction_to_one_device("not a device", &ops),
         DIST_INVALID_ARGUMENT, "dist_cross_device_ops_create_reduction_to_one_device", NULL);
  assert_null(ops);
  ops = (dist_cross_device_ops_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_cross_device_ops_create_hierarchical_copy(0, &ops), DIST_INVALID_ARGUMENT,
         "dist_cross_device_ops_create_hierarchical_copy", "num_packs");
  assert_null(ops);
  DT_ERR(dist_cross_device_ops_create_hierarchical_copy(-2, &ops), DIST_INVALID_ARGUMENT,
         "dist_cross_device_ops_create_hierarchical_copy", "num_packs");
  DT_ERR(dist_cross_device_ops_create_hierarchical_copy(1, NULL), DIST_INVALID_ARGUMENT,
         "dist_cross_device_ops_create_hierarchical_copy", "out");
  ops = (dist_cross_device_ops_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_cross_device_ops_create_shared_memory(-1, &ops), DIST_INVALID_ARGUMENT,
         "dist_cross_device_ops_create_shared_memory", "bytes_per_pack");
  assert_null(ops);
  DT_ERR(dist_cross_device_ops_create_shared_memory(0, NULL), DIST_INVALID_ARGUMENT,
         "dist_cross_device_ops_create_shared_memory", "out");
  DT_ERR(dist_cross_device_ops_kind(NULL, &kind), DIST_INVALID_ARGUMENT,
         "dist_cross_device_ops_kind", "ops");
  assert_int_equal(kind, 0);
  DT_OK(dist_cross_device_ops_create_shared_memory(0, &good));
  DT_ERR(dist_cross_device_ops_kind(good, NULL), DIST_INVALID_ARGUMENT,
         "dist_cross_device_ops_kind", "out_kind");
  dist_cross_device_ops_destroy(good);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_all_reduce_4_replicas),
      cmocka_unit_test(test_all_reduce_3_replicas),
      cmocka_unit_test(test_all_reduce_2_replicas),
      cmocka_unit_test(test_all_reduce_1_replica),
      cmocka_unit_test(test_all_reduce_large_int64),
      cmocka_unit_test(test_batch_all_reduce_mixed),
      cmocka_unit_test(test_all_gather),
      cmocka_unit_test(test_all_gather_errors),
      cmocka_unit_test(test_all_gather_with_empty_contribution),
      cmocka_unit_test(test_all_reduce_of_variables),
      cmocka_unit_test(test_broadcast),
      cmocka_unit_test(test_broadcast_bad_source),
      cmocka_unit_test(test_merge_call),
      cmocka_unit_test(test_merge_call_errors),
      cmocka_unit_test(test_mismatched_collectives),
      cmocka_unit_test(test_absent_replica_times_out),
      cmocka_unit_test(test_collectives_reject_misuse),
      cmocka_unit_test(test_collective_in_cross_replica_context),
      cmocka_unit_test(test_cross_device_ops_create_and_kind),
      cmocka_unit_test(test_cross_device_ops_reject_misuse),
  };
  return cmocka_run_group_tests_name("collectives", tests, setup, NULL);
}
