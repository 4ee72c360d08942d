/* Tests for the transformations of dataset.h (batch, shard, repeat, shuffle, map,
 * prefetch, take, skip), num_components through them, and independent iterators, with
 * their misuse. Expectations are computed in the test (Python-like rules written out). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <time.h>

#include "dist_dataset_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

static void sleep_us(long us) {
  struct timespec ts;
  ts.tv_sec = us / 1000000;
  ts.tv_nsec = (us % 1000000) * 1000;
  nanosleep(&ts, NULL);
}

/* Checks a dataset of int64 scalars against the values expected[0..n-1]. */
static void expect_i64_dataset(const dist_dataset_t* ds, const int64_t* expected, int64_t n) {
  int64_t got[256];
  int64_t count = ddt_collect_i64(ds, got, 256);
  ddt_expect_i64s(got, count, expected, n);
}

/* Checks a dataset of int64 scalars against start, start + 1, ..., stop - 1. */
static void expect_i64_iota(const dist_dataset_t* ds, int64_t start, int64_t stop) {
  int64_t expected[256];
  int64_t i;
  assert_true(stop - start <= 256);
  for (i = start; i < stop; ++i) expected[i - start] = i;
  expect_i64_dataset(ds, expected, stop > start ? stop - start : 0);
}

static int32_t num_components_of(const dist_dataset_t* ds) {
  int32_t n = -1;
  DT_OK(dist_dataset_num_components(ds, &n));
  return n;
}

/* ---- batch ---- */

/* Reads int64 vector batches of a 1-component dataset: sizes[b] and the values. */
static int64_t collect_i64_batches(const dist_dataset_t* ds, int64_t* sizes, int64_t* values,
                                   int64_t max_batches) {
  dist_iterator_t* it = NULL;
  dist_value_t* v = NULL;
  int64_t b = 0, total = 0;
  dist_status_t status;
  DT_OK(dist_dataset_make_iterator(ds, &it));
  while ((status = dist_iterator_get_next(it, &v, 1)) == DIST_OK) {
    int64_t n;
    assert_true(b < max_batches);
    n = ddt_dim0(v);
    ddt_expect_tensor(v, DIST_INT64, 1, &n);
    if (n > 0) memcpy(values + total, ddt_data(v), (size_t)n * sizeof(int64_t));
    sizes[b++] = n;
    total += n;
    dist_value_destroy(v);
  }
  assert_int_equal(status, DIST_OUT_OF_RANGE);
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  return b;
}

static void check_batch(int64_t n, int64_t batch_size, int drop) {
  dist_dataset_t* r = ddt_range(0, n, 1);
  dist_dataset_t* b = NULL;
  int64_t sizes[64], values[256];
  int64_t num_batches, expected_batches, i;
  DT_OK(dist_dataset_batch(r, batch_size, drop, &b));
  dist_dataset_destroy(r); /* the batched dataset keeps its input alive */
  num_batches = collect_i64_batches(b, sizes, values, 64);
  expected_batches = drop ? n / batch_size : (n + batch_size - 1) / batch_size;
  assert_int_equal(num_batches, expected_batches);
  for (i = 0; i < num_batches; ++i) {
    const int64_t expected = i < n / batch_size ? batch_size : n % batch_size;
    assert_int_equal(sizes[i], expected);
  }
  for (i = 0; i < (drop ? n / batch_size * batch_size : n); ++i) assert_int_equal(values[i], i);
  dist_dataset_destroy(b);
}

static void test_batch(void** state) {
  (void)state;
  check_batch(10, 4, 0); /* 4, 4, 2 */
  check_batch(10, 4, 1); /* 4, 4 */
  check_batch(12, 4, 0); /* 4, 4, 4 */
  check_batch(12, 4, 1);
  check_batch(10, 1, 0);
  check_batch(3, 8, 0);  /* one partial batch */
  check_batch(3, 8, 1);  /* nothing */
  check_batch(0, 2, 0);  /* empty input */
}

static void test_batch_multi_component(void** state) {
  float x[7][3];
  int32_t y[7];
  const int64_t dx[2] = {7, 3}, dy[1] = {7};
  dist_value_t* parts[2];
  dist_dataset_t* ds = NULL;
  dist_dataset_t* b = NULL;
  dist_dataset_t* bb = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  int i, j, batch;
  (void)state;
  for (i = 0; i < 7; ++i) {
    for (j = 0; j < 3; ++j) x[i][j] = (float)(i * 10 + j);
    y[i] = -i;
  }
  parts[0] = dts_tensor(DIST_FLOAT32, dx, 2, x, NULL);
  parts[1] = dts_tensor(DIST_INT32, dy, 1, y, NULL);
  DT_OK(dist_dataset_from_tensor_slices((const dist_value_t* const*)parts, 2, &ds));
  ddt_destroy_all(parts, 2);
  DT_OK(dist_dataset_batch(ds, 3, 0, &b));
  assert_int_equal(num_components_of(b), 2);
  DT_OK(dist_dataset_make_iterator(b, &it));
  for (batch = 0; batch < 3; ++batch) {
    const int64_t rows = batch < 2 ? 3 : 1;
    const int64_t ex[2] = {rows, 3};
    DT_OK(dist_iterator_get_next(it, outs, 2));
    ddt_expect_tensor(outs[0], DIST_FLOAT32, 2, ex);
    ddt_expect_tensor(outs[1], DIST_INT32, 1, &rows);
    assert_memory_equal(ddt_data(outs[0]), x[batch * 3], (size_t)rows * 3 * sizeof(float));
    assert_memory_equal(ddt_data(outs[1]), &y[batch * 3], (size_t)rows * sizeof(int32_t));
    ddt_destroy_all(outs, 2);
  }
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);

  /* A batch of batches: the inner batches must have equal shapes, so drop the inner
   * remainder: two [3, 3] batches become one [2, 3, 3] batch. */
  dist_dataset_destroy(b);
  DT_OK(dist_dataset_batch(ds, 3, 1, &b)); /* two batches of [3, 3] */
  DT_OK(dist_dataset_batch(b, 2, 0, &bb));
  DT_OK(dist_dataset_make_iterator(bb, &it));
  {
    const int64_t ex[3] = {2, 3, 3}, ey[2] = {2, 3};
    DT_OK(dist_iterator_get_next(it, outs, 2));
    ddt_expect_tensor(outs[0], DIST_FLOAT32, 3, ex);
    ddt_expect_tensor(outs[1], DIST_INT32, 2, ey);
    assert_memory_equal(ddt_data(outs[0]), x, 18 * sizeof(float));
    assert_memory_equal(ddt_data(outs[1]), y, 6 * sizeof(int32_t));
    ddt_destroy_all(outs, 2);
  }
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
  dist_dataset_destroy(bb);
  dist_dataset_destroy(b);
  dist_dataset_destroy(ds);
}

/* Element i: an int64 vector of (i % 2) + 1 values: shapes change between elements. */
static dist_status_t ragged_fn(int64_t index, dist_value_t** components, int32_t num_components,
                               int32_t* out_end, void* user_data) {
  const int64_t n = index % 2 + 1;
  const int64_t values[2] = {index, index};
  (void)num_components;
  (void)user_data;
  if (index >= 6) {
    *out_end = 1;
    return DIST_OK;
  }
  return dist_tensor_create(DIST_INT64, &n, 1, values, (size_t)n * sizeof(int64_t), NULL,
                            &components[0]);
}

static void test_batch_misuse(void** state) {
  dist_dataset_t* r = ddt_range(0, 10, 1);
  dist_dataset_t* out = (dist_dataset_t*)DT_SENTINEL_PTR;
  dist_dataset_t* g = NULL;
  dist_dataset_t* b = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* v = NULL;
  (void)state;
  DT_ERR(dist_dataset_batch(NULL, 2, 0, &out), DIST_INVALID_ARGUMENT, "dist_dataset_batch",
         "dataset");
  assert_null(out);
  DT_ERR(dist_dataset_batch(r, 0, 0, &out), DIST_INVALID_ARGUMENT, "dist_dataset_batch",
         "batch_size");
  DT_ERR(dist_dataset_batch(r, -3, 0, &out), DIST_INVALID_ARGUMENT, "dist_dataset_batch",
         "batch_size");
  DT_ERR(dist_dataset_batch(r, 2, 0, NULL), DIST_INVALID_ARGUMENT, "dist_dataset_batch", "out");
  assert_null(out);

  /* Elements whose shapes differ cannot be stacked: get_next fails, the iterator stays
   * destroyable. With batch size 1 every batch is one element: fine. */
  DT_OK(dist_dataset_from_generator(ragged_fn, NULL, NULL, 1, &g));
  DT_OK(dist_dataset_batch(g, 2, 0, &b));
  DT_OK(dist_dataset_make_iterator(b, &it));
  DT_ERR(dist_iterator_get_next(it, &v, 1), DIST_INVALID_ARGUMENT, NULL, NULL);
  assert_null(v);
  dist_iterator_destroy(it);
  dist_dataset_destroy(b);
  DT_OK(dist_dataset_batch(g, 1, 0, &b));
  DT_OK(dist_dataset_make_iterator(b, &it));
  {
    int64_t i;
    for (i = 0; i < 6; ++i) {
      const int64_t dims[2] = {1, i % 2 + 1};
      DT_OK(dist_iterator_get_next(it, &v, 1));
      ddt_expect_tensor(v, DIST_INT64, 2, dims);
      assert_int_equal(((const int64_t*)ddt_data(v))[0], i);
      dist_value_destroy(v);
    }
  }
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  dist_dataset_destroy(b);
  dist_dataset_destroy(g);
  dist_dataset_destroy(r);
}

/* ---- shard ---- */

static void check_shard(int64_t n, int64_t shards, int64_t index) {
  dist_dataset_t* r = ddt_range(0, n, 1);
  dist_dataset_t* s = NULL;
  int64_t expected[256] = {0}, count = 0, i; /* zeroed: GCC -O2 cannot see count bounds it */
  for (i = index; i < n; i += shards) expected[count++] = i;
  DT_OK(dist_dataset_shard(r, shards, index, &s));
  expect_i64_dataset(s, expected, count);
  dist_dataset_destroy(s);
  dist_dataset_destroy(r);
}

static void test_shard(void** state) {
  int64_t i;
  (void)state;
  for (i = 0; i < 3; ++i) check_shard(10, 3, i); /* 0,3,6,9 / 1,4,7 / 2,5,8 */
  check_shard(10, 1, 0);
  check_shard(2, 4, 3); /* empty shard */
  check_shard(0, 2, 1);
}

static void test_shard_misuse(void** state) {
  dist_dataset_t* r = ddt_range(0, 10, 1);
  dist_dataset_t* out = (dist_dataset_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_dataset_shard(NULL, 2, 0, &out), DIST_INVALID_ARGUMENT, "dist_dataset_shard",
         "dataset");
  assert_null(out);
  DT_ERR(dist_dataset_shard(r, 0, 0, &out), DIST_INVALID_ARGUMENT, "dist_dataset_shard",
         "num_shards");
  DT_ERR(dist_dataset_shard(r, -2, 0, &out), DIST_INVALID_ARGUMENT, "dist_dataset_shard",
         "num_shards");
  DT_ERR(dist_dataset_shard(r, 3, 3, &out), DIST_INVALID_ARGUMENT, "dist_dataset_shard",
         "index");
  DT_ERR(dist_dataset_shard(r, 3, -1, &out), DIST_INVALID_ARGUMENT, "dist_dataset_shard",
         "index");
  DT_ERR(dist_dataset_shard(r, 3, 0, NULL), DIST_INVALID_ARGUMENT, "dist_dataset_shard", "out");
  assert_null(out);
  dist_dataset_destroy(r);
}

/* ---- repeat, take, skip ---- */

static void test_repeat(void** state) {
  dist_dataset_t* r = ddt_range(0, 3, 1);
  dist_dataset_t* rep = NULL;
  dist_dataset_t* t = NULL;
  const int64_t twice[6] = {0, 1, 2, 0, 1, 2};
  const int64_t forever7[7] = {0, 1, 2, 0, 1, 2, 0};
  (void)state;
  DT_OK(dist_dataset_repeat(r, 2, &rep));
  expect_i64_dataset(rep, twice, 6);
  dist_dataset_destroy(rep);
  DT_OK(dist_dataset_repeat(r, 1, &rep));
  expect_i64_iota(rep, 0, 3);
  dist_dataset_destroy(rep);
  DT_OK(dist_dataset_repeat(r, 0, &rep));
  expect_i64_dataset(rep, NULL, 0);
  dist_dataset_destroy(rep);
  DT_OK(dist_dataset_repeat(r, -1, &rep));
  DT_OK(dist_dataset_take(rep, 7, &t));
  expect_i64_dataset(t, forever7, 7);
  /* An iterator over the endless dataset destroyed part-way. */
  {
    dist_iterator_t* it = NULL;
    dist_value_t* v = NULL;
    int i;
    DT_OK(dist_dataset_make_iterator(rep, &it));
    for (i = 0; i < 100; ++i) {
      DT_OK(dist_iterator_get_next(it, &v, 1));
      assert_int_equal(ddt_i64(v), i % 3);
      dist_value_destroy(v);
    }
    dist_iterator_destroy(it);
  }
  dist_dataset_destroy(t);
  dist_dataset_destroy(rep);
  dist_dataset_destroy(r);
}

static void test_take_skip(void** state) {
  dist_dataset_t* r = ddt_range(0, 10, 1);
  dist_dataset_t* d = NULL;
  dist_dataset_t* d2 = NULL;
  (void)state;
  DT_OK(dist_dataset_take(r, 3, &d));
  expect_i64_iota(d, 0, 3);
  dist_dataset_destroy(d);
  DT_OK(dist_dataset_take(r, 0, &d));
  expect_i64_iota(d, 0, 0);
  dist_dataset_destroy(d);
  DT_OK(dist_dataset_take(r, -1, &d));
  expect_i64_iota(d, 0, 10);
  dist_dataset_destroy(d);
  DT_OK(dist_dataset_take(r, 25, &d));
  expect_i64_iota(d, 0, 10);
  dist_dataset_destroy(d);

  DT_OK(dist_dataset_skip(r, 3, &d));
  expect_i64_iota(d, 3, 10);
  dist_dataset_destroy(d);
  DT_OK(dist_dataset_skip(r, 0, &d));
  expect_i64_iota(d, 0, 10);
  dist_dataset_destroy(d);
  DT_OK(dist_dataset_skip(r, 10, &d));
  expect_i64_iota(d, 0, 0);
  dist_dataset_destroy(d);
  DT_OK(dist_dataset_skip(r, 25, &d));
  expect_i64_iota(d, 0, 0);
  dist_dataset_destroy(d);

  /* skip then take: elements 4, 5, 6. */
  DT_OK(dist_dataset_skip(r, 4, &d));
  DT_OK(dist_dataset_take(d, 3, &d2));
  expect_i64_iota(d2, 4, 7);
  dist_dataset_destroy(d2);
  dist_dataset_destroy(d);
  /* The input is unchanged by all of this. */
  expect_i64_iota(r, 0, 10);
  dist_dataset_destroy(r);
}

static void test_repeat_take_skip_misuse(void** state) {
  dist_dataset_t* r = ddt_range(0, 10, 1);
  dist_dataset_t* out = (dist_dataset_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_dataset_repeat(NULL, 2, &out), DIST_INVALID_ARGUMENT, "dist_dataset_repeat",
         "dataset");
  assert_null(out);
  DT_ERR(dist_dataset_repeat(r, -2, &out), DIST_INVALID_ARGUMENT, "dist_dataset_repeat",
         "count");
  DT_ERR(dist_dataset_repeat(r, 2, NULL), DIST_INVALID_ARGUMENT, "dist_dataset_repeat", "out");
  DT_ERR(dist_dataset_take(NULL, 2, &out), DIST_INVALID_ARGUMENT, "dist_dataset_take",
         "dataset");
  DT_ERR(dist_dataset_take(r, -2, &out), DIST_INVALID_ARGUMENT, "dist_dataset_take", "count");
  DT_ERR(dist_dataset_take(r, 2, NULL), DIST_INVALID_ARGUMENT, "dist_dataset_take", "out");
  DT_ERR(dist_dataset_skip(NULL, 2, &out), DIST_INVALID_ARGUMENT, "dist_dataset_skip",
         "dataset");
  DT_ERR(dist_dataset_skip(r, -2, &out), DIST_INVALID_ARGUMENT, "dist_dataset_skip", "count");
  DT_ERR(dist_dataset_skip(r, -1, &out), DIST_INVALID_ARGUMENT, "dist_dataset_skip", "count");
  DT_ERR(dist_dataset_skip(r, 2, NULL), DIST_INVALID_ARGUMENT, "dist_dataset_skip", "out");
  assert_null(out);
  dist_dataset_destroy(r);
}

/* ---- shuffle ---- */

/* Checks that got[0..n-1] is a permutation of 0..n-1. */
static void expect_permutation(const int64_t* got, int64_t n) {
  char seen[256];
  int64_t i;
  assert_true(n <= 256);
  memset(seen, 0, sizeof(seen));
  for (i = 0; i < n; ++i) {
    if (got[i] < 0 || got[i] >= n) fail_msg("element %lld is %lld", (long long)i, (long long)got[i]);
    if (seen[got[i]]) fail_msg("%lld appears twice", (long long)got[i]);
    seen[got[i]] = 1;
  }
}

static int same_i64s(const int64_t* a, const int64_t* b, int64_t n) {
  return memcmp(a, b, (size_t)n * sizeof(int64_t)) == 0;
}

static void test_shuffle(void** state) {
  dist_dataset_t* r = ddt_range(0, 40, 1);
  dist_dataset_t* s = NULL;
  dist_dataset_t* s_again = NULL;
  dist_dataset_t* other = NULL;
  int64_t a[64], b[64], c[64], i, n;
  (void)state;
  DT_OK(dist_dataset_shuffle(r, 6, 42, &s));
  assert_int_equal(num_components_of(s), 1);
  n = ddt_collect_i64(s, a, 64);
  assert_int_equal(n, 40);
  expect_permutation(a, 40);
  /* A buffer of 6: output i is one of the first i + 6 inputs. */
  for (i = 0; i < 40; ++i) assert_true(a[i] <= i + 5);
  {
    int64_t identity[40];
    for (i = 0; i < 40; ++i) identity[i] = i;
    assert_false(same_i64s(a, identity, 40)); /* 1 chance in many billions */
  }
  /* The same seed gives the same order: a second iterator, and a second dataset. */
  n = ddt_collect_i64(s, b, 64);
  assert_int_equal(n, 40);
  assert_true(same_i64s(a, b, 40));
  DT_OK(dist_dataset_shuffle(r, 6, 42, &s_again));
  n = ddt_collect_i64(s_again, c, 64);
  assert_true(same_i64s(a, c, 40));
  /* Another seed gives another order. */
  DT_OK(dist_dataset_shuffle(r, 6, 43, &other));
  n = ddt_collect_i64(other, c, 64);
  expect_permutation(c, 40);
  assert_false(same_i64s(a, c, 40));
  dist_dataset_destroy(other);
  dist_dataset_destroy(s_again);
  dist_dataset_destroy(s);

  /* A buffer of 1 keeps the order; a buffer larger than the dataset is a full shuffle. */
  DT_OK(dist_dataset_shuffle(r, 1, 42, &s));
  expect_i64_iota(s, 0, 40);
  dist_dataset_destroy(s);
  DT_OK(dist_dataset_shuffle(r, 1000, 7, &s));
  n = ddt_collect_i64(s, a, 64);
  assert_int_equal(n, 40);
  expect_permutation(a, 40);
  dist_dataset_destroy(s);
  dist_dataset_destroy(r);
}

static void test_shuffle_then_repeat(void** state) {
  dist_dataset_t* r = ddt_range(0, 20, 1);
  dist_dataset_t* s = NULL;
  dist_dataset_t* rep = NULL;
  int64_t plain[32], a[64], b[64], n;
  int e;
  (void)state;
  DT_OK(dist_dataset_shuffle(r, 20, 2024, &s));
  DT_OK(dist_dataset_repeat(s, 3, &rep));
  n = ddt_collect_i64(rep, a, 64);
  assert_int_equal(n, 60);
  for (e = 0; e < 3; ++e) expect_permutation(a + 20 * e, 20);
  /* reshuffle_each_iteration: each epoch has its own order. */
  assert_false(same_i64s(a, a + 20, 20));
  assert_false(same_i64s(a + 20, a + 40, 20));
  assert_false(same_i64s(a, a + 40, 20));
  /* ... and the whole sequence is reproducible for a second iterator. */
  n = ddt_collect_i64(rep, b, 64);
  assert_int_equal(n, 60);
  assert_true(same_i64s(a, b, 60));
  /* Pass 0 of the repeat is the pass a plain iterator over the shuffle makes. */
  n = ddt_collect_i64(s, plain, 32);
  assert_int_equal(n, 20);
  assert_true(same_i64s(plain, a, 20));
  dist_dataset_destroy(rep);
  dist_dataset_destroy(s);
  dist_dataset_destroy(r);
}

static void test_shuffle_misuse(void** state) {
  dist_dataset_t* r = ddt_range(0, 10, 1);
  dist_dataset_t* out = (dist_dataset_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_dataset_shuffle(NULL, 4, 1, &out), DIST_INVALID_ARGUMENT, "dist_dataset_shuffle",
         "dataset");
  assert_null(out);
  DT_ERR(dist_dataset_shuffle(r, 0, 1, &out), DIST_INVALID_ARGUMENT, "dist_dataset_shuffle",
         "buffer_size");
  DT_ERR(dist_dataset_shuffle(r, -4, 1, &out), DIST_INVALID_ARGUMENT, "dist_dataset_shuffle",
         "buffer_size");
  DT_ERR(dist_dataset_shuffle(r, 4, 1, NULL), DIST_INVALID_ARGUMENT, "dist_dataset_shuffle",
         "out");
  assert_null(out);
  dist_dataset_destroy(r);
}

/* ---- map ---- */

#define MAP_N 64

typedef struct {
  ddt_free_counter freed; /* first: ddt_count_free gets the struct */
  pthread_mutex_t mutex;
  int calls_per_element[MAP_N];
  int calls;
  int in_flight;
  int max_in_flight;
  int bad_args;
  int64_t fail_at;   /* element value at which to fail (-1: never) */
  int leave_null;    /* 1: leave the second output NULL at fail_at instead */
} map_state;

static void map_state_init(map_state* m) {
  memset(m, 0, sizeof(*m));
  pthread_mutex_init(&m->mutex, NULL);
  m->fail_at = -1;
}

/* x -> (x * 3 as int64, x * x as float32); sleeps so that parallel calls finish out of
 * order. */
static dist_status_t map_fn(const dist_value_t* const* inputs, int32_t num_inputs,
                            dist_value_t** outputs, int32_t num_outputs, void* user_data) {
  map_state* m = (map_state*)user_data;
  int64_t x = 0, y;
  float sq;
  void* data = NULL;
  dist_status_t status;
  if (num_inputs != 1 || num_outputs != 2 || inputs == NULL || inputs[0] == NULL ||
      outputs[0] != NULL || outputs[1] != NULL) {
    pthread_mutex_lock(&m->mutex);
    m->bad_args = 1;
    pthread_mutex_unlock(&m->mutex);
    return DIST_INTERNAL;
  }
  if (dist_tensor_data(inputs[0], &data) != DIST_OK) return DIST_INTERNAL;
  memcpy(&x, data, sizeof(x));
  pthread_mutex_lock(&m->mutex);
  if (x >= 0 && x < MAP_N) m->calls_per_element[x] += 1;
  m->calls += 1;
  m->in_flight += 1;
  if (m->in_flight > m->max_in_flight) m->max_in_flight = m->in_flight;
  pthread_mutex_unlock(&m->mutex);
  sleep_us((long)((MAP_N - x) % 4) * 300);
  pthread_mutex_lock(&m->mutex);
  m->in_flight -= 1;
  pthread_mutex_unlock(&m->mutex);
  if (x == m->fail_at && !m->leave_null) {
    dist_value_t* never = NULL;
    return dist_tensor_create(999, NULL, 0, NULL, 0, NULL, &never);
  }
  y = x * 3;
  sq = (float)(x * x);
  status = dist_tensor_create(DIST_INT64, NULL, 0, &y, sizeof(y), NULL, &outputs[0]);
  if (status != DIST_OK) return status;
  if (x == m->fail_at && m->leave_null) return DIST_OK;
  return dist_tensor_create(DIST_FLOAT32, NULL, 0, &sq, sizeof(sq), NULL, &outputs[1]);
}

static void check_map(int32_t parallel, int64_t n) {
  map_state m;
  dist_dataset_t* r = ddt_range(0, n, 1);
  dist_dataset_t* mapped = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  int64_t i;
  map_state_init(&m);
  DT_OK(dist_dataset_map(r, map_fn, &m, ddt_count_free, 2, parallel, &mapped));
  assert_int_equal(num_components_of(mapped), 2);
  DT_OK(dist_dataset_make_iterator(mapped, &it));
  for (i = 0; i < n; ++i) {
    float sq;
    DT_OK(dist_iterator_get_next(it, outs, 2));
    assert_int_equal(ddt_i64(outs[0]), i * 3); /* the input order */
    ddt_expect_tensor(outs[1], DIST_FLOAT32, 0, NULL);
    memcpy(&sq, ddt_data(outs[1]), sizeof(sq));
    assert_true(sq == (float)(i * i));
    ddt_destroy_all(outs, 2);
  }
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
  assert_int_equal(m.bad_args, 0);
  assert_int_equal(m.calls, n); /* once per element */
  for (i = 0; i < n; ++i) assert_int_equal(m.calls_per_element[i], 1);
  assert_true(m.max_in_flight <= parallel);
  assert_int_equal(m.freed.calls, 0);
  dist_dataset_destroy(mapped);
  assert_int_equal(m.freed.calls, 0 + 1);
  dist_dataset_destroy(r);
  pthread_mutex_destroy(&m.mutex);
}

static void test_map(void** state) {
  (void)state;
  check_map(1, 20);
  check_map(4, MAP_N);
  check_map(3, 0);
  check_map(8, 5);
}

/* Two inputs, one output: (a, b) -> a - b. */
static dist_status_t sub_fn(const dist_value_t* const* inputs, int32_t num_inputs,
                            dist_value_t** outputs, int32_t num_outputs, void* user_data) {
  void* a = NULL;
  void* b = NULL;
  int64_t x, y, d;
  (void)user_data;
  if (num_inputs != 2 || num_outputs != 1) return DIST_INTERNAL;
  if (dist_tensor_data(inputs[0], &a) != DIST_OK || dist_tensor_data(inputs[1], &b) != DIST_OK)
    return DIST_INTERNAL;
  memcpy(&x, a, sizeof(x));
  memcpy(&y, b, sizeof(y));
  d = x - y;
  return dist_tensor_create(DIST_INT64, NULL, 0, &d, sizeof(d), NULL, &outputs[0]);
}

static void test_map_components(void** state) {
  dist_value_t* parts[2];
  dist_dataset_t* ds = NULL;
  dist_dataset_t* mapped = NULL;
  int64_t expected[9], i;
  (void)state;
  parts[0] = ddt_i64_vector(100, 10, 9, NULL);
  parts[1] = ddt_i64_vector(0, 1, 9, NULL);
  DT_OK(dist_dataset_from_tensor_slices((const dist_value_t* const*)parts, 2, &ds));
  ddt_destroy_all(parts, 2);
  DT_OK(dist_dataset_map(ds, sub_fn, NULL, NULL, 1, 2, &mapped));
  assert_int_equal(num_components_of(mapped), 1);
  for (i = 0; i < 9; ++i) expected[i] = 100 + 10 * i - i;
  expect_i64_dataset(mapped, expected, 9);
  dist_dataset_destroy(mapped);
  dist_dataset_destroy(ds);
}

static void check_map_error(int32_t parallel, int leave_null) {
  map_state m;
  dist_dataset_t* r = ddt_range(0, 30, 1);
  dist_dataset_t* mapped = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  int64_t i;
  map_state_init(&m);
  m.fail_at = 5;
  m.leave_null = leave_null;
  DT_OK(dist_dataset_map(r, map_fn, &m, ddt_count_free, 2, parallel, &mapped));
  DT_OK(dist_dataset_make_iterator(mapped, &it));
  for (i = 0; i < 5; ++i) {
    DT_OK(dist_iterator_get_next(it, outs, 2));
    assert_int_equal(ddt_i64(outs[0]), i * 3);
    ddt_destroy_all(outs, 2);
  }
  outs[0] = outs[1] = (dist_value_t*)DT_SENTINEL_PTR;
  if (leave_null) {
    /* An output left NULL is an error (never a NULL handed to the caller). */
    dist_status_t status = dist_iterator_get_next(it, outs, 2);
    assert_int_not_equal(status, DIST_OK);
    assert_int_not_equal(status, DIST_OUT_OF_RANGE);
  } else {
    /* The callback's status and message reach get_next. */
    DT_ERR(dist_iterator_get_next(it, outs, 2), DIST_INVALID_ARGUMENT, "dist_tensor_create",
           "dtype");
  }
  assert_null(outs[0]);
  assert_null(outs[1]);
  /* Destroyable after the error, and free_fn runs once when everything is gone. */
  dist_iterator_destroy(it);
  dist_dataset_destroy(mapped);
  assert_int_equal(m.freed.calls, 1);
  dist_dataset_destroy(r);
  pthread_mutex_destroy(&m.mutex);
}

static void test_map_error(void** state) {
  (void)state;
  check_map_error(1, 0);
  check_map_error(4, 0);
  check_map_error(1, 1);
  check_map_error(3, 1);
}

static void test_map_misuse(void** state) {
  map_state m;
  dist_dataset_t* r = ddt_range(0, 10, 1);
  dist_dataset_t* out = (dist_dataset_t*)DT_SENTINEL_PTR;
  (void)state;
  map_state_init(&m);
  DT_ERR(dist_dataset_map(NULL, map_fn, &m, ddt_count_free, 2, 1, &out), DIST_INVALID_ARGUMENT,
         "dist_dataset_map", "dataset");
  assert_null(out);
  DT_ERR(dist_dataset_map(r, NULL, &m, ddt_count_free, 2, 1, &out), DIST_INVALID_ARGUMENT,
         "dist_dataset_map", "fn");
  DT_ERR(dist_dataset_map(r, map_fn, &m, ddt_count_free, 0, 1, &out), DIST_INVALID_ARGUMENT,
         "dist_dataset_map", "num_outputs");
  DT_ERR(dist_dataset_map(r, map_fn, &m, ddt_count_free, -1, 1, &out), DIST_INVALID_ARGUMENT,
         "dist_dataset_map", "num_outputs");
  DT_ERR(dist_dataset_map(r, map_fn, &m, ddt_count_free, 2, 0, &out), DIST_INVALID_ARGUMENT,
         "dist_dataset_map", "num_parallel_calls");
  DT_ERR(dist_dataset_map(r, map_fn, &m, ddt_count_free, 2, -3, &out), DIST_INVALID_ARGUMENT,
         "dist_dataset_map", "num_parallel_calls");
  DT_ERR(dist_dataset_map(r, map_fn, &m, ddt_count_free, 2, 1, NULL), DIST_INVALID_ARGUMENT,
         "dist_dataset_map", "out");
  assert_null(out);
  /* A failed call never calls free_fn nor fn. */
  assert_int_equal(m.freed.calls, 0);
  assert_int_equal(m.calls, 0);
  dist_dataset_destroy(r);
  pthread_mutex_destroy(&m.mutex);
}

/* ---- prefetch ---- */

typedef struct {
  ddt_free_counter freed; /* first: ddt_count_free gets the struct */
  pthread_mutex_t mutex;
  int64_t produced;
  int64_t length; /* -1: endless */
} counting_gen;

static dist_status_t counting_fn(int64_t index, dist_value_t** components,
                                 int32_t num_components, int32_t* out_end, void* user_data) {
  counting_gen* g = (counting_gen*)user_data;
  (void)num_components;
  if (g->length >= 0 && index >= g->length) {
    *out_end = 1;
    return DIST_OK;
  }
  pthread_mutex_lock(&g->mutex);
  g->produced += 1;
  pthread_mutex_unlock(&g->mutex);
  return dist_tensor_create(DIST_INT64, NULL, 0, &index, sizeof(index), NULL, &components[0]);
}

static void test_prefetch(void** state) {
  dist_dataset_t* r = ddt_range(0, 50, 1);
  dist_dataset_t* p = NULL;
  (void)state;
  DT_OK(dist_dataset_prefetch(r, 0, &p));
  expect_i64_iota(p, 0, 50);
  assert_int_equal(num_components_of(p), 1);
  dist_dataset_destroy(p);
  DT_OK(dist_dataset_prefetch(r, 1, &p));
  expect_i64_iota(p, 0, 50);
  dist_dataset_destroy(p);
  DT_OK(dist_dataset_prefetch(r, 8, &p));
  expect_i64_iota(p, 0, 50);
  dist_dataset_destroy(p);
  DT_OK(dist_dataset_prefetch(r, 1000, &p));
  expect_i64_iota(p, 0, 50);
  dist_dataset_destroy(p);
  dist_dataset_destroy(r);
}

static void test_prefetch_destroy_mid_epoch(void** state) {
  counting_gen g;
  map_state m;
  dist_dataset_t* gen = NULL;
  dist_dataset_t* mapped = NULL;
  dist_dataset_t* p = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  int64_t i;
  int round;
  (void)state;
  for (round = 0; round < 3; ++round) {
    memset(&g, 0, sizeof(g));
    pthread_mutex_init(&g.mutex, NULL);
    g.length = -1; /* endless: the background thread always has work */
    map_state_init(&m);
    DT_OK(dist_dataset_from_generator(counting_fn, &g, ddt_count_free, 1, &gen));
    DT_OK(dist_dataset_map(gen, map_fn, &m, ddt_count_free, 2, round + 1, &mapped));
    DT_OK(dist_dataset_prefetch(mapped, 4, &p));
    DT_OK(dist_dataset_make_iterator(p, &it));
    for (i = 0; i < 3; ++i) {
      DT_OK(dist_iterator_get_next(it, outs, 2));
      assert_int_equal(ddt_i64(outs[0]), i * 3);
      ddt_destroy_all(outs, 2);
    }
    /* Round 0: datasets first, then the iterator; otherwise the iterator first. */
    if (round == 0) {
      dist_dataset_destroy(p);
      dist_dataset_destroy(mapped);
      dist_dataset_destroy(gen);
      assert_int_equal(g.freed.calls, 0);
      assert_int_equal(m.freed.calls, 0);
      dist_iterator_destroy(it); /* must not hang with the producer blocked on a full buffer */
    } else {
      dist_iterator_destroy(it);
      dist_dataset_destroy(p);
      dist_dataset_destroy(mapped);
      dist_dataset_destroy(gen);
    }
    /* Every background thread is gone: the callbacks were released exactly once. */
    assert_int_equal(g.freed.calls, 1);
    assert_int_equal(m.freed.calls, 1);
    /* No element was mapped twice. */
    for (i = 0; i < MAP_N; ++i) assert_true(m.calls_per_element[i] <= 1);
    pthread_mutex_destroy(&g.mutex);
    pthread_mutex_destroy(&m.mutex);
  }
  /* An iterator destroyed before its first get_next. */
  DT_OK(dist_dataset_range(0, 1000000, 1, &gen));
  DT_OK(dist_dataset_prefetch(gen, 16, &p));
  DT_OK(dist_dataset_make_iterator(p, &it));
  sleep_us(2000);
  dist_iterator_destroy(it);
  dist_dataset_destroy(p);
  dist_dataset_destroy(gen);
}

static int64_t produced_of(counting_gen* g) {
  int64_t produced;
  pthread_mutex_lock(&g->mutex);
  produced = g->produced;
  pthread_mutex_unlock(&g->mutex);
  return produced;
}

/* DIST_AUTOTUNE keeps two elements ahead of the consumer: after one get_next of an
 * endless generator, exactly 1 + 2 have been produced, and no more follow. */
static void test_prefetch_autotune(void** state) {
  counting_gen g;
  dist_dataset_t* gen = NULL;
  dist_dataset_t* p = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* element = NULL;
  int waited;
  (void)state;
  memset(&g, 0, sizeof(g));
  pthread_mutex_init(&g.mutex, NULL);
  g.length = -1;
  DT_OK(dist_dataset_from_generator(counting_fn, &g, ddt_count_free, 1, &gen));
  DT_OK(dist_dataset_prefetch(gen, DIST_AUTOTUNE, &p));
  DT_OK(dist_dataset_make_iterator(p, &it));
  DT_OK(dist_iterator_get_next(it, &element, 1));
  assert_int_equal(ddt_i64(element), 0);
  dist_value_destroy(element);
  for (waited = 0; waited < 10000 && produced_of(&g) < 3; ++waited) sleep_us(1000);
  sleep_us(50000); /* time for a producer that did not stop to go past 3 */
  assert_int_equal(produced_of(&g), 3);
  dist_iterator_destroy(it);
  dist_dataset_destroy(p);
  dist_dataset_destroy(gen);
  assert_int_equal(g.freed.calls, 1);
  pthread_mutex_destroy(&g.mutex);
}

static void test_prefetch_misuse(void** state) {
  dist_dataset_t* r = ddt_range(0, 10, 1);
  dist_dataset_t* out = (dist_dataset_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_dataset_prefetch(NULL, 2, &out), DIST_INVALID_ARGUMENT, "dist_dataset_prefetch",
         "dataset");
  assert_null(out);
  DT_ERR(dist_dataset_prefetch(r, -2, &out), DIST_INVALID_ARGUMENT, "dist_dataset_prefetch",
         "buffer_size");
  assert_null(out);
  DT_ERR(dist_dataset_prefetch(r, 2, NULL), DIST_INVALID_ARGUMENT, "dist_dataset_prefetch",
         "out");
  assert_null(out);
  dist_dataset_destroy(r);
}

static void test_prefetch_error(void** state) {
  /* A map error behind a prefetch reaches get_next after the good elements. */
  map_state m;
  dist_dataset_t* r = ddt_range(0, 30, 1);
  dist_dataset_t* mapped = NULL;
  dist_dataset_t* p = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  int64_t i;
  (void)state;
  map_state_init(&m);
  m.fail_at = 7;
  DT_OK(dist_dataset_map(r, map_fn, &m, NULL, 2, 2, &mapped));
  DT_OK(dist_dataset_prefetch(mapped, 3, &p));
  DT_OK(dist_dataset_make_iterator(p, &it));
  for (i = 0; i < 7; ++i) {
    DT_OK(dist_iterator_get_next(it, outs, 2));
    assert_int_equal(ddt_i64(outs[0]), i * 3);
    ddt_destroy_all(outs, 2);
  }
  DT_ERR(dist_iterator_get_next(it, outs, 2), DIST_INVALID_ARGUMENT, "dist_tensor_create", NULL);
  dist_iterator_destroy(it);
  dist_dataset_destroy(p);
  dist_dataset_destroy(mapped);
  dist_dataset_destroy(r);
  pthread_mutex_destroy(&m.mutex);
}

/* ---- num_components and independent iterators ---- */

static void test_num_components_through_transformations(void** state) {
  dist_value_t* parts[3];
  dist_dataset_t* ds = NULL;
  dist_dataset_t* d[8];
  int i;
  (void)state;
  parts[0] = ddt_i64_vector(0, 1, 12, NULL);
  parts[1] = ddt_i64_vector(5, 1, 12, NULL);
  parts[2] = ddt_i64_vector(9, 1, 12, NULL);
  DT_OK(dist_dataset_from_tensor_slices((const dist_value_t* const*)parts, 3, &ds));
  ddt_destroy_all(parts, 3);
  DT_OK(dist_dataset_batch(ds, 2, 0, &d[0]));
  DT_OK(dist_dataset_shard(ds, 2, 1, &d[1]));
  DT_OK(dist_dataset_repeat(ds, 2, &d[2]));
  DT_OK(dist_dataset_shuffle(ds, 3, 1, &d[3]));
  DT_OK(dist_dataset_prefetch(ds, 2, &d[4]));
  DT_OK(dist_dataset_take(ds, 2, &d[5]));
  DT_OK(dist_dataset_skip(ds, 2, &d[6]));
  DT_OK(dist_dataset_map(ds, sub_fn, NULL, NULL, 1, 1, &d[7])); /* 3 inputs: fails later */
  for (i = 0; i < 7; ++i) assert_int_equal(num_components_of(d[i]), 3);
  assert_int_equal(num_components_of(d[7]), 1);
  for (i = 0; i < 8; ++i) dist_dataset_destroy(d[i]);
  dist_dataset_destroy(ds);
}

static void test_two_iterators_independent(void** state) {
  map_state m;
  dist_dataset_t* r = ddt_range(0, 40, 1);
  dist_dataset_t* mapped = NULL;
  dist_dataset_t* p = NULL;
  dist_iterator_t* a = NULL;
  dist_iterator_t* b = NULL;
  dist_value_t* outs[2];
  int64_t ia = 0, ib = 0;
  int step;
  (void)state;
  map_state_init(&m);
  DT_OK(dist_dataset_map(r, map_fn, &m, NULL, 2, 3, &mapped));
  DT_OK(dist_dataset_prefetch(mapped, 2, &p));
  DT_OK(dist_dataset_make_iterator(p, &a));
  DT_OK(dist_dataset_make_iterator(p, &b));
  /* Interleave: a advances twice as fast as b; each sees 0, 1, 2, ... */
  for (step = 0; step < 30; ++step) {
    DT_OK(dist_iterator_get_next(a, outs, 2));
    assert_int_equal(ddt_i64(outs[0]), 3 * ia++);
    ddt_destroy_all(outs, 2);
    if (step % 2 == 0) {
      DT_OK(dist_iterator_get_next(b, outs, 2));
      assert_int_equal(ddt_i64(outs[0]), 3 * ib++);
      ddt_destroy_all(outs, 2);
    }
  }
  dist_iterator_destroy(a); /* mid-epoch */
  while (ib < 40) {
    DT_OK(dist_iterator_get_next(b, outs, 2));
    assert_int_equal(ddt_i64(outs[0]), 3 * ib++);
    ddt_destroy_all(outs, 2);
  }
  ddt_expect_end(b, 2);
  dist_iterator_destroy(b);
  dist_dataset_destroy(p);
  dist_dataset_destroy(mapped);
  dist_dataset_destroy(r);
  pthread_mutex_destroy(&m.mutex);
}

/* Datasets are safe to share between threads: 4 threads iterate the same pipeline
 * (range -> shuffle -> map (parallel) -> prefetch) at once, each with its own iterator,
 * and each sees the sequence one thread sees alone. */
#define SHARED_N 48
#define SHARED_THREADS 4

typedef struct {
  const dist_dataset_t* dataset;
  int64_t got[SHARED_N + 1];
  int64_t count;
  dist_status_t status;
} shared_reader;

static void* shared_read(void* arg) {
  shared_reader* reader = (shared_reader*)arg;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  reader->count = 0;
  reader->status = dist_dataset_make_iterator(reader->dataset, &it);
  if (reader->status != DIST_OK) return NULL;
  for (;;) {
    void* data = NULL;
    reader->status = dist_iterator_get_next(it, outs, 2);
    if (reader->status != DIST_OK) break;
    if (reader->count <= SHARED_N && dist_tensor_data(outs[0], &data) == DIST_OK) {
      memcpy(&reader->got[reader->count], data, sizeof(int64_t));
    }
    reader->count += 1;
    dist_value_destroy(outs[0]);
    dist_value_destroy(outs[1]);
  }
  dist_iterator_destroy(it);
  return NULL;
}

static void test_shared_between_threads(void** state) {
  map_state m;
  dist_dataset_t* r = ddt_range(0, SHARED_N, 1);
  dist_dataset_t* s = NULL;
  dist_dataset_t* mapped = NULL;
  dist_dataset_t* p = NULL;
  shared_reader alone;
  shared_reader readers[SHARED_THREADS];
  pthread_t threads[SHARED_THREADS];
  int i;
  (void)state;
  map_state_init(&m);
  DT_OK(dist_dataset_shuffle(r, 8, 5, &s));
  DT_OK(dist_dataset_map(s, map_fn, &m, NULL, 2, 2, &mapped));
  DT_OK(dist_dataset_prefetch(mapped, 3, &p));
  memset(&alone, 0, sizeof(alone));
  alone.dataset = p;
  shared_read(&alone);
  assert_int_equal(alone.status, DIST_OUT_OF_RANGE);
  assert_int_equal(alone.count, SHARED_N);
  for (i = 0; i < SHARED_THREADS; ++i) {
    memset(&readers[i], 0, sizeof(readers[i]));
    readers[i].dataset = p;
    assert_int_equal(pthread_create(&threads[i], NULL, shared_read, &readers[i]), 0);
  }
  for (i = 0; i < SHARED_THREADS; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
  for (i = 0; i < SHARED_THREADS; ++i) {
    assert_int_equal(readers[i].status, DIST_OUT_OF_RANGE);
    assert_int_equal(readers[i].count, SHARED_N);
    assert_memory_equal(readers[i].got, alone.got, SHARED_N * sizeof(int64_t));
  }
  {
    int64_t sorted[SHARED_N];
    int64_t k;
    for (k = 0; k < SHARED_N; ++k) sorted[k] = alone.got[k] / 3;
    expect_permutation(sorted, SHARED_N);
  }
  dist_dataset_destroy(p);
  dist_dataset_destroy(mapped);
  dist_dataset_destroy(s);
  dist_dataset_destroy(r);
  pthread_mutex_destroy(&m.mutex);
}

/* A full pipeline: range -> shuffle -> map (parallel) -> batch -> prefetch, two epochs
 * through a repeat, every element exactly once per epoch. */
static void test_pipeline(void** state) {
  map_state m;
  dist_dataset_t* r = ddt_range(0, MAP_N, 1);
  dist_dataset_t* s = NULL;
  dist_dataset_t* rep = NULL;
  dist_dataset_t* mapped = NULL;
  dist_dataset_t* b = NULL;
  dist_dataset_t* p = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  int seen[MAP_N];
  int64_t total = 0, i;
  dist_status_t status;
  (void)state;
  map_state_init(&m);
  memset(seen, 0, sizeof(seen));
  DT_OK(dist_dataset_shuffle(r, 10, 99, &s));
  DT_OK(dist_dataset_repeat(s, 2, &rep));
  DT_OK(dist_dataset_map(rep, map_fn, &m, NULL, 2, 4, &mapped));
  DT_OK(dist_dataset_batch(mapped, 5, 0, &b));
  DT_OK(dist_dataset_prefetch(b, 2, &p));
  DT_OK(dist_dataset_make_iterator(p, &it));
  while ((status = dist_iterator_get_next(it, outs, 2)) == DIST_OK) {
    const int64_t n = ddt_dim0(outs[0]);
    const int64_t* ys = (const int64_t*)ddt_data(outs[0]);
    const float* sq = (const float*)ddt_data(outs[1]);
    assert_int_equal(ddt_dim0(outs[1]), n);
    for (i = 0; i < n; ++i) {
      const int64_t x = ys[i] / 3;
      assert_int_equal(ys[i] % 3, 0);
      assert_true(x >= 0 && x < MAP_N);
      assert_true(sq[i] == (float)(x * x));
      seen[x] += 1;
    }
    total += n;
    ddt_destroy_all(outs, 2);
  }
  assert_int_equal(status, DIST_OUT_OF_RANGE);
  assert_int_equal(total, 2 * MAP_N);
  for (i = 0; i < MAP_N; ++i) assert_int_equal(seen[i], 2);
  for (i = 0; i < MAP_N; ++i) assert_int_equal(m.calls_per_element[i], 2);
  dist_iterator_destroy(it);
  dist_dataset_destroy(p);
  dist_dataset_destroy(b);
  dist_dataset_destroy(mapped);
  dist_dataset_destroy(rep);
  dist_dataset_destroy(s);
  dist_dataset_destroy(r);
  pthread_mutex_destroy(&m.mutex);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_batch),
      cmocka_unit_test(test_batch_multi_component),
      cmocka_unit_test(test_batch_misuse),
      cmocka_unit_test(test_shard),
      cmocka_unit_test(test_shard_misuse),
      cmocka_unit_test(test_repeat),
      cmocka_unit_test(test_take_skip),
      cmocka_unit_test(test_repeat_take_skip_misuse),
      cmocka_unit_test(test_shuffle),
      cmocka_unit_test(test_shuffle_then_repeat),
      cmocka_unit_test(test_shuffle_misuse),
      cmocka_unit_test(test_map),
      cmocka_unit_test(test_map_components),
      cmocka_unit_test(test_map_error),
      cmocka_unit_test(test_map_misuse),
      cmocka_unit_test(test_prefetch),
      cmocka_unit_test(test_prefetch_destroy_mid_epoch),
      cmocka_unit_test(test_prefetch_autotune),
      cmocka_unit_test(test_prefetch_misuse),
      cmocka_unit_test(test_prefetch_error),
      cmocka_unit_test(test_num_components_through_transformations),
      cmocka_unit_test(test_two_iterators_independent),
      cmocka_unit_test(test_shared_between_threads),
      cmocka_unit_test(test_pipeline),
  };
  return cmocka_run_group_tests_name("dataset_transforms", tests, setup, NULL);
}
