/* Names the library refuses up front, and how messages quote names (issue 13, item 11):
 * a device of another job or task is not a device of this process; a variable name that no
 * checkpoint can hold ("__metadata__", invalid UTF-8) is refused at creation instead of
 * making every later save fail; an argument of 1 MiB comes back in a message as a 256-byte
 * prefix, an ellipsis and its length, not in full. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "dist_strategy_test.h"

#define LOCAL_TASK "/job:localhost/replica:0/task:0"
#define HUGE_BYTES (1 << 20)
/* Quoted names show at most 256 bytes, escaped at worst to 4 characters each. */
#define MAX_MESSAGE_BYTES (4 * 256 + 1024)

static void expect_message_has(const char* part) {
  const char* message = dist_last_error_message();
  if (strstr(message, part) == NULL) {
    print_error("message \"%s\" does not contain \"%s\"\n", message, part);
    fail();
  }
}

static void test_devices_of_another_task_are_refused(void** state) {
  static const char* const foreign[] = {
      "/job:ps/task:7/device:CPU:0",           "/job:worker/replica:0/task:1/device:CPU:0",
      "/job:worker/device:CPU:0",              "/task:3/device:CPU:0",
      "/job:localhost/task:1/device:CPU:0",    "/job:localhost/replica:2/task:0/device:CPU:0",
  };
  size_t i;
  (void)state;
  for (i = 0; i < sizeof foreign / sizeof foreign[0]; ++i) {
    dist_strategy_t* strategy = (dist_strategy_t*)DT_SENTINEL_PTR;
    dist_value_t* tensor = (dist_value_t*)DT_SENTINEL_PTR;
    const char* devices[2];
    float one = 1.0f;
    DT_ERR(dist_strategy_create_one_device(foreign[i], &strategy), DIST_INVALID_ARGUMENT,
           "dist_strategy_create_one_device", LOCAL_TASK);
    assert_null(strategy);
    devices[0] = "CPU:0";
    devices[1] = foreign[i];
    DT_ERR(dist_strategy_create_mirrored(devices, 2, NULL, &strategy), DIST_INVALID_ARGUMENT,
           "dist_strategy_create_mirrored", "devices[1]");
    expect_message_has(LOCAL_TASK);
    DT_ERR(dist_strategy_create_central_storage(devices, 1, foreign[i], &strategy),
           DIST_INVALID_ARGUMENT, "dist_strategy_create_central_storage", "parameter_device");
    DT_ERR(dist_tensor_create(DIST_FLOAT32, NULL, 0, &one, sizeof one, foreign[i], &tensor),
           DIST_INVALID_ARGUMENT, "dist_tensor_create", LOCAL_TASK);
    assert_null(tensor);
  }
  /* The device names it does hold. */
  {
    dist_device_t* parsed = NULL;
    dist_strategy_t* strategy = NULL;
    DT_OK(dist_device_parse("/job:ps/task:7/device:CPU:0", &parsed)); /* a name is a name */
    dist_device_destroy(parsed);
    DT_ERR(dist_strategy_create_one_device("/job:ps/task:7/device:CPU:0", &strategy),
           DIST_INVALID_ARGUMENT, NULL, "'/job:ps/task:7/device:CPU:0'");
    DT_OK(dist_strategy_create_one_device(LOCAL_TASK "/device:CPU:1", &strategy));
    dist_strategy_destroy(strategy);
    DT_OK(dist_strategy_create_one_device("/job:localhost/device:CPU:0", &strategy));
    dist_strategy_destroy(strategy);
    DT_OK(dist_strategy_create_one_device("/task:0/device:CPU:0", &strategy));
    dist_strategy_destroy(strategy);
  }
}

static void test_unsavable_variable_names_are_refused_at_creation(void** state) {
  static const char* const bad[] = {"__metadata__", "bad\xff", "\xc3(", "half\xe2\x82"};
  char path[256];
  dist_strategy_t* strategy = dts_mirrored(2);
  dist_value_t* initial = dts_f32_scalar(2.5f, "CPU:0");
  dist_value_t* good = NULL;
  size_t i;
  (void)state;
  snprintf(path, sizeof path, "/tmp/dist_name_checks_%d.safetensors", (int)getpid());
  DT_OK(dist_strategy_scope_enter(strategy));
  for (i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    dist_value_t* variable = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_variable_create(initial, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, bad[i],
                                &variable),
           DIST_INVALID_ARGUMENT, "dist_variable_create", "variable name");
    assert_null(variable);
  }
  expect_message_has("UTF-8");
  /* Names a file holds: any valid UTF-8, "__metadata__" as part of a longer name. */
  DT_OK(dist_variable_create(initial, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE,
                             "gr\xc3\xb6\xc3\x9f" "e/__metadata__", &good));
  DT_OK(dist_strategy_scope_exit(strategy));
  /* Nothing refused was registered: the save succeeds and holds the one good variable. */
  DT_OK(dist_strategy_save_variables(strategy, path));
  DT_OK(dist_strategy_restore_variables(strategy, path));
  dts_expect_variable_f32(good, (const float[]){2.5f}, 1);
  unlink(path);
  dist_value_destroy(good);
  dist_value_destroy(initial);
  dist_strategy_destroy(strategy);
}

static char* huge_string(char fill) {
  char* text = malloc(HUGE_BYTES + 1);
  assert_non_null(text);
  memset(text, fill, HUGE_BYTES);
  text[HUGE_BYTES] = '\0';
  return text;
}

static void expect_bounded_message(void) {
  const char* message = dist_last_error_message();
  if (strlen(message) > MAX_MESSAGE_BYTES) {
    print_error("a message of %zu bytes quotes a 1 MiB argument\n", strlen(message));
    fail();
  }
  expect_message_has("...' (1048576 bytes)");
}

static void test_huge_arguments_are_cut_in_messages(void** state) {
  char* name = huge_string('x');
  char* device = huge_string('d');
  char* path = huge_string('p');
  dist_strategy_t* strategy = NULL;
  dist_value_t* tensor = NULL;
  dist_value_t* variable = NULL;
  dist_cluster_t* cluster = NULL;
  float one = 1.0f;
  (void)state;
  name[HUGE_BYTES - 1] = '\xff'; /* invalid UTF-8 at the very end */
  path[0] = '/';

  DT_ERR(dist_strategy_create_one_device(device, &strategy), DIST_INVALID_ARGUMENT,
         "dist_strategy_create_one_device", "unknown device type 'ddd");
  expect_bounded_message();
  DT_ERR(dist_tensor_create(DIST_FLOAT32, NULL, 0, &one, sizeof one, device, &tensor),
         DIST_INVALID_ARGUMENT, "dist_tensor_create", NULL);
  expect_bounded_message();

  strategy = dts_one_device("CPU:0");
  tensor = dts_f32_scalar(1.0f, "CPU:0");
  DT_OK(dist_strategy_scope_enter(strategy));
  DT_ERR(dist_variable_create(tensor, DIST_SYNC_AUTO, DIST_AGGREGATION_NONE, name,
                              &variable),
         DIST_INVALID_ARGUMENT, "dist_variable_create", "UTF-8");
  expect_bounded_message();
  DT_OK(dist_strategy_scope_exit(strategy));
  DT_ERR2(dist_strategy_save_variables(strategy, path), DIST_INVALID_ARGUMENT, DIST_NOT_FOUND,
          "dist_strategy_save_variables", NULL);
  expect_bounded_message();
  DT_ERR2(dist_strategy_restore_variables(strategy, path), DIST_INVALID_ARGUMENT, DIST_NOT_FOUND,
          "dist_strategy_restore_variables", NULL);
  expect_bounded_message();

  DT_OK(dist_cluster_create(&cluster));
  DT_ERR(dist_cluster_add_task(cluster, "worker", 0, device), DIST_INVALID_ARGUMENT,
         "dist_cluster_add_task", NULL);
  expect_bounded_message();
  DT_ERR(dist_cluster_add_task(cluster, name, 0, "a:1"), DIST_INVALID_ARGUMENT,
         "dist_cluster_add_task", "unknown job");
  expect_bounded_message();

  dist_cluster_destroy(cluster);
  dist_value_destroy(tensor);
  dist_strategy_destroy(strategy);
  free(path);
  free(device);
  free(name);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_devices_of_another_task_are_refused),
      cmocka_unit_test(test_unsavable_variable_names_are_refused_at_creation),
      cmocka_unit_test(test_huge_arguments_are_cut_in_messages),
  };
  if (dist_set_logical_cpu_device_count(DTS_NUM_CPUS) != DIST_OK) return 1;
  return cmocka_run_group_tests(tests, NULL, NULL);
}
