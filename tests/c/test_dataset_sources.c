/* Tests for the sources of dataset.h (from_tensor_slices, range, generator, text files,
 * fixed-length records, TFRecord files), num_components, and the iterator calls
 * (make_iterator, get_next, get_next_as_optional, destroy), with their misuse. Files are
 * written by the tests into a private directory under /tmp (TFRecord files with the
 * test's own CRC32C) and removed at the end of each test. */
#define _POSIX_C_SOURCE 200809L
#include <zlib.h>

#include "dist_dataset_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

/* ---- from_tensor_slices ---- */

static void test_from_tensor_slices(void** state) {
  float x[5][2];
  int32_t y[5];
  uint8_t z[5][2][3];
  const int64_t dx[2] = {5, 2}, dy[1] = {5}, dz[3] = {5, 2, 3};
  const int64_t ex[1] = {2}, ez[2] = {2, 3};
  dist_value_t* parts[3];
  dist_dataset_t* ds = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[3];
  int32_t count = 0, i, j, k, has_value = 0;
  (void)state;
  for (i = 0; i < 5; ++i) {
    x[i][0] = (float)i + 0.25f;
    x[i][1] = -(float)i * 3.0f;
    y[i] = 1000 + i * 7;
    for (j = 0; j < 2; ++j) {
      for (k = 0; k < 3; ++k) z[i][j][k] = (uint8_t)(i * 6 + j * 3 + k);
    }
  }
  parts[0] = dts_tensor(DIST_FLOAT32, dx, 2, x, NULL);
  parts[1] = dts_tensor(DIST_INT32, dy, 1, y, NULL);
  parts[2] = dts_tensor(DIST_UINT8, dz, 3, z, NULL);
  ds = (dist_dataset_t*)DT_SENTINEL_PTR;
  DT_OK(dist_dataset_from_tensor_slices((const dist_value_t* const*)parts, 3, &ds));
  assert_non_null(ds);
  assert_ptr_not_equal(ds, DT_SENTINEL_PTR);
  /* The dataset keeps the tensors alive. */
  ddt_destroy_all(parts, 3);
  DT_OK(dist_dataset_num_components(ds, &count));
  assert_int_equal(count, 3);

  DT_OK(dist_dataset_make_iterator(ds, &it));
  assert_non_null(it);
  for (i = 0; i < 5; ++i) {
    if (i % 2 == 0) {
      DT_OK(dist_iterator_get_next(it, outs, 3));
    } else {
      has_value = -1;
      DT_OK(dist_iterator_get_next_as_optional(it, outs, 3, &has_value));
      assert_int_equal(has_value, 1);
    }
    ddt_expect_tensor(outs[0], DIST_FLOAT32, 1, ex);
    assert_memory_equal(ddt_data(outs[0]), x[i], sizeof(x[i]));
    ddt_expect_tensor(outs[1], DIST_INT32, 0, NULL);
    assert_memory_equal(ddt_data(outs[1]), &y[i], sizeof(y[i]));
    ddt_expect_tensor(outs[2], DIST_UINT8, 2, ez);
    assert_memory_equal(ddt_data(outs[2]), z[i], sizeof(z[i]));
    /* Elements are host tensors on CPU:0. */
    assert_string_equal(dts_device(outs[0]), "/device:CPU:0");
    assert_string_equal(dts_device(outs[2]), "/device:CPU:0");
    ddt_destroy_all(outs, 3);
  }
  ddt_expect_end(it, 3);
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);
}

static void test_from_tensor_slices_single_and_empty(void** state) {
  dist_value_t* v = ddt_i64_vector(40, -3, 6, "CPU:0");
  dist_value_t* empty = NULL;
  const int64_t de[2] = {0, 4};
  dist_dataset_t* ds = NULL;
  int64_t got[16];
  const int64_t expected[6] = {40, 37, 34, 31, 28, 25};
  int64_t n;
  (void)state;
  DT_OK(dist_dataset_from_tensor_slices((const dist_value_t* const*)&v, 1, &ds));
  n = ddt_collect_i64(ds, got, 16);
  ddt_expect_i64s(got, n, expected, 6);
  /* A second pass over the same dataset gives the same elements. */
  n = ddt_collect_i64(ds, got, 16);
  ddt_expect_i64s(got, n, expected, 6);
  dist_dataset_destroy(ds);
  dist_value_destroy(v);

  /* A first dimension of 0: an empty dataset. */
  empty = dts_tensor(DIST_FLOAT32, de, 2, NULL, NULL);
  DT_OK(dist_dataset_from_tensor_slices((const dist_value_t* const*)&empty, 1, &ds));
  {
    dist_iterator_t* it = NULL;
    DT_OK(dist_dataset_make_iterator(ds, &it));
    ddt_expect_end(it, 1);
    dist_iterator_destroy(it);
  }
  dist_dataset_destroy(ds);
  dist_value_destroy(empty);
}

static void test_from_tensor_slices_misuse(void** state) {
  const int64_t d3[1] = {3}, d4[1] = {4};
  const float f[4] = {1, 2, 3, 4};
  dist_value_t* a = dts_tensor(DIST_FLOAT32, d3, 1, f, NULL);
  dist_value_t* b = dts_tensor(DIST_FLOAT32, d4, 1, f, NULL);
  dist_value_t* scalar = dts_f32_scalar(1.0f, NULL);
  dist_value_t* per_replica = NULL;
  const dist_value_t* parts[2];
  dist_dataset_t* ds = NULL;
  (void)state;
  parts[0] = a;
  parts[1] = a;
  DT_OK(dist_value_create_per_replica(parts, 2, &per_replica));

  ds = (dist_dataset_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_dataset_from_tensor_slices(NULL, 1, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tensor_slices", "components");
  assert_null(ds);
  DT_ERR(dist_dataset_from_tensor_slices(parts, 0, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tensor_slices", "num_components");
  DT_ERR(dist_dataset_from_tensor_slices(parts, -1, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tensor_slices", "num_components");
  DT_ERR(dist_dataset_from_tensor_slices(parts, 1, NULL), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tensor_slices", "out");
  /* A NULL component. */
  parts[1] = NULL;
  ds = (dist_dataset_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_dataset_from_tensor_slices(parts, 2, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tensor_slices", "components");
  assert_null(ds);
  /* Components with different first dimensions (3 and 4). */
  parts[1] = b;
  DT_ERR(dist_dataset_from_tensor_slices(parts, 2, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tensor_slices", NULL);
  assert_null(ds);
  /* A rank-0 component has no first axis to slice. */
  parts[0] = scalar;
  parts[1] = a;
  DT_ERR(dist_dataset_from_tensor_slices(parts, 1, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tensor_slices", NULL);
  DT_ERR(dist_dataset_from_tensor_slices(parts, 2, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tensor_slices", NULL);
  assert_null(ds);
  /* A distributed value is not a host tensor. */
  parts[0] = per_replica;
  DT_ERR(dist_dataset_from_tensor_slices(parts, 1, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tensor_slices", NULL);
  assert_null(ds);

  dist_value_destroy(per_replica);
  dist_value_destroy(scalar);
  dist_value_destroy(b);
  dist_value_destroy(a);
}

/* ---- range ---- */

static void check_range(int64_t start, int64_t stop, int64_t step) {
  int64_t expected[64], got[64];
  int64_t n = 0, v, count;
  dist_dataset_t* ds = ddt_range(start, stop, step);
  /* The reference, written independently: Python's range(start, stop, step). */
  for (v = start; step > 0 ? v < stop : v > stop; v += step) {
    assert_true(n < 64);
    expected[n++] = v;
  }
  count = ddt_collect_i64(ds, got, 64);
  ddt_expect_i64s(got, count, expected, n);
  dist_dataset_destroy(ds);
}

static void test_range(void** state) {
  int32_t count = 0;
  dist_dataset_t* ds = NULL;
  (void)state;
  check_range(0, 5, 1);
  check_range(-2, 3, 2);
  check_range(3, 10, 3);    /* 3, 6, 9 */
  check_range(10, 0, -3);   /* 10, 7, 4, 1 */
  check_range(0, -5, -1);   /* 0 ... -4 */
  check_range(5, 5, 1);     /* empty */
  check_range(5, 0, 1);     /* empty: stop before start with a positive step */
  check_range(0, 5, -1);    /* empty: stop after start with a negative step */
  check_range(-7, -1, 100); /* one element */
  ds = ddt_range(0, 3, 1);
  DT_OK(dist_dataset_num_components(ds, &count));
  assert_int_equal(count, 1);
  dist_dataset_destroy(ds);
}

static void test_range_misuse(void** state) {
  dist_dataset_t* ds = (dist_dataset_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_dataset_range(0, 10, 0, &ds), DIST_INVALID_ARGUMENT, "dist_dataset_range", "step");
  assert_null(ds);
  DT_ERR(dist_dataset_range(0, 10, 1, NULL), DIST_INVALID_ARGUMENT, "dist_dataset_range", "out");
}

/* ---- generator ---- */

typedef struct {
  ddt_free_counter freed; /* first: ddt_count_free gets the struct */
  int64_t length;      /* elements before the end */
  int64_t fail_at;     /* index at which to fail (-1: never) */
  int use_dist_error;  /* 1: fail through a failing dist_ call (leaves a message) */
  dist_status_t fail_status;
  int64_t calls;
  int64_t next_index;  /* the index expected next (per pass; reset by the test) */
  int bad_index;       /* set when an index came out of order */
} gen_state;

/* Element i: (int64 scalar i, float32 [2] {i, -i / 2}). */
static dist_status_t gen_fn(int64_t index, dist_value_t** components, int32_t num_components,
                            int32_t* out_end, void* user_data) {
  gen_state* g = (gen_state*)user_data;
  const int64_t two = 2;
  float pair[2];
  g->calls += 1;
  if (index != g->next_index) g->bad_index = 1;
  g->next_index = index + 1;
  if (num_components != 2 || components == NULL || out_end == NULL) return DIST_INTERNAL;
  if (components[0] != NULL || components[1] != NULL) g->bad_index = 1; /* not pre-set */
  if (index == g->fail_at) {
    if (g->use_dist_error) {
      dist_value_t* never = NULL;
      /* dtype 999 does not exist: leaves an error message naming dist_tensor_create. */
      return dist_tensor_create(999, NULL, 0, NULL, 0, NULL, &never);
    }
    return g->fail_status;
  }
  if (index >= g->length) {
    *out_end = 1;
    return DIST_OK;
  }
  pair[0] = (float)index;
  pair[1] = -(float)index / 2.0f;
  if (dist_tensor_create(DIST_INT64, NULL, 0, &index, sizeof(index), NULL, &components[0]) !=
      DIST_OK) {
    return DIST_INTERNAL;
  }
  if (dist_tensor_create(DIST_FLOAT32, &two, 1, pair, sizeof(pair), NULL, &components[1]) !=
      DIST_OK) {
    return DIST_INTERNAL;
  }
  return DIST_OK;
}

static void gen_init(gen_state* g, int64_t length) {
  memset(g, 0, sizeof(*g));
  g->length = length;
  g->fail_at = -1;
  g->fail_status = DIST_OK;
}

static void read_generated(dist_iterator_t* it, int64_t length) {
  dist_value_t* outs[2];
  const int64_t d2[1] = {2};
  int64_t i;
  for (i = 0; i < length; ++i) {
    float expected[2];
    expected[0] = (float)i;
    expected[1] = -(float)i / 2.0f;
    DT_OK(dist_iterator_get_next(it, outs, 2));
    assert_int_equal(ddt_i64(outs[0]), i);
    ddt_expect_tensor(outs[1], DIST_FLOAT32, 1, d2);
    assert_memory_equal(ddt_data(outs[1]), expected, sizeof(expected));
    ddt_destroy_all(outs, 2);
  }
}

static void test_generator(void** state) {
  gen_state g;
  dist_dataset_t* ds = NULL;
  dist_iterator_t* it = NULL;
  dist_iterator_t* it2 = NULL;
  int32_t count = 0;
  (void)state;
  gen_init(&g, 7);
  DT_OK(dist_dataset_from_generator(gen_fn, &g, ddt_count_free, 2, &ds));
  DT_OK(dist_dataset_num_components(ds, &count));
  assert_int_equal(count, 2);
  DT_OK(dist_dataset_make_iterator(ds, &it));
  read_generated(it, 7);
  ddt_expect_end(it, 2);
  assert_int_equal(g.bad_index, 0);
  assert_int_equal(g.freed.calls, 0);

  /* A new iterator restarts the generator at index 0. */
  g.next_index = 0;
  DT_OK(dist_dataset_make_iterator(ds, &it2));
  read_generated(it2, 7);
  ddt_expect_end(it2, 2);
  assert_int_equal(g.bad_index, 0);

  /* free_fn runs once, after the dataset and every iterator are gone: dataset first. */
  dist_dataset_destroy(ds);
  assert_int_equal(g.freed.calls, 0);
  dist_iterator_destroy(it);
  assert_int_equal(g.freed.calls, 0);
  dist_iterator_destroy(it2);
  assert_int_equal(g.freed.calls, 1);

  /* Iterator first, dataset last; an iterator destroyed before the end. */
  gen_init(&g, 5);
  DT_OK(dist_dataset_from_generator(gen_fn, &g, ddt_count_free, 2, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  read_generated(it, 2);
  dist_iterator_destroy(it);
  assert_int_equal(g.freed.calls, 0);
  dist_dataset_destroy(ds);
  assert_int_equal(g.freed.calls, 1);

  /* A NULL free_fn is allowed; an empty generator ends at once. */
  gen_init(&g, 0);
  DT_OK(dist_dataset_from_generator(gen_fn, &g, NULL, 2, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  ddt_expect_end(it, 2);
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);
  assert_int_equal(g.freed.calls, 0);
}

static void test_generator_error(void** state) {
  gen_state g;
  dist_dataset_t* ds = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  (void)state;
  /* A failing dist_ call inside the generator: its status and message reach get_next. */
  gen_init(&g, 10);
  g.fail_at = 3;
  g.use_dist_error = 1;
  DT_OK(dist_dataset_from_generator(gen_fn, &g, ddt_count_free, 2, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  read_generated(it, 3);
  outs[0] = outs[1] = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_iterator_get_next(it, outs, 2), DIST_INVALID_ARGUMENT, "dist_tensor_create",
         "dtype");
  assert_null(outs[0]);
  assert_null(outs[1]);
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);
  assert_int_equal(g.freed.calls, 1);

  /* A plain failing status, at the first element. */
  gen_init(&g, 10);
  g.fail_at = 0;
  g.fail_status = DIST_ABORTED;
  DT_OK(dist_dataset_from_generator(gen_fn, &g, ddt_count_free, 2, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  DT_ERR(dist_iterator_get_next(it, outs, 2), DIST_ABORTED, NULL, NULL);
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);
  assert_int_equal(g.freed.calls, 1);

  /* The optional form fails the same way. */
  gen_init(&g, 10);
  g.fail_at = 1;
  g.use_dist_error = 1;
  DT_OK(dist_dataset_from_generator(gen_fn, &g, NULL, 2, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  read_generated(it, 1);
  {
    int32_t has_value = 7;
    DT_ERR(dist_iterator_get_next_as_optional(it, outs, 2, &has_value), DIST_INVALID_ARGUMENT,
           "dist_tensor_create", NULL);
    assert_null(outs[0]);
    assert_null(outs[1]);
  }
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);
}

/* A generator that claims an element but stores only one of its two components. */
static dist_status_t half_gen_fn(int64_t index, dist_value_t** components,
                                 int32_t num_components, int32_t* out_end, void* user_data) {
  (void)user_data;
  (void)num_components;
  (void)out_end;
  return dist_tensor_create(DIST_INT64, NULL, 0, &index, sizeof(index), NULL, &components[0]);
}

static void test_generator_misuse(void** state) {
  gen_state g;
  dist_dataset_t* ds = (dist_dataset_t*)DT_SENTINEL_PTR;
  dist_iterator_t* it = NULL;
  dist_value_t* outs[2];
  dist_status_t status;
  (void)state;
  gen_init(&g, 3);
  /* A failed creation never calls free_fn. */
  DT_ERR(dist_dataset_from_generator(NULL, &g, ddt_count_free, 2, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_generator", "fn");
  assert_null(ds);
  DT_ERR(dist_dataset_from_generator(gen_fn, &g, ddt_count_free, 0, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_generator", "num_components");
  DT_ERR(dist_dataset_from_generator(gen_fn, &g, ddt_count_free, -2, &ds),
         DIST_INVALID_ARGUMENT, "dist_dataset_from_generator", "num_components");
  DT_ERR(dist_dataset_from_generator(gen_fn, &g, ddt_count_free, 2, NULL),
         DIST_INVALID_ARGUMENT, "dist_dataset_from_generator", "out");
  assert_int_equal(g.freed.calls, 0);
  assert_int_equal(g.calls, 0);

  /* A generator that leaves a component NULL fails get_next (never hands out NULL). */
  DT_OK(dist_dataset_from_generator(half_gen_fn, NULL, NULL, 2, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  outs[0] = outs[1] = NULL;
  status = dist_iterator_get_next(it, outs, 2);
  assert_int_not_equal(status, DIST_OK);
  assert_int_not_equal(status, DIST_OUT_OF_RANGE);
  assert_null(outs[0]);
  assert_null(outs[1]);
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);
}

/* ---- text files ---- */

static void expect_line(dist_iterator_t* it, const char* line) {
  dist_value_t* v = NULL;
  DT_OK(dist_iterator_get_next(it, &v, 1));
  ddt_expect_bytes(v, line, strlen(line));
  dist_value_destroy(v);
}

static void test_text_files(void** state) {
  static const char a[] = "alpha\nbeta\r\n\ngamma with spaces\r\nlast without newline";
  static const char b[] = "x\r\ny\n";
  ddt_tmpdir* t = ddt_tmp();
  char pa[128], pb[128], pe[128];
  const char* paths[3];
  dist_dataset_t* ds = NULL;
  dist_iterator_t* it = NULL;
  int32_t count = 0;
  (void)state;
  paths[0] = ddt_write_file(t, "a.txt", a, strlen(a), pa);
  paths[1] = ddt_write_file(t, "empty.txt", "", 0, pe);
  paths[2] = ddt_write_file(t, "b.txt", b, strlen(b), pb);
  DT_OK(dist_dataset_from_text_files(paths, 3, &ds));
  DT_OK(dist_dataset_num_components(ds, &count));
  assert_int_equal(count, 1);
  DT_OK(dist_dataset_make_iterator(ds, &it));
  expect_line(it, "alpha");
  expect_line(it, "beta");
  expect_line(it, "");
  expect_line(it, "gamma with spaces");
  expect_line(it, "last without newline");
  expect_line(it, "x");
  expect_line(it, "y");
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);

  /* The paths were copied: the caller's array may go. */
  paths[0] = paths[1] = paths[2] = NULL;
  DT_OK(dist_dataset_make_iterator(ds, &it));
  expect_line(it, "alpha");
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);
  ddt_tmpdir_remove(t);
}

static void test_text_files_misuse(void** state) {
  ddt_tmpdir* t = ddt_tmp();
  char pa[128], missing[128];
  const char* paths[2];
  dist_dataset_t* ds = (dist_dataset_t*)DT_SENTINEL_PTR;
  dist_status_t status;
  int64_t good;
  (void)state;
  paths[0] = ddt_write_file(t, "a.txt", "one\ntwo\n", 8, pa);
  paths[1] = ddt_path(t, "does_not_exist.txt", missing);
  DT_ERR(dist_dataset_from_text_files(NULL, 1, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_text_files", "paths");
  assert_null(ds);
  DT_ERR(dist_dataset_from_text_files(paths, -1, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_text_files", "num_paths");
  DT_ERR(dist_dataset_from_text_files(paths, 1, NULL), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_text_files", "out");
  {
    const char* with_null[2];
    with_null[0] = pa;
    with_null[1] = NULL;
    DT_ERR(dist_dataset_from_text_files(with_null, 2, &ds), DIST_INVALID_ARGUMENT,
           "dist_dataset_from_text_files", "paths");
    assert_null(ds);
  }
  /* A missing file: an error naming it, when the dataset is made or when it is reached. */
  ds = NULL;
  status = dist_dataset_from_text_files(paths, 2, &ds);
  good = ddt_expect_pipeline_error(status, ds, 1, DIST_NOT_FOUND, DIST_NOT_FOUND, missing);
  assert_true(good == 0 || good == 2);
  ddt_tmpdir_remove(t);
}

/* ---- fixed-length records ---- */

static void test_fixed_length_records(void** state) {
  unsigned char file1[3 + 5 * 4 + 2];
  unsigned char file2[3 + 2 * 4 + 2];
  ddt_tmpdir* t = ddt_tmp();
  char p1[128], p2[128];
  const char* paths[2];
  dist_dataset_t* ds = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* v = NULL;
  size_t i;
  int r;
  (void)state;
  for (i = 0; i < sizeof(file1); ++i) file1[i] = (unsigned char)(i * 7 + 1);
  for (i = 0; i < sizeof(file2); ++i) file2[i] = (unsigned char)(200 - i);
  paths[0] = ddt_write_file(t, "f1.bin", file1, sizeof(file1), p1);
  paths[1] = ddt_write_file(t, "f2.bin", file2, sizeof(file2), p2);
  DT_OK(dist_dataset_from_fixed_length_records(paths, 2, 4, 3, 2, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  for (r = 0; r < 5; ++r) {
    DT_OK(dist_iterator_get_next(it, &v, 1));
    ddt_expect_bytes(v, file1 + 3 + 4 * r, 4);
    dist_value_destroy(v);
  }
  for (r = 0; r < 2; ++r) {
    DT_OK(dist_iterator_get_next(it, &v, 1));
    ddt_expect_bytes(v, file2 + 3 + 4 * r, 4);
    dist_value_destroy(v);
  }
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);

  /* No header or footer: the same bytes in records of 5 (file1 is 25 bytes). */
  DT_OK(dist_dataset_from_fixed_length_records(paths, 1, 5, 0, 0, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  for (r = 0; r < 5; ++r) {
    DT_OK(dist_iterator_get_next(it, &v, 1));
    ddt_expect_bytes(v, file1 + 5 * r, 5);
    dist_value_destroy(v);
  }
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);
  ddt_tmpdir_remove(t);
}

static void test_fixed_length_records_misuse(void** state) {
  unsigned char bytes[3 + 4 * 4 + 1 + 2]; /* body of 17 bytes: not a multiple of 4 */
  ddt_tmpdir* t = ddt_tmp();
  char p[128], missing[128];
  const char* paths[1];
  const char* missing_paths[1];
  dist_dataset_t* ds = (dist_dataset_t*)DT_SENTINEL_PTR;
  dist_status_t status;
  int64_t good;
  (void)state;
  memset(bytes, 9, sizeof(bytes));
  paths[0] = ddt_write_file(t, "odd.bin", bytes, sizeof(bytes), p);
  missing_paths[0] = ddt_path(t, "missing.bin", missing);
  DT_ERR(dist_dataset_from_fixed_length_records(NULL, 1, 4, 0, 0, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_fixed_length_records", "paths");
  assert_null(ds);
  DT_ERR(dist_dataset_from_fixed_length_records(paths, -1, 4, 0, 0, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_fixed_length_records", "num_paths");
  DT_ERR(dist_dataset_from_fixed_length_records(paths, 1, 0, 0, 0, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_fixed_length_records", "record_bytes");
  DT_ERR(dist_dataset_from_fixed_length_records(paths, 1, -4, 0, 0, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_fixed_length_records", "record_bytes");
  DT_ERR(dist_dataset_from_fixed_length_records(paths, 1, 4, -1, 0, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_fixed_length_records", "header_bytes");
  DT_ERR(dist_dataset_from_fixed_length_records(paths, 1, 4, 0, -1, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_fixed_length_records", "footer_bytes");
  DT_ERR(dist_dataset_from_fixed_length_records(paths, 1, 4, 0, 0, NULL), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_fixed_length_records", "out");
  assert_null(ds);

  /* A body that is not a whole number of records: an error naming the file (TF reports
   * it as InvalidArgument; DATA_LOSS is accepted too). */
  ds = NULL;
  status = dist_dataset_from_fixed_length_records(paths, 1, 4, 3, 2, &ds);
  good = ddt_expect_pipeline_error(status, ds, 1, DIST_INVALID_ARGUMENT, DIST_DATA_LOSS, p);
  assert_true(good <= 4);
  /* A file shorter than header + footer. */
  ds = NULL;
  status = dist_dataset_from_fixed_length_records(paths, 1, 4, 20, 10, &ds);
  ddt_expect_pipeline_error(status, ds, 1, DIST_INVALID_ARGUMENT, DIST_DATA_LOSS, p);
  /* A missing file. */
  ds = NULL;
  status = dist_dataset_from_fixed_length_records(missing_paths, 1, 4, 0, 0, &ds);
  ddt_expect_pipeline_error(status, ds, 1, DIST_NOT_FOUND, DIST_NOT_FOUND, missing);
  ddt_tmpdir_remove(t);
}

/* ---- TFRecord ---- */

static void test_crc32c_reference(void** state) {
  /* The test's own CRC32C (used to write the TFRecord files) against known values. */
  unsigned char zeros32[32];
  uint32_t crc, masked;
  (void)state;
  /* The standard check value, and the iSCSI (RFC 3720) vector of 32 zero bytes. */
  assert_int_equal(ddt_crc32c("123456789", 9), 0xE3069283u);
  memset(zeros32, 0, sizeof(zeros32));
  assert_int_equal(ddt_crc32c(zeros32, 32), 0x8A9136AAu);
  crc = 0xE3069283u;
  masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
  assert_int_equal(ddt_masked_crc("123456789", 9), masked);
}

/* Record j of file f: (f * 31 + j * 5) % 23 bytes, byte k = f * 50 + j * 3 + k. */
static size_t record_bytes_of(int f, int j, unsigned char* out) {
  const size_t n = (size_t)((f * 31 + j * 5) % 23);
  size_t k;
  for (k = 0; k < n; ++k) out[k] = (unsigned char)(f * 50 + j * 3 + (int)k);
  return n;
}

static void test_tfrecord_files(void** state) {
  const int records[3] = {4, 0, 9};
  ddt_tmpdir* t = ddt_tmp();
  char p[3][128];
  const char* paths[3];
  dist_dataset_t* ds = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* v = NULL;
  unsigned char rec[32];
  int f, j;
  (void)state;
  for (f = 0; f < 3; ++f) {
    ddt_bytes b = {NULL, 0, 0};
    char name[32];
    for (j = 0; j < records[f]; ++j) {
      const size_t n = record_bytes_of(f, j, rec);
      ddt_tfrecord_append(&b, rec, n);
    }
    snprintf(name, sizeof(name), "r%d.tfrecord", f);
    paths[f] = ddt_write_file(t, name, b.data, b.size, p[f]);
    ddt_bytes_free(&b);
  }
  DT_OK(dist_dataset_from_tfrecord_files(paths, 3, &ds));
  for (f = 0; f < 2; ++f) { /* two passes */
    int ff;
    DT_OK(dist_dataset_make_iterator(ds, &it));
    for (ff = 0; ff < 3; ++ff) {
      for (j = 0; j < records[ff]; ++j) {
        const size_t n = record_bytes_of(ff, j, rec);
        DT_OK(dist_iterator_get_next(it, &v, 1));
        ddt_expect_bytes(v, rec, n);
        dist_value_destroy(v);
      }
    }
    ddt_expect_end(it, 1);
    dist_iterator_destroy(it);
  }
  dist_dataset_destroy(ds);
  ddt_tmpdir_remove(t);
}

/* Writes a 3-record file, damages it with `damage`, and checks that the first record reads
 * back, then get_next fails with DATA_LOSS naming the file and `bad_offset` (the start of
 * the damaged record). */
typedef enum { DAMAGE_LENGTH_CRC, DAMAGE_DATA, DAMAGE_DATA_CRC, TRUNCATE_DATA,
               TRUNCATE_HEADER, DAMAGE_LENGTH } damage_kind;

static void check_damaged(damage_kind damage) {
  ddt_tmpdir* t = ddt_tmp();
  char p[128];
  const char* paths[1];
  ddt_bytes b = {NULL, 0, 0};
  unsigned char r0[10], r1[40], r2[7];
  size_t start1, start2, size;
  dist_dataset_t* ds = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* v = NULL;
  dist_status_t status;
  const char* message;
  memset(r0, 'a', sizeof(r0));
  memset(r1, 'b', sizeof(r1));
  memset(r2, 'c', sizeof(r2));
  ddt_tfrecord_append(&b, r0, sizeof(r0));
  start1 = ddt_tfrecord_append(&b, r1, sizeof(r1));
  start2 = ddt_tfrecord_append(&b, r2, sizeof(r2));
  assert_int_equal(start1, 12 + 10 + 4);
  size = b.size;
  switch (damage) {
    case DAMAGE_LENGTH_CRC: b.data[start1 + 9] ^= 0x10; break;
    case DAMAGE_DATA: b.data[start1 + 12 + 17] ^= 0x01; break;
    case DAMAGE_DATA_CRC: b.data[start1 + 12 + 40 + 2] ^= 0x80; break;
    case TRUNCATE_DATA: size = start1 + 12 + 20; break;
    case TRUNCATE_HEADER: size = start1 + 5; break;
    case DAMAGE_LENGTH: b.data[start1 + 1] ^= 0x04; break; /* 40 + 1024, length CRC stale */
  }
  paths[0] = ddt_write_file(t, "damaged.tfrecord", b.data, size, p);
  ddt_bytes_free(&b);
  (void)start2;

  DT_OK(dist_dataset_from_tfrecord_files(paths, 1, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  DT_OK(dist_iterator_get_next(it, &v, 1));
  ddt_expect_bytes(v, r0, sizeof(r0));
  dist_value_destroy(v);
  v = (dist_value_t*)DT_SENTINEL_PTR;
  status = dist_iterator_get_next(it, &v, 1);
  message = dist_last_error_message();
  if (getenv("DIST_TEST_SHOW_MESSAGES") != NULL) {
    print_message("  damage %d -> %s: \"%s\"\n", (int)damage, dist_status_name(status), message);
  }
  if (status == DIST_OK) {
    dist_value_destroy(v);
    dist_iterator_destroy(it);
    dist_dataset_destroy(ds);
    ddt_tmpdir_remove(t);
    fail_msg("damage %d: the damaged record was returned as data", (int)damage);
  }
  assert_null(v);
  if (status != DIST_DATA_LOSS) {
    print_error("damage %d: get_next returned %s, expected DATA_LOSS: \"%s\"\n", (int)damage,
                dist_status_name(status), message);
    fail();
  }
  if (strstr(message, p) == NULL) fail_msg("message \"%s\" does not name %s", message, p);
  if (!ddt_message_has_number(message, (long long)start1)) {
    fail_msg("message \"%s\" does not name the record's offset %d", message, (int)start1);
  }
  /* The iterator stays destroyable after the error (and never returns garbage later). */
  status = dist_iterator_get_next(it, &v, 1);
  if (status == DIST_OK) {
    /* Anything it returns after the error must be a record of the file, not garbage. */
    int64_t n = ddt_dim0(v);
    assert_true(n == 7 || n == 40);
    dist_value_destroy(v);
  }
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);
  ddt_tmpdir_remove(t);
}

static void test_tfrecord_corrupt(void** state) {
  (void)state;
  check_damaged(DAMAGE_LENGTH_CRC);
  check_damaged(DAMAGE_DATA);
  check_damaged(DAMAGE_DATA_CRC);
  check_damaged(TRUNCATE_DATA);
  check_damaged(TRUNCATE_HEADER);
  check_damaged(DAMAGE_LENGTH);
}

static void test_tfrecord_misuse(void** state) {
  ddt_tmpdir* t = ddt_tmp();
  char p[128], missing[128];
  const char* paths[2];
  dist_dataset_t* ds = (dist_dataset_t*)DT_SENTINEL_PTR;
  dist_status_t status;
  ddt_bytes b = {NULL, 0, 0};
  int64_t good;
  (void)state;
  ddt_tfrecord_append(&b, "hello", 5);
  paths[0] = ddt_write_file(t, "ok.tfrecord", b.data, b.size, p);
  paths[1] = ddt_path(t, "missing.tfrecord", missing);
  ddt_bytes_free(&b);
  DT_ERR(dist_dataset_from_tfrecord_files(NULL, 1, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tfrecord_files", "paths");
  assert_null(ds);
  DT_ERR(dist_dataset_from_tfrecord_files(paths, -1, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tfrecord_files", "num_paths");
  DT_ERR(dist_dataset_from_tfrecord_files(paths, 1, NULL), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_tfrecord_files", "out");
  ds = NULL;
  status = dist_dataset_from_tfrecord_files(paths, 2, &ds);
  good = ddt_expect_pipeline_error(status, ds, 1, DIST_NOT_FOUND, DIST_NOT_FOUND, missing);
  assert_true(good == 0 || good == 1);
  ddt_tmpdir_remove(t);
}

/* ---- Compressed TFRecord files (TFRecordOptions(compression_type="ZLIB" / "GZIP")) ---- */

/* `data` deflated as TF's TFRecordWriter does: zlib's deflateInit2 with window bits
 * MAX_WBITS (ZLIB) or MAX_WBITS + 16 (GZIP). Returns the compressed size. */
static size_t deflate_as_tf(const unsigned char* data, size_t size, int gzip, unsigned char* out,
                            size_t capacity) {
  z_stream z;
  memset(&z, 0, sizeof(z));
  assert_int_equal(deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED,
                                gzip ? MAX_WBITS + 16 : MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
                   Z_OK);
  z.next_in = (Bytef*)data;
  z.avail_in = (uInt)size;
  z.next_out = out;
  z.avail_out = (uInt)capacity;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  size = (size_t)z.total_out;
  deflateEnd(&z);
  return size;
}

/* TF: with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type="GZIP"))
 * writing the records below, list(tf.data.TFRecordDataset(path, compression_type="GZIP"))
 * gives them back in order; the same for "ZLIB". Read uncompressed, TF fails with
 * DataLossError; we say the file looks compressed. */
static void test_compressed_tfrecord_files(void** state) {
  static const char* const records[4] = {"abc", "", "hello world", "0123456789abcdef"};
  const dist_compression_t kinds[3] = {DIST_COMPRESSION_NONE, DIST_COMPRESSION_ZLIB,
                                       DIST_COMPRESSION_GZIP};
  ddt_tmpdir* t = ddt_tmp();
  ddt_bytes b = {NULL, 0, 0};
  unsigned char packed[512];
  char p[3][128];
  const char* paths[3];
  dist_dataset_t* ds = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* v = NULL;
  dist_status_t status;
  int k, j;
  (void)state;
  for (j = 0; j < 4; ++j) ddt_tfrecord_append(&b, records[j], strlen(records[j]));
  paths[0] = ddt_write_file(t, "plain.tfrecord", b.data, b.size, p[0]);
  paths[1] = ddt_write_file(t, "records.zlib",
                            packed, deflate_as_tf(b.data, b.size, 0, packed, sizeof packed), p[1]);
  paths[2] = ddt_write_file(t, "records.gz",
                            packed, deflate_as_tf(b.data, b.size, 1, packed, sizeof packed), p[2]);
  ddt_bytes_free(&b);
  for (k = 0; k < 3; ++k) {
    DT_OK(dist_dataset_from_compressed_tfrecord_files(&paths[k], 1, kinds[k], &ds));
    DT_OK(dist_dataset_make_iterator(ds, &it));
    for (j = 0; j < 4; ++j) {
      DT_OK(dist_iterator_get_next(it, &v, 1));
      ddt_expect_bytes(v, records[j], strlen(records[j]));
      dist_value_destroy(v);
    }
    ddt_expect_end(it, 1);
    dist_iterator_destroy(it);
    dist_dataset_destroy(ds);
  }
  /* An uncompressed reader given a compressed file says what it looks like. */
  for (k = 1; k < 3; ++k) {
    DT_OK(dist_dataset_from_tfrecord_files(&paths[k], 1, &ds));
    DT_OK(dist_dataset_make_iterator(ds, &it));
    v = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_iterator_get_next(it, &v, 1), DIST_DATA_LOSS, p[k],
           k == 1 ? "looks ZLIB-compressed" : "looks GZIP-compressed");
    assert_null(v);
    dist_iterator_destroy(it);
    dist_dataset_destroy(ds);
  }
  /* A plain file read as GZIP is DATA_LOSS naming it. */
  DT_OK(dist_dataset_from_compressed_tfrecord_files(&paths[0], 1, DIST_COMPRESSION_GZIP, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  status = dist_iterator_get_next(it, &v, 1);
  assert_int_equal(status, DIST_DATA_LOSS);
  assert_non_null(strstr(dist_last_error_message(), p[0]));
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);
  /* Misuse: named arguments, nothing created. */
  ds = (dist_dataset_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_dataset_from_compressed_tfrecord_files(paths, 1, 3, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_compressed_tfrecord_files", "compression 3");
  assert_null(ds);
  DT_ERR(dist_dataset_from_compressed_tfrecord_files(paths, 1, -1, &ds), DIST_INVALID_ARGUMENT,
         "dist_dataset_from_compressed_tfrecord_files", "compression");
  DT_ERR(dist_dataset_from_compressed_tfrecord_files(NULL, 1, DIST_COMPRESSION_GZIP, &ds),
         DIST_INVALID_ARGUMENT, "dist_dataset_from_compressed_tfrecord_files", "paths");
  DT_ERR(dist_dataset_from_compressed_tfrecord_files(paths, -1, DIST_COMPRESSION_GZIP, &ds),
         DIST_INVALID_ARGUMENT, "dist_dataset_from_compressed_tfrecord_files", "num_paths");
  DT_ERR(dist_dataset_from_compressed_tfrecord_files(paths, 1, DIST_COMPRESSION_GZIP, NULL),
         DIST_INVALID_ARGUMENT, "dist_dataset_from_compressed_tfrecord_files", "out");
  ddt_tmpdir_remove(t);
}

/* ---- Records larger than any read buffer, and records straddling buffer edges ---- */

/* Byte k of large item i. */
static unsigned char large_byte(int i, size_t k) {
  return (unsigned char)('a' + (int)((k * 7 + (size_t)i * 13) % 26));
}

static void fill_large(int i, unsigned char* out, size_t n) {
  size_t k;
  for (k = 0; k < n; ++k) out[k] = large_byte(i, k);
}

static void test_large_records(void** state) {
  /* Sizes around and far above common buffer sizes (64 KiB, 256 KiB, 1 MiB). */
  static const size_t sizes[] = {70000, 1, 262143, 262145, 0, 1500000, 3, 65536};
  const int count = (int)(sizeof(sizes) / sizeof(sizes[0]));
  ddt_tmpdir* t = ddt_tmp();
  ddt_bytes text = {NULL, 0, 0}, records = {NULL, 0, 0}, fixed = {NULL, 0, 0};
  unsigned char* buf = (unsigned char*)malloc(1500000);
  char p_text[128], p_rec[128], p_fixed[128];
  const char* paths[1];
  dist_dataset_t* ds = NULL;
  dist_iterator_t* it = NULL;
  dist_value_t* v = NULL;
  const size_t fixed_size = 100003; /* records straddle 64 KiB / 256 KiB edges */
  int i;
  (void)state;
  assert_non_null(buf);
  for (i = 0; i < count; ++i) {
    fill_large(i, buf, sizes[i]);
    ddt_bytes_append(&text, buf, sizes[i]);
    ddt_bytes_append(&text, i % 2 ? "\r\n" : "\n", i % 2 ? 2 : 1);
    ddt_tfrecord_append(&records, buf, sizes[i]);
  }
  for (i = 0; i < 7; ++i) {
    fill_large(i, buf, fixed_size);
    ddt_bytes_append(&fixed, buf, fixed_size);
  }
  ddt_write_file(t, "large.txt", text.data, text.size, p_text);
  ddt_write_file(t, "large.tfrecord", records.data, records.size, p_rec);
  ddt_write_file(t, "large.bin", fixed.data, fixed.size, p_fixed);
  ddt_bytes_free(&text);
  ddt_bytes_free(&records);
  ddt_bytes_free(&fixed);

  paths[0] = p_text;
  DT_OK(dist_dataset_from_text_files(paths, 1, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  for (i = 0; i < count; ++i) {
    fill_large(i, buf, sizes[i]);
    DT_OK(dist_iterator_get_next(it, &v, 1));
    ddt_expect_bytes(v, buf, sizes[i]);
    dist_value_destroy(v);
  }
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);

  paths[0] = p_rec;
  DT_OK(dist_dataset_from_tfrecord_files(paths, 1, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  for (i = 0; i < count; ++i) {
    fill_large(i, buf, sizes[i]);
    DT_OK(dist_iterator_get_next(it, &v, 1));
    ddt_expect_bytes(v, buf, sizes[i]);
    dist_value_destroy(v);
  }
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);

  paths[0] = p_fixed;
  DT_OK(dist_dataset_from_fixed_length_records(paths, 1, (int64_t)fixed_size, 0, 0, &ds));
  DT_OK(dist_dataset_make_iterator(ds, &it));
  for (i = 0; i < 7; ++i) {
    fill_large(i, buf, fixed_size);
    DT_OK(dist_iterator_get_next(it, &v, 1));
    ddt_expect_bytes(v, buf, fixed_size);
    dist_value_destroy(v);
  }
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  dist_dataset_destroy(ds);
  free(buf);
  ddt_tmpdir_remove(t);
}

/* ---- iterators ---- */

static void test_iterator_misuse(void** state) {
  dist_dataset_t* ds = ddt_range(0, 3, 1);
  dist_iterator_t* it = (dist_iterator_t*)DT_SENTINEL_PTR;
  dist_value_t* outs[4]; /* room for the largest (wrong) count passed below */
  int32_t has_value = 7, count = 5;
  (void)state;
  DT_ERR(dist_dataset_make_iterator(NULL, &it), DIST_INVALID_ARGUMENT,
         "dist_dataset_make_iterator", "dataset");
  assert_null(it);
  DT_ERR(dist_dataset_make_iterator(ds, NULL), DIST_INVALID_ARGUMENT,
         "dist_dataset_make_iterator", "out");
  DT_ERR(dist_dataset_num_components(NULL, &count), DIST_INVALID_ARGUMENT,
         "dist_dataset_num_components", "dataset");
  DT_ERR(dist_dataset_num_components(ds, NULL), DIST_INVALID_ARGUMENT,
         "dist_dataset_num_components", "out_count");
  DT_OK(dist_dataset_make_iterator(ds, &it));

  outs[0] = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_iterator_get_next(NULL, outs, 1), DIST_INVALID_ARGUMENT, "dist_iterator_get_next",
         "iterator");
  assert_null(outs[0]);
  DT_ERR(dist_iterator_get_next(it, NULL, 1), DIST_INVALID_ARGUMENT, "dist_iterator_get_next",
         "outs");
  /* count must equal the number of components (1). */
  outs[0] = outs[1] = (dist_value_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_iterator_get_next(it, outs, 2), DIST_INVALID_ARGUMENT, "dist_iterator_get_next",
         "count");
  assert_null(outs[0]);
  assert_null(outs[1]);
  DT_ERR(dist_iterator_get_next(it, outs, 0), DIST_INVALID_ARGUMENT, "dist_iterator_get_next",
         "count");
  DT_ERR(dist_iterator_get_next(it, outs, -2), DIST_INVALID_ARGUMENT, "dist_iterator_get_next",
         "count");
  DT_ERR(dist_iterator_get_next_as_optional(NULL, outs, 1, &has_value), DIST_INVALID_ARGUMENT,
         "dist_iterator_get_next_as_optional", "iterator");
  DT_ERR(dist_iterator_get_next_as_optional(it, NULL, 1, &has_value), DIST_INVALID_ARGUMENT,
         "dist_iterator_get_next_as_optional", "outs");
  DT_ERR(dist_iterator_get_next_as_optional(it, outs, 3, &has_value), DIST_INVALID_ARGUMENT,
         "dist_iterator_get_next_as_optional", "count");
  DT_ERR(dist_iterator_get_next_as_optional(it, outs, -2, &has_value), DIST_INVALID_ARGUMENT,
         "dist_iterator_get_next_as_optional", "count");
  DT_ERR(dist_iterator_get_next_as_optional(it, outs, 1, NULL), DIST_INVALID_ARGUMENT,
         "dist_iterator_get_next_as_optional", "out_has_value");
  /* The failed calls consumed nothing: the pass starts at element 0. */
  DT_OK(dist_iterator_get_next(it, outs, 1));
  assert_int_equal(ddt_i64(outs[0]), 0);
  dist_value_destroy(outs[0]);
  has_value = 0;
  DT_OK(dist_iterator_get_next_as_optional(it, outs, 1, &has_value));
  assert_int_equal(has_value, 1);
  assert_int_equal(ddt_i64(outs[0]), 1);
  dist_value_destroy(outs[0]);
  /* Destroying the dataset leaves the iterator working. */
  dist_dataset_destroy(ds);
  DT_OK(dist_iterator_get_next(it, outs, 1));
  assert_int_equal(ddt_i64(outs[0]), 2);
  dist_value_destroy(outs[0]);
  ddt_expect_end(it, 1);
  /* Wrong count at the end is still an argument error, not OUT_OF_RANGE. */
  DT_ERR(dist_iterator_get_next(it, outs, 2), DIST_INVALID_ARGUMENT, "dist_iterator_get_next",
         "count");
  dist_iterator_destroy(it);
  dist_iterator_destroy(NULL);
  dist_dataset_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_from_tensor_slices),
      cmocka_unit_test(test_from_tensor_slices_single_and_empty),
      cmocka_unit_test(test_from_tensor_slices_misuse),
      cmocka_unit_test(test_range),
      cmocka_unit_test(test_range_misuse),
      cmocka_unit_test(test_generator),
      cmocka_unit_test(test_generator_error),
      cmocka_unit_test(test_generator_misuse),
      cmocka_unit_test_teardown(test_text_files, ddt_tmp_teardown),
      cmocka_unit_test_teardown(test_text_files_misuse, ddt_tmp_teardown),
      cmocka_unit_test_teardown(test_fixed_length_records, ddt_tmp_teardown),
      cmocka_unit_test_teardown(test_fixed_length_records_misuse, ddt_tmp_teardown),
      cmocka_unit_test(test_crc32c_reference),
      cmocka_unit_test_teardown(test_tfrecord_files, ddt_tmp_teardown),
      cmocka_unit_test_teardown(test_tfrecord_corrupt, ddt_tmp_teardown),
      cmocka_unit_test_teardown(test_compressed_tfrecord_files, ddt_tmp_teardown),
      cmocka_unit_test_teardown(test_tfrecord_misuse, ddt_tmp_teardown),
      cmocka_unit_test_teardown(test_large_records, ddt_tmp_teardown),
      cmocka_unit_test(test_iterator_misuse),
  };
  return cmocka_run_group_tests_name("dataset_sources", tests, setup, NULL);
}
