/* Tests for device.h: parsing device names, their parts, and the local devices. */
#include "dist_test.h"

/* ---------------------------------------------------------------------------------------
 * Parsing: the expectations are TensorFlow's device-name rules as device.h states them. */

typedef struct {
  const char* input;
  const char* canonical;
  const char* job;
  int32_t replica;
  int32_t task;
  dist_device_type_t type;
  int32_t index;
} parse_case;

static const parse_case kGoodNames[] = {
    /* short form */
    {"CPU:0", "/device:CPU:0", "", -1, -1, DIST_DEVICE_CPU, 0},
    {"CPU:7", "/device:CPU:7", "", -1, -1, DIST_DEVICE_CPU, 7},
    {"GPU:1", "/device:GPU:1", "", -1, -1, DIST_DEVICE_GPU, 1},
    /* the type is case-insensitive */
    {"gpu:1", "/device:GPU:1", "", -1, -1, DIST_DEVICE_GPU, 1},
    {"cpu:3", "/device:CPU:3", "", -1, -1, DIST_DEVICE_CPU, 3},
    {"Cpu:2", "/device:CPU:2", "", -1, -1, DIST_DEVICE_CPU, 2},
    {"/device:cpu:5", "/device:CPU:5", "", -1, -1, DIST_DEVICE_CPU, 5},
    {"/device:gPu:4", "/device:GPU:4", "", -1, -1, DIST_DEVICE_GPU, 4},
    /* legacy */
    {"/cpu:0", "/device:CPU:0", "", -1, -1, DIST_DEVICE_CPU, 0},
    {"/gpu:3", "/device:GPU:3", "", -1, -1, DIST_DEVICE_GPU, 3},
    {"/CPU:1", "/device:CPU:1", "", -1, -1, DIST_DEVICE_CPU, 1},
    /* full form and subsets of it, in order */
    {"/job:worker/replica:0/task:1/device:GPU:0", "/job:worker/replica:0/task:1/device:GPU:0",
     "worker", 0, 1, DIST_DEVICE_GPU, 0},
    {"/job:localhost/replica:0/task:0/device:CPU:0",
     "/job:localhost/replica:0/task:0/device:CPU:0", "localhost", 0, 0, DIST_DEVICE_CPU, 0},
    {"/job:worker/replica:0/task:1/device:gpu:2", "/job:worker/replica:0/task:1/device:GPU:2",
     "worker", 0, 1, DIST_DEVICE_GPU, 2},
    {"/job:worker/device:CPU:0", "/job:worker/device:CPU:0", "worker", -1, -1, DIST_DEVICE_CPU,
     0},
    {"/device:GPU:1", "/device:GPU:1", "", -1, -1, DIST_DEVICE_GPU, 1},
    {"/job:ps_2/replica:12/task:34/device:GPU:56", "/job:ps_2/replica:12/task:34/device:GPU:56",
     "ps_2", 12, 34, DIST_DEVICE_GPU, 56},
    {"/task:7/device:CPU:1", "/task:7/device:CPU:1", "", -1, 7, DIST_DEVICE_CPU, 1},
    {"/replica:2/device:CPU:0", "/replica:2/device:CPU:0", "", 2, -1, DIST_DEVICE_CPU, 0},
    /* no device part: type 0, index -1 */
    {"/job:worker/task:1", "/job:worker/task:1", "worker", -1, 1, 0, -1},
    {"/job:ps", "/job:ps", "ps", -1, -1, 0, -1},
    {"/replica:3", "/replica:3", "", 3, -1, 0, -1},
    {"/job:worker/replica:1/task:2", "/job:worker/replica:1/task:2", "worker", 1, 2, 0, -1},
    /* unspecified index */
    {"/device:CPU:*", "/device:CPU:*", "", -1, -1, DIST_DEVICE_CPU, -1},
    {"/job:worker/device:GPU:*", "/job:worker/device:GPU:*", "worker", -1, -1, DIST_DEVICE_GPU,
     -1},
    /* the largest index an int32_t holds */
    {"CPU:2147483647", "/device:CPU:2147483647", "", -1, -1, DIST_DEVICE_CPU, INT32_MAX},
};

typedef struct {
  const char* input;
  const char* part; /* a word the message must contain besides the function, or NULL */
} bad_case;

static const bad_case kBadNames[] = {
    {"TPU:0", "TPU"},                /* unknown device type */
    {"/device:TPU:0", "TPU"},        /* unknown device type, full form */
    {"XLA_CPU:0", "XLA_CPU"},        /* unknown device type */
    {"", NULL},                      /* empty */
    {"CPU:x", NULL},                 /* non-numeric index */
    {"CPU:1x", NULL},                /* trailing garbage in the index */
    {"CPU:", NULL},                  /* missing index */
    {":0", NULL},                    /* missing type */
    {"CPU:-1", NULL},                /* negative index */
    {"CPU:99999999999", NULL},       /* index overflows int32 */
    {"CPU:2147483648", NULL},        /* INT32_MAX + 1 */
    {"CPU:0:1", NULL},               /* too many fields */
    {" CPU:0", NULL},                /* whitespace */
    {"CPU:0 ", NULL},                /* whitespace */
    {"/job:1bad", "job"},            /* job must start with a letter */
    {"/job:", "job"},                /* empty job */
    {"/job:wor ker", "job"},         /* space in job */
    {"/task:1/job:w", NULL},         /* parts out of order */
    {"/device:CPU:0/job:w", NULL},   /* parts out of order */
    {"/task:1/replica:0", NULL},     /* parts out of order */
    {"/job:a/job:b", NULL},          /* repeated part */
    {"/job:worker/replica:x", "replica"},
    {"/job:worker/replica:-1", "replica"},
    {"/task:-1", "task"},
    {"/task:", "task"},
    {"/job:worker//task:1", NULL},   /* empty part */
    {"/unknown:3", NULL},            /* unknown part */
    {"/device:CPU:-1", NULL},
    {"/device:CPU:99999999999", NULL},
};

static void check_device(const dist_device_t* device, const parse_case* expected) {
  const char* name = DT_SENTINEL_STR;
  const char* job = DT_SENTINEL_STR;
  int32_t replica = 12345;
  int32_t task = 12345;
  dist_device_type_t type = 12345;
  int32_t index = 12345;

  DT_OK(dist_device_name(device, &name));
  assert_non_null(name);
  assert_string_equal(name, expected->canonical);
  DT_OK(dist_device_job(device, &job));
  assert_non_null(job);
  assert_string_equal(job, expected->job);
  DT_OK(dist_device_replica(device, &replica));
  assert_int_equal(replica, expected->replica);
  DT_OK(dist_device_task(device, &task));
  assert_int_equal(task, expected->task);
  DT_OK(dist_device_type(device, &type));
  assert_int_equal(type, expected->type);
  DT_OK(dist_device_index(device, &index));
  assert_int_equal(index, expected->index);
}

static void test_parse_good_names(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kGoodNames) / sizeof(kGoodNames[0]); ++i) {
    dist_device_t* device = NULL;
    print_message("parse \"%s\"\n", kGoodNames[i].input);
    DT_OK(dist_device_parse(kGoodNames[i].input, &device));
    assert_non_null(device);
    check_device(device, &kGoodNames[i]);
    dist_device_destroy(device);
  }
}

static void test_parse_canonical_name_is_a_fixed_point(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kGoodNames) / sizeof(kGoodNames[0]); ++i) {
    dist_device_t* device = NULL;
    DT_OK(dist_device_parse(kGoodNames[i].canonical, &device));
    assert_non_null(device);
    check_device(device, &kGoodNames[i]);
    dist_device_destroy(device);
  }
}

static void test_parse_bad_names(void** state) {
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(kBadNames) / sizeof(kBadNames[0]); ++i) {
    dist_device_t* device = (dist_device_t*)DT_SENTINEL_PTR;
    print_message("parse \"%s\" (must fail)\n", kBadNames[i].input);
    DT_ERR(dist_device_parse(kBadNames[i].input, &device), DIST_INVALID_ARGUMENT,
           "dist_device_parse", "name");
    assert_null(device);
    if (kBadNames[i].part != NULL) {
      const char* message = dist_last_error_message();
      if (strstr(message, kBadNames[i].part) == NULL) {
        fail_msg("message \"%s\" for \"%s\" does not name the part \"%s\"", message,
                 kBadNames[i].input, kBadNames[i].part);
      }
    }
  }
}

static void test_parse_null_arguments(void** state) {
  dist_device_t* device = (dist_device_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_device_parse(NULL, &device), DIST_INVALID_ARGUMENT, "dist_device_parse", "name");
  assert_null(device);
  DT_ERR(dist_device_parse("CPU:0", NULL), DIST_INVALID_ARGUMENT, "dist_device_parse", "out");
}

static void test_device_strings_live_with_the_device(void** state) {
  dist_device_t* a = NULL;
  dist_device_t* b = NULL;
  const char* name_a = NULL;
  const char* job_a = NULL;
  const char* name_b = NULL;
  (void)state;
  DT_OK(dist_device_parse("/job:alpha/replica:0/task:3/device:CPU:1", &a));
  DT_OK(dist_device_name(a, &name_a));
  DT_OK(dist_device_job(a, &job_a));
  /* Other calls, including other devices coming and going, leave a's strings intact. */
  DT_OK(dist_device_parse("gpu:9", &b));
  DT_OK(dist_device_name(b, &name_b));
  assert_string_equal(name_b, "/device:GPU:9");
  dist_device_destroy(b);
  assert_string_equal(name_a, "/job:alpha/replica:0/task:3/device:CPU:1");
  assert_string_equal(job_a, "alpha");
  dist_device_destroy(a);
}

static void test_device_destroy_accepts_null(void** state) {
  (void)state;
  dist_device_destroy(NULL);
}

/* Every accessor: NULL device, NULL out. */
static void test_device_accessors_reject_null(void** state) {
  dist_device_t* device = NULL;
  const char* str = DT_SENTINEL_STR;
  int32_t number = 12345;
  dist_device_type_t type = 12345;
  (void)state;
  DT_OK(dist_device_parse("CPU:0", &device));

  str = DT_SENTINEL_STR;
  DT_ERR(dist_device_name(NULL, &str), DIST_INVALID_ARGUMENT, "dist_device_name", "device");
  assert_null(str);
  DT_ERR(dist_device_name(device, NULL), DIST_INVALID_ARGUMENT, "dist_device_name", "out_borrowed_name");

  str = DT_SENTINEL_STR;
  DT_ERR(dist_device_job(NULL, &str), DIST_INVALID_ARGUMENT, "dist_device_job", "device");
  assert_null(str);
  DT_ERR(dist_device_job(device, NULL), DIST_INVALID_ARGUMENT, "dist_device_job", "out_borrowed_job");

  number = 12345;
  DT_ERR(dist_device_replica(NULL, &number), DIST_INVALID_ARGUMENT, "dist_device_replica",
         "device");
  assert_int_equal(number, 0);
  DT_ERR(dist_device_replica(device, NULL), DIST_INVALID_ARGUMENT, "dist_device_replica",
         "out_replica");

  number = 12345;
  DT_ERR(dist_device_task(NULL, &number), DIST_INVALID_ARGUMENT, "dist_device_task", "device");
  assert_int_equal(number, 0);
  DT_ERR(dist_device_task(device, NULL), DIST_INVALID_ARGUMENT, "dist_device_task", "out_task");

  type = 12345;
  DT_ERR(dist_device_type(NULL, &type), DIST_INVALID_ARGUMENT, "dist_device_type", "device");
  assert_int_equal(type, 0);
  DT_ERR(dist_device_type(device, NULL), DIST_INVALID_ARGUMENT, "dist_device_type", "out_type");

  number = 12345;
  DT_ERR(dist_device_index(NULL, &number), DIST_INVALID_ARGUMENT, "dist_device_index", "device");
  assert_int_equal(number, 0);
  DT_ERR(dist_device_index(device, NULL), DIST_INVALID_ARGUMENT, "dist_device_index",
         "out_index");

  dist_device_destroy(device);
}

/* ---------------------------------------------------------------------------------------
 * Local devices. The group setup configures 3 logical CPU devices. */

#define N_CPUS 3

static int setup_three_cpus(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(N_CPUS) == DIST_OK ? 0 : -1;
}

static int32_t local_count(void) {
  int32_t count = -1;
  DT_OK(dist_local_device_count(&count));
  return count;
}

static void test_gpu_unavailable_reason(void** state) {
  const char* reason = DT_SENTINEL_STR;
  int32_t count;
  (void)state;
  DT_OK(dist_gpu_unavailable_reason(&reason));
  assert_non_null(reason);
  assert_ptr_not_equal(reason, DT_SENTINEL_STR);
  count = local_count();
  assert_true(count >= N_CPUS);
  if (count == N_CPUS) {
    /* No GPUs: the reason says why. */
    assert_true(strlen(reason) > 0);
    print_message("no GPU: %s\n", reason);
  } else {
    assert_string_equal(reason, "");
  }
  /* A static string: stable across calls. */
  {
    const char* again = NULL;
    DT_OK(dist_gpu_unavailable_reason(&again));
    assert_string_equal(again, reason);
  }
}

static void test_gpu_unavailable_reason_rejects_null(void** state) {
  (void)state;
  DT_ERR(dist_gpu_unavailable_reason(NULL), DIST_INVALID_ARGUMENT, "dist_gpu_unavailable_reason",
         "out_borrowed_reason");
}

static void test_local_device_count(void** state) {
  int32_t count;
  (void)state;
  count = local_count();
  assert_true(count >= N_CPUS);
  if (!dt_have_gpu()) assert_int_equal(count, N_CPUS);
}

static void test_local_device_count_rejects_null(void** state) {
  (void)state;
  DT_ERR(dist_local_device_count(NULL), DIST_INVALID_ARGUMENT, "dist_local_device_count",
         "out_count");
}

static void test_local_devices_are_cpus_then_gpus(void** state) {
  int32_t count;
  int32_t i;
  (void)state;
  count = local_count();
  for (i = 0; i < count; ++i) {
    dist_device_t* device = NULL;
    parse_case expected;
    char canonical[128];
    int is_cpu = i < N_CPUS;
    snprintf(canonical, sizeof(canonical), "/job:localhost/replica:0/task:0/device:%s:%d",
             is_cpu ? "CPU" : "GPU", (int)(is_cpu ? i : i - N_CPUS));
    expected.input = NULL;
    expected.canonical = canonical;
    expected.job = "localhost";
    expected.replica = 0;
    expected.task = 0;
    expected.type = is_cpu ? DIST_DEVICE_CPU : DIST_DEVICE_GPU;
    expected.index = is_cpu ? i : i - N_CPUS;
    DT_OK(dist_local_device_get(i, &device));
    assert_non_null(device);
    check_device(device, &expected);
    dist_device_destroy(device);
  }
}

static void test_local_device_get_out_of_range(void** state) {
  const int32_t bad[] = {-1, -100, INT32_MIN, 0 /* replaced by count */, 0, INT32_MAX};
  int32_t indices[sizeof(bad) / sizeof(bad[0])];
  int32_t count;
  size_t i;
  (void)state;
  count = local_count();
  memcpy(indices, bad, sizeof(bad));
  indices[3] = count;
  indices[4] = count + 1;
  for (i = 0; i < sizeof(indices) / sizeof(indices[0]); ++i) {
    dist_device_t* device = (dist_device_t*)DT_SENTINEL_PTR;
    print_message("dist_local_device_get(%d) (must fail)\n", (int)indices[i]);
    /* device.h leaves the code open: an index outside [0, count) is an invalid argument or
     * out of range. */
    DT_ERR2(dist_local_device_get(indices[i], &device), DIST_INVALID_ARGUMENT,
            DIST_OUT_OF_RANGE, "dist_local_device_get", "index");
    assert_null(device);
  }
}

static void test_local_device_get_rejects_null_out(void** state) {
  (void)state;
  DT_ERR(dist_local_device_get(0, NULL), DIST_INVALID_ARGUMENT, "dist_local_device_get", "out");
}

static void test_set_logical_cpu_device_count_rejects_bad_counts(void** state) {
  const int32_t bad[] = {0, -1, DIST_MAX_LOGICAL_CPU_DEVICES + 1, 1000, INT32_MAX, INT32_MIN};
  size_t i;
  (void)state;
  for (i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
    DT_ERR(dist_set_logical_cpu_device_count(bad[i]), DIST_INVALID_ARGUMENT,
           "dist_set_logical_cpu_device_count", "count");
    /* Nothing changed. */
    {
      dist_device_t* device = NULL;
      dist_device_t* beyond = (dist_device_t*)DT_SENTINEL_PTR;
      dist_device_type_t type = 0;
      DT_OK(dist_local_device_get(N_CPUS - 1, &device));
      DT_OK(dist_device_type(device, &type));
      assert_int_equal(type, DIST_DEVICE_CPU);
      dist_device_destroy(device);
      if (!dt_have_gpu()) {
        assert_int_equal(local_count(), N_CPUS);
        assert_int_not_equal(dist_local_device_get(N_CPUS, &beyond), DIST_OK);
        assert_null(beyond);
      }
    }
  }
}

static void test_set_logical_cpu_device_count_bounds(void** state) {
  int32_t gpus;
  dist_device_t* device = NULL;
  const char* name = NULL;
  (void)state;
  gpus = local_count() - N_CPUS;

  DT_OK(dist_set_logical_cpu_device_count(1));
  assert_int_equal(local_count(), 1 + gpus);
  DT_OK(dist_local_device_get(0, &device));
  DT_OK(dist_device_name(device, &name));
  assert_string_equal(name, "/job:localhost/replica:0/task:0/device:CPU:0");
  dist_device_destroy(device);

  DT_OK(dist_set_logical_cpu_device_count(DIST_MAX_LOGICAL_CPU_DEVICES));
  assert_int_equal(local_count(), DIST_MAX_LOGICAL_CPU_DEVICES + gpus);
  DT_OK(dist_local_device_get(DIST_MAX_LOGICAL_CPU_DEVICES - 1, &device));
  DT_OK(dist_device_name(device, &name));
  {
    char expected[128];
    snprintf(expected, sizeof(expected), "/job:localhost/replica:0/task:0/device:CPU:%d",
             DIST_MAX_LOGICAL_CPU_DEVICES - 1);
    assert_string_equal(name, expected);
  }
  dist_device_destroy(device);

  DT_OK(dist_set_logical_cpu_device_count(N_CPUS));
  assert_int_equal(local_count(), N_CPUS + gpus);
}

static void test_devices_outlive_a_count_change(void** state) {
  dist_device_t* device = NULL;
  const char* name = NULL;
  int32_t index = -5;
  (void)state;
  DT_OK(dist_local_device_get(N_CPUS - 1, &device));
  DT_OK(dist_set_logical_cpu_device_count(1));
  /* The device made before the call keeps its name. */
  DT_OK(dist_device_name(device, &name));
  assert_string_equal(name, "/job:localhost/replica:0/task:0/device:CPU:2");
  DT_OK(dist_device_index(device, &index));
  assert_int_equal(index, N_CPUS - 1);
  dist_device_destroy(device);
  DT_OK(dist_set_logical_cpu_device_count(N_CPUS));
}

int main(void) {
  const struct CMUnitTest parse_tests[] = {
      cmocka_unit_test(test_parse_good_names),
      cmocka_unit_test(test_parse_canonical_name_is_a_fixed_point),
      cmocka_unit_test(test_parse_bad_names),
      cmocka_unit_test(test_parse_null_arguments),
      cmocka_unit_test(test_device_strings_live_with_the_device),
      cmocka_unit_test(test_device_destroy_accepts_null),
      cmocka_unit_test(test_device_accessors_reject_null),
  };
  const struct CMUnitTest local_tests[] = {
      cmocka_unit_test(test_gpu_unavailable_reason),
      cmocka_unit_test(test_gpu_unavailable_reason_rejects_null),
      cmocka_unit_test(test_local_device_count),
      cmocka_unit_test(test_local_device_count_rejects_null),
      cmocka_unit_test(test_local_devices_are_cpus_then_gpus),
      cmocka_unit_test(test_local_device_get_out_of_range),
      cmocka_unit_test(test_local_device_get_rejects_null_out),
      cmocka_unit_test(test_set_logical_cpu_device_count_rejects_bad_counts),
      cmocka_unit_test(test_set_logical_cpu_device_count_bounds),
      cmocka_unit_test(test_devices_outlive_a_count_change),
  };
  int failures = 0;
  failures += cmocka_run_group_tests_name("device_parse", parse_tests, NULL, NULL);
  failures += cmocka_run_group_tests_name("local_devices", local_tests, setup_three_cpus, NULL);
  return failures;
}
