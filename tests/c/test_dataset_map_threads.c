/* dist_dataset_map's threads are bounded (issue 13, item 5: num_parallel_calls 100000 once
 * started 32,160 threads for 10 elements): never more than the elements in flight use, nor
 * than 4 per hardware thread, whatever num_parallel_calls says; DIST_AUTOTUNE picks one
 * call per hardware thread. Threads are counted in /proc/self/task from inside the map
 * function, where the iterator's workers are all alive; results are checked in order
 * against x -> 3x computed here. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "dist_dataset_test.h"

static int threads_now(void) {
  DIR* dir = opendir("/proc/self/task");
  struct dirent* entry;
  int count = 0;
  if (dir == NULL) return -1;
  while ((entry = readdir(dir)) != NULL) {
    if (entry->d_name[0] != '.') ++count;
  }
  closedir(dir);
  return count;
}

static long hardware_threads(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n;
}

typedef struct {
  pthread_mutex_t mutex;
  int max_threads;
  int in_flight;
  int max_in_flight;
  int calls;
  long sleep_us;
} watch_state;

static void watch_init(watch_state* w, long sleep_us) {
  memset(w, 0, sizeof(*w));
  pthread_mutex_init(&w->mutex, NULL);
  w->sleep_us = sleep_us;
}

/* x -> 3x, noting the process's thread count and the calls running at once. The sleep keeps
 * calls in flight together, so that a map that starts too many threads shows it. */
static dist_status_t watch_fn(const dist_value_t* const* inputs, int32_t num_inputs,
                              dist_value_t** outputs, int32_t num_outputs, void* user_data) {
  watch_state* w = (watch_state*)user_data;
  struct timespec pause;
  int64_t x = 0;
  int threads = threads_now();
  if (num_inputs != 1 || num_outputs != 1) return DIST_INTERNAL;
  memcpy(&x, ddt_data(inputs[0]), sizeof(x));
  pthread_mutex_lock(&w->mutex);
  w->calls += 1;
  w->in_flight += 1;
  if (w->in_flight > w->max_in_flight) w->max_in_flight = w->in_flight;
  if (threads > w->max_threads) w->max_threads = threads;
  pthread_mutex_unlock(&w->mutex);
  pause.tv_sec = 0;
  pause.tv_nsec = w->sleep_us * 1000;
  nanosleep(&pause, NULL);
  pthread_mutex_lock(&w->mutex);
  w->in_flight -= 1;
  pthread_mutex_unlock(&w->mutex);
  x *= 3;
  return dist_tensor_create(DIST_INT64, NULL, 0, &x, sizeof(x), NULL, &outputs[0]);
}

/* Maps range(n) with num_parallel_calls and checks the results in order; returns how many
 * threads beyond the ones before the first get_next the process had at most. */
static int map_and_count(watch_state* w, int64_t n, int32_t num_parallel_calls) {
  dist_dataset_t* range = ddt_range(0, n, 1);
  dist_dataset_t* mapped = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* out = NULL;
  int baseline;
  int64_t i;
  DT_OK(dist_dataset_map(range, watch_fn, w, NULL, 1, num_parallel_calls, &mapped));
  DT_OK(dist_dataset_make_iterator(mapped, &it));
  baseline = threads_now();
  assert_true(baseline > 0);
  for (i = 0; i < n; ++i) {
    DT_OK(dist_iterator_get_next(it, &out, 1));
    assert_int_equal(ddt_i64(out), 3 * i);
    dist_value_destroy(out);
  }
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  dist_dataset_destroy(mapped);
  dist_dataset_destroy(range);
  assert_int_equal(w->calls, n);
  return w->max_threads - baseline;
}

static void test_huge_parallelism_starts_threads_only_for_the_elements(void** state) {
  watch_state w;
  int extra;
  (void)state;
  watch_init(&w, 20000);
  extra = map_and_count(&w, 10, 100000);
  print_message("num_parallel_calls 100000 over 10 elements: %d threads, %d calls at once\n",
                extra, w.max_in_flight);
  /* One worker per element in flight, and one more to find the end. */
  assert_true(extra >= 1);
  assert_true(extra <= 10 + 1);
  assert_true(w.max_in_flight <= 10);
  pthread_mutex_destroy(&w.mutex);
}

static void test_huge_parallelism_is_capped_by_the_machine(void** state) {
  watch_state w;
  const long cap = 4 * hardware_threads();
  const int64_t n = 3 * cap + 7;
  int extra;
  (void)state;
  watch_init(&w, 5000);
  extra = map_and_count(&w, n, INT32_MAX);
  print_message("num_parallel_calls INT32_MAX over %lld elements: %d threads (cap %ld)\n",
                (long long)n, extra, cap);
  assert_true(extra <= cap);
  assert_true(w.max_in_flight <= cap);
  pthread_mutex_destroy(&w.mutex);
}

static void test_autotune(void** state) {
  watch_state w;
  const long cores = hardware_threads();
  int extra;
  (void)state;
  assert_int_equal(DIST_AUTOTUNE, -1); /* tf.data.AUTOTUNE */
  watch_init(&w, 2000);
  extra = map_and_count(&w, 40, DIST_AUTOTUNE);
  assert_true(extra <= cores);
  assert_true(w.max_in_flight <= cores);
  pthread_mutex_destroy(&w.mutex);
}

/* A small num_parallel_calls is still what runs at once, and each run starts afresh. */
static void test_small_parallelism_unchanged(void** state) {
  watch_state w;
  int extra;
  (void)state;
  watch_init(&w, 3000);
  extra = map_and_count(&w, 30, 3);
  assert_true(extra <= 3);
  assert_true(w.max_in_flight <= 3);
  pthread_mutex_destroy(&w.mutex);
}

static void test_negative_parallelism_other_than_autotune(void** state) {
  dist_dataset_t* range = ddt_range(0, 4, 1);
  dist_dataset_t* out = (dist_dataset_t*)DT_SENTINEL_PTR;
  watch_state w;
  const int32_t bad[] = {-2, -100000, INT32_MIN, 0};
  size_t i;
  (void)state;
  watch_init(&w, 0);
  for (i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    DT_ERR(dist_dataset_map(range, watch_fn, &w, NULL, 1, bad[i], &out), DIST_INVALID_ARGUMENT,
           "dist_dataset_map", "num_parallel_calls");
    assert_non_null(strstr(dist_last_error_message(), "AUTOTUNE"));
    assert_null(out);
  }
  assert_int_equal(w.calls, 0);
  dist_dataset_destroy(range);
  pthread_mutex_destroy(&w.mutex);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_huge_parallelism_starts_threads_only_for_the_elements),
      cmocka_unit_test(test_huge_parallelism_is_capped_by_the_machine),
      cmocka_unit_test(test_autotune),
      cmocka_unit_test(test_small_parallelism_unchanged),
      cmocka_unit_test(test_negative_parallelism_other_than_autotune),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
