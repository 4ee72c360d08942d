/* Misuse: handles of the wrong type, destroyed handles, and callbacks handing back handles
 * they do not own (types.h, "Misuse detection"). Every case must be a clean
 * DIST_INVALID_ARGUMENT naming the argument and the expected type, change nothing, and
 * stay clean under ASan: the library keeps destroyed handles' memory in a quarantine, so
 * reading a handle destroyed a moment ago is no use-after-free.
 *
 * The kinds of misuse covered:
 *   1. each of the 14 handle types passed where each other type is expected (182 pairs);
 *   2. each handle type used after its destroy;
 *   3. each handle type destroyed twice;
 *   4. a handle destroyed with another type's destroy function (nothing happens);
 *   5. a replica context used after dist_context_leave, and left twice;
 *   6. a replica function storing one of its arguments as its result;
 *   7. a replica function storing a destroyed value as its result;
 *   8. a replica function storing a dataset as its result (a value was expected);
 *   9. a replica function destroying its argument (nothing happens);
 *  10. merge_call's function returning one of its arguments;
 *  11. update's function returning the variable it was lent;
 *  12. a map function returning its input;
 *  13. a dataset function storing a strategy as its dataset;
 *  14. distribute_values_from_function's function storing a destroyed value.
 * The coordinator's handle types (dist_coordinator_t, dist_remote_value_t,
 * dist_per_worker_t, dist_closure_args_t) need a running job: test_coordinator.c covers
 * them the same way (test_coordinator_handle_types). */
#include "dist_ports_test.h"
#include "dist_test.h"

enum {
  kDevice,
  kValue,
  kStrategy,
  kContext,
  kDataset,
  kDistributedDataset,
  kIterator,
  kInputContext,
  kInputOptions,
  kCluster,
  kServer,
  kServerOptions,
  kCrossDeviceOps,
  kCommunicationOptions,
  kParameterServerOptions,
  kNumTypes
};

static const char* const kTypeNames[kNumTypes] = {
    "dist_device_t",         "dist_value_t",
    "dist_strategy_t",       "dist_context_t",
    "dist_dataset_t",        "dist_distributed_dataset_t",
    "dist_iterator_t",       "dist_input_context_t",
    "dist_input_options_t",  "dist_cluster_t",
    "dist_server_t",         "dist_server_options_t",
    "dist_cross_device_ops_t", "dist_communication_options_t",
    "dist_parameter_server_options_t"};

/* One call per type that takes a handle of that type first and checks it before
 * anything else; `handle` is passed as that type whatever it really is. */
static dist_status_t use_as(int type, void* handle) {
  int32_t i32 = 0;
  int64_t i64 = 0;
  const char* text = NULL;
  dist_value_t* outs[1] = {NULL};
  switch (type) {
    case kDevice: return dist_device_name((const dist_device_t*)handle, &text);
    case kValue: {
      dist_value_kind_t kind = 0;
      return dist_value_kind((const dist_value_t*)handle, &kind);
    }
    case kStrategy: return dist_strategy_num_replicas_in_sync((const dist_strategy_t*)handle, &i32);
    case kContext: return dist_context_replica_id((const dist_context_t*)handle, &i32);
    case kDataset: return dist_dataset_num_components((const dist_dataset_t*)handle, &i32);
    case kDistributedDataset:
      return dist_distributed_dataset_num_components((const dist_distributed_dataset_t*)handle, &i32);
    case kIterator: return dist_iterator_get_next((dist_iterator_t*)handle, outs, 1);
    case kInputContext:
      return dist_input_context_num_input_pipelines((const dist_input_context_t*)handle, &i32);
    case kInputOptions: return dist_input_options_set_prefetch_depth((dist_input_options_t*)handle, 2);
    case kCluster: return dist_cluster_num_workers((const dist_cluster_t*)handle, &i32);
    case kServer: return dist_server_port((const dist_server_t*)handle, &i32);
    case kServerOptions:
      return dist_server_options_set_startup_timeout_ms((dist_server_options_t*)handle, 1000);
    case kCrossDeviceOps: {
      dist_cross_device_ops_kind_t kind = 0;
      return dist_cross_device_ops_kind((const dist_cross_device_ops_t*)handle, &kind);
    }
    case kCommunicationOptions:
      return dist_communication_options_set_timeout_ms((dist_communication_options_t*)handle, 1000);
    case kParameterServerOptions:
      return dist_parameter_server_options_set_placement((dist_parameter_server_options_t*)handle,
                                                         DIST_PLACEMENT_GREEDY_BYTES);
    default: (void)i64; return DIST_OK;
  }
}

/* Destroys `handle` with `type`'s destroy function (contexts: dist_context_leave). */
static void destroy_as(int type, void* handle) {
  switch (type) {
    case kDevice: dist_device_destroy((dist_device_t*)handle); break;
    case kValue: dist_value_destroy((dist_value_t*)handle); break;
    case kStrategy: dist_strategy_destroy((dist_strategy_t*)handle); break;
    case kContext: (void)dist_context_leave((dist_context_t*)handle); break;
    case kDataset: dist_dataset_destroy((dist_dataset_t*)handle); break;
    case kDistributedDataset: dist_distributed_dataset_destroy((dist_distributed_dataset_t*)handle); break;
    case kIterator: dist_iterator_destroy((dist_iterator_t*)handle); break;
    case kInputContext: dist_input_context_destroy((dist_input_context_t*)handle); break;
    case kInputOptions: dist_input_options_destroy((dist_input_options_t*)handle); break;
    case kCluster: dist_cluster_destroy((dist_cluster_t*)handle); break;
    case kServer: dist_server_destroy((dist_server_t*)handle); break;
    case kServerOptions: dist_server_options_destroy((dist_server_options_t*)handle); break;
    case kCrossDeviceOps: dist_cross_device_ops_destroy((dist_cross_device_ops_t*)handle); break;
    case kCommunicationOptions:
      dist_communication_options_destroy((dist_communication_options_t*)handle);
      break;
    case kParameterServerOptions:
      dist_parameter_server_options_destroy((dist_parameter_server_options_t*)handle);
      break;
    default: break;
  }
}

static dist_value_t* scalar(float x) {
  dist_value_t* value = NULL;
  DT_OK(dist_tensor_create(DIST_FLOAT32, NULL, 0, &x, sizeof(x), "CPU:0", &value));
  return value;
}

static float scalar_of(const dist_value_t* value) {
  float x = -1.0f;
  DT_OK(dist_tensor_scalar_float32(value, &x));
  return x;
}

/* One live handle of `type`. A context joins replica 0 of `strategy` on this thread (the
 * caller leaves it), so it is made last. */
static void* make(int type, dist_strategy_t* strategy) {
  void* handle = NULL;
  switch (type) {
    case kDevice: DT_OK(dist_device_parse("/job:worker/task:1/device:CPU:0", (dist_device_t**)&handle)); break;
    case kValue: handle = scalar(1.0f); break;
    case kStrategy: DT_OK(dist_strategy_create_one_device("CPU:0", (dist_strategy_t**)&handle)); break;
    case kContext: DT_OK(dist_strategy_join_replica(strategy, 0, (dist_context_t**)&handle)); break;
    case kDataset: DT_OK(dist_dataset_range(0, 4, 1, (dist_dataset_t**)&handle)); break;
    case kDistributedDataset: {
      dist_dataset_t* range = NULL;
      DT_OK(dist_dataset_range(0, 4, 1, &range));
      DT_OK(dist_strategy_distribute_dataset(strategy, range, NULL,
                                             (dist_distributed_dataset_t**)&handle));
      dist_dataset_destroy(range);
      break;
    }
    case kIterator: {
      dist_dataset_t* range = NULL;
      DT_OK(dist_dataset_range(0, 4, 1, &range));
      DT_OK(dist_dataset_make_iterator(range, (dist_iterator_t**)&handle));
      dist_dataset_destroy(range);
      break;
    }
    case kInputContext: DT_OK(dist_input_context_create(2, 1, 2, (dist_input_context_t**)&handle)); break;
    case kInputOptions: DT_OK(dist_input_options_create((dist_input_options_t**)&handle)); break;
    case kCluster: DT_OK(dist_cluster_create((dist_cluster_t**)&handle)); break;
    case kServer: {
      int32_t port = 0;
      char address[32];
      dist_cluster_t* cluster = NULL;
      dt_free_ports(&port, 1);
      snprintf(address, sizeof(address), "127.0.0.1:%d", (int)port);
      DT_OK(dist_cluster_create(&cluster));
      DT_OK(dist_cluster_add_task(cluster, "worker", 0, address));
      DT_OK(dist_cluster_set_task(cluster, "worker", 0));
      DT_OK(dist_server_create(cluster, NULL, (dist_server_t**)&handle));
      dist_cluster_destroy(cluster);
      break;
    }
    case kServerOptions: DT_OK(dist_server_options_create((dist_server_options_t**)&handle)); break;
    case kCrossDeviceOps:
      DT_OK(dist_cross_device_ops_create_reduction_to_one_device(NULL, (dist_cross_device_ops_t**)&handle));
      break;
    case kCommunicationOptions:
      DT_OK(dist_communication_options_create((dist_communication_options_t**)&handle));
      break;
    case kParameterServerOptions:
      DT_OK(dist_parameter_server_options_create((dist_parameter_server_options_t**)&handle));
      break;
    default: break;
  }
  assert_non_null(handle);
  return handle;
}

/* Checks the last call failed with INVALID_ARGUMENT and a message containing `expected`. */
static void expect_invalid(dist_status_t status, const char* expected) {
  const char* message = dist_last_error_message();
  if (status != DIST_INVALID_ARGUMENT || strstr(message, expected) == NULL) {
    print_error("got %s \"%s\", expected INVALID_ARGUMENT containing \"%s\"\n",
                dist_status_name(status), message, expected);
    fail();
  }
}

static void test_every_type_where_every_other_is_expected(void** state) {
  dist_strategy_t* strategy = NULL;
  void* handles[kNumTypes];
  char expected[160];
  int have, want;
  (void)state;
  DT_OK(dist_strategy_create_one_device("CPU:0", &strategy));
  for (have = 0; have < kNumTypes; ++have) {
    if (have != kContext) handles[have] = make(have, strategy);
  }
  handles[kContext] = make(kContext, strategy);
  for (have = 0; have < kNumTypes; ++have) {
    for (want = 0; want < kNumTypes; ++want) {
      if (have == want) continue;
      snprintf(expected, sizeof(expected), "is not a %s (it is a %s)", kTypeNames[want],
               kTypeNames[have]);
      expect_invalid(use_as(want, handles[have]), expected);
      /* A destroy function given another type's handle does nothing. */
      if (want != kContext) destroy_as(want, handles[have]);
    }
  }
  /* Every handle is still alive and usable. */
  for (have = 0; have < kNumTypes; ++have) {
    if (have == kIterator) continue; /* get_next with count 1 on a range is tested below */
    DT_OK(use_as(have, handles[have]));
  }
  {
    dist_value_t* element = NULL;
    DT_OK(dist_iterator_get_next((dist_iterator_t*)handles[kIterator], &element, 1));
    dist_value_destroy(element);
  }
  DT_OK(dist_context_leave((dist_context_t*)handles[kContext]));
  for (have = 0; have < kNumTypes; ++have) {
    if (have != kContext) destroy_as(have, handles[have]);
  }
  dist_strategy_destroy(strategy);
}

static void test_every_type_after_destroy(void** state) {
  dist_strategy_t* strategy = NULL;
  int type;
  (void)state;
  DT_OK(dist_strategy_create_one_device("CPU:0", &strategy));
  for (type = 0; type < kNumTypes; ++type) {
    void* handle = make(type, strategy);
    destroy_as(type, handle);
    expect_invalid(use_as(type, handle), "was destroyed");
    assert_non_null(strstr(dist_last_error_message(), kTypeNames[type]));
    /* A second destroy does nothing (a context: INVALID_ARGUMENT, nothing left). */
    destroy_as(type, handle);
    if (type == kContext) {
      expect_invalid(dist_context_leave((dist_context_t*)handle), "was destroyed");
    }
  }
  /* A destroyed handle of another type is named as such. */
  {
    dist_dataset_t* dataset = (dist_dataset_t*)make(kDataset, strategy);
    int32_t count = 0;
    dist_dataset_destroy(dataset);
    expect_invalid(dist_strategy_num_replicas_in_sync((const dist_strategy_t*)dataset, &count),
                   "is not a dist_strategy_t (it is a destroyed dist_dataset_t)");
  }
  dist_strategy_destroy(strategy);
}

/* ---- Callbacks handing back handles they do not own ---- */

typedef enum {
  kReturnArgument,
  kReturnDestroyed,
  kReturnDataset,
  kDestroyArgument,
} replica_misuse;

typedef struct {
  replica_misuse misuse;
  dist_dataset_t* dataset;
} replica_state;

static dist_status_t misbehaving_replica(dist_context_t* context, const dist_value_t* const* args,
                                         int32_t num_args, dist_value_t** results,
                                         int32_t num_results, void* user_data) {
  replica_state* st = (replica_state*)user_data;
  dist_value_t* doomed = NULL;
  (void)context;
  (void)num_args;
  (void)num_results;
  switch (st->misuse) {
    case kReturnArgument: results[0] = (dist_value_t*)args[0]; break;
    case kReturnDestroyed:
      doomed = scalar(5.0f);
      dist_value_destroy(doomed);
      results[0] = doomed;
      break;
    case kReturnDataset: results[0] = (dist_value_t*)st->dataset; break;
    case kDestroyArgument:
      dist_value_destroy((dist_value_t*)args[0]);
      results[0] = scalar(scalar_of(args[0]) + 1.0f);
      break;
  }
  return DIST_OK;
}

static void run_misbehaving(replica_misuse misuse, const char* expected) {
  dist_strategy_t* strategy = NULL;
  dist_value_t* arg = scalar(3.0f);
  dist_value_t* result = (dist_value_t*)DT_SENTINEL_PTR;
  replica_state st;
  st.misuse = misuse;
  DT_OK(dist_dataset_range(0, 4, 1, &st.dataset));
  DT_OK(dist_strategy_create_one_device("CPU:0", &strategy));
  if (expected == NULL) {
    DT_OK(dist_strategy_run(strategy, misbehaving_replica, &st, (const dist_value_t* const*)&arg, 1,
                            &result, 1));
    assert_true(scalar_of(result) == 4.0f);
    dist_value_destroy(result);
  } else {
    expect_invalid(dist_strategy_run(strategy, misbehaving_replica, &st,
                                     (const dist_value_t* const*)&arg, 1, &result, 1),
                   expected);
    assert_non_null(strstr(dist_last_error_message(), "results[0]"));
    assert_null(result);
  }
  /* Nothing the caller owns was taken: the argument and the dataset are intact. */
  assert_true(scalar_of(arg) == 3.0f);
  {
    int32_t count = 0;
    DT_OK(dist_dataset_num_components(st.dataset, &count));
    assert_int_equal(count, 1);
  }
  dist_value_destroy(arg);
  dist_dataset_destroy(st.dataset);
  dist_strategy_destroy(strategy);
}

static void test_replica_fn_returning_its_argument(void** state) {
  (void)state;
  run_misbehaving(kReturnArgument, "not one the caller owns");
}

static void test_replica_fn_returning_a_destroyed_value(void** state) {
  (void)state;
  run_misbehaving(kReturnDestroyed, "was destroyed");
}

static void test_replica_fn_returning_a_dataset(void** state) {
  (void)state;
  run_misbehaving(kReturnDataset, "is not a dist_value_t (it is a dist_dataset_t)");
}

static void test_replica_fn_destroying_its_argument(void** state) {
  (void)state;
  run_misbehaving(kDestroyArgument, NULL);
}

static dist_status_t merge_returning_argument(dist_strategy_t* strategy,
                                              const dist_value_t* const* args, int32_t num_args,
                                              dist_value_t** out, void* user_data) {
  (void)strategy;
  (void)num_args;
  (void)user_data;
  *out = (dist_value_t*)args[0];
  return DIST_OK;
}

static dist_status_t replica_calling_merge(dist_context_t* context, const dist_value_t* const* args,
                                           int32_t num_args, dist_value_t** results,
                                           int32_t num_results, void* user_data) {
  (void)num_args;
  (void)num_results;
  (void)user_data;
  return dist_context_merge_call(context, merge_returning_argument, NULL, args, 1, &results[0]);
}

static void test_merge_fn_returning_its_argument(void** state) {
  dist_strategy_t* strategy = NULL;
  dist_value_t* arg = scalar(2.0f);
  dist_value_t* result = NULL;
  (void)state;
  DT_OK(dist_strategy_create_one_device("CPU:0", &strategy));
  expect_invalid(dist_strategy_run(strategy, replica_calling_merge, NULL,
                                   (const dist_value_t* const*)&arg, 1, &result, 1),
                 "not one the caller owns");
  assert_non_null(strstr(dist_last_error_message(), "merge_call's fn"));
  assert_null(result);
  assert_true(scalar_of(arg) == 2.0f);
  dist_value_destroy(arg);
  dist_strategy_destroy(strategy);
}

static dist_status_t update_returning_variable(dist_value_t* variable,
                                               const dist_value_t* const* args, int32_t num_args,
                                               dist_value_t** out, void* user_data) {
  (void)args;
  (void)num_args;
  (void)user_data;
  *out = variable;
  return DIST_OK;
}

static void test_update_fn_returning_its_variable(void** state) {
  dist_strategy_t* strategy = NULL;
  dist_value_t* initial = scalar(7.0f);
  dist_value_t* variable = NULL;
  dist_value_t* result = NULL;
  dist_value_t* read = NULL;
  (void)state;
  DT_OK(dist_strategy_create_one_device("CPU:0", &strategy));
  DT_OK(dist_strategy_scope_enter(strategy));
  DT_OK(dist_variable_create(initial, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE,
                             "v", &variable));
  expect_invalid(dist_strategy_update(strategy, variable, update_returning_variable, NULL, NULL, 0,
                                      1, &result),
                 "not one the caller owns");
  assert_null(result);
  DT_OK(dist_variable_read(variable, &read));
  assert_true(scalar_of(read) == 7.0f);
  DT_OK(dist_strategy_scope_exit(strategy));
  dist_value_destroy(read);
  dist_value_destroy(variable);
  dist_value_destroy(initial);
  dist_strategy_destroy(strategy);
}

static dist_status_t map_returning_input(const dist_value_t* const* inputs, int32_t num_inputs,
                                         dist_value_t** outputs, int32_t num_outputs,
                                         void* user_data) {
  (void)num_inputs;
  (void)num_outputs;
  (void)user_data;
  outputs[0] = (dist_value_t*)inputs[0];
  return DIST_OK;
}

static void test_map_fn_returning_its_input(void** state) {
  dist_dataset_t* range = NULL;
  dist_dataset_t* mapped = NULL;
  dist_iterator_t* iterator = NULL;
  dist_value_t* element = NULL;
  (void)state;
  DT_OK(dist_dataset_range(0, 4, 1, &range));
  DT_OK(dist_dataset_map(range, map_returning_input, NULL, NULL, 1, 1, &mapped));
  DT_OK(dist_dataset_make_iterator(mapped, &iterator));
  expect_invalid(dist_iterator_get_next(iterator, &element, 1), "outputs[0]");
  assert_non_null(strstr(dist_last_error_message(), "not one the caller owns"));
  assert_null(element);
  dist_iterator_destroy(iterator);
  dist_dataset_destroy(mapped);
  dist_dataset_destroy(range);
}

static dist_status_t dataset_fn_storing_strategy(const dist_input_context_t* context,
                                                 dist_dataset_t** out, void* user_data) {
  (void)context;
  *out = (dist_dataset_t*)user_data;
  return DIST_OK;
}

static void test_dataset_fn_storing_a_strategy(void** state) {
  dist_strategy_t* strategy = NULL;
  dist_distributed_dataset_t* distributed = (dist_distributed_dataset_t*)DT_SENTINEL_PTR;
  int32_t count = 0;
  (void)state;
  DT_OK(dist_strategy_create_one_device("CPU:0", &strategy));
  expect_invalid(dist_strategy_distribute_datasets_from_function(
                     strategy, dataset_fn_storing_strategy, strategy, NULL, NULL, &distributed),
                 "is not a dist_dataset_t (it is a dist_strategy_t)");
  assert_null(distributed);
  DT_OK(dist_strategy_num_replicas_in_sync(strategy, &count));
  assert_int_equal(count, 1);
  dist_strategy_destroy(strategy);
}

static dist_status_t value_fn_storing_destroyed(int32_t replica_id, int32_t num_replicas,
                                                dist_value_t** out, void* user_data) {
  dist_value_t* doomed = scalar((float)replica_id);
  (void)num_replicas;
  (void)user_data;
  dist_value_destroy(doomed);
  *out = doomed;
  return DIST_OK;
}

static void test_value_fn_storing_a_destroyed_value(void** state) {
  dist_strategy_t* strategy = NULL;
  dist_value_t* out = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_OK(dist_strategy_create_one_device("CPU:0", &strategy));
  expect_invalid(dist_strategy_distribute_values_from_function(strategy, value_fn_storing_destroyed,
                                                               NULL, &out),
                 "was destroyed");
  assert_non_null(strstr(dist_last_error_message(), "fn for replica 0"));
  assert_null(out);
  dist_strategy_destroy(strategy);
}

/* The context a replica function receives is the one dist_current_replica_context
 * returns, and it is lent: leaving it is refused and it stays usable. */
static dist_status_t replica_checking_context(dist_context_t* context, const dist_value_t* const* args,
                                              int32_t num_args, dist_value_t** results,
                                              int32_t num_results, void* user_data) {
  int* same = (int*)user_data;
  int32_t id = -1;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  *same = dist_current_replica_context() == context;
  if (dist_context_leave(context) != DIST_FAILED_PRECONDITION) return DIST_INTERNAL;
  return dist_context_replica_id(context, &id);
}

static void test_replica_context_is_lent(void** state) {
  dist_strategy_t* strategy = NULL;
  int same = 0;
  (void)state;
  DT_OK(dist_strategy_create_one_device("CPU:0", &strategy));
  DT_OK(dist_strategy_run(strategy, replica_checking_context, &same, NULL, 0, NULL, 0));
  assert_int_equal(same, 1);
  dist_strategy_destroy(strategy);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_type_where_every_other_is_expected),
      cmocka_unit_test(test_every_type_after_destroy),
      cmocka_unit_test(test_replica_fn_returning_its_argument),
      cmocka_unit_test(test_replica_fn_returning_a_destroyed_value),
      cmocka_unit_test(test_replica_fn_returning_a_dataset),
      cmocka_unit_test(test_replica_fn_destroying_its_argument),
      cmocka_unit_test(test_merge_fn_returning_its_argument),
      cmocka_unit_test(test_update_fn_returning_its_variable),
      cmocka_unit_test(test_map_fn_returning_its_input),
      cmocka_unit_test(test_dataset_fn_storing_a_strategy),
      cmocka_unit_test(test_value_fn_storing_a_destroyed_value),
      cmocka_unit_test(test_replica_context_is_lent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
