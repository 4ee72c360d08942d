/* The README's quick start: 4 replicas each all-reduce their id, and the caller reduces
 * what they returned. Build: cc quick_start.c $(pkg-config --cflags --libs distribute) */
#include <stdio.h>
#include "distribute/distribute.h"

#define CHECK(call) do { if ((call) != DIST_OK) { \
  fprintf(stderr, "%s\n", dist_last_error_message()); return 1; } } while (0)

/* Runs once per replica, on its own thread, in replica context. */
static dist_status_t step(dist_context_t* ctx, const dist_value_t* const* args, int32_t nargs,
                          dist_value_t** results, int32_t nresults, void* user) {
  int32_t id;
  dist_value_t* mine;
  (void)args; (void)nargs; (void)nresults; (void)user;
  dist_status_t status = dist_context_replica_id(ctx, &id);
  float x = (float)id;
  if (status == DIST_OK)  /* a scalar tensor holding this replica's id */
    status = dist_tensor_create(DIST_FLOAT32, NULL, 0, &x, sizeof x, NULL, &mine);
  if (status != DIST_OK) return status;  /* fails the run, with this thread's message */
  status = dist_context_all_reduce(ctx, DIST_REDUCE_SUM, mine, &results[0]);
  dist_value_destroy(mine);
  return status;
}

int main(void) {
  dist_strategy_t* strategy;
  dist_value_t *per_replica, *total;
  float mean;
  CHECK(dist_set_logical_cpu_device_count(4));
  CHECK(dist_strategy_create_mirrored(NULL, 0, NULL, &strategy));  /* CPU:0..CPU:3 */
  CHECK(dist_strategy_run(strategy, step, NULL, NULL, 0, &per_replica, 1));
  CHECK(dist_strategy_reduce(strategy, DIST_REDUCE_MEAN, per_replica, &total));
  CHECK(dist_tensor_scalar_float32(total, &mean));  /* exactly float32, one element */
  printf("all_reduce(0+1+2+3) on every replica, then their MEAN: %g\n", mean);
  dist_value_destroy(total);
  dist_value_destroy(per_replica);
  dist_strategy_destroy(strategy);
  return 0;
}
