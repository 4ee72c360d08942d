#define _POSIX_C_SOURCE 200809L

#include "parameter_server.h"

#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


/* How long the chief waits for the slowest worker to finish its epochs. */
enum { FINISH_WAIT_SECONDS = 600, FINISH_POLL_MS = 50 };

int ps_serve_if_ps_task(void) {
  dist_cluster_t* cluster = NULL;
  const dist_status_t found = dist_cluster_from_tf_config(NULL, &cluster);
  if (found == DIST_NOT_FOUND) return -1; /* no TF_CONFIG: local mode */
  CHECK(found);
  const char* type = NULL;
  CHECK(dist_cluster_task_type(cluster, &type));
  if (strcmp(type, "ps") != 0) {
    dist_cluster_destroy(cluster);
    return -1;
  }
  dist_server_t* server = NULL;
  CHECK(dist_server_create(cluster, NULL, &server));
  dist_cluster_destroy(cluster);
  /* Until distrun stops this task (SIGTERM) once every worker has exited. */
  const dist_status_t joined = dist_server_join(server);
  dist_server_destroy(server);
  return joined == DIST_OK ? 0 : 1;
}

dist_strategy_t* ps_create_strategy(int32_t* is_chief, int32_t* workers) {
  dist_cluster_t* cluster = NULL;
  const dist_status_t found = dist_cluster_from_tf_config(NULL, &cluster);
  *is_chief = 1;
  *workers = 1;
  if (found != DIST_NOT_FOUND) {
    CHECK(found);
    CHECK(dist_cluster_is_chief(cluster, is_chief));
    CHECK(dist_cluster_num_workers(cluster, workers));
  }
  dist_communication_options_t* communication = NULL;
  CHECK(dist_communication_options_create(&communication));
  CHECK(dist_communication_options_set_replicas_per_worker(communication,
                                                              PS_REPLICAS_PER_WORKER));
  dist_parameter_server_options_t* options = NULL;
  CHECK(dist_parameter_server_options_create(&options));
  CHECK(dist_parameter_server_options_set_fixed_shards(options, 2, 0));
  dist_strategy_t* strategy = NULL;
  CHECK(dist_strategy_create_parameter_server(cluster, communication, options, &strategy));
  dist_parameter_server_options_destroy(options);
  dist_communication_options_destroy(communication);
  dist_cluster_destroy(cluster);
  return strategy;
}

dist_status_t ps_mean_gradient(const double* gradient_sums, int64_t count, const int64_t* dims,
                               int32_t rank, int64_t rows, const char* device, dist_value_t** out) {
  void* data = NULL;
  dist_status_t status = dist_tensor_create(DIST_FLOAT32, dims, rank, NULL, 0, device, out);
  if (status == DIST_OK) status = dist_tensor_data(*out, &data);
  if (status == DIST_OK) {
    const double scale = rows > 0 ? 1.0 / (double)rows : 0.0;
    for (int64_t i = 0; i < count; ++i) ((float*)data)[i] = (float)(scale * gradient_sums[i]);
  }
  return status;
}

dist_status_t ps_apply_sgd(dist_value_t* const* variables, const dist_value_t* const* gradients,
                           int32_t count, double learning_rate) {
  const char* const names[1] = {"learning_rate"};
  const double values[1] = {learning_rate};
  return dist_variables_apply_update(variables, count, "sgd", gradients, 1, names, values, 1);
}

static float read_first_element(const dist_value_t* variable) {
  dist_value_t* value = NULL;
  void* data = NULL;
  CHECK(dist_variable_read(variable, &value));
  CHECK(dist_tensor_data(value, &data));
  const float first = *(const float*)data;
  dist_value_destroy(value);
  return first;
}

void ps_finish_training(dist_strategy_t* strategy, int32_t is_chief, int32_t workers) {
  /* Shape [1], not a scalar: the strategy's partitioner splits every variable along axis 0
   * (into one shard here). Created by every worker, after the model, in the same order. */
  const int64_t shape[1] = {1};
  const float zero = 0.0f, one = 1.0f;
  dist_value_t* initial = NULL;
  dist_value_t* increment = NULL;
  dist_value_t* done = NULL;
  CHECK(dist_tensor_create(DIST_FLOAT32, shape, 1, &zero, sizeof zero, NULL, &initial));
  CHECK(dist_tensor_create(DIST_FLOAT32, shape, 1, &one, sizeof one, NULL, &increment));
  CHECK(dist_strategy_scope_enter(strategy));
  CHECK(dist_variable_create(initial, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM,
                                "train_mlp/workers_done", &done));
  CHECK(dist_strategy_scope_exit(strategy));
  CHECK(dist_variable_assign_add(done, increment)); /* cross-replica: sent once */
  if (is_chief) {
    const struct timespec pause = {0, FINISH_POLL_MS * 1000000L};
    int64_t waited_ms = 0;
    while (read_first_element(done) < (float)workers) {
      if (waited_ms >= (int64_t)FINISH_WAIT_SECONDS * 1000) {
        fprintf(stderr, "train_mlp: %.0f of %d workers finished within %d s\n",
                read_first_element(done), workers, FINISH_WAIT_SECONDS);
        exit(1);
      }
      nanosleep(&pause, NULL);
      waited_ms += FINISH_POLL_MS;
    }
  }
  dist_value_destroy(done);
  dist_value_destroy(increment);
  dist_value_destroy(initial);
}
