/* Tests for dist_context_all_reduce_into (context.h): results written into an existing
 * tensor, separate or in place, on the replica's memory or another CPU device, for 1 to 4
 * replicas; integer MEAN into the floating result dtype; every misuse, and that a wrong
 * `out` on one replica fails the call on every replica without writing any `out`. Expected
 * values are computed here from the inputs' formula. */
#define _POSIX_C_SOURCE 200809L

#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

enum { kCount = 5, kIterations = 200 };

/* Replica r's element i at iteration k: small integers, exact in float32 sums. */
static float input_at(int32_t r, int32_t i, int32_t k) { return (float)((r + 1) * (i + 1) + k % 9); }

typedef struct {
  dts_errors errors;
  int32_t n;
  int in_place;      /* out is the input tensor itself */
  const char* out_device; /* NULL: the replica's own device */
} into_state;

static dist_status_t reduce_into(dist_context_t* context, const dist_value_t* const* args,
                                 int32_t num_args, dist_value_t** results, int32_t num_results,
                                 void* user_data) {
  into_state* st = (into_state*)user_data;
  int32_t r = -1, i, k;
  const int64_t dims[1] = {kCount};
  const char* device = NULL;
  float zeros[kCount] = {0};
  dist_value_t* x = NULL;
  dist_value_t* out = NULL;
  float* xdata = NULL;
  float* odata = NULL;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCALL(&st->errors, r, dist_context_device(context, &device));
  RCALL(&st->errors, r, dist_tensor_create(DIST_FLOAT32, dims, 1, zeros, sizeof(zeros), device, &x));
  if (st->in_place) {
    out = x;
  } else {
    RCALL(&st->errors, r,
          dist_tensor_create(DIST_FLOAT32, dims, 1, zeros, sizeof(zeros),
                             st->out_device != NULL ? st->out_device : device, &out));
  }
  RCALL(&st->errors, r, dist_tensor_data(x, (void**)&xdata));
  RCALL(&st->errors, r, dist_tensor_data(out, (void**)&odata));
  for (k = 0; k < kIterations; ++k) {
    for (i = 0; i < kCount; ++i) xdata[i] = input_at(r, i, k);
    RCALL(&st->errors, r, dist_context_all_reduce_into(context, DIST_REDUCE_SUM, x, out));
    for (i = 0; i < kCount; ++i) {
      float expected = 0.0f;
      int32_t q;
      for (q = 0; q < st->n; ++q) expected += input_at(q, i, k);
      RCHECK(&st->errors, r, odata[i] == expected, "iteration %d element %d is %g, expected %g",
             (int)k, (int)i, (double)odata[i], (double)expected);
    }
  }
  if (out != x) dist_value_destroy(out);
  dist_value_destroy(x);
  return DIST_OK;
}

static void run_into(int32_t n, int in_place, const char* out_device) {
  dist_strategy_t* s = n == 1 ? dts_one_device("CPU:0") : dts_mirrored(n);
  into_state st;
  memset(&st, 0, sizeof(st));
  st.n = n;
  st.in_place = in_place;
  st.out_device = out_device;
  DTS_RUN_OK(&st.errors, n, dist_strategy_run(s, reduce_into, &st, NULL, 0, NULL, 0));
  dist_strategy_destroy(s);
}

static void test_into_a_separate_tensor(void** state) {
  int32_t n;
  (void)state;
  for (n = 1; n <= 4; ++n) run_into(n, 0, NULL);
}

static void test_into_the_input_itself(void** state) {
  int32_t n;
  (void)state;
  for (n = 1; n <= 4; ++n) run_into(n, 1, NULL);
}

static void test_into_a_tensor_on_another_cpu(void** state) {
  (void)state;
  run_into(3, 0, "CPU:0"); /* replicas 1 and 2 write into CPU:0's memory */
}

/* ---- Integer MEAN: the result is floating, as dist_context_all_reduce's ---- */

typedef struct {
  dts_errors errors;
  double got[DTS_MAX_REPLICAS][2];
} mean_state;

static dist_status_t integer_mean_into(dist_context_t* context, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** results,
                                       int32_t num_results, void* user_data) {
  mean_state* st = (mean_state*)user_data;
  int32_t r = -1;
  const int64_t dims[1] = {2};
  int32_t v[2];
  double zeros[2] = {0, 0};
  dist_value_t* x = NULL;
  dist_value_t* out = NULL;
  dist_value_t* wrong = NULL;
  void* data = NULL;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  v[0] = r + 1;
  v[1] = 10 * r;
  RCALL(&st->errors, r, dist_tensor_create(DIST_INT32, dims, 1, v, sizeof(v), NULL, &x));
  /* An int32 out cannot take the float64 mean. */
  RCALL(&st->errors, r, dist_tensor_create(DIST_INT32, dims, 1, v, sizeof(v), NULL, &wrong));
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce_into(context, DIST_REDUCE_MEAN, x, wrong),
             DIST_INVALID_ARGUMENT, "float64[2]");
  RCALL(&st->errors, r, dist_tensor_create(DIST_FLOAT64, dims, 1, zeros, sizeof(zeros), NULL, &out));
  RCALL(&st->errors, r, dist_context_all_reduce_into(context, DIST_REDUCE_MEAN, x, out));
  RCALL(&st->errors, r, dist_tensor_data(out, &data));
  memcpy(st->got[r], data, sizeof(zeros));
  dist_value_destroy(wrong);
  dist_value_destroy(out);
  dist_value_destroy(x);
  return DIST_OK;
}

static void test_integer_mean_into_the_floating_dtype(void** state) {
  dist_strategy_t* s = dts_mirrored(3);
  mean_state st;
  int32_t r;
  (void)state;
  memset(&st, 0, sizeof(st));
  DTS_RUN_OK(&st.errors, 3, dist_strategy_run(s, integer_mean_into, &st, NULL, 0, NULL, 0));
  for (r = 0; r < 3; ++r) {
    assert_true(st.got[r][0] == 2.0);  /* (1 + 2 + 3) / 3 */
    assert_true(st.got[r][1] == 10.0); /* (0 + 10 + 20) / 3 */
  }
  dist_strategy_destroy(s);
}

/* ---- Misuse ---- */

typedef struct {
  dts_errors errors;
  float out_after[DTS_MAX_REPLICAS];
} misuse_state;

static dist_status_t into_misuse(dist_context_t* context, const dist_value_t* const* args,
                                 int32_t num_args, dist_value_t** results, int32_t num_results,
                                 void* user_data) {
  misuse_state* st = (misuse_state*)user_data;
  int32_t r = -1;
  float v = 1.0f, marker = -7.0f;
  const float pair[2] = {0, 0};
  const int8_t flags[1] = {1};
  const int64_t one[1] = {1};
  dist_value_t* x = NULL;
  dist_value_t* out = NULL;
  dist_value_t* shaped = NULL;
  dist_value_t* boolean = NULL;
  dist_value_t* destroyed = NULL;
  dist_value_t* per_replica = NULL;
  void* data = NULL;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  x = dts_f32(&v, 1, NULL);
  out = dts_f32(&marker, 1, NULL);
  shaped = dts_f32(pair, 2, NULL);
  RCALL(&st->errors, r, dist_tensor_create(DIST_BOOL, one, 1, flags, sizeof(flags), NULL, &boolean));
  destroyed = dts_f32(&v, 1, NULL);
  dist_value_destroy(destroyed);
  RCALL(&st->errors, r, dist_value_create_per_replica((const dist_value_t* const*)&x, 1, &per_replica));
  /* Mistakes every replica makes alike (nobody waits for another). */
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce_into(NULL, DIST_REDUCE_SUM, x, out),
             DIST_INVALID_ARGUMENT, "dist_context_all_reduce_into: context");
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce_into(context, DIST_REDUCE_SUM, NULL, out),
             DIST_INVALID_ARGUMENT, "value");
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce_into(context, DIST_REDUCE_SUM, x, NULL),
             DIST_INVALID_ARGUMENT, "out");
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce_into(context, DIST_REDUCE_SUM, x, destroyed),
             DIST_INVALID_ARGUMENT, "out");
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce_into(context, DIST_REDUCE_SUM, x, per_replica),
             DIST_INVALID_ARGUMENT, "out: the value is a PerReplica");
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce_into(context, 0, x, out), DIST_INVALID_ARGUMENT,
             "op");
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce_into(context, 6, x, out), DIST_INVALID_ARGUMENT,
             "op");
  RCHECK_ERR(&st->errors, r, dist_context_all_reduce_into(context, DIST_REDUCE_SUM, boolean, boolean),
             DIST_INVALID_ARGUMENT, "bool values cannot be reduced with SUM");
  /* Replica 1 alone passes an out of the wrong shape: every replica fails with its reason,
   * and no replica's out is written. */
  RCHECK_ERR(&st->errors, r,
             dist_context_all_reduce_into(context, DIST_REDUCE_SUM, x, r == 1 ? shaped : out),
             DIST_INVALID_ARGUMENT, "replica 1: out is float32[2]: the all-reduce of float32[1] (SUM) is float32[1]");
  RCALL(&st->errors, r, dist_tensor_data(out, &data));
  st->out_after[r] = *(float*)data;
  /* After all that, a real call still works. */
  RCALL(&st->errors, r, dist_context_all_reduce_into(context, DIST_REDUCE_SUM, x, out));
  RCHECK(&st->errors, r, *(float*)data == 2.0f, "sum is %g", (double)*(float*)data);
  dist_value_destroy(per_replica);
  dist_value_destroy(boolean);
  dist_value_destroy(shaped);
  dist_value_destroy(out);
  dist_value_destroy(x);
  return DIST_OK;
}

static void test_into_rejects_misuse(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  misuse_state st;
  (void)state;
  memset(&st, 0, sizeof(st));
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(s, into_misuse, &st, NULL, 0, NULL, 0));
  assert_true(st.out_after[0] == -7.0f);
  assert_true(st.out_after[1] == -7.0f);
  dist_strategy_destroy(s);
}

static void test_into_outside_a_replica_function(void** state) {
  dist_context_t* context = dist_current_replica_context();
  float v = 1.0f;
  dist_value_t* x = dts_f32(&v, 1, NULL);
  dist_value_t* out = dts_f32(&v, 1, NULL);
  dist_strategy_t* s = dts_mirrored(2);
  (void)state;
  /* The default context (no strategy scope) is a one-replica context: a copy. */
  assert_non_null(context);
  DT_OK(dist_context_all_reduce_into(context, DIST_REDUCE_SUM, x, out));
  dts_expect_f32(out, &v, 1);
  dist_strategy_destroy(s);
  dist_value_destroy(out);
  dist_value_destroy(x);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_into_a_separate_tensor),
      cmocka_unit_test(test_into_the_input_itself),
      cmocka_unit_test(test_into_a_tensor_on_another_cpu),
      cmocka_unit_test(test_integer_mean_into_the_floating_dtype),
      cmocka_unit_test(test_into_rejects_misuse),
      cmocka_unit_test(test_into_outside_a_replica_function),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
