/* Tests for status.h: dist_status_name, dist_last_error_message and
 * dist_set_last_error_message. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "dist_test.h"

/* The 17 codes and their names, written from status.h (Abseil / gRPC numbering). */
static const struct {
  dist_status_t code;
  int number;
  const char* name;
} kCodes[] = {
    {DIST_OK, 0, "OK"},
    {DIST_CANCELLED, 1, "CANCELLED"},
    {DIST_UNKNOWN, 2, "UNKNOWN"},
    {DIST_INVALID_ARGUMENT, 3, "INVALID_ARGUMENT"},
    {DIST_DEADLINE_EXCEEDED, 4, "DEADLINE_EXCEEDED"},
    {DIST_NOT_FOUND, 5, "NOT_FOUND"},
    {DIST_ALREADY_EXISTS, 6, "ALREADY_EXISTS"},
    {DIST_PERMISSION_DENIED, 7, "PERMISSION_DENIED"},
    {DIST_RESOURCE_EXHAUSTED, 8, "RESOURCE_EXHAUSTED"},
    {DIST_FAILED_PRECONDITION, 9, "FAILED_PRECONDITION"},
    {DIST_ABORTED, 10, "ABORTED"},
    {DIST_OUT_OF_RANGE, 11, "OUT_OF_RANGE"},
    {DIST_UNIMPLEMENTED, 12, "UNIMPLEMENTED"},
    {DIST_INTERNAL, 13, "INTERNAL"},
    {DIST_UNAVAILABLE, 14, "UNAVAILABLE"},
    {DIST_DATA_LOSS, 15, "DATA_LOSS"},
    {DIST_UNAUTHENTICATED, 16, "UNAUTHENTICATED"},
};

static void test_status_codes_have_abseil_numbers(void** state) {
  size_t i;
  (void)state;
  assert_int_equal(sizeof(kCodes) / sizeof(kCodes[0]), 17);
  for (i = 0; i < sizeof(kCodes) / sizeof(kCodes[0]); ++i) {
    assert_int_equal(kCodes[i].code, kCodes[i].number);
  }
}

static void test_status_name_of_every_code(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kCodes) / sizeof(kCodes[0]); ++i) {
    const char* name = dist_status_name(kCodes[i].code);
    assert_non_null(name);
    assert_string_equal(name, kCodes[i].name);
    /* Static: the same answer a second time. */
    assert_string_equal(dist_status_name(kCodes[i].code), kCodes[i].name);
  }
}

static void test_status_name_of_unknown_values(void** state) {
  const dist_status_t unknown[] = {-1, 17, 18, 100, 1000, INT32_MAX, INT32_MIN};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); ++i) {
    const char* name = dist_status_name(unknown[i]);
    assert_non_null(name);
    assert_string_equal(name, "UNKNOWN_STATUS_CODE");
  }
}

static void test_failure_sets_message_and_success_clears_it(void** state) {
  size_t size = 77;
  const char* message;
  (void)state;
  assert_int_equal(dist_dtype_size(0, &size), DIST_INVALID_ARGUMENT);
  message = dist_last_error_message();
  assert_non_null(message);
  assert_true(strlen(message) > 0);
  assert_non_null(strstr(message, "dist_dtype_size"));
  assert_non_null(strstr(message, "dtype"));

  assert_int_equal(dist_dtype_size(DIST_FLOAT32, &size), DIST_OK);
  message = dist_last_error_message();
  assert_non_null(message);
  assert_string_equal(message, "");
}

static void test_message_survives_status_name_and_rereading(void** state) {
  dist_device_t* device = NULL;
  char copy[1024];
  const char* message;
  (void)state;
  assert_int_equal(dist_device_parse("CPU:x", &device), DIST_INVALID_ARGUMENT);
  assert_null(device);
  message = dist_last_error_message();
  assert_non_null(message);
  assert_true(strlen(message) > 0 && strlen(message) < sizeof(copy));
  strcpy(copy, message);
  /* dist_status_name and dist_last_error_message itself leave the message alone. */
  assert_string_equal(dist_status_name(DIST_INVALID_ARGUMENT), "INVALID_ARGUMENT");
  assert_string_equal(dist_status_name(12345), "UNKNOWN_STATUS_CODE");
  assert_string_equal(dist_last_error_message(), copy);
  assert_string_equal(dist_last_error_message(), copy);
}

static void test_a_new_failure_replaces_the_message(void** state) {
  size_t size = 0;
  dist_device_t* device = NULL;
  (void)state;
  DT_ERR(dist_dtype_size(0, &size), DIST_INVALID_ARGUMENT, "dist_dtype_size", "dtype");
  DT_ERR(dist_device_parse(NULL, &device), DIST_INVALID_ARGUMENT, "dist_device_parse", "name");
  assert_null(strstr(dist_last_error_message(), "dist_dtype_size"));
}

/* Each thread has its own message. */
typedef struct {
  const char* initial; /* a copy of the message before any call (pointer checked != NULL) */
  int initial_is_empty;
  int failed_with_invalid_argument;
  int own_message_names_function;
} thread_result;

static void* thread_body(void* arg) {
  thread_result* result = (thread_result*)arg;
  size_t size = 0;
  const char* message = dist_last_error_message();
  result->initial = message;
  result->initial_is_empty = message != NULL && message[0] == '\0';
  result->failed_with_invalid_argument = dist_dtype_size(-5, &size) == DIST_INVALID_ARGUMENT;
  message = dist_last_error_message();
  result->own_message_names_function = message != NULL && strstr(message, "dist_dtype_size") != NULL;
  return NULL;
}

static void test_message_is_per_thread(void** state) {
  pthread_t thread;
  thread_result result;
  dist_device_t* device = NULL;
  char copy[1024];
  (void)state;
  memset(&result, 0, sizeof(result));

  /* This thread fails with a device error... */
  assert_int_equal(dist_device_parse("TPU:0", &device), DIST_INVALID_ARGUMENT);
  assert_true(strlen(dist_last_error_message()) < sizeof(copy));
  strcpy(copy, dist_last_error_message());
  assert_non_null(strstr(copy, "dist_device_parse"));

  /* ...another thread starts with an empty message and fails with its own error... */
  assert_int_equal(pthread_create(&thread, NULL, thread_body, &result), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_non_null(result.initial);
  assert_true(result.initial_is_empty);
  assert_true(result.failed_with_invalid_argument);
  assert_true(result.own_message_names_function);

  /* ...and this thread's message is unchanged. */
  assert_string_equal(dist_last_error_message(), copy);
}

/* ---- dist_set_last_error_message ---- */

static void test_set_message_is_read_back(void** state) {
  (void)state;
  dist_set_last_error_message("the engine is not ready");
  assert_string_equal(dist_last_error_message(), "the engine is not ready");
  dist_set_last_error_message("");
  assert_string_equal(dist_last_error_message(), "");
}

/* Misuse: NULL clears; an over-long message is cut at the bound, never read past it. */
static void test_set_message_null_and_bounds(void** state) {
  char* long_message;
  (void)state;
  dt_leave_error();
  dist_set_last_error_message(NULL);
  assert_string_equal(dist_last_error_message(), "");

  /* DIST_MAX_ERROR_MESSAGE_BYTES + 100 bytes, not NUL-terminated within the bound. */
  long_message = (char*)malloc(DIST_MAX_ERROR_MESSAGE_BYTES + 101);
  assert_non_null(long_message);
  memset(long_message, 'x', DIST_MAX_ERROR_MESSAGE_BYTES + 100);
  long_message[DIST_MAX_ERROR_MESSAGE_BYTES + 100] = '\0';
  dist_set_last_error_message(long_message);
  assert_int_equal(strlen(dist_last_error_message()), DIST_MAX_ERROR_MESSAGE_BYTES);

  /* A two-byte character (U+00E9, C3 A9) ending at the bound is kept whole... */
  memset(long_message, 'x', DIST_MAX_ERROR_MESSAGE_BYTES + 100);
  long_message[DIST_MAX_ERROR_MESSAGE_BYTES - 2] = (char)0xC3;
  long_message[DIST_MAX_ERROR_MESSAGE_BYTES - 1] = (char)0xA9;
  dist_set_last_error_message(long_message);
  assert_int_equal(strlen(dist_last_error_message()), DIST_MAX_ERROR_MESSAGE_BYTES);
  /* ...and one straddling it is dropped whole, never split. */
  long_message[DIST_MAX_ERROR_MESSAGE_BYTES - 2] = 'x';
  long_message[DIST_MAX_ERROR_MESSAGE_BYTES - 1] = (char)0xC3;
  long_message[DIST_MAX_ERROR_MESSAGE_BYTES] = (char)0xA9;
  dist_set_last_error_message(long_message);
  assert_int_equal(strlen(dist_last_error_message()), DIST_MAX_ERROR_MESSAGE_BYTES - 1);
  free(long_message);

  /* The next dist_ call that returns a status replaces it. */
  dist_set_last_error_message("stale");
  {
    size_t size = 0;
    assert_int_equal(dist_dtype_size(DIST_FLOAT32, &size), DIST_OK);
  }
  assert_string_equal(dist_last_error_message(), "");
}

/* A replica function's own message reaches the caller of run, naming the replica. */
static dist_status_t failing_replica(dist_context_t* context, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** results, int32_t num_results,
                                     void* user_data) {
  int32_t id = -1;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  (void)user_data;
  if (dist_context_replica_id(context, &id) != DIST_OK) return DIST_INTERNAL;
  if (id != 1) return DIST_OK;
  dist_set_last_error_message("sensor 7 went dark");
  return DIST_UNAVAILABLE;
}

static dist_status_t failing_merge(dist_strategy_t* strategy, const dist_value_t* const* args,
                                   int32_t num_args, dist_value_t** out, void* user_data) {
  (void)strategy;
  (void)args;
  (void)num_args;
  (void)out;
  (void)user_data;
  dist_set_last_error_message("the merge found no quorum");
  return DIST_FAILED_PRECONDITION;
}

/* Every replica calls merge_call; the merge function fails with its own message, which
 * every replica's merge_call reports (whichever replica ran the function). */
static dist_status_t merging_replica(dist_context_t* context, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** results, int32_t num_results,
                                     void* user_data) {
  dist_value_t* merged = NULL;
  int* seen = (int*)user_data;
  int32_t id = -1;
  dist_status_t status;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  if (dist_context_replica_id(context, &id) != DIST_OK || id < 0 || id > 1) return DIST_INTERNAL;
  status = dist_context_merge_call(context, failing_merge, NULL, NULL, 0, &merged);
  seen[id] = status == DIST_FAILED_PRECONDITION &&
             strstr(dist_last_error_message(), "the merge found no quorum") != NULL;
  return status;
}

static void test_callback_message_reaches_the_caller(void** state) {
  const char* devices[] = {"CPU:0", "CPU:1"};
  dist_strategy_t* strategy = NULL;
  int seen[2] = {0, 0};
  (void)state;
  DT_OK(dist_set_logical_cpu_device_count(2));
  DT_OK(dist_strategy_create_mirrored(devices, 2, NULL, &strategy));

  assert_int_equal(dist_strategy_run(strategy, failing_replica, NULL, NULL, 0, NULL, 0),
                   DIST_UNAVAILABLE);
  assert_non_null(strstr(dist_last_error_message(), "sensor 7 went dark"));
  assert_non_null(strstr(dist_last_error_message(), "replica 1"));

  assert_int_equal(dist_strategy_run(strategy, merging_replica, seen, NULL, 0, NULL, 0),
                   DIST_FAILED_PRECONDITION);
  assert_non_null(strstr(dist_last_error_message(), "the merge found no quorum"));
  assert_true(seen[0]);
  assert_true(seen[1]);
  dist_strategy_destroy(strategy);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_codes_have_abseil_numbers),
      cmocka_unit_test(test_status_name_of_every_code),
      cmocka_unit_test(test_status_name_of_unknown_values),
      cmocka_unit_test(test_failure_sets_message_and_success_clears_it),
      cmocka_unit_test(test_message_survives_status_name_and_rereading),
      cmocka_unit_test(test_a_new_failure_replaces_the_message),
      cmocka_unit_test(test_message_is_per_thread),
      cmocka_unit_test(test_set_message_is_read_back),
      cmocka_unit_test(test_set_message_null_and_bounds),
      cmocka_unit_test(test_callback_message_reaches_the_caller),
  };
  return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
