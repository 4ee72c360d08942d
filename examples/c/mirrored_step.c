/* A MirroredStrategy over 4 logical CPU devices: each replica computes a "gradient" from
 * its own data, the replicas all-reduce it, and a mirrored variable is updated with MEAN
 * aggregation, so every copy of the variable stays equal. Then the worked example of
 * StrategyExtended.batch_reduce_to runs under Mirrored, CentralStorage and OneDevice. */
#include <stdio.h>
#include <stdlib.h>

#include "distribute/distribute.h"

#define CHECK(call)                                                                   \
  do {                                                                                \
    dist_status_t status_ = (call);                                                   \
    if (status_ != DIST_OK) {                                                         \
      fprintf(stderr, "%s failed: %s: %s\n", #call, dist_status_name(status_),       \
              dist_last_error_message());                                             \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

static float scalar_of(const dist_value_t* tensor) {
  void* data = NULL;
  CHECK(dist_tensor_data(tensor, &data));
  return *(const float*)data;
}

/* Replica r's gradient is r + 1; all replicas agree on the sum, 1 + 2 + 3 + 4 = 10; the
 * variable (MEAN aggregation) then moves by -0.1 * mean(gradients) = -0.25. */
static dist_status_t train_step(dist_context_t* context, const dist_value_t* const* args,
                                int32_t num_args, dist_value_t** results, int32_t num_results,
                                void* user_data) {
  (void)num_args;
  (void)num_results;
  (void)user_data;
  int32_t replica = 0;
  dist_status_t status = dist_context_replica_id(context, &replica);
  if (status != DIST_OK) return status;
  const float gradient = (float)(replica + 1);
  const float step = -0.1f * gradient;
  dist_value_t* local = NULL;
  dist_value_t* update = NULL;
  status = dist_tensor_create(DIST_FLOAT32, NULL, 0, &gradient, sizeof gradient, NULL, &local);
  if (status == DIST_OK) status = dist_context_all_reduce(context, DIST_REDUCE_SUM, local, &results[0]);
  if (status == DIST_OK) status = dist_tensor_create(DIST_FLOAT32, NULL, 0, &step, sizeof step, NULL, &update);
  /* A mirrored variable assigned in replica context aggregates the replicas' values. */
  if (status == DIST_OK) status = dist_variable_assign_add((dist_value_t*)args[0], update);
  dist_value_destroy(local);
  dist_value_destroy(update);
  return status;
}

static dist_status_t assign_update(dist_value_t* variable, const dist_value_t* const* args,
                                   int32_t num_args, dist_value_t** out, void* user_data) {
  (void)num_args;
  (void)out;
  (void)user_data;
  return dist_variable_assign(variable, args[0]);
}

static dist_status_t merge_sum_and_assign(dist_strategy_t* strategy, const dist_value_t* const* args,
                                          int32_t num_args, dist_value_t** out, void* user_data) {
  (void)num_args;
  (void)out;
  (void)user_data;
  dist_value_t* reduced = NULL;
  dist_value_t* updated = NULL;
  dist_status_t status =
      dist_strategy_batch_reduce_to(strategy, DIST_REDUCE_SUM, &args[0], &args[1], 1, &reduced);
  if (status == DIST_OK) {
    const dist_value_t* update_args[1] = {reduced};
    status = dist_strategy_update(strategy, (dist_value_t*)args[1], assign_update, NULL, update_args,
                                  1, 1, &updated);
  }
  dist_value_destroy(reduced);
  dist_value_destroy(updated);
  return status;
}

static dist_status_t reference_step(dist_context_t* context, const dist_value_t* const* args,
                                    int32_t num_args, dist_value_t** results, int32_t num_results,
                                    void* user_data) {
  (void)num_args;
  (void)results;
  (void)num_results;
  (void)user_data;
  const float one = 1.0f;
  dist_value_t* value = NULL;
  dist_value_t* merged = NULL;
  dist_status_t status = dist_tensor_create(DIST_FLOAT32, NULL, 0, &one, sizeof one, NULL, &value);
  if (status == DIST_OK) {
    const dist_value_t* merge_args[2] = {value, args[0]};
    status = dist_context_merge_call(context, merge_sum_and_assign, NULL, merge_args, 2, &merged);
  }
  dist_value_destroy(value);
  dist_value_destroy(merged);
  return status;
}

static void run_reference_example(const char* label, dist_strategy_t* strategy) {
  const float zero = 0.0f;
  dist_value_t* initial = NULL;
  dist_value_t* variable = NULL;
  CHECK(dist_tensor_create(DIST_FLOAT32, NULL, 0, &zero, sizeof zero, NULL, &initial));
  CHECK(dist_strategy_scope_enter(strategy));
  CHECK(dist_variable_create(initial, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, "v", &variable));
  const dist_value_t* args[1] = {variable};
  CHECK(dist_strategy_run(strategy, reference_step, NULL, args, 1, NULL, 0));
  int32_t copies = 0;
  CHECK(dist_value_num_components(variable, &copies));
  printf("  %-15s v =", label);
  for (int32_t i = 0; i < copies; ++i) {
    dist_value_t* copy = NULL;
    dist_value_t* value = NULL;
    CHECK(dist_value_component(variable, i, &copy));
    CHECK(dist_variable_read(copy, &value));
    printf(" %.1f", scalar_of(value));
    dist_value_destroy(value);
    dist_value_destroy(copy);
  }
  printf("\n");
  CHECK(dist_strategy_scope_exit(strategy));
  dist_value_destroy(variable);
  dist_value_destroy(initial);
}

int main(void) {
  CHECK(dist_set_logical_cpu_device_count(4));
  const char* devices[4] = {"CPU:0", "CPU:1", "CPU:2", "CPU:3"};
  dist_strategy_t* mirrored = NULL;
  CHECK(dist_strategy_create_mirrored(devices, 4, NULL, &mirrored));

  const float start = 1.0f;
  dist_value_t* initial = NULL;
  dist_value_t* weight = NULL;
  CHECK(dist_tensor_create(DIST_FLOAT32, NULL, 0, &start, sizeof start, NULL, &initial));
  CHECK(dist_strategy_scope_enter(mirrored));
  CHECK(dist_variable_create(initial, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN, "weight", &weight));
  const dist_value_t* args[1] = {weight};
  dist_value_t* summed = NULL;
  CHECK(dist_strategy_run(mirrored, train_step, NULL, args, 1, &summed, 1));
  dist_value_t* first = NULL;
  dist_value_t* now = NULL;
  CHECK(dist_value_component(summed, 0, &first));
  CHECK(dist_variable_read(weight, &now));
  printf("MirroredStrategy, 4 replicas: all-reduced gradient %.1f, weight 1.0 -> %.2f\n",
         scalar_of(first), scalar_of(now));
  CHECK(dist_strategy_scope_exit(mirrored));
  dist_value_destroy(first);
  dist_value_destroy(now);
  dist_value_destroy(summed);
  dist_value_destroy(weight);
  dist_value_destroy(initial);

  printf("\nStrategyExtended.batch_reduce_to example (expected 2.0, 2.0, 1.0):\n");
  const char* two[2] = {"CPU:0", "CPU:1"};
  dist_strategy_t* mirrored2 = NULL;
  dist_strategy_t* central = NULL;
  dist_strategy_t* one = NULL;
  CHECK(dist_strategy_create_mirrored(two, 2, NULL, &mirrored2));
  CHECK(dist_strategy_create_central_storage(two, 2, "CPU:0", &central));
  CHECK(dist_strategy_create_one_device("CPU:0", &one));
  run_reference_example("Mirrored", mirrored2);
  run_reference_example("CentralStorage", central);
  run_reference_example("OneDevice", one);
  dist_strategy_destroy(mirrored2);
  dist_strategy_destroy(central);
  dist_strategy_destroy(one);
  dist_strategy_destroy(mirrored);
  return 0;
}
