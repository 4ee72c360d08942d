/* Tests for parameter_server.h in local mode, for the paths test_parameter_server.c leaves
 * out: the min-max and max-shard-bytes partitioners through the C API (shard counts from
 * TF's formulas), colocate_vars_with (and its refusal of another strategy's variable),
 * dist_strategy_update with a callback, integer and bool variables, run, reduce and
 * distribute_dataset, a variable used after its strategy is destroyed, one name created
 * from four threads at once, and a failed creation that must change nothing. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  unsetenv("TF_CONFIG");
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

/* Creates a variable from `init` in the strategy's scope. */
static dist_value_t* create_in_scope(dist_strategy_t* s, const dist_value_t* init,
                                     dist_variable_aggregation_t aggregation, const char* name) {
  dist_value_t* v = NULL;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, aggregation, name, &v));
  DT_OK(dist_strategy_scope_exit(s));
  assert_non_null(v);
  return v;
}

/* Creates a variable in the strategy's scope expecting refusal `code` with a message that
 * names "dist_variable_create" and `needle`; the scope is left before anything is
 * asserted, so that a failure here does not leave it entered for the next test. */
static void expect_creation_refused(dist_strategy_t* s, const dist_value_t* init,
                                    dist_variable_aggregation_t aggregation, const char* name,
                                    dist_status_t code, const char* needle) {
  dist_value_t* refused = DT_SENTINEL_PTR;
  dist_status_t status;
  char message[512];
  DT_OK(dist_strategy_scope_enter(s));
  status = dist_variable_create(init, DIST_SYNC_AUTO, aggregation, name, &refused);
  snprintf(message, sizeof(message), "%s", dist_last_error_message());
  DT_OK(dist_strategy_scope_exit(s));
  if (status != code || strstr(message, "dist_variable_create") == NULL ||
      strstr(message, needle) == NULL) {
    fail_msg("creating %s returned %s (expected %s) with \"%s\" (expected to name \"%s\")",
             name ? name : "(NULL)", dist_status_name(status), dist_status_name(code), message,
             needle);
  }
  assert_null(refused);
}

static void expect_name(const dist_value_t* variable, const char* expected) {
  const char* name = NULL;
  DT_OK(dist_variable_name(variable, &name));
  assert_string_equal(name, expected);
}

static int32_t num_shards(const dist_value_t* variable) {
  int32_t count = -1;
  DT_OK(dist_variable_num_shards(variable, &count));
  return count;
}

/* Reads an int32 variable into `out` (n elements). */
static void read_i32(const dist_value_t* variable, int32_t* out, int64_t n) {
  dist_value_t* read = NULL;
  dist_dtype_t dtype = 0;
  int64_t count = -1;
  void* data = NULL;
  DT_OK(dist_variable_read(variable, &read));
  DT_OK(dist_tensor_dtype(read, &dtype));
  assert_int_equal(dtype, DIST_INT32);
  DT_OK(dist_tensor_num_elements(read, &count));
  assert_int_equal(count, n);
  DT_OK(dist_tensor_data(read, &data));
  memcpy(out, data, (size_t)n * sizeof(int32_t));
  dist_value_destroy(read);
}

/* ---- Partitioners through the C API ---- */

/* A float32 [10, 4] variable (16 bytes a row, 160 in all) holding 0 ... 39 row by row. */
static void fill_10x4(float* values) {
  int i;
  for (i = 0; i < 40; ++i) values[i] = (float)i;
}

static dist_value_t* tensor_10x4(const float* values) {
  const int64_t dims[2] = {10, 4};
  return dts_tensor(DIST_FLOAT32, dims, 2, values, NULL);
}

/* Creates the [10, 4] variable under `options` and checks its shard count, that it reads
 * back whole, and that an assign_add reaches every shard. */
static void expect_shards(const dist_parameter_server_options_t* options, int32_t expected) {
  float values[40];
  float expected_values[40];
  dist_strategy_t* s = dts_local_parameter_server(1, options);
  dist_value_t* init = NULL;
  dist_value_t* delta = NULL;
  dist_value_t* v = NULL;
  float plus_one[40];
  int i;
  fill_10x4(values);
  init = tensor_10x4(values);
  v = create_in_scope(s, init, DIST_AGGREGATION_SUM, "w");
  assert_int_equal(num_shards(v), expected);
  dts_expect_variable_f32(v, values, 40);
  for (i = 0; i < 40; ++i) plus_one[i] = 1.0f;
  delta = tensor_10x4(plus_one);
  DT_OK(dist_variable_assign_add(v, delta));
  for (i = 0; i < 40; ++i) expected_values[i] = values[i] + 1.0f;
  dts_expect_variable_f32(v, expected_values, 40);
  dist_value_destroy(delta);
  dist_value_destroy(v);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

static void test_min_max_partitioner(void** state) {
  /* TF's min_max_variable_partitioner: min(dim 10, max_partitions, 160 bytes /
   * min_slice_size) shards, at least one. */
  dist_parameter_server_options_t* options = NULL;
  (void)state;
  DT_OK(dist_parameter_server_options_create(&options));
  DT_OK(dist_parameter_server_options_set_min_max_shards(options, 8, 0, 40));
  expect_shards(options, 4); /* 160 / 40 */
  DT_OK(dist_parameter_server_options_set_min_max_shards(options, 3, 0, 40));
  expect_shards(options, 3); /* capped by max_partitions */
  DT_OK(dist_parameter_server_options_set_min_max_shards(options, 8, 0, 1000));
  expect_shards(options, 1); /* less than one slice: one shard */
  DT_ERR(dist_parameter_server_options_set_min_max_shards(options, 0, 0, 40), DIST_INVALID_ARGUMENT,
         "dist_parameter_server_options_set_min_max_shards", "max_partitions");
  DT_ERR(dist_parameter_server_options_set_min_max_shards(options, 8, 0, 0), DIST_INVALID_ARGUMENT,
         "dist_parameter_server_options_set_min_max_shards", "min_slice_size");
  expect_shards(options, 1); /* the refused settings left the last one */
  dist_parameter_server_options_destroy(options);
}

static void test_max_shard_bytes_partitioner(void** state) {
  /* TF's variable_axis_size_partitioner: floor(max_shard_bytes / 16-byte rows) rows a
   * shard (at least one), ceil(10 / rows) shards, at most max_shards when that is > 0. */
  dist_parameter_server_options_t* options = NULL;
  (void)state;
  DT_OK(dist_parameter_server_options_create(&options));
  DT_OK(dist_parameter_server_options_set_max_shard_bytes(options, 40, 0, 0));
  expect_shards(options, 5); /* 2 rows a shard */
  DT_OK(dist_parameter_server_options_set_max_shard_bytes(options, 40, 0, 3));
  expect_shards(options, 3);
  DT_OK(dist_parameter_server_options_set_max_shard_bytes(options, 8, 0, 0));
  expect_shards(options, 10); /* a row is more than 8 bytes: one row a shard */
  DT_ERR(dist_parameter_server_options_set_max_shard_bytes(options, 0, 0, 0), DIST_INVALID_ARGUMENT,
         "dist_parameter_server_options_set_max_shard_bytes", "max_shard_bytes");
  dist_parameter_server_options_destroy(options);
}

/* ---- A failed creation changes nothing ---- */

static void test_failed_creation_keeps_the_unnamed_numbering(void** state) {
  /* The partitioner refuses a scalar; that refusal must not use up the name "Variable",
   * or unnamed variables would be numbered differently here than on a worker whose
   * creations all succeeded. */
  const float one = 1.0f;
  const float pair[2] = {1.0f, 2.0f};
  dist_parameter_server_options_t* options = NULL;
  dist_strategy_t* s = NULL;
  dist_value_t* scalar = dts_f32_scalar(one, NULL);
  dist_value_t* vector = dts_f32(pair, 2, NULL);
  dist_value_t* v = NULL;
  (void)state;
  DT_OK(dist_parameter_server_options_create(&options));
  DT_OK(dist_parameter_server_options_set_fixed_shards(options, 2, 0));
  s = dts_local_parameter_server(1, options);
  expect_creation_refused(s, scalar, DIST_AGGREGATION_SUM, NULL, DIST_INVALID_ARGUMENT,
                          "fixed_size_partitioner");
  expect_creation_refused(s, scalar, DIST_AGGREGATION_SUM, "Variable_1", DIST_INVALID_ARGUMENT,
                          "fixed_size_partitioner");
  v = create_in_scope(s, vector, DIST_AGGREGATION_SUM, NULL);
  expect_name(v, "Variable");
  dist_value_destroy(v);
  v = create_in_scope(s, vector, DIST_AGGREGATION_SUM, NULL);
  expect_name(v, "Variable_1");
  dist_value_destroy(v);
  dist_value_destroy(vector);
  dist_value_destroy(scalar);
  dist_strategy_destroy(s);
  dist_parameter_server_options_destroy(options);
}

/* ---- colocate_vars_with ---- */

static void test_colocate_vars_with(void** state) {
  const float pair[2] = {1.0f, 2.0f};
  dist_strategy_t* s = dts_local_parameter_server(2, NULL);
  dist_value_t* init = dts_f32(pair, 2, NULL);
  dist_value_t* a = create_in_scope(s, init, DIST_AGGREGATION_SUM, "a");
  dist_value_t* b = NULL;
  dist_value_t* tensor = dts_f32(pair, 2, NULL);
  const char* device = NULL;
  int32_t task = -1;
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  DT_ERR(dist_strategy_colocate_vars_with_enter(s, tensor), DIST_INVALID_ARGUMENT,
         "dist_strategy_colocate_vars_with_enter", "not a variable");
  DT_OK(dist_strategy_colocate_vars_with_enter(s, a));
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, DIST_AGGREGATION_MEAN, "b", &b));
  DT_OK(dist_strategy_colocate_vars_with_exit(s));
  DT_OK(dist_strategy_scope_exit(s));
  assert_int_equal(dts_kind(b), DIST_VALUE_VARIABLE);
  DT_OK(dist_variable_device(b, 0, &device));
  assert_string_equal(device, "/device:CPU:0");
  DT_OK(dist_variable_shard_task(b, 0, &task));
  assert_int_equal(task, 0);
  dts_expect_variable_f32(b, pair, 2);
  dist_value_destroy(b);
  dist_value_destroy(tensor);
  dist_value_destroy(a);
  dist_value_destroy(init);
  dist_strategy_destroy(s);
}

static void test_colocate_vars_with_another_strategys_variable_is_refused(void** state) {
  /* TF's validate_colocate. Under ParameterServer the colocation is by name: "x" of the
   * other strategy would silently mean this strategy's "x". */
  const float pair[2] = {1.0f, 2.0f};
  dist_strategy_t* s = dts_local_parameter_server(1, NULL);
  dist_strategy_t* other = dts_local_parameter_server(1, NULL);
  dist_value_t* init = dts_f32(pair, 2, NULL);
  dist_value_t* mine = create_in_scope(s, init, DIST_AGGREGATION_SUM, "x");
  dist_value_t* theirs = create_in_scope(other, init, DIST_AGGREGATION_SUM, "x");
  dist_status_t entered;
  char message[512];
  (void)state;
  DT_OK(dist_strategy_scope_enter(s));
  entered = dist_strategy_colocate_vars_with_enter(s, theirs);
  snprintf(message, sizeof(message), "%s", dist_last_error_message());
  if (entered == DIST_OK) dts_ignore(dist_strategy_colocate_vars_with_exit(s));
  DT_OK(dist_strategy_scope_exit(s));
  assert_int_equal(entered, DIST_INVALID_ARGUMENT);
  assert_non_null(strstr(message, "dist_strategy_colocate_vars_with_enter"));
  assert_non_null(strstr(message, "another strategy"));
  dist_value_destroy(theirs);
  dist_value_destroy(mine);
  dist_value_destroy(init);
  dist_strategy_destroy(other);
  dist_strategy_destroy(s);
}

/* ---- dist_strategy_update with a callback ---- */

/* w -= args[0], through the component it is handed; stores w's new value in *out. */
static dist_status_t subtract_update(dist_value_t* variable, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** out, void* user_data) {
  int* calls = (int*)user_data;
  dist_status_t status;
  ++*calls;
  if (num_args != 1) return DIST_INVALID_ARGUMENT;
  status = dist_variable_assign_sub(variable, args[0]);
  if (status != DIST_OK) return status;
  return dist_variable_read(variable, out);
}

static void test_strategy_update_with_a_callback(void** state) {
  const float init[2] = {5.0f, 7.0f};
  const float delta[2] = {1.0f, 3.0f};
  const float expected[2] = {4.0f, 4.0f};
  dist_strategy_t* s = dts_local_parameter_server(2, NULL);
  dist_value_t* initial = dts_f32(init, 2, NULL);
  dist_value_t* v = create_in_scope(s, initial, DIST_AGGREGATION_SUM, "w");
  dist_value_t* arg = dts_f32(delta, 2, NULL);
  dist_value_t* out = NULL;
  int calls = 0;
  (void)state;
  DT_OK(dist_strategy_update(s, v, subtract_update, &calls, (const dist_value_t* const*)&arg, 1, 1,
                             &out));
  assert_int_equal(calls, 1); /* one copy: called once */
  dts_expect_variable_f32(v, expected, 2);
  assert_non_null(out);
  dts_expect_f32(out, expected, 2);
  dist_value_destroy(out);
  dist_value_destroy(arg);
  dist_value_destroy(v);
  dist_value_destroy(initial);
  dist_strategy_destroy(s);
}

/* ---- Integer and bool variables ---- */

static dist_status_t add_replica_id_plus_one(dist_context_t* context, const dist_value_t* const* args,
                                             int32_t num_args, dist_value_t** results,
                                             int32_t num_results, void* user_data) {
  dist_value_t* variable = (dist_value_t*)user_data;
  int32_t r = -1;
  int32_t delta[3];
  const int64_t n = 3;
  dist_value_t* t = NULL;
  dist_status_t status;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  status = dist_context_replica_id(context, &r);
  if (status != DIST_OK) return status;
  delta[0] = delta[1] = delta[2] = r + 1;
  status = dist_tensor_create(DIST_INT32, &n, 1, delta, sizeof(delta), NULL, &t);
  if (status != DIST_OK) return status;
  status = dist_variable_assign_add(variable, t);
  dist_value_destroy(t);
  return status;
}

static void test_integer_variable_with_sum(void** state) {
  /* Three replicas add 1, 2 and 3 in replica context: SUM applies 6 once, exactly. */
  const int32_t init[3] = {2147483000, -5, 0};
  const int32_t expected[3] = {2147483006, 1, 6};
  const int64_t n = 3;
  int32_t got[3];
  dist_strategy_t* s = dts_local_parameter_server(3, NULL);
  dist_value_t* initial = dts_tensor(DIST_INT32, &n, 1, init, NULL);
  dist_value_t* v = create_in_scope(s, initial, DIST_AGGREGATION_SUM, "steps");
  (void)state;
  DT_OK(dist_strategy_run(s, add_replica_id_plus_one, v, NULL, 0, NULL, 0));
  read_i32(v, got, 3);
  assert_memory_equal(got, expected, sizeof(expected));
  /* MEAN of integers is refused at creation, as in TF. */
  expect_creation_refused(s, initial, DIST_AGGREGATION_MEAN, "mean_steps", DIST_INVALID_ARGUMENT,
                          "MEAN");
  dist_value_destroy(v);
  dist_value_destroy(initial);
  dist_strategy_destroy(s);
}

static void test_bool_variable(void** state) {
  const uint8_t init[2] = {1, 0};
  const uint8_t flipped[2] = {0, 1};
  const int64_t n = 2;
  const char* lr_name = "learning_rate";
  const double lr = 1.0;
  dist_strategy_t* s = dts_local_parameter_server(1, NULL);
  dist_value_t* initial = dts_tensor(DIST_BOOL, &n, 1, init, NULL);
  dist_value_t* other = dts_tensor(DIST_BOOL, &n, 1, flipped, NULL);
  dist_value_t* v = create_in_scope(s, initial, DIST_AGGREGATION_ONLY_FIRST_REPLICA, "flags");
  dist_value_t* read = NULL;
  void* data = NULL;
  (void)state;
  DT_ERR(dist_variable_assign_add(v, other), DIST_INVALID_ARGUMENT, "dist_variable_assign_add", "bool");
  DT_ERR(dist_variable_assign_sub(v, other), DIST_INVALID_ARGUMENT, "dist_variable_assign_sub", "bool");
  DT_ERR(dist_variable_apply_update(v, "sgd", (const dist_value_t* const*)&other, 1, &lr_name, &lr, 1),
         DIST_INVALID_ARGUMENT, "dist_variable_apply_update", "bool");
  DT_OK(dist_variable_read(v, &read));
  DT_OK(dist_tensor_data(read, &data));
  assert_memory_equal(data, init, 2); /* nothing changed */
  dist_value_destroy(read);
  DT_OK(dist_variable_assign(v, other));
  DT_OK(dist_variable_read(v, &read));
  DT_OK(dist_tensor_data(read, &data));
  assert_memory_equal(data, flipped, 2);
  dist_value_destroy(read);
  dist_value_destroy(v);
  dist_value_destroy(other);
  dist_value_destroy(initial);
  dist_strategy_destroy(s);
}

/* ---- run and reduce ---- */

static dist_status_t read_plus_replica(dist_context_t* context, const dist_value_t* const* args,
                                       int32_t num_args, dist_value_t** results,
                                       int32_t num_results, void* user_data) {
  dist_value_t* variable = (dist_value_t*)user_data;
  dist_value_t* read = NULL;
  int32_t r = -1;
  float values[2];
  void* data = NULL;
  dist_status_t status;
  (void)args;
  (void)num_args;
  if (num_results != 1) return DIST_INVALID_ARGUMENT;
  status = dist_context_replica_id(context, &r);
  if (status == DIST_OK) status = dist_variable_read(variable, &read);
  if (status == DIST_OK) status = dist_tensor_data(read, &data);
  if (status != DIST_OK) {
    dist_value_destroy(read);
    return status;
  }
  memcpy(values, data, sizeof(values));
  dist_value_destroy(read);
  values[0] += (float)r;
  values[1] += (float)r;
  return dist_tensor_create(DIST_FLOAT32, (const int64_t[]){2}, 1, values, sizeof(values), NULL,
                            &results[0]);
}

static void test_run_and_reduce(void** state) {
  /* Each of 3 replicas returns w + r; SUM is 3 w + 0 + 1 + 2, MEAN w + 1. */
  const float init[2] = {1.0f, 10.0f};
  const float sum[2] = {3.0f + 3.0f, 30.0f + 3.0f};
  const float mean[2] = {2.0f, 11.0f};
  dist_strategy_t* s = dts_local_parameter_server(3, NULL);
  dist_value_t* initial = dts_f32(init, 2, NULL);
  dist_value_t* v = create_in_scope(s, initial, DIST_AGGREGATION_SUM, "w");
  dist_value_t* per_replica = NULL;
  dist_value_t* reduced = NULL;
  (void)state;
  DT_OK(dist_strategy_run(s, read_plus_replica, v, NULL, 0, &per_replica, 1));
  assert_int_equal(dts_num_components(per_replica), 3);
  DT_OK(dist_strategy_reduce(s, DIST_REDUCE_SUM, per_replica, &reduced));
  dts_expect_f32(reduced, sum, 2);
  dist_value_destroy(reduced);
  DT_OK(dist_strategy_reduce(s, DIST_REDUCE_MEAN, per_replica, &reduced));
  dts_expect_f32(reduced, mean, 2);
  dist_value_destroy(reduced);
  dist_value_destroy(per_replica);
  dist_value_destroy(v);
  dist_value_destroy(initial);
  dist_strategy_destroy(s);
}

static void expect_i64_component(const dist_value_t* per_replica, int32_t index, int64_t first) {
  dist_value_t* component = dts_component(per_replica, index);
  int64_t count = -1;
  void* data = NULL;
  const int64_t expected[2] = {first, first + 1};
  DT_OK(dist_tensor_num_elements(component, &count));
  assert_int_equal(count, 2);
  DT_OK(dist_tensor_data(component, &data));
  assert_memory_equal(data, expected, sizeof(expected));
  dist_value_destroy(component);
}

static void test_distribute_dataset(void** state) {
  /* range(8).batch(4) over this worker's 2 replicas (one worker in local mode: no input
   * sharding): [0, 1] and [2, 3], then [4, 5] and [6, 7], then the end. */
  dist_strategy_t* s = dts_local_parameter_server(2, NULL);
  dist_dataset_t* range = NULL;
  dist_dataset_t* batched = NULL;
  dist_distributed_dataset_t* distributed = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* out = NULL;
  int64_t step;
  (void)state;
  DT_OK(dist_dataset_range(0, 8, 1, &range));
  DT_OK(dist_dataset_batch(range, 4, 0, &batched));
  DT_OK(dist_strategy_distribute_dataset(s, batched, NULL, &distributed));
  DT_OK(dist_distributed_dataset_make_iterator(distributed, &it));
  for (step = 0; step < 2; ++step) {
    DT_OK(dist_iterator_get_next(it, &out, 1));
    assert_int_equal(dts_num_components(out), 2);
    expect_i64_component(out, 0, 4 * step);
    expect_i64_component(out, 1, 4 * step + 2);
    dist_value_destroy(out);
  }
  out = DT_SENTINEL_PTR;
  DT_ERR(dist_iterator_get_next(it, &out, 1), DIST_OUT_OF_RANGE, "dist_iterator_get_next", NULL);
  assert_null(out);
  dist_iterator_destroy(it);
  dist_distributed_dataset_destroy(distributed);
  dist_dataset_destroy(batched);
  dist_dataset_destroy(range);
  dist_strategy_destroy(s);
}

/* ---- Lifetimes and threads ---- */

static void test_variable_outlives_its_strategy(void** state) {
  /* The variable keeps what it lives on: usable after the strategy is gone. */
  const float init[2] = {1.0f, 2.0f};
  const float expected[2] = {2.0f, 4.0f};
  dist_strategy_t* s = dts_local_parameter_server(2, NULL);
  dist_value_t* initial = dts_f32(init, 2, NULL);
  dist_value_t* v = create_in_scope(s, initial, DIST_AGGREGATION_SUM, "w");
  (void)state;
  dist_strategy_destroy(s);
  DT_OK(dist_variable_assign_add(v, initial));
  dts_expect_variable_f32(v, expected, 2);
  dist_value_destroy(v);
  dist_value_destroy(initial);
}

#define CREATORS 4
#define ADDS 25

typedef struct {
  dist_strategy_t* strategy;
  dist_value_t* initial;
  dist_value_t* one;
  dist_value_t* variable;
  dist_status_t status;
} creator_state;

/* Creates "shared" in the strategy's scope on this thread, then adds 1 ADDS times. */
static void* create_and_add(void* arg) {
  creator_state* st = (creator_state*)arg;
  int i;
  st->status = dist_strategy_scope_enter(st->strategy);
  if (st->status != DIST_OK) return NULL;
  st->status = dist_variable_create(st->initial, DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, "shared",
                                    &st->variable);
  dts_ignore(dist_strategy_scope_exit(st->strategy));
  for (i = 0; i < ADDS && st->status == DIST_OK; ++i) {
    st->status = dist_variable_assign_add(st->variable, st->one);
  }
  return NULL;
}

static void test_one_name_created_from_threads_at_once(void** state) {
  /* Every thread gets the same variable: the first creator's value, and every add. */
  const float zero[1] = {0.0f};
  const float one[1] = {1.0f};
  const float total[1] = {(float)(CREATORS * ADDS)};
  dist_strategy_t* s = dts_local_parameter_server(1, NULL);
  creator_state st[CREATORS];
  pthread_t threads[CREATORS];
  dist_value_t* initial = dts_f32(zero, 1, NULL);
  dist_value_t* delta = dts_f32(one, 1, NULL);
  int i;
  (void)state;
  for (i = 0; i < CREATORS; ++i) {
    memset(&st[i], 0, sizeof(st[i]));
    st[i].strategy = s;
    st[i].initial = initial;
    st[i].one = delta;
    assert_int_equal(pthread_create(&threads[i], NULL, create_and_add, &st[i]), 0);
  }
  for (i = 0; i < CREATORS; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
  for (i = 0; i < CREATORS; ++i) {
    assert_int_equal(st[i].status, DIST_OK);
    expect_name(st[i].variable, "shared");
  }
  for (i = 0; i < CREATORS; ++i) {
    dts_expect_variable_f32(st[i].variable, total, 1);
    dist_value_destroy(st[i].variable);
  }
  dist_value_destroy(delta);
  dist_value_destroy(initial);
  dist_strategy_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_min_max_partitioner),
      cmocka_unit_test(test_max_shard_bytes_partitioner),
      cmocka_unit_test(test_failed_creation_keeps_the_unnamed_numbering),
      cmocka_unit_test(test_colocate_vars_with),
      cmocka_unit_test(test_colocate_vars_with_another_strategys_variable_is_refused),
      cmocka_unit_test(test_strategy_update_with_a_callback),
      cmocka_unit_test(test_integer_variable_with_sum),
      cmocka_unit_test(test_bool_variable),
      cmocka_unit_test(test_run_and_reduce),
      cmocka_unit_test(test_distribute_dataset),
      cmocka_unit_test(test_variable_outlives_its_strategy),
      cmocka_unit_test(test_one_name_created_from_threads_at_once),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
