/* Shared helpers for the C API tests (cmocka). Only the public headers are used.
 *
 * DT_OK(expr)            : first leaves an error message behind, then runs expr and checks
 *                          that it returned DIST_OK and cleared the message to "".
 * DT_ERR(expr, code, fn, arg)
 *                        : checks that expr returned `code` and that
 *                          dist_last_error_message() names the function `fn` and (when
 *                          `arg` is not NULL) the argument `arg`.
 * DT_ERR2(expr, c1, c2, fn, arg)
 *                        : as DT_ERR, accepting either of two codes where the header
 *                          leaves the choice open. */
#ifndef DIST_TESTS_C_DIST_TEST_H_
#define DIST_TESTS_C_DIST_TEST_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distribute/distribute.h"

/* Leaves a non-empty error message on this thread (a malformed device name). */
static inline void dt_leave_error(void) {
  dist_device_t* device = NULL;
  dist_status_t status = dist_device_parse("not a device name", &device);
  if (status == DIST_OK) {
    dist_device_destroy(device);
    print_error("dt_leave_error: dist_device_parse(\"not a device name\") succeeded\n");
    return;
  }
  if (dist_last_error_message()[0] == '\0') {
    print_error("dt_leave_error: a failing call left an empty message\n");
  }
}

/* Returns 1 when `status` is OK and the message was cleared, else prints why and returns 0. */
static inline int dt_check_ok(dist_status_t status, const char* expr) {
  const char* message = dist_last_error_message();
  if (status != DIST_OK) {
    print_error("%s returned %s (%d), expected OK; message: \"%s\"\n", expr,
                dist_status_name(status), (int)status, message ? message : "(null)");
    return 0;
  }
  if (message == NULL) {
    print_error("%s succeeded but dist_last_error_message() is NULL\n", expr);
    return 0;
  }
  if (message[0] != '\0') {
    print_error("%s succeeded but did not clear the message: \"%s\"\n", expr, message);
    return 0;
  }
  return 1;
}

/* Returns 1 when `status` is c1 or c2 and the message names fn and arg.
 * With DIST_TEST_SHOW_MESSAGES set in the environment, prints every message checked. */
static inline int dt_check_error(dist_status_t status, dist_status_t c1, dist_status_t c2,
                                 const char* fn, const char* arg, const char* expr) {
  const char* message = dist_last_error_message();
  if (getenv("DIST_TEST_SHOW_MESSAGES") != NULL) {
    print_message("  %s -> %s: \"%s\"\n", expr, dist_status_name(status),
                  message ? message : "(null)");
  }
  if (status != c1 && status != c2) {
    if (c1 == c2) {
      print_error("%s returned %s (%d), expected %s; message: \"%s\"\n", expr,
                  dist_status_name(status), (int)status, dist_status_name(c1),
                  message ? message : "(null)");
    } else {
      print_error("%s returned %s (%d), expected %s or %s; message: \"%s\"\n", expr,
                  dist_status_name(status), (int)status, dist_status_name(c1),
                  dist_status_name(c2), message ? message : "(null)");
    }
    return 0;
  }
  if (message == NULL) {
    print_error("%s failed but dist_last_error_message() is NULL\n", expr);
    return 0;
  }
  if (fn != NULL && strstr(message, fn) == NULL) {
    print_error("%s: message \"%s\" does not name the function \"%s\"\n", expr, message, fn);
    return 0;
  }
  if (arg != NULL && strstr(message, arg) == NULL) {
    print_error("%s: message \"%s\" does not name the argument \"%s\"\n", expr, message, arg);
    return 0;
  }
  return 1;
}

#define DT_OK(expr)                                            \
  do {                                                         \
    dt_leave_error();                                          \
    if (!dt_check_ok((expr), #expr)) fail();                   \
  } while (0)

#define DT_ERR(expr, code, fn, arg)                                          \
  do {                                                                       \
    if (!dt_check_error((expr), (code), (code), (fn), (arg), #expr)) fail(); \
  } while (0)

#define DT_ERR2(expr, c1, c2, fn, arg)                                     \
  do {                                                                     \
    if (!dt_check_error((expr), (c1), (c2), (fn), (arg), #expr)) fail();   \
  } while (0)

/* Non-NULL placeholders stored in out-parameters before a call that must fail, to check
 * that the failure resets them. */
static inline void* dt_sentinel_ptr(void) {
  static char storage[16];
  return storage;
}
#define DT_SENTINEL_PTR (dt_sentinel_ptr())
#define DT_SENTINEL_STR ((const char*)"sentinel")

/* 1 when this machine has GPUs (dist_gpu_unavailable_reason gives ""), else 0. */
static inline int dt_have_gpu(void) {
  const char* reason = NULL;
  if (dist_gpu_unavailable_reason(&reason) != DIST_OK || reason == NULL) return 0;
  return reason[0] == '\0';
}

/* Skips the current test when there is no GPU, printing the reason. */
#define DT_REQUIRE_GPU()                                                   \
  do {                                                                     \
    if (!dt_have_gpu()) {                                                  \
      const char* dt_reason_ = NULL;                                       \
      if (dist_gpu_unavailable_reason(&dt_reason_) == DIST_OK) {           \
        print_message("no GPU (%s): skipped\n", dt_reason_);               \
      }                                                                    \
      skip();                                                              \
    }                                                                      \
  } while (0)

/* Counts release / deleter calls. */
typedef struct {
  int calls;
  void* last_data;
  void* last_user_data;
} dt_release_counter;

static inline void dt_count_release(void* data, void* user_data) {
  dt_release_counter* counter = (dt_release_counter*)user_data;
  counter->calls += 1;
  counter->last_data = data;
  counter->last_user_data = user_data;
}


/* The dtypes of tensor.h with the size of the C type holding one element. */
#define DT_NUM_DTYPES 10
static inline dist_dtype_t dt_dtype_at(int i) {
  static const dist_dtype_t dtypes[DT_NUM_DTYPES] = {
      DIST_FLOAT32, DIST_FLOAT64, DIST_INT32, DIST_UINT8,    DIST_INT16,
      DIST_INT8,    DIST_INT64,   DIST_BOOL,  DIST_BFLOAT16, DIST_FLOAT16};
  return dtypes[i];
}

static inline size_t dt_c_size(dist_dtype_t dtype) {
  switch (dtype) {
    case DIST_FLOAT32: return sizeof(float);
    case DIST_FLOAT64: return sizeof(double);
    case DIST_INT32: return sizeof(int32_t);
    case DIST_UINT8: return sizeof(uint8_t);
    case DIST_INT16: return sizeof(int16_t);
    case DIST_INT8: return sizeof(int8_t);
    case DIST_INT64: return sizeof(int64_t);
    case DIST_BOOL: return 1;
    case DIST_BFLOAT16: return sizeof(uint16_t);
    case DIST_FLOAT16: return sizeof(uint16_t);
    default: return 0;
  }
}

/* Fills `buffer` with `n` distinct, valid elements of `dtype` (varying with `seed`). */
static inline void dt_fill(dist_dtype_t dtype, void* buffer, size_t n, int seed) {
  size_t i;
  for (i = 0; i < n; ++i) {
    long k = (long)i + 31L * seed;
    switch (dtype) {
      case DIST_FLOAT32: ((float*)buffer)[i] = (float)k * 0.5f - 3.25f; break;
      case DIST_FLOAT64: ((double*)buffer)[i] = (double)k * 0.125 - 1e10; break;
      case DIST_INT32: ((int32_t*)buffer)[i] = (int32_t)(k * 100003L - 7); break;
      case DIST_UINT8: ((uint8_t*)buffer)[i] = (uint8_t)(k * 7 + 200); break;
      case DIST_INT16: ((int16_t*)buffer)[i] = (int16_t)(-k * 1009 + 3); break;
      case DIST_INT8: ((int8_t*)buffer)[i] = (int8_t)(k % 200 - 100); break;
      case DIST_INT64: ((int64_t*)buffer)[i] = (int64_t)k * ((int64_t)1 << 40) - 5; break;
      case DIST_BOOL: ((uint8_t*)buffer)[i] = (uint8_t)(k % 3 == 0); break;
      /* bfloat16 1.0 = 0x3F80, float16 1.0 = 0x3C00: small steps from there */
      case DIST_BFLOAT16: ((uint16_t*)buffer)[i] = (uint16_t)(0x3F80 + k); break;
      case DIST_FLOAT16: ((uint16_t*)buffer)[i] = (uint16_t)(0x3C00 + k); break;
      default: break;
    }
  }
}

/* 1 when every byte of `buffer` is zero. */
static inline int dt_all_zero(const void* buffer, size_t size) {
  size_t i;
  for (i = 0; i < size; ++i) {
    if (((const unsigned char*)buffer)[i] != 0) return 0;
  }
  return 1;
}

#endif /* DIST_TESTS_C_DIST_TEST_H_ */
