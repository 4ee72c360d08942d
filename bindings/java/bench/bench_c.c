/* The C side of the Java binding's benchmark: the same steps as Bench.java, through the
 * same library. Prints "c <replicas> <empty_us> <allreduce_us>" per replica count. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "distribute/distribute.h"

#define ROUNDS 5

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static dist_status_t empty_fn(dist_context_t* c, const dist_value_t* const* a, int32_t na,
                              dist_value_t** r, int32_t nr, void* u) {
  (void)c, (void)a, (void)na, (void)r, (void)nr, (void)u;
  return DIST_OK;
}

/* 8 bytes: a float32[2] tensor per replica, all-reduced (SUM), result released. */
static dist_status_t allreduce_fn(dist_context_t* c, const dist_value_t* const* a, int32_t na,
                                  dist_value_t** r, int32_t nr, void* u) {
  (void)a, (void)na, (void)r, (void)nr, (void)u;
  const float x[2] = {1, 2};
  const int64_t shape[1] = {2};
  dist_value_t *t = NULL, *out = NULL;
  dist_status_t st = dist_tensor_create(DIST_FLOAT32, shape, 1, x, sizeof x, NULL, &t);
  if (st == DIST_OK) st = dist_context_all_reduce(c, DIST_REDUCE_SUM, t, &out);
  dist_value_destroy(out);
  dist_value_destroy(t);
  return st;
}

/* The best of ROUNDS rounds of `steps` runs, in microseconds per run. */
static double time_runs(dist_strategy_t* s, dist_replica_fn fn, int steps) {
  double best = 1e30;
  for (int i = 0; i < steps; i++)
    if (dist_strategy_run(s, fn, NULL, NULL, 0, NULL, 0) != DIST_OK) exit(1);
  for (int round = 0; round < ROUNDS; round++) {
    double t0 = now_us();
    for (int i = 0; i < steps; i++) {
      if (dist_strategy_run(s, fn, NULL, NULL, 0, NULL, 0) != DIST_OK) {
        fprintf(stderr, "bench_c: %s\n", dist_last_error_message());
        exit(1);
      }
    }
    double per = (now_us() - t0) / steps;
    if (per < best) best = per;
  }
  return best;
}

int main(int argc, char** argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 2000;
  if (dist_set_logical_cpu_device_count(4) != DIST_OK) return 1;
  for (int n = 2; n <= 4; n += 2) {
    const char* devices[4] = {"CPU:0", "CPU:1", "CPU:2", "CPU:3"};
    dist_strategy_t* s = NULL;
    if (dist_strategy_create_mirrored(devices, n, NULL, &s) != DIST_OK) return 1;
    double empty = time_runs(s, empty_fn, steps);
    double ar = time_runs(s, allreduce_fn, steps);
    printf("c %d %.2f %.2f\n", n, empty, ar);
    dist_strategy_destroy(s);
  }
  return 0;
}
