/* The "Thread-safety: safe" promises of the headers, exercised from several threads at once:
 * tensors, devices, DLPack and the per-thread error message. Worker threads never call
 * cmocka (it is not thread-safe): they record the first thing that went wrong, and the
 * main thread asserts on it. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "dist_test.h"

#include "distribute/dlpack_interop.h"

#define N_THREADS 8
#define N_ITERATIONS 300
#define N_CPUS 3

typedef struct {
  int id;
  pthread_barrier_t* start;
  char error[512]; /* the first failure, or "" */
  void* shared;    /* per-test input */
} worker;

#define WORKER_CHECK(w, cond, ...)                                         \
  do {                                                                     \
    if (!(cond) && (w)->error[0] == '\0') {                                \
      snprintf((w)->error, sizeof((w)->error), __VA_ARGS__);               \
    }                                                                      \
  } while (0)

static void run_workers(void* (*body)(void*), void* shared) {
  pthread_t threads[N_THREADS];
  worker workers[N_THREADS];
  pthread_barrier_t start;
  int i;
  assert_int_equal(pthread_barrier_init(&start, NULL, N_THREADS), 0);
  for (i = 0; i < N_THREADS; ++i) {
    workers[i].id = i;
    workers[i].start = &start;
    workers[i].error[0] = '\0';
    workers[i].shared = shared;
    assert_int_equal(pthread_create(&threads[i], NULL, body, &workers[i]), 0);
  }
  for (i = 0; i < N_THREADS; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
  pthread_barrier_destroy(&start);
  for (i = 0; i < N_THREADS; ++i) {
    if (workers[i].error[0] != '\0') fail_msg("thread %d: %s", i, workers[i].error);
  }
}

static int setup_cpus(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(N_CPUS) == DIST_OK ? 0 : -1;
}

/* ---------------------------------------------------------------------------------------
 * Each thread creates, copies, exports and destroys its own tensors. */

static void* lifecycle_body(void* arg) {
  worker* w = (worker*)arg;
  const int64_t dims[2] = {4, 8};
  int32_t values[32];
  int it, k;
  pthread_barrier_wait(w->start);
  for (it = 0; it < N_ITERATIONS && w->error[0] == '\0'; ++it) {
    char from[16], to[16];
    dist_value_t* tensor = NULL;
    dist_value_t* copy = NULL;
    DLManagedTensor* managed = NULL;
    void* data = NULL;
    const char* device = NULL;
    dist_status_t s;
    for (k = 0; k < 32; ++k) values[k] = w->id * 100000 + it * 100 + k;
    snprintf(from, sizeof(from), "CPU:%d", (w->id + it) % N_CPUS);
    snprintf(to, sizeof(to), "CPU:%d", (w->id + it + 1) % N_CPUS);

    s = dist_tensor_create(DIST_INT32, dims, 2, values, sizeof(values), from, &tensor);
    WORKER_CHECK(w, s == DIST_OK, "create: %s", dist_last_error_message());
    if (s != DIST_OK) break;
    s = dist_tensor_copy_to_device(tensor, to, &copy);
    WORKER_CHECK(w, s == DIST_OK, "copy: %s", dist_last_error_message());
    if (s != DIST_OK) break;
    s = dist_tensor_to_dlpack(tensor, &managed);
    WORKER_CHECK(w, s == DIST_OK, "export: %s", dist_last_error_message());
    if (s != DIST_OK) break;
    dist_value_destroy(tensor);

    s = dist_tensor_data(copy, &data);
    WORKER_CHECK(w, s == DIST_OK && memcmp(data, values, sizeof(values)) == 0,
                 "copy holds the wrong data at iteration %d", it);
    s = dist_tensor_device(copy, &device);
    WORKER_CHECK(w, s == DIST_OK && strcmp(device + strlen("/device:"), to) == 0,
                 "copy is on %s, expected %s", device ? device : "?", to);
    WORKER_CHECK(w,
                 memcmp((char*)managed->dl_tensor.data + managed->dl_tensor.byte_offset, values,
                        sizeof(values)) == 0,
                 "export holds the wrong data at iteration %d", it);
    managed->deleter(managed);
    dist_value_destroy(copy);

    /* This thread's error message is its own. */
    {
      dist_device_t* parsed = NULL;
      char bad[32];
      snprintf(bad, sizeof(bad), "CPU:x%d", w->id);
      s = dist_device_parse(bad, &parsed);
      WORKER_CHECK(w, s == DIST_INVALID_ARGUMENT && parsed == NULL, "parse of %s did not fail",
                   bad);
      WORKER_CHECK(w, strstr(dist_last_error_message(), bad) != NULL,
                   "message \"%s\" is not about %s", dist_last_error_message(), bad);
      s = dist_device_parse(to, &parsed);
      WORKER_CHECK(w, s == DIST_OK && dist_last_error_message()[0] == '\0',
                   "parse of %s failed or left a message", to);
      dist_device_destroy(parsed);
    }
  }
  return NULL;
}

static void test_concurrent_tensor_lifecycles(void** state) {
  (void)state;
  run_workers(lifecycle_body, NULL);
}

/* ---------------------------------------------------------------------------------------
 * Many threads read one tensor. */

static void* reader_body(void* arg) {
  worker* w = (worker*)arg;
  const dist_value_t* tensor = (const dist_value_t*)w->shared;
  int it;
  pthread_barrier_wait(w->start);
  for (it = 0; it < N_ITERATIONS * 10 && w->error[0] == '\0'; ++it) {
    dist_dtype_t dtype = 0;
    int32_t rank = 0;
    int64_t dims[2] = {0, 0};
    int64_t count = 0;
    size_t size = 0;
    void* data = NULL;
    const char* device = NULL;
    WORKER_CHECK(w, dist_tensor_dtype(tensor, &dtype) == DIST_OK && dtype == DIST_FLOAT64,
                 "dtype");
    WORKER_CHECK(w, dist_tensor_rank(tensor, &rank) == DIST_OK && rank == 2, "rank");
    WORKER_CHECK(w, dist_tensor_shape(tensor, dims, 2) == DIST_OK && dims[0] == 3 && dims[1] == 5,
                 "shape");
    WORKER_CHECK(w, dist_tensor_num_elements(tensor, &count) == DIST_OK && count == 15,
                 "num_elements");
    WORKER_CHECK(w, dist_tensor_byte_size(tensor, &size) == DIST_OK && size == 15 * sizeof(double),
                 "byte_size");
    WORKER_CHECK(w, dist_tensor_data(tensor, &data) == DIST_OK && ((double*)data)[14] == 14.5,
                 "data");
    WORKER_CHECK(w,
                 dist_tensor_device(tensor, &device) == DIST_OK &&
                     strcmp(device, "/device:CPU:1") == 0,
                 "device");
  }
  return NULL;
}

static void test_concurrent_readers(void** state) {
  const int64_t dims[2] = {3, 5};
  double values[15];
  dist_value_t* tensor = NULL;
  int i;
  (void)state;
  for (i = 0; i < 15; ++i) values[i] = i + 0.5;
  DT_OK(dist_tensor_create(DIST_FLOAT64, dims, 2, values, sizeof(values), "CPU:1", &tensor));
  run_workers(reader_body, tensor);
  dist_value_destroy(tensor);
}

/* ---------------------------------------------------------------------------------------
 * A borrowed buffer exported to every thread: released exactly once, after the last
 * deleter, whichever thread runs it. */

static pthread_mutex_t release_mutex = PTHREAD_MUTEX_INITIALIZER;
static int release_calls = 0;

static void locked_release(void* data, void* user_data) {
  (void)data;
  (void)user_data;
  pthread_mutex_lock(&release_mutex);
  release_calls += 1;
  pthread_mutex_unlock(&release_mutex);
}

static void* deleter_body(void* arg) {
  worker* w = (worker*)arg;
  DLManagedTensor** exports = (DLManagedTensor**)w->shared;
  DLManagedTensor* mine = exports[w->id];
  const float* data = (const float*)((char*)mine->dl_tensor.data + mine->dl_tensor.byte_offset);
  pthread_barrier_wait(w->start);
  WORKER_CHECK(w, data[w->id] == (float)w->id, "export %d reads the wrong data", w->id);
  mine->deleter(mine);
  return NULL;
}

static void test_release_once_across_threads(void** state) {
  const int64_t dims[1] = {N_THREADS};
  float buffer[N_THREADS];
  DLManagedTensor* exports[N_THREADS];
  dist_value_t* tensor = NULL;
  int i;
  (void)state;
  for (i = 0; i < N_THREADS; ++i) buffer[i] = (float)i;
  release_calls = 0;
  DT_OK(dist_tensor_wrap(DIST_FLOAT32, dims, 1, buffer, sizeof(buffer), NULL, locked_release,
                         NULL, &tensor));
  for (i = 0; i < N_THREADS; ++i) DT_OK(dist_tensor_to_dlpack(tensor, &exports[i]));
  dist_value_destroy(tensor);
  assert_int_equal(release_calls, 0);
  run_workers(deleter_body, exports);
  assert_int_equal(release_calls, 1);
}

/* ---------------------------------------------------------------------------------------
 * Changing the logical CPU count while other threads read it. */

static void* count_body(void* arg) {
  worker* w = (worker*)arg;
  int32_t gpus = *(const int32_t*)w->shared;
  int it;
  pthread_barrier_wait(w->start);
  for (it = 0; it < N_ITERATIONS && w->error[0] == '\0'; ++it) {
    if (w->id % 2 == 0) {
      int32_t count = 2 + (w->id / 2 + it) % 3; /* 2, 3 or 4 */
      WORKER_CHECK(w, dist_set_logical_cpu_device_count(count) == DIST_OK, "set %d: %s",
                   (int)count, dist_last_error_message());
    } else {
      int32_t count = -1;
      dist_device_t* device = NULL;
      WORKER_CHECK(w, dist_local_device_count(&count) == DIST_OK, "count: %s",
                   dist_last_error_message());
      WORKER_CHECK(w, count >= 2 + gpus && count <= 4 + gpus, "count %d is none of the set ones",
                   (int)count);
      /* CPU:0 and CPU:1 exist whatever the count. */
      WORKER_CHECK(w, dist_local_device_get(1, &device) == DIST_OK, "get(1): %s",
                   dist_last_error_message());
      dist_device_destroy(device);
    }
  }
  return NULL;
}

static void test_concurrent_device_count_changes(void** state) {
  int32_t count = 0;
  int32_t gpus;
  (void)state;
  DT_OK(dist_local_device_count(&count));
  gpus = count - N_CPUS;
  run_workers(count_body, &gpus);
  DT_OK(dist_set_logical_cpu_device_count(N_CPUS));
  DT_OK(dist_local_device_count(&count));
  assert_int_equal(count, N_CPUS + gpus);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concurrent_tensor_lifecycles),
      cmocka_unit_test(test_concurrent_readers),
      cmocka_unit_test(test_release_once_across_threads),
      cmocka_unit_test(test_concurrent_device_count_changes),
  };
  return cmocka_run_group_tests_name("threads", tests, setup_cpus, NULL);
}
