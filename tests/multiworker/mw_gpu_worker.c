/* One worker of a MultiWorkerMirroredStrategy over GPUs with DIST_COMMUNICATION_NCCL, run
 * by distrun. Each worker sees one GPU (CUDA_VISIBLE_DEVICES is set to its rank before the
 * library looks for GPUs, so workers on one machine use different GPUs).
 *
 *   mw_gpu_worker --expect-sum: all-reduces (SUM of rank + 1, on the GPU) and checks
 *       the total, then a cross-replica reduce of the same values; exit 0 when right.
 *       Needs a GPU per worker: exit 77 (skipped) without.
 *   mw_gpu_worker --expect-bootstrap-deadline: on the fake GPU plugin, whose NCCL ranks
 *       only meet inside one process, the job's communicator never completes: creation
 *       must fail on every worker with DEADLINE_EXCEEDED naming the communicator, after
 *       the workers agreed on their GPU counts and the NCCL id through the chief. */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distribute/distribute.h"
#include "mw_check.h"

static dist_status_t AddOne(dist_context_t* context, const dist_value_t* const* args, int32_t num_args,
                            dist_value_t** results, int32_t num_results, void* user_data) {
  const char* device = NULL;
  const float* rank = (const float*)user_data;
  dist_value_t* mine = NULL;
  dist_status_t status;
  (void)args;
  (void)num_args;
  (void)num_results;
  status = dist_context_device(context, &device);
  if (status == DIST_OK) status = dist_tensor_create(DIST_FLOAT32, NULL, 0, rank, sizeof(float), device, &mine);
  if (status == DIST_OK) status = dist_context_all_reduce(context, DIST_REDUCE_SUM, mine, &results[0]);
  dist_value_destroy(mine);
  return status;
}

int main(int argc, char** argv) {
  const char* rank_text = getenv("DIST_RANK");
  const char* world_text = getenv("DIST_WORLD_SIZE");
  const int expect_sum = argc == 2 && strcmp(argv[1], "--expect-sum") == 0;
  const int expect_deadline = argc == 2 && strcmp(argv[1], "--expect-bootstrap-deadline") == 0;
  dist_cluster_t* cluster = NULL;
  dist_communication_options_t* options = NULL;
  dist_strategy_t* strategy = NULL;
  dist_status_t status;
  const char* reason = NULL;
  if ((!expect_sum && !expect_deadline) || rank_text == NULL || world_text == NULL) {
    fprintf(stderr, "usage (under distrun): %s --expect-sum | --expect-bootstrap-deadline\n", argv[0]);
    return 2;
  }
  if (getenv("DIST_CUDA_PLUGIN") == NULL) setenv("CUDA_VISIBLE_DEVICES", rank_text, 1);
  CHECK(dist_gpu_unavailable_reason(&reason));
  if (reason[0] != '\0') {
    printf("no GPU (%s): skipped\n", reason);
    return 77;
  }
  CHECK(dist_cluster_from_tf_config(NULL, &cluster));
  CHECK(dist_communication_options_create(&options));
  CHECK(dist_communication_options_set_implementation(options, DIST_COMMUNICATION_NCCL));
  CHECK(dist_communication_options_set_timeout_ms(options, expect_deadline ? 8000 : 60000));
  status = dist_strategy_create_multi_worker_mirrored(cluster, options, &strategy);
  if (expect_deadline) {
    const int as_expected =
        status == DIST_DEADLINE_EXCEEDED && strstr(dist_last_error_message(), "NCCL communicator") != NULL;
    if (as_expected) {
      printf("worker %s: %s\n", rank_text, dist_last_error_message());
    } else {
      fprintf(stderr, "expected DEADLINE_EXCEEDED naming the NCCL communicator, got %s: %s\n",
              dist_status_name(status), dist_last_error_message());
    }
    dist_strategy_destroy(strategy);
    dist_communication_options_destroy(options);
    dist_cluster_destroy(cluster);
    return as_expected ? 0 : 1;
  }
  CHECK(status);
  {
    const float rank = (float)atoi(rank_text);
    const int world = atoi(world_text);
    int32_t replicas = 0;
    dist_value_t* sums = NULL;
    dist_value_t* total = NULL;
    dist_value_t* host = NULL;
    float mine = rank + 1.0f;
    float got = 0.0f;
    void* data = NULL;
    const float expected = (float)(world * (world + 1) / 2);
    CHECK(dist_strategy_num_replicas_in_sync(strategy, &replicas));
    CHECK(dist_strategy_run(strategy, AddOne, &mine, NULL, 0, &sums, 1));
    CHECK(dist_tensor_copy_to_device(sums, "CPU:0", &host));
    CHECK(dist_tensor_data(host, &data));
    memcpy(&got, data, sizeof got);
    if (replicas != world || got != expected) {
      fprintf(stderr, "worker %s: %d replicas in sync, sum %g: expected %d and %g\n", rank_text, (int)replicas,
              got, world, expected);
      return 1;
    }
    CHECK(dist_strategy_reduce(strategy, DIST_REDUCE_MEAN, sums, &total));
    dist_value_destroy(host);
    CHECK(dist_tensor_copy_to_device(total, "CPU:0", &host));
    CHECK(dist_tensor_data(host, &data));
    memcpy(&got, data, sizeof got);
    if (got != expected) {
      fprintf(stderr, "worker %s: reduce(MEAN) of the sums is %g, expected %g\n", rank_text, got, expected);
      return 1;
    }
    printf("worker %s: NCCL all-reduce over %d GPUs: %g\n", rank_text, (int)replicas, got);
    dist_value_destroy(host);
    dist_value_destroy(total);
    dist_value_destroy(sums);
  }
  dist_strategy_destroy(strategy);
  dist_communication_options_destroy(options);
  dist_cluster_destroy(cluster);
  return 0;
}
