/* Tests for dist_input_context_create / dist_input_context_destroy (input.h): a context
 * built by the caller answers the same getters as the one a dataset function receives. */
#include "dist_test.h"

static void test_create_and_read(void** state) {
  dist_input_context_t* context = NULL;
  int32_t value = -1;
  int64_t size = -1;
  (void)state;
  DT_OK(dist_input_context_create(4, 3, 8, &context));
  assert_non_null(context);
  DT_OK(dist_input_context_num_input_pipelines(context, &value));
  assert_int_equal(value, 4);
  DT_OK(dist_input_context_input_pipeline_id(context, &value));
  assert_int_equal(value, 3);
  DT_OK(dist_input_context_num_replicas_in_sync(context, &value));
  assert_int_equal(value, 8);
  /* TF: global 64 over 8 replicas in sync is 8 per replica. */
  DT_OK(dist_input_context_per_replica_batch_size(context, 64, &size));
  assert_int_equal(size, 8);
  DT_ERR(dist_input_context_per_replica_batch_size(context, 60, &size), DIST_INVALID_ARGUMENT,
         "dist_input_context_per_replica_batch_size", "divisible");
  dist_input_context_destroy(context);
  /* TF's defaults: one pipeline, id 0, one replica. */
  DT_OK(dist_input_context_create(1, 0, 1, &context));
  DT_OK(dist_input_context_per_replica_batch_size(context, 5, &size));
  assert_int_equal(size, 5);
  dist_input_context_destroy(context);
  dist_input_context_destroy(NULL);
}

static void test_rejects_bad_arguments(void** state) {
  dist_input_context_t* context = DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_input_context_create(0, 0, 1, &context), DIST_INVALID_ARGUMENT,
         "dist_input_context_create", "num_input_pipelines");
  assert_null(context);
  context = DT_SENTINEL_PTR;
  DT_ERR(dist_input_context_create(2, 2, 1, &context), DIST_INVALID_ARGUMENT,
         "dist_input_context_create", "input_pipeline_id");
  assert_null(context);
  DT_ERR(dist_input_context_create(2, -1, 1, &context), DIST_INVALID_ARGUMENT,
         "dist_input_context_create", "input_pipeline_id");
  DT_ERR(dist_input_context_create(1, 0, 0, &context), DIST_INVALID_ARGUMENT,
         "dist_input_context_create", "num_replicas_in_sync");
  DT_ERR(dist_input_context_create(1, 0, 1, NULL), DIST_INVALID_ARGUMENT,
         "dist_input_context_create", "out");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_and_read),
      cmocka_unit_test(test_rejects_bad_arguments),
  };
  return cmocka_run_group_tests_name("input_context", tests, NULL, NULL);
}
