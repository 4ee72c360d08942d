/* Tests for coordinator.h in one process: a ps task's server, two worker tasks' servers
 * (which run the closures) and the chief's ParameterServerStrategy with a coordinator, all
 * on free loopback ports. Closures that update a ps variable and return a tensor (every
 * result fetched once, the variable counting every closure), a failing closure (its error
 * at join once, the closures queued behind it cancelled), an unknown function, per-worker
 * datasets (DATA sharding and a dataset function that shards itself: every element once
 * across the workers, then the end), a worker whose server stops (its closures finish on
 * the other one), and misuse of every function. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_ports_test.h"
#include "dist_strategy_test.h"

enum { kWorkers = 2, kTasks = kWorkers + 2, kElements = 20 };

typedef struct {
  int32_t ports[kTasks]; /* chief, worker 0, worker 1, ps 0 */
  dist_server_t* servers[kTasks];
  dist_strategy_t* strategy;
  dist_coordinator_t* coordinator;
} job;

static job the_job;

static dist_cluster_t* cluster_as(const int32_t* ports, const char* job_name, int32_t index) {
  dist_cluster_t* cluster = NULL;
  char address[32];
  DT_OK(dist_cluster_create(&cluster));
  snprintf(address, sizeof(address), "localhost:%d", ports[0]);
  DT_OK(dist_cluster_add_task(cluster, "chief", 0, address));
  for (int32_t w = 0; w < kWorkers; ++w) {
    snprintf(address, sizeof(address), "localhost:%d", ports[1 + w]);
    DT_OK(dist_cluster_add_task(cluster, "worker", w, address));
  }
  snprintf(address, sizeof(address), "localhost:%d", ports[kTasks - 1]);
  DT_OK(dist_cluster_add_task(cluster, "ps", 0, address));
  DT_OK(dist_cluster_set_task(cluster, job_name, index));
  return cluster;
}

typedef struct {
  int slot;
  const char* job_name;
  int32_t index;
} server_start;

static void* start_server(void* arg) {
  const server_start* start = (const server_start*)arg;
  dist_cluster_t* cluster = cluster_as(the_job.ports, start->job_name, start->index);
  if (dist_server_create(cluster, NULL, &the_job.servers[start->slot]) != DIST_OK) {
    fprintf(stderr, "server %s:%d: %s\n", start->job_name, start->index, dist_last_error_message());
  }
  dist_cluster_destroy(cluster);
  return NULL;
}

/* ---- The job's functions ---- */

/* args: a counter variable and a tensor; adds 1 to the counter and returns the tensor. */
static dist_status_t add_and_echo(dist_strategy_t* strategy, const dist_closure_args_t* args,
                                  dist_value_t** out_result, void* user_data) {
  dist_value_t* counter = NULL;
  dist_value_t* x = NULL;
  dist_value_t* one = NULL;
  dist_status_t status;
  const float value = 1.0f;
  (void)strategy;
  (void)user_data;
  if ((status = dist_closure_args_value(args, 0, &counter)) != DIST_OK) return status;
  if ((status = dist_closure_args_value(args, 1, &x)) != DIST_OK) return status;
  if ((status = dist_tensor_create(DIST_FLOAT32, NULL, 0, &value, sizeof(value), "CPU:0", &one)) != DIST_OK) {
    return status;
  }
  status = dist_variable_assign_add(counter, one);
  dist_value_destroy(one);
  if (status != DIST_OK) return status;
  {
    void* data = NULL;
    if ((status = dist_tensor_data(x, &data)) != DIST_OK) return status;
    return dist_tensor_create(DIST_FLOAT32, NULL, 0, data, sizeof(float), "CPU:0", out_result);
  }
}

static dist_status_t always_fails(dist_strategy_t* strategy, const dist_closure_args_t* args,
                                  dist_value_t** out_result, void* user_data) {
  (void)strategy;
  (void)args;
  (void)out_result;
  (void)user_data;
  return dist_closure_args_value(args, 5, out_result); /* OUT_OF_RANGE, with a message */
}

static dist_status_t sleep_briefly(dist_strategy_t* strategy, const dist_closure_args_t* args,
                                   dist_value_t** out_result, void* user_data) {
  struct timespec pause = {0, 20 * 1000 * 1000};
  (void)strategy;
  (void)args;
  (void)out_result;
  (void)user_data;
  nanosleep(&pause, NULL);
  return DIST_OK;
}

/* Keeps its worker busy, so that what is scheduled after it queues up. */
static dist_status_t sleep_long(dist_strategy_t* strategy, const dist_closure_args_t* args,
                                dist_value_t** out_result, void* user_data) {
  struct timespec pause = {0, 500 * 1000 * 1000};
  (void)strategy;
  (void)args;
  (void)out_result;
  (void)user_data;
  nanosleep(&pause, NULL);
  return DIST_OK;
}

/* args: a per-worker iterator; returns its next element, or -1 at its end. */
static dist_status_t next_element(dist_strategy_t* strategy, const dist_closure_args_t* args,
                                  dist_value_t** out_result, void* user_data) {
  dist_iterator_t* iterator = NULL;
  dist_value_t* element = NULL;
  int32_t has = 0;
  dist_status_t status;
  (void)strategy;
  (void)user_data;
  if ((status = dist_closure_args_iterator(args, 0, &iterator)) != DIST_OK) return status;
  if ((status = dist_iterator_get_next_as_optional(iterator, &element, 1, &has)) != DIST_OK) return status;
  if (!has) {
    const int64_t end = -1;
    const int64_t dims[1] = {1};
    return dist_tensor_create(DIST_INT64, dims, 1, &end, sizeof(end), "CPU:0", out_result);
  }
  *out_result = element;
  return DIST_OK;
}

/* Returns the end of the dataset as an error: the epoch's end at join. */
static dist_status_t next_or_end(dist_strategy_t* strategy, const dist_closure_args_t* args,
                                 dist_value_t** out_result, void* user_data) {
  dist_iterator_t* iterator = NULL;
  dist_status_t status;
  (void)strategy;
  (void)user_data;
  if ((status = dist_closure_args_iterator(args, 0, &iterator)) != DIST_OK) return status;
  return dist_iterator_get_next(iterator, out_result, 1);
}

/* range(kElements) in global batches of 2 (DATA sharding gives each worker its row). */
static dist_status_t batched_range(const dist_input_context_t* context, dist_dataset_t** out, void* user_data) {
  dist_dataset_t* range = NULL;
  dist_status_t status;
  (void)context;
  (void)user_data;
  if ((status = dist_dataset_range(0, kElements, 1, &range)) != DIST_OK) return status;
  status = dist_dataset_batch(range, kWorkers, 0, out);
  dist_dataset_destroy(range);
  return status;
}

/* range(kElements) sharded by the input context, in batches of 1. */
static dist_status_t sharded_range(const dist_input_context_t* context, dist_dataset_t** out, void* user_data) {
  dist_dataset_t* range = NULL;
  dist_dataset_t* shard = NULL;
  int32_t pipelines = 0;
  int32_t id = 0;
  dist_status_t status;
  (void)user_data;
  if ((status = dist_input_context_num_input_pipelines(context, &pipelines)) != DIST_OK) return status;
  if ((status = dist_input_context_input_pipeline_id(context, &id)) != DIST_OK) return status;
  if ((status = dist_dataset_range(0, kElements, 1, &range)) != DIST_OK) return status;
  status = dist_dataset_shard(range, pipelines, id, &shard);
  dist_dataset_destroy(range);
  if (status != DIST_OK) return status;
  status = dist_dataset_batch(shard, 1, 0, out);
  dist_dataset_destroy(shard);
  return status;
}

static int setup_job(void** state) {
  static const server_start starts[] = {{1, "worker", 0}, {2, "worker", 1}, {3, "ps", 0}};
  pthread_t threads[3];
  dist_cluster_t* cluster = NULL;
  dist_communication_options_t* comm = NULL;
  (void)state;
  unsetenv("TF_CONFIG");
  unsetenv("DIST_JOB_TOKEN");
  if (dist_closure_register("add_and_echo", add_and_echo, NULL, NULL) != DIST_OK ||
      dist_closure_register("always_fails", always_fails, NULL, NULL) != DIST_OK ||
      dist_closure_register("sleep_briefly", sleep_briefly, NULL, NULL) != DIST_OK ||
      dist_closure_register("sleep_long", sleep_long, NULL, NULL) != DIST_OK ||
      dist_closure_register("next_element", next_element, NULL, NULL) != DIST_OK ||
      dist_closure_register("next_or_end", next_or_end, NULL, NULL) != DIST_OK ||
      dist_dataset_function_register("batched_range", batched_range, NULL, NULL) != DIST_OK ||
      dist_dataset_function_register("sharded_range", sharded_range, NULL, NULL) != DIST_OK) {
    return -1;
  }
  dt_free_ports(the_job.ports, kTasks);
  for (int i = 0; i < 3; ++i) pthread_create(&threads[i], NULL, start_server, (void*)&starts[i]);
  cluster = cluster_as(the_job.ports, "chief", 0);
  if (dist_communication_options_create(&comm) != DIST_OK ||
      dist_communication_options_set_timeout_ms(comm, 20000) != DIST_OK ||
      dist_strategy_create_parameter_server(cluster, comm, NULL, &the_job.strategy) != DIST_OK) {
    fprintf(stderr, "chief: %s\n", dist_last_error_message());
  }
  dist_communication_options_destroy(comm);
  dist_cluster_destroy(cluster);
  for (int i = 0; i < 3; ++i) pthread_join(threads[i], NULL);
  if (the_job.strategy == NULL) return -1;
  for (int i = 1; i < kTasks; ++i) {
    if (the_job.servers[i] == NULL) return -1;
  }
  return dist_coordinator_create(the_job.strategy, &the_job.coordinator) == DIST_OK ? 0 : -1;
}

static int teardown_job(void** state) {
  (void)state;
  dist_coordinator_destroy(the_job.coordinator);
  for (int i = 1; i < kTasks; ++i) dist_server_stop(the_job.servers[i]);
  dist_strategy_destroy(the_job.strategy);
  for (int i = 1; i < kTasks; ++i) dist_server_destroy(the_job.servers[i]);
  return 0;
}

static dist_value_t* counter_variable(const char* name) {
  dist_value_t* zero = dts_f32_scalar(0.0f, "CPU:0");
  dist_value_t* v = NULL;
  DT_OK(dist_strategy_scope_enter(the_job.strategy));
  DT_OK(dist_variable_create(zero, DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, name, &v));
  DT_OK(dist_strategy_scope_exit(the_job.strategy));
  dist_value_destroy(zero);
  return v;
}

/* 100 closures: each result fetched once and equal to its argument; the ps counted 100. */
static void test_closures_update_variables_and_return_results(void** state) {
  enum { kClosures = 100 };
  dist_remote_value_t* values[kClosures];
  dist_value_t* counter = counter_variable("closures_counter");
  dist_value_t* read = NULL;
  int32_t done = 0;
  int32_t workers = 0;
  (void)state;
  DT_OK(dist_coordinator_num_workers(the_job.coordinator, &workers));
  assert_int_equal(workers, kWorkers);
  for (int i = 0; i < kClosures; ++i) {
    dist_closure_args_t* args = NULL;
    dist_value_t* x = dts_f32_scalar((float)i, "CPU:0");
    DT_OK(dist_closure_args_create(&args));
    DT_OK(dist_closure_args_add_value(args, counter));
    DT_OK(dist_closure_args_add_value(args, x));
    DT_OK(dist_coordinator_schedule(the_job.coordinator, "add_and_echo", args, &values[i]));
    dist_closure_args_destroy(args); /* the closure keeps what it needs */
    dist_value_destroy(x);
  }
  DT_OK(dist_coordinator_join(the_job.coordinator));
  DT_OK(dist_coordinator_done(the_job.coordinator, &done));
  assert_int_equal(done, 1);
  for (int i = 0; i < kClosures; ++i) {
    dist_value_t* result = NULL;
    int32_t ready = 0;
    DT_OK(dist_remote_value_is_ready(values[i], &ready));
    assert_int_equal(ready, 1);
    DT_OK(dist_remote_value_fetch(values[i], &result));
    assert_float_equal(dts_scalar_f32(result), (float)i, 0.0f);
    dist_value_destroy(result);
    dist_remote_value_destroy(values[i]);
  }
  DT_OK(dist_variable_read(counter, &read));
  assert_float_equal(dts_scalar_f32(read), (float)kClosures, 0.0f);
  dist_value_destroy(read);
  dist_value_destroy(counter);
}

/* A failing closure: its error at its fetch and at join (once); what was queued behind it
 * is cancelled; the coordinator works again afterwards. */
static void test_a_failing_closure_cancels_the_queue(void** state) {
  enum { kQueued = 40 };
  dist_remote_value_t* failing = NULL;
  dist_remote_value_t* queued[kQueued];
  dist_value_t* result = DT_SENTINEL_PTR;
  dist_remote_value_t* busy[kWorkers];
  int cancelled = 0;
  (void)state;
  /* Both workers busy for 500 ms: the failing closure and those after it queue up, so the
   * failure finds closures to cancel. */
  for (int w = 0; w < kWorkers; ++w) DT_OK(dist_coordinator_schedule(the_job.coordinator, "sleep_long", NULL, &busy[w]));
  DT_OK(dist_coordinator_schedule(the_job.coordinator, "always_fails", NULL, &failing));
  for (int i = 0; i < kQueued; ++i) {
    dist_status_t status = dist_coordinator_schedule(the_job.coordinator, "sleep_briefly", NULL, &queued[i]);
    if (status != DIST_OK) {
      /* The failure was recorded already: schedule reports it (once) and queues nothing. */
      assert_int_equal(status, DIST_OUT_OF_RANGE);
      assert_null(queued[i]);
    }
  }
  {
    const dist_status_t joined = dist_coordinator_join(the_job.coordinator);
    assert_true(joined == DIST_OUT_OF_RANGE || joined == DIST_OK); /* OK if schedule reported it */
    if (joined == DIST_OUT_OF_RANGE) assert_non_null(strstr(dist_last_error_message(), "index is 5"));
  }
  DT_ERR(dist_remote_value_fetch(failing, &result), DIST_OUT_OF_RANGE, "dist_remote_value_fetch", "index is 5");
  assert_null(result);
  for (int i = 0; i < kQueued; ++i) {
    if (queued[i] == NULL) continue;
    dist_value_t* r = NULL;
    const dist_status_t status = dist_remote_value_fetch(queued[i], &r);
    assert_true(status == DIST_OK || status == DIST_CANCELLED);
    if (status == DIST_CANCELLED) ++cancelled;
    dist_remote_value_destroy(queued[i]);
  }
  assert_true(cancelled > 0);
  DT_OK(dist_coordinator_join(the_job.coordinator)); /* reported once */
  for (int w = 0; w < kWorkers; ++w) dist_remote_value_destroy(busy[w]);
  dist_remote_value_destroy(failing);
  /* An unknown function is the closure's error (NOT_FOUND naming it). */
  DT_OK(dist_coordinator_schedule(the_job.coordinator, "nobody_registered_this", NULL, &failing));
  DT_ERR(dist_coordinator_join(the_job.coordinator), DIST_NOT_FOUND, "dist_coordinator_join",
         "nobody_registered_this");
  dist_remote_value_destroy(failing);
}

/* Closures pull from a per-worker iterator until every worker reported its end; the
 * elements seen are 0 .. kElements-1, each once. */
static void pull_every_element(const dist_per_worker_t* dataset) {
  dist_per_worker_t* iterator = NULL;
  int seen[kElements] = {0};
  int ends = 0;
  int total = 0;
  DT_OK(dist_per_worker_make_iterator(dataset, &iterator));
  /* Until kElements elements came back (a duplicate would leave another one unseen), then
   * the workers' ends. The closures go to whichever worker is free, so one worker may
   * report its end many times before the other's elements are all pulled. */
  for (int round = 0; round < 40 * kElements && (total < kElements || ends < kWorkers); ++round) {
    dist_closure_args_t* args = NULL;
    dist_remote_value_t* value = NULL;
    dist_value_t* element = NULL;
    int64_t got[1] = {0};
    DT_OK(dist_closure_args_create(&args));
    DT_OK(dist_closure_args_add_per_worker(args, iterator));
    DT_OK(dist_coordinator_schedule(the_job.coordinator, "next_element", args, &value));
    dist_closure_args_destroy(args);
    DT_OK(dist_remote_value_fetch(value, &element));
    assert_non_null(element);
    {
      void* data = NULL;
      DT_OK(dist_tensor_data(element, &data));
      memcpy(got, data, sizeof(got));
    }
    if (got[0] < 0) {
      ++ends;
    } else {
      assert_true(got[0] < kElements);
      ++seen[got[0]];
      ++total;
    }
    dist_value_destroy(element);
    dist_remote_value_destroy(value);
  }
  assert_int_equal(total, kElements);
  for (int i = 0; i < kElements; ++i) assert_int_equal(seen[i], 1);
  /* A closure that returns the end as its error ends the epoch at join. */
  {
    dist_closure_args_t* args = NULL;
    dist_remote_value_t* value = NULL;
    DT_OK(dist_closure_args_create(&args));
    DT_OK(dist_closure_args_add_per_worker(args, iterator));
    DT_OK(dist_coordinator_schedule(the_job.coordinator, "next_or_end", args, &value));
    dist_closure_args_destroy(args);
    DT_ERR(dist_coordinator_join(the_job.coordinator), DIST_OUT_OF_RANGE, "dist_coordinator_join", "end");
    dist_remote_value_destroy(value);
  }
  dist_per_worker_destroy(iterator);
}

static void test_per_worker_dataset_with_data_sharding(void** state) {
  dist_input_options_t* options = NULL;
  dist_per_worker_t* dataset = NULL;
  (void)state;
  DT_OK(dist_input_options_create(&options));
  DT_OK(dist_input_options_set_auto_shard_policy(options, DIST_AUTO_SHARD_DATA));
  DT_OK(dist_coordinator_create_per_worker_dataset(the_job.coordinator, "batched_range", options, &dataset));
  pull_every_element(dataset);
  pull_every_element(dataset); /* a second epoch: a fresh pass on every worker */
  dist_per_worker_destroy(dataset);
  dist_input_options_destroy(options);
}

static void test_per_worker_dataset_from_function(void** state) {
  dist_per_worker_t* dataset = NULL;
  (void)state;
  DT_OK(dist_coordinator_create_per_worker_dataset_from_function(the_job.coordinator, "sharded_range", NULL,
                                                                 &dataset));
  pull_every_element(dataset);
  dist_per_worker_destroy(dataset);
}

/* ---- Misuse ---- */

static void test_closure_args_misuse(void** state) {
  dist_closure_args_t* args = NULL;
  dist_value_t* x = dts_f32_scalar(1.0f, "CPU:0");
  dist_value_t* lent = DT_SENTINEL_PTR;
  dist_iterator_t* iterator = DT_SENTINEL_PTR;
  dist_closure_arg_kind_t kind = -1;
  int32_t count = -1;
  float two[2] = {1.0f, 2.0f};
  dist_value_t* per_replica = dts_per_replica_f32(two, 2, 1);
  dist_per_worker_t* dataset = NULL;
  (void)state;
  DT_ERR(dist_closure_args_create(NULL), DIST_INVALID_ARGUMENT, "dist_closure_args_create", "out is NULL");
  DT_OK(dist_closure_args_create(&args));
  DT_ERR(dist_closure_args_add_value(NULL, x), DIST_INVALID_ARGUMENT, "dist_closure_args_add_value", "args is NULL");
  DT_ERR(dist_closure_args_add_value(args, NULL), DIST_INVALID_ARGUMENT, "dist_closure_args_add_value",
         "value is NULL");
  DT_ERR(dist_closure_args_add_value(args, per_replica), DIST_INVALID_ARGUMENT, "dist_closure_args_add_value",
         "PerReplica");
  DT_ERR(dist_closure_args_add_value(args, (const dist_value_t*)args), DIST_INVALID_ARGUMENT,
         "dist_closure_args_add_value", "dist_closure_args_t");
  DT_OK(dist_closure_args_count(args, &count));
  assert_int_equal(count, 0);
  for (int i = 0; i < 64; ++i) DT_OK(dist_closure_args_add_value(args, x));
  DT_ERR(dist_closure_args_add_value(args, x), DIST_INVALID_ARGUMENT, "dist_closure_args_add_value",
         "at most 64 arguments");
  DT_OK(dist_closure_args_count(args, &count));
  assert_int_equal(count, 64);
  DT_OK(dist_closure_args_kind(args, 3, &kind));
  assert_int_equal(kind, DIST_CLOSURE_ARG_TENSOR);
  DT_ERR(dist_closure_args_kind(args, 64, &kind), DIST_OUT_OF_RANGE, "dist_closure_args_kind", "64");
  DT_ERR(dist_closure_args_kind(args, 0, NULL), DIST_INVALID_ARGUMENT, "dist_closure_args_kind", "out_kind");
  DT_OK(dist_closure_args_value(args, 0, &lent));
  assert_float_equal(dts_scalar_f32(lent), 1.0f, 0.0f);
  dist_value_destroy(lent); /* lent: nothing happens */
  DT_OK(dist_closure_args_value(args, 0, &lent));
  DT_ERR(dist_closure_args_value(args, -1, &lent), DIST_OUT_OF_RANGE, "dist_closure_args_value", "-1");
  DT_ERR(dist_closure_args_iterator(args, 0, &iterator), DIST_INVALID_ARGUMENT, "dist_closure_args_iterator",
         "not a per-worker iterator");
  assert_null(iterator);
  DT_ERR(dist_closure_args_count(NULL, &count), DIST_INVALID_ARGUMENT, "dist_closure_args_count", "args is NULL");
  dist_closure_args_destroy(args);
  /* More than 4 MiB of tensors. */
  {
    const int64_t dims[1] = {(int64_t)3 << 20};
    void* zeros = calloc((size_t)dims[0], 1);
    dist_value_t* big = dts_tensor(DIST_UINT8, dims, 1, zeros, "CPU:0");
    free(zeros);
    DT_OK(dist_closure_args_create(&args));
    DT_OK(dist_closure_args_add_value(args, big));
    DT_ERR(dist_closure_args_add_value(args, big), DIST_INVALID_ARGUMENT, "dist_closure_args_add_value",
           "does not fit");
    DT_OK(dist_closure_args_count(args, &count));
    assert_int_equal(count, 1);
    dist_value_destroy(big);
  }
  /* A per-worker dataset is not an argument; its iterator is. */
  DT_OK(dist_coordinator_create_per_worker_dataset(the_job.coordinator, "batched_range", NULL, &dataset));
  DT_ERR(dist_closure_args_add_per_worker(args, dataset), DIST_INVALID_ARGUMENT,
         "dist_closure_args_add_per_worker", "per-worker dataset");
  DT_ERR(dist_closure_args_add_per_worker(args, NULL), DIST_INVALID_ARGUMENT, "dist_closure_args_add_per_worker",
         "value is NULL");
  {
    dist_per_worker_t* it = NULL;
    DT_OK(dist_per_worker_make_iterator(dataset, &it));
    DT_OK(dist_closure_args_add_per_worker(args, it));
    DT_OK(dist_closure_args_kind(args, 1, &kind));
    assert_int_equal(kind, DIST_CLOSURE_ARG_ITERATOR);
    DT_ERR(dist_closure_args_value(args, 1, &lent), DIST_INVALID_ARGUMENT, "dist_closure_args_value",
           "dist_closure_args_iterator");
    DT_ERR(dist_closure_args_iterator(args, 1, &iterator), DIST_INVALID_ARGUMENT, "dist_closure_args_iterator",
           "only on a worker");
    {
      dist_per_worker_t* again = DT_SENTINEL_PTR;
      DT_ERR(dist_per_worker_make_iterator(it, &again), DIST_INVALID_ARGUMENT, "dist_per_worker_make_iterator",
             "iterator");
      assert_null(again);
    }
    dist_per_worker_destroy(it);
  }
  dist_per_worker_destroy(dataset);
  dist_closure_args_destroy(args);
  dist_value_destroy(per_replica);
  dist_value_destroy(x);
}

static void test_coordinator_misuse(void** state) {
  dist_coordinator_t* coordinator = DT_SENTINEL_PTR;
  dist_remote_value_t* value = DT_SENTINEL_PTR;
  dist_per_worker_t* per_worker = DT_SENTINEL_PTR;
  dist_strategy_t* local = dts_local_parameter_server(1, NULL);
  dist_strategy_t* mirrored = dts_mirrored(1);
  dist_value_t* out = DT_SENTINEL_PTR;
  int32_t n = -1;
  (void)state;
  DT_ERR(dist_coordinator_create(NULL, &coordinator), DIST_INVALID_ARGUMENT, "dist_coordinator_create",
         "strategy is NULL");
  assert_null(coordinator);
  DT_ERR(dist_coordinator_create(local, &coordinator), DIST_INVALID_ARGUMENT, "dist_coordinator_create",
         "local mode");
  DT_ERR(dist_coordinator_create(mirrored, &coordinator), DIST_INVALID_ARGUMENT, "dist_coordinator_create",
         "ParameterServerStrategy");
  DT_ERR(dist_coordinator_create(the_job.strategy, &coordinator), DIST_ALREADY_EXISTS, "dist_coordinator_create",
         "has a coordinator already");
  DT_ERR(dist_coordinator_create(the_job.strategy, NULL), DIST_INVALID_ARGUMENT, "dist_coordinator_create",
         "out is NULL");
  DT_ERR(dist_coordinator_schedule(NULL, "sleep_briefly", NULL, &value), DIST_INVALID_ARGUMENT,
         "dist_coordinator_schedule", "coordinator is NULL");
  DT_ERR(dist_coordinator_schedule(the_job.coordinator, NULL, NULL, &value), DIST_INVALID_ARGUMENT,
         "dist_coordinator_schedule", "function is NULL");
  DT_ERR(dist_coordinator_schedule(the_job.coordinator, "", NULL, &value), DIST_INVALID_ARGUMENT,
         "dist_coordinator_schedule", "closure function name");
  DT_ERR(dist_coordinator_schedule(the_job.coordinator, "bad\nname", NULL, &value), DIST_INVALID_ARGUMENT,
         "dist_coordinator_schedule", "closure function name");
  DT_ERR(dist_coordinator_schedule(the_job.coordinator, "sleep_briefly", NULL, NULL), DIST_INVALID_ARGUMENT,
         "dist_coordinator_schedule", "out is NULL");
  DT_ERR(dist_coordinator_schedule((dist_coordinator_t*)local, "sleep_briefly", NULL, &value),
         DIST_INVALID_ARGUMENT, "dist_coordinator_schedule", "dist_strategy_t");
  assert_null(value);
  /* A variable of another strategy. */
  {
    dist_value_t* init = dts_f32_scalar(0.0f, "CPU:0");
    dist_value_t* other = NULL;
    dist_closure_args_t* args = NULL;
    DT_OK(dist_strategy_scope_enter(local));
    DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, "elsewhere", &other));
    DT_OK(dist_strategy_scope_exit(local));
    DT_OK(dist_closure_args_create(&args));
    DT_OK(dist_closure_args_add_value(args, other));
    DT_ERR(dist_coordinator_schedule(the_job.coordinator, "add_and_echo", args, &value), DIST_INVALID_ARGUMENT,
           "dist_coordinator_schedule", "another strategy");
    dist_closure_args_destroy(args);
    dist_value_destroy(other);
    dist_value_destroy(init);
  }
  DT_ERR(dist_coordinator_join(NULL), DIST_INVALID_ARGUMENT, "dist_coordinator_join", "coordinator is NULL");
  DT_ERR(dist_coordinator_done(the_job.coordinator, NULL), DIST_INVALID_ARGUMENT, "dist_coordinator_done",
         "out_done");
  DT_ERR(dist_coordinator_num_workers(NULL, &n), DIST_INVALID_ARGUMENT, "dist_coordinator_num_workers",
         "coordinator is NULL");
  DT_ERR(dist_remote_value_fetch(NULL, &out), DIST_INVALID_ARGUMENT, "dist_remote_value_fetch", "value is NULL");
  DT_ERR(dist_remote_value_is_ready(NULL, &n), DIST_INVALID_ARGUMENT, "dist_remote_value_is_ready",
         "value is NULL");
  DT_ERR(dist_coordinator_create_per_worker_dataset(the_job.coordinator, NULL, NULL, &per_worker),
         DIST_INVALID_ARGUMENT, "dist_coordinator_create_per_worker_dataset", "dataset_function is NULL");
  DT_ERR(dist_coordinator_create_per_worker_dataset_from_function(NULL, "batched_range", NULL, &per_worker),
         DIST_INVALID_ARGUMENT, "dist_coordinator_create_per_worker_dataset_from_function", "coordinator is NULL");
  DT_ERR(dist_per_worker_make_iterator(NULL, &per_worker), DIST_INVALID_ARGUMENT, "dist_per_worker_make_iterator",
         "dataset is NULL");
  assert_null(per_worker);
  dist_coordinator_destroy(NULL);
  dist_remote_value_destroy(NULL);
  dist_per_worker_destroy(NULL);
  dist_coordinator_destroy((dist_coordinator_t*)local); /* another type: nothing happens */
  dist_strategy_destroy(mirrored);
  dist_strategy_destroy(local);
}

static void test_registration_misuse(void** state) {
  int32_t registered = -1;
  (void)state;
  DT_ERR(dist_closure_register(NULL, add_and_echo, NULL, NULL), DIST_INVALID_ARGUMENT, "dist_closure_register",
         "name is NULL");
  DT_ERR(dist_closure_register("x", NULL, NULL, NULL), DIST_INVALID_ARGUMENT, "dist_closure_register",
         "fn is NULL");
  DT_ERR(dist_closure_register("", add_and_echo, NULL, NULL), DIST_INVALID_ARGUMENT, "dist_closure_register",
         "name");
  DT_ERR(dist_closure_register("add_and_echo", add_and_echo, NULL, NULL), DIST_ALREADY_EXISTS,
         "dist_closure_register", "registered already");
  DT_OK(dist_closure_is_registered("add_and_echo", &registered));
  assert_int_equal(registered, 1);
  DT_OK(dist_closure_register("temporary", add_and_echo, NULL, NULL));
  DT_OK(dist_closure_unregister("temporary"));
  DT_OK(dist_closure_is_registered("temporary", &registered));
  assert_int_equal(registered, 0);
  DT_ERR(dist_closure_unregister("temporary"), DIST_NOT_FOUND, "dist_closure_unregister", "not registered");
  DT_ERR(dist_closure_is_registered("add_and_echo", NULL), DIST_INVALID_ARGUMENT, "dist_closure_is_registered",
         "out_registered");
  DT_ERR(dist_dataset_function_register(NULL, batched_range, NULL, NULL), DIST_INVALID_ARGUMENT,
         "dist_dataset_function_register", "name is NULL");
  DT_ERR(dist_dataset_function_register("batched_range", batched_range, NULL, NULL), DIST_ALREADY_EXISTS,
         "dist_dataset_function_register", "registered already");
  DT_OK(dist_dataset_function_register("temporary_data", batched_range, NULL, NULL));
  DT_OK(dist_dataset_function_unregister("temporary_data"));
  DT_ERR(dist_dataset_function_unregister("temporary_data"), DIST_NOT_FOUND, "dist_dataset_function_unregister",
         "not registered");
}

/* The coordinator's four handle types (types.h, "Misuse detection"), with a value and a
 * strategy: each passed where each other is expected is INVALID_ARGUMENT naming both
 * types and changes nothing; another type's destroy does nothing; a destroyed handle is
 * named as destroyed. */
enum { kHCoordinator, kHRemoteValue, kHPerWorker, kHClosureArgs, kHValue, kHStrategy, kHNumTypes };
static const char* const kHTypeNames[kHNumTypes] = {"dist_coordinator_t", "dist_remote_value_t",
                                                    "dist_per_worker_t",  "dist_closure_args_t",
                                                    "dist_value_t",       "dist_strategy_t"};

static dist_status_t use_handle_as(int type, void* handle, dist_per_worker_t** made_iterator) {
  int32_t i32 = 0;
  dist_value_kind_t kind = 0;
  switch (type) {
    case kHCoordinator: return dist_coordinator_num_workers((const dist_coordinator_t*)handle, &i32);
    case kHRemoteValue: return dist_remote_value_is_ready((const dist_remote_value_t*)handle, &i32);
    case kHPerWorker: return dist_per_worker_make_iterator((const dist_per_worker_t*)handle, made_iterator);
    case kHClosureArgs: return dist_closure_args_count((const dist_closure_args_t*)handle, &i32);
    case kHValue: return dist_value_kind((const dist_value_t*)handle, &kind);
    default: return dist_strategy_num_replicas_in_sync((const dist_strategy_t*)handle, &i32);
  }
}

static void destroy_handle_as(int type, void* handle) {
  switch (type) {
    case kHCoordinator: dist_coordinator_destroy((dist_coordinator_t*)handle); break;
    case kHRemoteValue: dist_remote_value_destroy((dist_remote_value_t*)handle); break;
    case kHPerWorker: dist_per_worker_destroy((dist_per_worker_t*)handle); break;
    case kHClosureArgs: dist_closure_args_destroy((dist_closure_args_t*)handle); break;
    case kHValue: dist_value_destroy((dist_value_t*)handle); break;
    default: dist_strategy_destroy((dist_strategy_t*)handle); break;
  }
}

static void test_coordinator_handle_types(void** state) {
  void* handles[kHNumTypes];
  dist_per_worker_t* iterator = NULL;
  char expected[160];
  int have, want;
  (void)state;
  handles[kHCoordinator] = the_job.coordinator;
  DT_OK(dist_coordinator_schedule(the_job.coordinator, "sleep_briefly", NULL,
                                  (dist_remote_value_t**)&handles[kHRemoteValue]));
  DT_OK(dist_coordinator_create_per_worker_dataset_from_function(
      the_job.coordinator, "batched_range", NULL, (dist_per_worker_t**)&handles[kHPerWorker]));
  DT_OK(dist_closure_args_create((dist_closure_args_t**)&handles[kHClosureArgs]));
  handles[kHValue] = dts_f32_scalar(1.0f, "CPU:0");
  DT_OK(dist_strategy_create_one_device("CPU:0", (dist_strategy_t**)&handles[kHStrategy]));

  for (have = 0; have < kHNumTypes; ++have) {
    for (want = 0; want < kHNumTypes; ++want) {
      dist_status_t status;
      if (have == want) continue;
      iterator = DT_SENTINEL_PTR;
      status = use_handle_as(want, handles[have], &iterator);
      snprintf(expected, sizeof(expected), "is not a %s (it is a %s)", kHTypeNames[want], kHTypeNames[have]);
      if (status != DIST_INVALID_ARGUMENT || strstr(dist_last_error_message(), expected) == NULL) {
        print_error("%s as %s: %s \"%s\"\n", kHTypeNames[have], kHTypeNames[want], dist_status_name(status),
                    dist_last_error_message());
        fail();
      }
      if (want == kHPerWorker) assert_null(iterator);
      destroy_handle_as(want, handles[have]); /* another type's destroy: nothing happens */
    }
  }
  /* Every handle is still alive and usable. */
  for (have = 0; have < kHNumTypes; ++have) {
    iterator = NULL;
    DT_OK(use_handle_as(have, handles[have], &iterator));
    dist_per_worker_destroy(iterator);
  }
  DT_OK(dist_coordinator_join(the_job.coordinator));
  /* Destroyed handles are named as such, and a second destroy does nothing. */
  for (have = kHRemoteValue; have < kHNumTypes; ++have) {
    destroy_handle_as(have, handles[have]);
    iterator = NULL;
    DT_ERR(use_handle_as(have, handles[have], &iterator), DIST_INVALID_ARGUMENT, NULL, "was destroyed");
    destroy_handle_as(have, handles[have]);
  }
}

/* A worker whose server stops: the closures still queued run on the other worker. */
static void test_closures_survive_a_stopped_worker(void** state) {
  enum { kClosures = 30 };
  dist_remote_value_t* values[kClosures];
  (void)state;
  for (int i = 0; i < kClosures; ++i) {
    DT_OK(dist_coordinator_schedule(the_job.coordinator, "sleep_briefly", NULL, &values[i]));
  }
  dist_server_stop(the_job.servers[2]); /* worker 1 */
  DT_OK(dist_coordinator_join(the_job.coordinator));
  for (int i = 0; i < kClosures; ++i) {
    dist_value_t* none = DT_SENTINEL_PTR;
    DT_OK(dist_remote_value_fetch(values[i], &none));
    assert_null(none);
    dist_remote_value_destroy(values[i]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registration_misuse),
      cmocka_unit_test(test_closures_update_variables_and_return_results),
      cmocka_unit_test(test_a_failing_closure_cancels_the_queue),
      cmocka_unit_test(test_per_worker_dataset_with_data_sharding),
      cmocka_unit_test(test_per_worker_dataset_from_function),
      cmocka_unit_test(test_closure_args_misuse),
      cmocka_unit_test(test_coordinator_misuse),
      cmocka_unit_test(test_coordinator_handle_types),
      cmocka_unit_test(test_closures_survive_a_stopped_worker),
  };
  if (dist_set_logical_cpu_device_count(DTS_NUM_CPUS) != DIST_OK) return 1;
  return cmocka_run_group_tests(tests, setup_job, teardown_job);
}
