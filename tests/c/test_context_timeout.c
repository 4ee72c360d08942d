/* dist_context_set_timeout_ms: a per-replica override of the strategy's timeout. */
#define _POSIX_C_SOURCE 200809L  /* clock_gettime */
#include "dist_test.h"

#include <time.h>

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct {
  dist_status_t set_status[2];
  dist_status_t reduce_status[2];
  double waited[2];
} timeout_state;

/* Replica 0 bounds its wait at 150 ms and enters an all_reduce that replica 1 never
 * joins; the strategy's own timeout (60 s) would keep it waiting much longer. */
static dist_status_t lonely_all_reduce(dist_context_t* context, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** results,
                                       int32_t num_results, void* user_data) {
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  timeout_state* state = (timeout_state*)user_data;
  int32_t replica = 0;
  dist_status_t status = dist_context_replica_id(context, &replica);
  if (status != DIST_OK || replica != 0) return status;
  state->set_status[0] = dist_context_set_timeout_ms(context, 150);
  const float one = 1.0f;
  dist_value_t* value = NULL;
  dist_value_t* out = NULL;
  status = dist_tensor_create(DIST_FLOAT32, NULL, 0, &one, sizeof one, NULL, &value);
  if (status != DIST_OK) return status;
  const double start = now_seconds();
  state->reduce_status[0] = dist_context_all_reduce(context, DIST_REDUCE_SUM, value, &out);
  state->waited[0] = now_seconds() - start;
  dist_value_destroy(value);
  dist_value_destroy(out);
  return state->reduce_status[0];
}

static void test_override_bounds_the_wait(void** state_ptr) {
  (void)state_ptr;
  DT_OK(dist_set_logical_cpu_device_count(2));
  const char* devices[2] = {"CPU:0", "CPU:1"};
  dist_strategy_t* strategy = NULL;
  DT_OK(dist_strategy_create_mirrored(devices, 2, NULL, &strategy));
  timeout_state state;
  memset(&state, 0, sizeof state);
  assert_int_equal(dist_strategy_run(strategy, lonely_all_reduce, &state, NULL, 0, NULL, 0),
                   DIST_DEADLINE_EXCEEDED);
  assert_int_equal(state.set_status[0], DIST_OK);
  assert_int_equal(state.reduce_status[0], DIST_DEADLINE_EXCEEDED);
  assert_true(state.waited[0] >= 0.15);
  assert_true(state.waited[0] < 10.0);
  dist_strategy_destroy(strategy);
}

static dist_status_t misuse_inside(dist_context_t* context, const dist_value_t* const* args,
                                   int32_t num_args, dist_value_t** results, int32_t num_results,
                                   void* user_data) {
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  dist_status_t* seen = (dist_status_t*)user_data;
  seen[0] = dist_context_set_timeout_ms(context, -5);
  seen[1] = dist_context_set_timeout_ms(context, 0);
  return DIST_OK;
}

static void test_misuse(void** state_ptr) {
  (void)state_ptr;
  DT_ERR(dist_context_set_timeout_ms(NULL, 10), DIST_INVALID_ARGUMENT, "dist_context_set_timeout_ms",
         "context");
  /* The default context (no scope) is shared by every thread and never waits. */
  dist_context_t* default_context = NULL;
  default_context = dist_current_replica_context();
  assert_non_null(default_context);
  DT_ERR(dist_context_set_timeout_ms(default_context, 10), DIST_FAILED_PRECONDITION,
         "dist_context_set_timeout_ms", "default replica context");
  /* Outside its replica function a run's context is not current. */
  dist_strategy_t* strategy = NULL;
  DT_OK(dist_strategy_create_one_device("CPU:0", &strategy));
  dist_status_t seen[2] = {DIST_OK, DIST_UNKNOWN};
  DT_OK(dist_strategy_run(strategy, misuse_inside, seen, NULL, 0, NULL, 0));
  assert_int_equal(seen[0], DIST_INVALID_ARGUMENT);
  assert_int_equal(seen[1], DIST_OK);
  dist_strategy_destroy(strategy);
}

/* Both replicas set the largest timeout there is and all-reduce: deadline arithmetic
 * saturates (about 3 years), so the collective works instead of expiring at once. */
static dist_status_t huge_timeout_all_reduce(dist_context_t* context, const dist_value_t* const* args,
                                             int32_t num_args, dist_value_t** results,
                                             int32_t num_results, void* user_data) {
  (void)args;
  (void)num_args;
  (void)num_results;
  (void)user_data;
  const float one = 1.0f;
  dist_value_t* value = NULL;
  dist_status_t status = dist_context_set_timeout_ms(context, INT64_MAX);
  if (status == DIST_OK) status = dist_tensor_create(DIST_FLOAT32, NULL, 0, &one, sizeof one, NULL, &value);
  if (status == DIST_OK) status = dist_context_all_reduce(context, DIST_REDUCE_SUM, value, &results[0]);
  dist_value_destroy(value);
  return status;
}

static void test_huge_timeouts_saturate(void** state_ptr) {
  (void)state_ptr;
  DT_OK(dist_set_logical_cpu_device_count(2));
  const char* devices[2] = {"CPU:0", "CPU:1"};
  dist_strategy_t* strategy = NULL;
  dist_value_t* sums = NULL;
  dist_value_t* sum = NULL;
  float total = 0;
  DT_OK(dist_strategy_create_mirrored(devices, 2, NULL, &strategy));
  DT_OK(dist_strategy_set_timeout_ms(strategy, INT64_MAX));
  DT_OK(dist_strategy_run(strategy, huge_timeout_all_reduce, NULL, NULL, 0, &sums, 1));
  DT_OK(dist_value_component_tensor(sums, 1, &sum));
  DT_OK(dist_tensor_scalar_float32(sum, &total));
  assert_true(total == 2.0f);
  dist_value_destroy(sum);
  dist_value_destroy(sums);
  dist_strategy_destroy(strategy);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_override_bounds_the_wait),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_huge_timeouts_saturate),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
