/* The placement options of ParameterServerStrategy (parameter_server.h): every setter with
 * the values its doc allows and with each value it refuses, NULL and wrong-type handles,
 * and destroy of NULL. What the options do to a strategy's variables is tested where the
 * strategy is (test_parameter_server_strategy and the bindings). */
#include "dist_test.h"

static dist_parameter_server_options_t* new_options(void) {
  dist_parameter_server_options_t* options = NULL;
  DT_OK(dist_parameter_server_options_create(&options));
  assert_non_null(options);
  return options;
}

static void test_create_and_destroy(void** state) {
  dist_parameter_server_options_t* options = NULL;
  (void)state;
  DT_ERR(dist_parameter_server_options_create(NULL), DIST_INVALID_ARGUMENT,
         "dist_parameter_server_options_create", "out");
  options = new_options();
  dist_parameter_server_options_destroy(options);
  dist_parameter_server_options_destroy(NULL);
}

static void test_placement_policies(void** state) {
  dist_parameter_server_options_t* options = new_options();
  (void)state;
  DT_OK(dist_parameter_server_options_set_placement(options, DIST_PLACEMENT_GREEDY_BYTES));
  DT_OK(dist_parameter_server_options_set_placement(options, DIST_PLACEMENT_ROUND_ROBIN));
  DT_ERR(dist_parameter_server_options_set_placement(options, 2), DIST_INVALID_ARGUMENT,
         "dist_parameter_server_options_set_placement", "placement policy 2");
  DT_ERR(dist_parameter_server_options_set_placement(options, -1), DIST_INVALID_ARGUMENT,
         "dist_parameter_server_options_set_placement", "placement policy -1");
  DT_ERR(dist_parameter_server_options_set_placement(NULL, DIST_PLACEMENT_ROUND_ROBIN),
         DIST_INVALID_ARGUMENT, "dist_parameter_server_options_set_placement", "options");
  dist_parameter_server_options_destroy(options);
}

static void test_fixed_shards(void** state) {
  dist_parameter_server_options_t* options = new_options();
  const char* fn = "dist_parameter_server_options_set_fixed_shards";
  (void)state;
  DT_OK(dist_parameter_server_options_set_fixed_shards(options, 1, 0));
  DT_OK(dist_parameter_server_options_set_fixed_shards(options, 4096, 3));
  DT_ERR(dist_parameter_server_options_set_fixed_shards(options, 0, 0), DIST_INVALID_ARGUMENT,
         fn, "num_shards");
  DT_ERR(dist_parameter_server_options_set_fixed_shards(options, 4097, 0), DIST_INVALID_ARGUMENT,
         fn, "4096");
  DT_ERR(dist_parameter_server_options_set_fixed_shards(options, 2, -1), DIST_INVALID_ARGUMENT,
         fn, "axis");
  DT_ERR(dist_parameter_server_options_set_fixed_shards(NULL, 2, 0), DIST_INVALID_ARGUMENT, fn,
         "options");
  dist_parameter_server_options_destroy(options);
}

static void test_min_max_shards(void** state) {
  dist_parameter_server_options_t* options = new_options();
  const char* fn = "dist_parameter_server_options_set_min_max_shards";
  (void)state;
  DT_OK(dist_parameter_server_options_set_min_max_shards(options, 1, 0, 1));
  DT_OK(dist_parameter_server_options_set_min_max_shards(options, 8, 1, 262144));
  DT_ERR(dist_parameter_server_options_set_min_max_shards(options, 0, 0, 262144),
         DIST_INVALID_ARGUMENT, fn, "max_partitions");
  DT_ERR(dist_parameter_server_options_set_min_max_shards(options, 4, 0, 0), DIST_INVALID_ARGUMENT,
         fn, "min_slice_size");
  DT_ERR(dist_parameter_server_options_set_min_max_shards(options, 4, -2, 1), DIST_INVALID_ARGUMENT,
         fn, "axis");
  DT_ERR(dist_parameter_server_options_set_min_max_shards(NULL, 4, 0, 1), DIST_INVALID_ARGUMENT,
         fn, "options");
  dist_parameter_server_options_destroy(options);
}

static void test_max_shard_bytes(void** state) {
  dist_parameter_server_options_t* options = new_options();
  const char* fn = "dist_parameter_server_options_set_max_shard_bytes";
  (void)state;
  DT_OK(dist_parameter_server_options_set_max_shard_bytes(options, 1, 0, 0));
  DT_OK(dist_parameter_server_options_set_max_shard_bytes(options, 1 << 20, 0, 16));
  DT_ERR(dist_parameter_server_options_set_max_shard_bytes(options, 0, 0, 0), DIST_INVALID_ARGUMENT,
         fn, "max_shard_bytes");
  DT_ERR(dist_parameter_server_options_set_max_shard_bytes(options, -5, 0, 0), DIST_INVALID_ARGUMENT,
         fn, "max_shard_bytes");
  DT_ERR(dist_parameter_server_options_set_max_shard_bytes(options, 64, 0, -1),
         DIST_INVALID_ARGUMENT, fn, "max_shards");
  DT_ERR(dist_parameter_server_options_set_max_shard_bytes(options, 64, -1, 0),
         DIST_INVALID_ARGUMENT, fn, "axis");
  DT_ERR(dist_parameter_server_options_set_max_shard_bytes(NULL, 64, 0, 0), DIST_INVALID_ARGUMENT,
         fn, "options");
  dist_parameter_server_options_destroy(options);
}

static void test_clear_partitioner(void** state) {
  dist_parameter_server_options_t* options = new_options();
  (void)state;
  DT_OK(dist_parameter_server_options_clear_partitioner(options)); /* none set: still fine */
  DT_OK(dist_parameter_server_options_set_fixed_shards(options, 3, 0));
  DT_OK(dist_parameter_server_options_clear_partitioner(options));
  DT_ERR(dist_parameter_server_options_clear_partitioner(NULL), DIST_INVALID_ARGUMENT,
         "dist_parameter_server_options_clear_partitioner", "options");
  dist_parameter_server_options_destroy(options);
}

/* Another handle type where options are expected is refused by every function, and a
 * destroy given the wrong type does nothing. */
static void test_wrong_handle_type(void** state) {
  dist_communication_options_t* communication = NULL;
  dist_parameter_server_options_t* wrong;
  (void)state;
  DT_OK(dist_communication_options_create(&communication));
  wrong = (dist_parameter_server_options_t*)(void*)communication;
  DT_ERR(dist_parameter_server_options_set_placement(wrong, DIST_PLACEMENT_ROUND_ROBIN),
         DIST_INVALID_ARGUMENT, "dist_parameter_server_options_set_placement", "options");
  DT_ERR(dist_parameter_server_options_set_fixed_shards(wrong, 2, 0), DIST_INVALID_ARGUMENT,
         "dist_parameter_server_options_set_fixed_shards", "options");
  DT_ERR(dist_parameter_server_options_set_min_max_shards(wrong, 2, 0, 1), DIST_INVALID_ARGUMENT,
         "dist_parameter_server_options_set_min_max_shards", "options");
  DT_ERR(dist_parameter_server_options_set_max_shard_bytes(wrong, 2, 0, 0), DIST_INVALID_ARGUMENT,
         "dist_parameter_server_options_set_max_shard_bytes", "options");
  DT_ERR(dist_parameter_server_options_clear_partitioner(wrong), DIST_INVALID_ARGUMENT,
         "dist_parameter_server_options_clear_partitioner", "options");
  dist_parameter_server_options_destroy(wrong);
  /* Still a live communication options handle. */
  DT_OK(dist_communication_options_set_timeout_ms(communication, 1000));
  dist_communication_options_destroy(communication);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_and_destroy),
      cmocka_unit_test(test_placement_policies),
      cmocka_unit_test(test_fixed_shards),
      cmocka_unit_test(test_min_max_shards),
      cmocka_unit_test(test_max_shard_bytes),
      cmocka_unit_test(test_clear_partitioner),
      cmocka_unit_test(test_wrong_handle_type),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
