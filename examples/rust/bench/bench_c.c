/* The C side of the Rust binding's benchmark (src/bin/bench.rs): the same steps written
 * against the C API, linked into the same process and timed with the same clock by the
 * caller. Each function runs `iterations` steps on `strategy` and stores each step's
 * seconds in times[]. Returns a dist_status_t. */
#include <time.h>

#include "distribute/distribute.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static dist_status_t empty_replica(dist_context_t* context, const dist_value_t* const* args,
                                   int32_t num_args, dist_value_t** results, int32_t num_results,
                                   void* user_data) {
  (void)context, (void)args, (void)num_args, (void)results, (void)num_results, (void)user_data;
  return DIST_OK;
}

/* args[0] is a PerReplica value: each replica all-reduces its own 8-byte tensor. */
static dist_status_t all_reduce_replica(dist_context_t* context, const dist_value_t* const* args,
                                        int32_t num_args, dist_value_t** results,
                                        int32_t num_results, void* user_data) {
  dist_value_t* out = NULL;
  dist_status_t status;
  (void)num_args, (void)results, (void)num_results, (void)user_data;
  status = dist_context_all_reduce(context, DIST_REDUCE_SUM, args[0], &out);
  dist_value_destroy(out);
  return status;
}

dist_status_t bench_c_empty_run(dist_strategy_t* strategy, int64_t iterations, double* times) {
  for (int64_t i = 0; i < iterations; ++i) {
    const double t0 = now();
    const dist_status_t status = dist_strategy_run(strategy, empty_replica, NULL, NULL, 0, NULL, 0);
    times[i] = now() - t0;
    if (status != DIST_OK) return status;
  }
  return DIST_OK;
}

dist_status_t bench_c_all_reduce(dist_strategy_t* strategy, const dist_value_t* per_replica,
                                 int64_t iterations, double* times) {
  for (int64_t i = 0; i < iterations; ++i) {
    const double t0 = now();
    const dist_status_t status =
        dist_strategy_run(strategy, all_reduce_replica, NULL, &per_replica, 1, NULL, 0);
    times[i] = now() - t0;
    if (status != DIST_OK) return status;
  }
  return DIST_OK;
}
