/* Helpers for the tests of strategy.h, context.h, variable.h and cross_device_ops.h.
 * Only the public headers are used.
 *
 * Replica functions run on library threads, where cmocka must not be called: they check
 * with RCHECK / RCALL, which record the first failure of each replica in a dts_errors and
 * make the replica function return DIST_INTERNAL. The main thread then calls
 * dts_check_errors (DTS_RUN_OK does both around dist_strategy_run).
 *
 * Every multi-replica strategy made here has a timeout (DTS_TIMEOUT_MS), so a test that goes
 * wrong fails with DIST_DEADLINE_EXCEEDED instead of hanging. */
#ifndef DIST_TESTS_C_DIST_STRATEGY_TEST_H_
#define DIST_TESTS_C_DIST_STRATEGY_TEST_H_

#include "dist_test.h"

#define DTS_NUM_CPUS 4
#define DTS_MAX_REPLICAS 8
#define DTS_TIMEOUT_MS 20000

/* ---- Errors recorded on replica threads ---- */

typedef struct {
  char message[DTS_MAX_REPLICAS][700];
} dts_errors;

static inline void dts_errors_clear(dts_errors* errors) { memset(errors, 0, sizeof(*errors)); }

static inline void dts_record(dts_errors* errors, int32_t replica, int line, const char* format,
                              ...) {
  va_list args;
  char text[600];
  int slot = replica < 0 || replica >= DTS_MAX_REPLICAS ? 0 : (int)replica;
  if (errors->message[slot][0] != '\0') return; /* keep the first failure */
  va_start(args, format);
  vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  snprintf(errors->message[slot], sizeof(errors->message[slot]), "line %d: %s", line, text);
}

/* Fails the current test when any replica recorded a failure. */
static inline void dts_check_errors(const dts_errors* errors, int32_t num_replicas) {
  int32_t r;
  int failed = 0;
  for (r = 0; r < num_replicas && r < DTS_MAX_REPLICAS; ++r) {
    if (errors->message[r][0] != '\0') {
      print_error("replica %d: %s\n", (int)r, errors->message[r]);
      failed = 1;
    }
  }
  if (failed) fail();
}

/* In a replica function (returning dist_status_t): checks cond, else records and fails. */
#define RCHECK(errors, replica, cond, ...)                      \
  do {                                                          \
    if (!(cond)) {                                              \
      dts_record((errors), (replica), __LINE__, __VA_ARGS__);   \
      return DIST_INTERNAL;                                     \
    }                                                           \
  } while (0)

/* In a replica function: expr must return DIST_OK. */
#define RCALL(errors, replica, expr)                                                        \
  do {                                                                                      \
    dist_status_t rcall_status_ = (expr);                                                   \
    if (rcall_status_ != DIST_OK) {                                                         \
      dts_record((errors), (replica), __LINE__, "%s returned %s: \"%s\"", #expr,            \
                 dist_status_name(rcall_status_), dist_last_error_message());               \
      return DIST_INTERNAL;                                                                 \
    }                                                                                       \
  } while (0)

/* In a replica function: expr must return `code` with a message containing `needle` (may
 * be NULL). */
#define RCHECK_ERR(errors, replica, expr, code, needle)                                       \
  do {                                                                                        \
    dist_status_t rerr_status_ = (expr);                                                      \
    const char* rerr_needle_ = (needle);                                                      \
    if (rerr_status_ != (code)) {                                                             \
      dts_record((errors), (replica), __LINE__, "%s returned %s, expected %s: \"%s\"", #expr, \
                 dist_status_name(rerr_status_), dist_status_name(code),                      \
                 dist_last_error_message());                                                  \
      return DIST_INTERNAL;                                                                   \
    }                                                                                         \
    if (rerr_needle_ != NULL && strstr(dist_last_error_message(), rerr_needle_) == NULL) {    \
      dts_record((errors), (replica), __LINE__, "%s: message \"%s\" does not contain \"%s\"", \
                 #expr, dist_last_error_message(), rerr_needle_);                             \
      return DIST_INTERNAL;                                                                   \
    }                                                                                         \
  } while (0)

/* Runs expr (a dist_strategy_run call), reports the replicas' recorded failures, then
 * checks that expr returned DIST_OK and cleared the message. */
#define DTS_RUN_OK(errors, num_replicas, expr)          \
  do {                                                  \
    dist_status_t dts_run_status_;                      \
    dt_leave_error();                                   \
    dts_run_status_ = (expr);                           \
    dts_check_errors((errors), (num_replicas));         \
    if (!dt_check_ok(dts_run_status_, #expr)) fail();   \
  } while (0)

/* Discards a status on purpose (a (void) cast does not silence warn_unused_result). */
static inline void dts_ignore(dist_status_t status) { (void)status; }

/* ---- Strategies ---- */

static inline void dts_cpu_name(int index, char* buffer, size_t size) {
  snprintf(buffer, size, "CPU:%d", index);
}

/* A MirroredStrategy over CPU:0 ... CPU:n-1 with `ops` (may be NULL) and the test timeout. */
static inline dist_strategy_t* dts_mirrored_with(int n, const dist_cross_device_ops_t* ops) {
  char names[DTS_MAX_REPLICAS][16];
  const char* devices[DTS_MAX_REPLICAS];
  dist_strategy_t* strategy = NULL;
  int i;
  assert_true(n >= 1 && n <= DTS_MAX_REPLICAS);
  for (i = 0; i < n; ++i) {
    dts_cpu_name(i, names[i], sizeof(names[i]));
    devices[i] = names[i];
  }
  DT_OK(dist_strategy_create_mirrored(devices, n, ops, &strategy));
  assert_non_null(strategy);
  DT_OK(dist_strategy_set_timeout_ms(strategy, DTS_TIMEOUT_MS));
  return strategy;
}

static inline dist_strategy_t* dts_mirrored(int n) { return dts_mirrored_with(n, NULL); }

/* A CentralStorageStrategy computing on CPU:0 ... CPU:n-1 with `parameter_device`. */
static inline dist_strategy_t* dts_central_storage(int n, const char* parameter_device) {
  char names[DTS_MAX_REPLICAS][16];
  const char* devices[DTS_MAX_REPLICAS];
  dist_strategy_t* strategy = NULL;
  int i;
  for (i = 0; i < n; ++i) {
    dts_cpu_name(i, names[i], sizeof(names[i]));
    devices[i] = names[i];
  }
  DT_OK(dist_strategy_create_central_storage(devices, n, parameter_device, &strategy));
  assert_non_null(strategy);
  DT_OK(dist_strategy_set_timeout_ms(strategy, DTS_TIMEOUT_MS));
  return strategy;
}

/* A ParameterServerStrategy in local mode (no cluster: call with TF_CONFIG unset) with
 * `replicas` replicas and placement `options` (may be NULL). */
static inline dist_strategy_t* dts_local_parameter_server(int32_t replicas,
                                                          const dist_parameter_server_options_t* options) {
  dist_communication_options_t* comm = NULL;
  dist_strategy_t* s = NULL;
  DT_OK(dist_communication_options_create(&comm));
  DT_OK(dist_communication_options_set_replicas_per_worker(comm, replicas));
  DT_OK(dist_communication_options_set_timeout_ms(comm, DTS_TIMEOUT_MS));
  DT_OK(dist_strategy_create_parameter_server(NULL, comm, options, &s));
  dist_communication_options_destroy(comm);
  assert_non_null(s);
  return s;
}

static inline dist_strategy_t* dts_one_device(const char* device) {
  dist_strategy_t* strategy = NULL;
  DT_OK(dist_strategy_create_one_device(device, &strategy));
  assert_non_null(strategy);
  DT_OK(dist_strategy_set_timeout_ms(strategy, DTS_TIMEOUT_MS));
  return strategy;
}

static inline int32_t dts_num_replicas(const dist_strategy_t* strategy) {
  int32_t n = 0;
  DT_OK(dist_strategy_num_replicas_in_sync(strategy, &n));
  return n;
}

/* ---- Tensors and values (main thread) ---- */

static inline dist_value_t* dts_tensor(dist_dtype_t dtype, const int64_t* dims, int32_t rank,
                                       const void* data, const char* device) {
  size_t element = 0;
  int64_t count = 1;
  int32_t d;
  dist_value_t* out = NULL;
  DT_OK(dist_dtype_size(dtype, &element));
  for (d = 0; d < rank; ++d) count *= dims[d];
  DT_OK(dist_tensor_create(dtype, dims, rank, count == 0 ? NULL : data,
                           count == 0 ? 0 : (size_t)count * element, device, &out));
  assert_non_null(out);
  return out;
}

static inline dist_value_t* dts_f32(const float* values, int64_t n, const char* device) {
  return dts_tensor(DIST_FLOAT32, &n, 1, values, device);
}

static inline dist_value_t* dts_f32_scalar(float value, const char* device) {
  return dts_tensor(DIST_FLOAT32, NULL, 0, &value, device);
}

static inline dist_value_kind_t dts_kind(const dist_value_t* value) {
  dist_value_kind_t kind = 0;
  DT_OK(dist_value_kind(value, &kind));
  return kind;
}

static inline int32_t dts_num_components(const dist_value_t* value) {
  int32_t n = -1;
  DT_OK(dist_value_num_components(value, &n));
  return n;
}

static inline dist_value_t* dts_component(const dist_value_t* value, int32_t index) {
  dist_value_t* out = NULL;
  DT_OK(dist_value_component(value, index, &out));
  assert_non_null(out);
  return out;
}

static inline const char* dts_device(const dist_value_t* tensor) {
  const char* device = NULL;
  DT_OK(dist_tensor_device(tensor, &device));
  assert_non_null(device);
  return device;
}

/* Checks that `tensor` is a float32 tensor of `n` elements (rank 0 when n is -1) and copies
 * its elements into `out`. */
static inline void dts_read_f32(const dist_value_t* tensor, float* out, int64_t n) {
  dist_dtype_t dtype = 0;
  int64_t count = -1;
  int32_t rank = -1;
  void* data = NULL;
  assert_int_equal(dts_kind(tensor), DIST_VALUE_TENSOR);
  DT_OK(dist_tensor_dtype(tensor, &dtype));
  assert_int_equal(dtype, DIST_FLOAT32);
  DT_OK(dist_tensor_rank(tensor, &rank));
  DT_OK(dist_tensor_num_elements(tensor, &count));
  if (n < 0) {
    assert_int_equal(rank, 0);
    n = 1;
  }
  assert_int_equal(count, n);
  DT_OK(dist_tensor_data(tensor, &data));
  memcpy(out, data, (size_t)n * sizeof(float));
}

static inline float dts_scalar_f32(const dist_value_t* tensor) {
  float value = 0.0f;
  dts_read_f32(tensor, &value, -1);
  return value;
}

/* Asserts the float32 tensor holds exactly `expected` (n elements; rank 0 when n is -1). */
static inline void dts_expect_f32(const dist_value_t* tensor, const float* expected, int64_t n) {
  float got[64];
  int64_t i, count = n < 0 ? 1 : n;
  assert_true(count <= 64);
  dts_read_f32(tensor, got, n);
  for (i = 0; i < count; ++i) {
    if (got[i] != expected[i]) {
      fail_msg("element %d is %.9g, expected %.9g", (int)i, (double)got[i], (double)expected[i]);
    }
  }
}

/* Reads a variable in the current context and checks its float32 contents. */
/* A new float32 variable of `n` elements created in the strategy's scope. */
static inline dist_value_t* dts_variable_f32(dist_strategy_t* s, const float* values, int64_t n,
                                             dist_variable_aggregation_t aggregation,
                                             const char* name) {
  dist_value_t* init = dts_f32(values, n, NULL);
  dist_value_t* v = NULL;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(init, DIST_SYNC_AUTO, aggregation, name, &v));
  DT_OK(dist_strategy_scope_exit(s));
  dist_value_destroy(init);
  assert_non_null(v);
  return v;
}

static inline void dts_expect_variable_f32(const dist_value_t* variable, const float* expected,
                                           int64_t n) {
  dist_value_t* read = NULL;
  DT_OK(dist_variable_read(variable, &read));
  dts_expect_f32(read, expected, n);
  dist_value_destroy(read);
}

/* Checks every component (copy) of a variable or distributed value against `expected`. */
static inline void dts_expect_components_f32(const dist_value_t* value, const float* expected,
                                             int64_t n) {
  int32_t i, count = dts_num_components(value);
  for (i = 0; i < count; ++i) {
    dist_value_t* component = dts_component(value, i);
    if (dts_kind(component) == DIST_VALUE_TENSOR) {
      dts_expect_f32(component, expected, n);
    } else {
      dts_expect_variable_f32(component, expected, n);
    }
    dist_value_destroy(component);
  }
}

/* A PerReplica value whose component i is the float32 vector values[i*n ... i*n+n-1] on
 * CPU:i (n = -1: scalars). */
static inline dist_value_t* dts_per_replica_f32(const float* values, int32_t count, int64_t n) {
  dist_value_t* parts[DTS_MAX_REPLICAS];
  dist_value_t* out = NULL;
  char device[16];
  int32_t i;
  assert_true(count <= DTS_MAX_REPLICAS);
  for (i = 0; i < count; ++i) {
    dts_cpu_name(i, device, sizeof(device));
    parts[i] = n < 0 ? dts_f32_scalar(values[i], device) : dts_f32(values + i * n, n, device);
  }
  DT_OK(dist_value_create_per_replica((const dist_value_t* const*)parts, count, &out));
  for (i = 0; i < count; ++i) dist_value_destroy(parts[i]);
  return out;
}

/* ---- Tensors in replica functions (no cmocka) ---- */

/* A float32 tensor (rank 1 of n, or a scalar when n is -1) on `device`, or NULL. */
static inline dist_value_t* dts_make_f32(const float* values, int64_t n, const char* device) {
  dist_value_t* out = NULL;
  if (n < 0) {
    if (dist_tensor_create(DIST_FLOAT32, NULL, 0, values, sizeof(float), device, &out) != DIST_OK)
      return NULL;
  } else if (dist_tensor_create(DIST_FLOAT32, &n, 1, values, (size_t)n * sizeof(float), device,
                                &out) != DIST_OK) {
    return NULL;
  }
  return out;
}

/* Copies up to `capacity` float32 elements of `tensor` into `out`; returns the element count,
 * or -1 when it is not a float32 tensor. */
static inline int64_t dts_get_f32(const dist_value_t* tensor, float* out, int64_t capacity) {
  dist_dtype_t dtype = 0;
  int64_t count = 0;
  void* data = NULL;
  if (tensor == NULL) return -1;
  if (dist_tensor_dtype(tensor, &dtype) != DIST_OK || dtype != DIST_FLOAT32) return -1;
  if (dist_tensor_num_elements(tensor, &count) != DIST_OK) return -1;
  if (dist_tensor_data(tensor, &data) != DIST_OK) return -1;
  if (count > capacity) return -1;
  if (count > 0) memcpy(out, data, (size_t)count * sizeof(float));
  return count;
}

#endif /* DIST_TESTS_C_DIST_STRATEGY_TEST_H_ */
