/* Helpers for the tests of dataset.h and input.h. Only the public headers are used.
 *
 * - Temporary files: ddt_tmpdir_create makes a private directory under /tmp; ddt_path
 *   names a file in it; ddt_tmpdir_remove deletes the files written through
 *   ddt_write_file and the directory.
 * - An independent CRC32C (Castagnoli, reflected polynomial 0x82F63B78) and a TFRecord
 *   writer built on it (uint64 length, masked CRC32C of the length bytes, data, masked
 *   CRC32C of the data; mask = ((crc >> 15) | (crc << 17)) + 0xa282ead8).
 * - Element readers: scalars and vectors of int64 / int32 / float32 / uint8 tensors. */
#ifndef DIST_TESTS_C_DIST_DATASET_TEST_H_
#define DIST_TESTS_C_DIST_DATASET_TEST_H_

#include "dist_strategy_test.h"

#include "distribute/dataset.h"
#include "distribute/input.h"

#include <errno.h>
#include <unistd.h> /* unlink, rmdir: the including file defines _POSIX_C_SOURCE 200809L */

/* ---- Temporary files (POSIX: mkdtemp, unlink, rmdir) ---- */

#define DDT_MAX_FILES 64

typedef struct {
  char dir[64];
  char files[DDT_MAX_FILES][128];
  int num_files;
} ddt_tmpdir;

static inline void ddt_tmpdir_create(ddt_tmpdir* t) {
  memset(t, 0, sizeof(*t));
  snprintf(t->dir, sizeof(t->dir), "/tmp/dist_dataset_test_XXXXXX");
  if (mkdtemp(t->dir) == NULL) fail_msg("mkdtemp failed: errno %d", errno);
}

/* Writes the path of `name` inside the directory into `out` (128 bytes). */
static inline const char* ddt_path(const ddt_tmpdir* t, const char* name, char* out) {
  const int n = snprintf(out, 128, "%s/%s", t->dir, name);
  if (n < 0 || n >= 128) fail_msg("path too long: %s/%s", t->dir, name);
  return out;
}

static inline void ddt_remember(ddt_tmpdir* t, const char* path) {
  int i;
  for (i = 0; i < t->num_files; ++i) {
    if (strcmp(t->files[i], path) == 0) return;
  }
  assert_true(t->num_files < DDT_MAX_FILES);
  if (strlen(path) >= sizeof(t->files[0])) fail_msg("path too long: %s", path);
  memcpy(t->files[t->num_files++], path, strlen(path) + 1);
}

/* Writes `size` bytes to the file `name` in the directory; returns its path in `out`. */
static inline const char* ddt_write_file(ddt_tmpdir* t, const char* name, const void* data,
                                         size_t size, char* out) {
  FILE* f;
  ddt_path(t, name, out);
  f = fopen(out, "wb");
  if (f == NULL) fail_msg("cannot write %s", out);
  if (size > 0 && fwrite(data, 1, size, f) != size) fail_msg("short write to %s", out);
  fclose(f);
  ddt_remember(t, out);
  return out;
}

static inline void ddt_tmpdir_remove(ddt_tmpdir* t) {
  int i;
  for (i = 0; i < t->num_files; ++i) unlink(t->files[i]);
  t->num_files = 0;
  if (t->dir[0] != '\0') rmdir(t->dir);
  t->dir[0] = '\0';
}

/* The directory of the running test: tests use it through ddt_tmp(), and the teardown
 * removes it even when the test failed part-way. */
static ddt_tmpdir ddt_g_tmp;

static inline ddt_tmpdir* ddt_tmp(void) {
  if (ddt_g_tmp.dir[0] == '\0') ddt_tmpdir_create(&ddt_g_tmp);
  return &ddt_g_tmp;
}

static inline int ddt_tmp_teardown(void** state) {
  (void)state;
  ddt_tmpdir_remove(&ddt_g_tmp);
  return 0;
}

/* ---- CRC32C and TFRecord ---- */

static inline uint32_t ddt_crc32c(const void* data, size_t size) {
  const unsigned char* p = (const unsigned char*)data;
  uint32_t crc = 0xFFFFFFFFu;
  size_t i;
  int bit;
  for (i = 0; i < size; ++i) {
    crc ^= p[i];
    for (bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return crc ^ 0xFFFFFFFFu;
}

static inline uint32_t ddt_masked_crc(const void* data, size_t size) {
  const uint32_t crc = ddt_crc32c(data, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static inline void ddt_put_u64(unsigned char* p, uint64_t v) {
  int i;
  for (i = 0; i < 8; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

static inline void ddt_put_u32(unsigned char* p, uint32_t v) {
  int i;
  for (i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

/* A growable byte buffer. */
typedef struct {
  unsigned char* data;
  size_t size;
  size_t capacity;
} ddt_bytes;

static inline void ddt_bytes_append(ddt_bytes* b, const void* data, size_t size) {
  if (b->size + size > b->capacity) {
    size_t capacity = b->capacity == 0 ? 256 : b->capacity;
    unsigned char* grown;
    while (capacity < b->size + size) capacity *= 2;
    grown = (unsigned char*)realloc(b->data, capacity);
    assert_non_null(grown);
    b->data = grown;
    b->capacity = capacity;
  }
  if (size > 0) memcpy(b->data + b->size, data, size);
  b->size += size;
}

static inline void ddt_bytes_free(ddt_bytes* b) {
  free(b->data);
  memset(b, 0, sizeof(*b));
}

/* Appends one TFRecord (header, data, footer) to `b`; returns the record's start offset. */
static inline size_t ddt_tfrecord_append(ddt_bytes* b, const void* data, size_t size) {
  unsigned char header[12];
  unsigned char footer[4];
  const size_t start = b->size;
  ddt_put_u64(header, (uint64_t)size);
  ddt_put_u32(header + 8, ddt_masked_crc(header, 8));
  ddt_put_u32(footer, ddt_masked_crc(data, size));
  ddt_bytes_append(b, header, sizeof(header));
  ddt_bytes_append(b, data, size);
  ddt_bytes_append(b, footer, sizeof(footer));
  return start;
}

/* ---- Element readers ---- */

static inline void ddt_expect_tensor(const dist_value_t* t, dist_dtype_t dtype, int32_t rank,
                                     const int64_t* dims) {
  dist_dtype_t got_dtype = 0;
  int32_t got_rank = -1;
  int64_t got_dims[DIST_MAX_RANK];
  int32_t d;
  assert_non_null(t);
  assert_int_equal(dts_kind(t), DIST_VALUE_TENSOR);
  DT_OK(dist_tensor_dtype(t, &got_dtype));
  assert_int_equal(got_dtype, dtype);
  DT_OK(dist_tensor_rank(t, &got_rank));
  assert_int_equal(got_rank, rank);
  DT_OK(dist_tensor_shape(t, got_dims, DIST_MAX_RANK));
  for (d = 0; d < rank; ++d) {
    if (got_dims[d] != dims[d]) {
      fail_msg("dimension %d is %lld, expected %lld", (int)d, (long long)got_dims[d],
               (long long)dims[d]);
    }
  }
}

static inline const void* ddt_data(const dist_value_t* t) {
  void* data = NULL;
  DT_OK(dist_tensor_data(t, &data));
  return data;
}

static inline int64_t ddt_dim0(const dist_value_t* t) {
  int64_t dims[DIST_MAX_RANK];
  int32_t rank = 0;
  DT_OK(dist_tensor_rank(t, &rank));
  assert_true(rank >= 1);
  DT_OK(dist_tensor_shape(t, dims, DIST_MAX_RANK));
  return dims[0];
}

/* The value of an int64 scalar tensor. */
static inline int64_t ddt_i64(const dist_value_t* t) {
  int64_t v;
  ddt_expect_tensor(t, DIST_INT64, 0, NULL);
  memcpy(&v, ddt_data(t), sizeof(v));
  return v;
}

/* An int64 tensor of rank 1 with values start, start + step, ... (n of them) on device. */
static inline dist_value_t* ddt_i64_vector(int64_t start, int64_t step, int64_t n,
                                          const char* device) {
  int64_t* values = (int64_t*)malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
  dist_value_t* out;
  int64_t i;
  assert_non_null(values);
  for (i = 0; i < n; ++i) values[i] = start + i * step;
  out = dts_tensor(DIST_INT64, &n, 1, values, device);
  free(values);
  return out;
}

/* Destroys `count` values and sets them to NULL. */
static inline void ddt_destroy_all(dist_value_t** values, int32_t count) {
  int32_t i;
  for (i = 0; i < count; ++i) {
    dist_value_destroy(values[i]);
    values[i] = NULL;
  }
}

/* Checks that the iterator is at its end: DIST_OUT_OF_RANGE with all outs NULL, twice, and
 * that the optional form says has_value 0. */
static inline void ddt_expect_end(dist_iterator_t* it, int32_t count) {
  dist_value_t* outs[8];
  int32_t i, round, has_value = 7;
  assert_true(count <= 8);
  for (round = 0; round < 2; ++round) {
    for (i = 0; i < count; ++i) outs[i] = (dist_value_t*)DT_SENTINEL_PTR;
    DT_ERR(dist_iterator_get_next(it, outs, count), DIST_OUT_OF_RANGE, NULL, NULL);
    for (i = 0; i < count; ++i) assert_null(outs[i]);
  }
  for (i = 0; i < count; ++i) outs[i] = (dist_value_t*)DT_SENTINEL_PTR;
  DT_OK(dist_iterator_get_next_as_optional(it, outs, count, &has_value));
  assert_int_equal(has_value, 0);
  for (i = 0; i < count; ++i) assert_null(outs[i]);
}

/* Reads every element of a one-component dataset of int64 scalars into `out` (capacity
 * entries); checks the end; returns the number of elements. */
static inline int64_t ddt_collect_i64(const dist_dataset_t* dataset, int64_t* out,
                                      int64_t capacity) {
  dist_iterator_t* it = NULL;
  dist_value_t* value = NULL;
  int64_t n = 0;
  dist_status_t status;
  DT_OK(dist_dataset_make_iterator(dataset, &it));
  assert_non_null(it);
  for (;;) {
    status = dist_iterator_get_next(it, &value, 1);
    if (status == DIST_OUT_OF_RANGE) break;
    if (!dt_check_ok(status, "dist_iterator_get_next")) {
      dist_iterator_destroy(it);
      fail();
    }
    if (n >= capacity) {
      dist_value_destroy(value);
      dist_iterator_destroy(it);
      fail_msg("more than %lld elements", (long long)capacity);
    }
    out[n++] = ddt_i64(value);
    dist_value_destroy(value);
    value = NULL;
  }
  ddt_expect_end(it, 1);
  dist_iterator_destroy(it);
  return n;
}

/* Asserts that `got` (n_got values) equals `expected` (n_expected values). */
static inline void ddt_expect_i64s(const int64_t* got, int64_t n_got, const int64_t* expected,
                                   int64_t n_expected) {
  int64_t i;
  if (n_got != n_expected) {
    fail_msg("%lld elements, expected %lld", (long long)n_got, (long long)n_expected);
  }
  for (i = 0; i < n_got; ++i) {
    if (got[i] != expected[i]) {
      fail_msg("element %lld is %lld, expected %lld", (long long)i, (long long)got[i],
               (long long)expected[i]);
    }
  }
}

/* A range dataset (checks the call). */
static inline dist_dataset_t* ddt_range(int64_t start, int64_t stop, int64_t step) {
  dist_dataset_t* ds = NULL;
  DT_OK(dist_dataset_range(start, stop, step, &ds));
  assert_non_null(ds);
  return ds;
}

/* A counter of free_fn calls: ddt_count_free takes a ddt_free_counter, or a struct whose
 * first member is one. */
typedef struct {
  int calls;
} ddt_free_counter;

static inline void ddt_count_free(void* user_data) {
  ((ddt_free_counter*)user_data)->calls += 1;
}

/* 1 when `message` contains the decimal representation of `number` as a whole number (not
 * as part of a longer run of digits). */
static inline int ddt_message_has_number(const char* message, long long number) {
  char text[32];
  const char* p = message;
  size_t n;
  snprintf(text, sizeof(text), "%lld", number);
  n = strlen(text);
  while ((p = strstr(p, text)) != NULL) {
    const int digit_before = p > message && p[-1] >= '0' && p[-1] <= '9';
    const int digit_after = p[n] >= '0' && p[n] <= '9';
    if (!digit_before && !digit_after) return 1;
    ++p;
  }
  return 0;
}


/* Checks that a uint8 tensor of rank 1 holds exactly `size` bytes equal to `expected`. */
static inline void ddt_expect_bytes(const dist_value_t* t, const void* expected, size_t size) {
  const int64_t dims[1] = {(int64_t)size};
  ddt_expect_tensor(t, DIST_UINT8, 1, dims);
  if (size > 0 && memcmp(ddt_data(t), expected, size) != 0) {
    fail_msg("the %d bytes differ from the expected ones", (int)size);
  }
}

/* An error that the library may report when the dataset is made or at a later get_next
 * (a missing or malformed file): when `create_status` is not OK it must be c1 or c2 with a
 * message containing `needle`; otherwise `dataset` (count components) is iterated until a
 * call fails, which must fail the same way. Returns the number of elements read before
 * the error. Destroys the dataset. */
static inline int64_t ddt_expect_pipeline_error(dist_status_t create_status,
                                                dist_dataset_t* dataset, int32_t count,
                                                dist_status_t c1, dist_status_t c2,
                                                const char* needle) {
  dist_iterator_t* it = NULL;
  dist_value_t* outs[8];
  dist_status_t status = create_status;
  int64_t good = 0;
  assert_true(count <= 8);
  if (status == DIST_OK) {
    DT_OK(dist_dataset_make_iterator(dataset, &it));
    for (;;) {
      status = dist_iterator_get_next(it, outs, count);
      if (status != DIST_OK) break;
      ddt_destroy_all(outs, count);
      ++good;
      if (good > 100000) fail_msg("the pipeline never failed");
    }
    {
      int32_t i;
      for (i = 0; i < count; ++i) assert_null(outs[i]);
    }
  } else {
    assert_null(dataset);
  }
  if (!dt_check_error(status, c1, c2, NULL, needle, "the failing pipeline")) {
    dist_iterator_destroy(it);
    dist_dataset_destroy(dataset);
    fail();
  }
  /* The iterator stays destroyable (and keeps failing or ending, never crashing). */
  if (it != NULL) {
    status = dist_iterator_get_next(it, outs, count);
    if (status == DIST_OK) ddt_destroy_all(outs, count);
  }
  dist_iterator_destroy(it);
  dist_dataset_destroy(dataset);
  return good;
}

#endif /* DIST_TESTS_C_DIST_DATASET_TEST_H_ */
