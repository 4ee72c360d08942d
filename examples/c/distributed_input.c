/* Distributed input: 10 rows of features and labels from host arrays are batched by a
 * global batch of 4 and distributed over a MirroredStrategy with 2 replicas; each step's
 * per-replica batches go straight into dist_strategy_run. The last global batch has 2 rows:
 * replica 0 gets both, replica 1 an empty batch, and the loss MEAN divides by 2 (rows 8 and 9: losses 0 and 10, mean 5). */
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

/* Each replica returns its per-example "loss": the label times the feature sum. */
static dist_status_t per_example_loss(dist_context_t* context, const dist_value_t* const* args,
                                      int32_t num_args, dist_value_t** results,
                                      int32_t num_results, void* user_data) {
  (void)context;
  (void)num_args;
  (void)num_results;
  (void)user_data;
  int64_t dims[2] = {0, 0};
  void* features = NULL;
  void* labels = NULL;
  dist_status_t status = dist_tensor_shape(args[0], dims, 2);
  if (status == DIST_OK) status = dist_tensor_data(args[0], &features);
  if (status == DIST_OK) status = dist_tensor_data(args[1], &labels);
  if (status != DIST_OK) return status;
  float losses[4];
  for (int64_t i = 0; i < dims[0] && i < 4; ++i) {
    const float* row = (const float*)features + i * dims[1];
    losses[i] = ((const float*)labels)[i] * (row[0] + row[1]);
  }
  const int64_t shape[1] = {dims[0]};
  return dist_tensor_create(DIST_FLOAT32, shape, 1, dims[0] ? losses : NULL,
                            (size_t)dims[0] * sizeof(float), NULL, &results[0]);
}

int main(void) {
  CHECK(dist_set_logical_cpu_device_count(2));
  dist_strategy_t* strategy = NULL;
  CHECK(dist_strategy_create_mirrored(NULL, 0, NULL, &strategy));

  float features[10][2];
  float labels[10];
  for (int i = 0; i < 10; ++i) {
    features[i][0] = (float)i;
    features[i][1] = 1.0f;
    labels[i] = (float)(i % 2);
  }
  const int64_t feature_shape[2] = {10, 2};
  const int64_t label_shape[1] = {10};
  dist_value_t* columns[2] = {NULL, NULL};
  CHECK(dist_tensor_create(DIST_FLOAT32, feature_shape, 2, features, sizeof features, NULL, &columns[0]));
  CHECK(dist_tensor_create(DIST_FLOAT32, label_shape, 1, labels, sizeof labels, NULL, &columns[1]));

  dist_dataset_t* rows = NULL;
  dist_dataset_t* batches = NULL;
  dist_distributed_dataset_t* distributed = NULL;
  dist_iterator_t* iterator = NULL;
  CHECK(dist_dataset_from_tensor_slices((const dist_value_t* const*)columns, 2, &rows));
  CHECK(dist_dataset_batch(rows, 4, 0, &batches));
  CHECK(dist_strategy_distribute_dataset(strategy, batches, NULL, &distributed));
  CHECK(dist_distributed_dataset_make_iterator(distributed, &iterator));

  for (int step = 0;; ++step) {
    dist_value_t* batch[2] = {NULL, NULL};
    int32_t has_value = 0;
    CHECK(dist_iterator_get_next_as_optional(iterator, batch, 2, &has_value));
    if (!has_value) break;
    dist_value_t* losses = NULL;
    dist_value_t* mean = NULL;
    CHECK(dist_strategy_run(strategy, per_example_loss, NULL, (const dist_value_t* const*)batch,
                            2, &losses, 1));
    CHECK(dist_strategy_reduce_axis(strategy, DIST_REDUCE_MEAN, losses, 0, &mean));
    printf("step %d: rows per replica", step);
    for (int32_t r = 0; r < 2; ++r) {
      dist_value_t* part = NULL;
      int64_t dims[2];
      CHECK(dist_value_component(batch[0], r, &part));
      CHECK(dist_tensor_shape(part, dims, 2));
      printf(" %lld", (long long)dims[0]);
      dist_value_destroy(part);
    }
    void* data = NULL;
    CHECK(dist_tensor_data(mean, &data));
    printf(", mean loss %.3f\n", *(const float*)data);
    dist_value_destroy(mean);
    dist_value_destroy(losses);
    dist_value_destroy(batch[0]);
    dist_value_destroy(batch[1]);
  }

  dist_iterator_destroy(iterator);
  dist_distributed_dataset_destroy(distributed);
  dist_dataset_destroy(batches);
  dist_dataset_destroy(rows);
  dist_value_destroy(columns[0]);
  dist_value_destroy(columns[1]);
  dist_strategy_destroy(strategy);
  return 0;
}
