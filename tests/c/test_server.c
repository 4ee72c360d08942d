/* Tests for server.h: options, a one-task cluster (the chief alone), a chief and a worker
 * in one process (key-value store and barrier across them, a clean stop that is no
 * failure, the chief's stop seen by the worker), timeouts that name the key and the
 * missing task, the store's cap, a live task that a second server cannot replace, and
 * misuse (NULL arguments, bad timeouts, no current task, a port in use, a chief that
 * never starts). Servers listen on free loopback ports. */
#define _POSIX_C_SOURCE 200112L

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dist_ports_test.h"

enum { kLongMs = 30000 };

static dist_server_t* start(const int32_t* ports, int n, int index, const dist_server_options_t* options) {
  dist_cluster_t* cluster = dt_loopback_workers(ports, n, index);
  dist_server_t* server = NULL;
  DT_OK(dist_server_create(cluster, options, &server));
  dist_cluster_destroy(cluster); /* the server keeps its own copy */
  assert_non_null(server);
  return server;
}

static void sleep_ms(long ms) {
  struct timespec t;
  t.tv_sec = ms / 1000;
  t.tv_nsec = (ms % 1000) * 1000000L;
  nanosleep(&t, NULL);
}

/* Checks that `value` is a 1-D uint8 tensor holding `size` bytes equal to `expected`. */
static void check_bytes(const dist_value_t* value, const void* expected, size_t size) {
  dist_dtype_t dtype = 0;
  int32_t rank = -1;
  int64_t dims[1] = {-1};
  size_t byte_size = 1;
  void* data = NULL;
  DT_OK(dist_tensor_dtype(value, &dtype));
  assert_int_equal(dtype, DIST_UINT8);
  DT_OK(dist_tensor_rank(value, &rank));
  assert_int_equal(rank, 1);
  DT_OK(dist_tensor_shape(value, dims, 1));
  assert_int_equal(dims[0], (int64_t)size);
  DT_OK(dist_tensor_byte_size(value, &byte_size));
  assert_int_equal(byte_size, size);
  if (size > 0) {
    DT_OK(dist_tensor_data(value, &data));
    assert_memory_equal(data, expected, size);
  }
}

static void test_options(void** state) {
  dist_server_options_t* options = (dist_server_options_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_server_options_create(NULL), DIST_INVALID_ARGUMENT, "dist_server_options_create", "out");
  DT_OK(dist_server_options_create(&options));
  assert_non_null(options);
  DT_OK(dist_server_options_set_startup_timeout_ms(options, 1));
  DT_OK(dist_server_options_set_startup_timeout_ms(options, 86400000));
  DT_OK(dist_server_options_set_heartbeat_interval_ms(options, 100));
  DT_OK(dist_server_options_set_heartbeat_timeout_ms(options, 5000));
  DT_ERR(dist_server_options_set_startup_timeout_ms(options, 0), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_startup_timeout_ms", "timeout_ms is 0 ms");
  DT_ERR(dist_server_options_set_startup_timeout_ms(options, 86400001), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_startup_timeout_ms", "timeout_ms");
  DT_ERR(dist_server_options_set_heartbeat_interval_ms(options, -1), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_heartbeat_interval_ms", "interval_ms is -1 ms");
  DT_ERR(dist_server_options_set_heartbeat_timeout_ms(options, INT64_MIN), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_heartbeat_timeout_ms", "timeout_ms");
  DT_ERR(dist_server_options_set_startup_timeout_ms(NULL, 5), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_startup_timeout_ms", "options");
  DT_ERR(dist_server_options_set_heartbeat_interval_ms(NULL, 5), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_heartbeat_interval_ms", "options");
  DT_ERR(dist_server_options_set_heartbeat_timeout_ms(NULL, 5), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_heartbeat_timeout_ms", "options");
  dist_server_options_destroy(options);
  dist_server_options_destroy(NULL);
}

static void test_chief_alone(void** state) {
  int32_t ports[1];
  int32_t port = 0;
  dist_server_t* server = NULL;
  dist_value_t* value = NULL;
  static const unsigned char bytes[5] = {0, 1, 2, 255, 0};
  (void)state;
  dt_free_ports(ports, 1);
  server = start(ports, 1, 0, NULL);
  DT_OK(dist_server_port(server, &port));
  assert_int_equal(port, ports[0]);

  DT_OK(dist_server_key_value_set(server, "key", bytes, sizeof(bytes)));
  DT_OK(dist_server_key_value_get(server, "key", 0, &value));
  check_bytes(value, bytes, sizeof(bytes));
  dist_value_destroy(value);
  DT_OK(dist_server_key_value_set(server, "empty", NULL, 0));
  /* Sizes no value can have fail before a byte is read, up to SIZE_MAX (issue 13, item 6). */
  DT_ERR(dist_server_key_value_set(server, "huge", bytes, SIZE_MAX), DIST_INVALID_ARGUMENT,
         "dist_server_key_value_set", "at most");
  DT_ERR(dist_server_key_value_set(server, "huge", bytes, (size_t)PTRDIFF_MAX + 1), DIST_INVALID_ARGUMENT,
         "dist_server_key_value_set", "at most");
  DT_OK(dist_server_key_value_get(server, "empty", 0, &value));
  check_bytes(value, NULL, 0);
  dist_value_destroy(value);

  DT_OK(dist_server_barrier(server, "alone", 0)); /* the only worker */
  DT_OK(dist_server_peer_health(server));

  DT_OK(dist_server_stop(server));
  DT_OK(dist_server_stop(server));
  DT_OK(dist_server_join(server));
  DT_ERR(dist_server_key_value_set(server, "key", bytes, 1), DIST_UNAVAILABLE, "dist_server_key_value_set",
         "shutting down");
  DT_OK(dist_server_port(server, &port)); /* still answers */
  dist_server_destroy(server);
  dist_server_destroy(NULL);
}

typedef struct {
  dist_server_t* server;
  const char* name;
  int64_t timeout_ms;
  dist_status_t status;
} barrier_call;

static void* run_barrier(void* arg) {
  barrier_call* call = (barrier_call*)arg;
  call->status = dist_server_barrier(call->server, call->name, call->timeout_ms);
  return NULL;
}

static void test_chief_and_worker(void** state) {
  int32_t ports[2];
  dist_server_t* chief = NULL;
  dist_server_t* worker = NULL;
  dist_server_options_t* options = NULL;
  dist_value_t* value = NULL;
  barrier_call call;
  pthread_t thread;
  int waited;
  (void)state;
  dt_free_ports(ports, 2);
  DT_OK(dist_server_options_create(&options));
  DT_OK(dist_server_options_set_heartbeat_interval_ms(options, 100));
  DT_OK(dist_server_options_set_heartbeat_timeout_ms(options, 20000));
  chief = start(ports, 2, 0, options);
  worker = start(ports, 2, 1, options);
  dist_server_options_destroy(options);

  DT_OK(dist_server_key_value_set(worker, "from/worker", "abc", 3));
  DT_OK(dist_server_key_value_get(chief, "from/worker", kLongMs, &value));
  check_bytes(value, "abc", 3);
  dist_value_destroy(value);

  call.server = chief;
  call.name = "together";
  call.timeout_ms = kLongMs;
  call.status = DIST_UNKNOWN;
  assert_int_equal(pthread_create(&thread, NULL, run_barrier, &call), 0);
  DT_OK(dist_server_barrier(worker, "together", kLongMs));
  assert_int_equal(pthread_join(thread, NULL), 0);
  assert_int_equal(call.status, DIST_OK);

  DT_OK(dist_server_peer_health(chief));
  DT_OK(dist_server_peer_health(worker));

  /* The chief's stop: the worker learns that the coordination service is gone. */
  DT_OK(dist_server_stop(chief));
  for (waited = 0; waited < kLongMs && dist_server_peer_health(worker) == DIST_OK; waited += 10) sleep_ms(10);
  DT_ERR(dist_server_peer_health(worker), DIST_UNAVAILABLE, "dist_server_peer_health", "worker:0");
  dist_server_destroy(worker);
  dist_server_destroy(chief);
}

/* The store's cap on bytes (64 MiB of keys and values): values of 4,000,000 bytes under
 * two-byte keys take 4,000,002 each, so 16 fit (64,000,032) and the 17th does not. */
static void test_store_cap(void** state) {
  enum { kValueBytes = 4000000, kFit = 16 };
  int32_t ports[1];
  dist_server_t* server = NULL;
  dist_value_t* value = NULL;
  char key[8];
  char* bytes = calloc(kValueBytes, 1);
  int i;
  (void)state;
  assert_non_null(bytes);
  dt_free_ports(ports, 1);
  server = start(ports, 1, 0, NULL);
  for (i = 0; i < kFit; ++i) {
    snprintf(key, sizeof key, "v%c", 'a' + i);
    DT_OK(dist_server_key_value_set(server, key, bytes, kValueBytes));
  }
  DT_ERR(dist_server_key_value_set(server, "vz", bytes, kValueBytes), DIST_RESOURCE_EXHAUSTED,
         "dist_server_key_value_set", "max_store_bytes");
  DT_ERR(dist_server_key_value_get(server, "vz", 0, &value), DIST_DEADLINE_EXCEEDED, "dist_server_key_value_get",
         "'vz'");
  /* Shrinking one value makes room. */
  DT_OK(dist_server_key_value_set(server, "va", "small", 5));
  DT_OK(dist_server_key_value_set(server, "vz", bytes, kValueBytes));
  DT_OK(dist_server_key_value_get(server, "va", 0, &value));
  check_bytes(value, "small", 5);
  dist_value_destroy(value);
  dist_server_destroy(server);
  free(bytes);
}

/* A second server for a live task (another address for worker:1 in its cluster spec, the
 * chief's the same) is refused, and the live one carries on. */
static void test_a_live_task_is_never_replaced(void** state) {
  int32_t ports[3];
  int32_t impostor_ports[2];
  dist_server_t* chief = NULL;
  dist_server_t* worker = NULL;
  dist_cluster_t* cluster = NULL;
  dist_server_t* second = (dist_server_t*)DT_SENTINEL_PTR;
  (void)state;
  dt_free_ports(ports, 3);
  chief = start(ports, 2, 0, NULL);
  worker = start(ports, 2, 1, NULL);
  impostor_ports[0] = ports[0];
  impostor_ports[1] = ports[2];
  cluster = dt_loopback_workers(impostor_ports, 2, 1);
  DT_ERR(dist_server_create(cluster, NULL, &second), DIST_ALREADY_EXISTS, "dist_server_create",
         "already registered by a live incarnation");
  assert_null(second);
  dist_cluster_destroy(cluster);
  DT_OK(dist_server_peer_health(chief));
  DT_OK(dist_server_peer_health(worker));
  DT_OK(dist_server_key_value_set(worker, "still", "here", 4));
  dist_server_destroy(worker);
  dist_server_destroy(chief);
}

static void test_clean_stop_is_not_a_failure(void** state) {
  int32_t ports[2];
  dist_server_t* chief = NULL;
  dist_server_t* worker = NULL;
  (void)state;
  dt_free_ports(ports, 2);
  chief = start(ports, 2, 0, NULL);
  worker = start(ports, 2, 1, NULL);
  dist_server_destroy(worker); /* stops it cleanly */
  sleep_ms(200);
  DT_OK(dist_server_peer_health(chief));
  dist_server_destroy(chief);
}

static void test_timeouts_name_what_is_missing(void** state) {
  int32_t ports[3];
  dist_server_t* chief = NULL;
  dist_value_t* value = (dist_value_t*)DT_SENTINEL_PTR;
  (void)state;
  dt_free_ports(ports, 3);
  chief = start(ports, 3, 0, NULL); /* workers 1 and 2 never start */
  DT_ERR(dist_server_key_value_get(chief, "missing", 20, &value), DIST_DEADLINE_EXCEEDED,
         "dist_server_key_value_get", "key 'missing' was not set within 20 ms");
  assert_null(value);
  DT_ERR(dist_server_barrier(chief, "startup", 50), DIST_DEADLINE_EXCEEDED, "dist_server_barrier",
         "barrier 'startup' timed out after 50 ms: tasks worker:1, worker:2 did not arrive");
  /* A failed barrier stays failed. */
  DT_ERR(dist_server_barrier(chief, "startup", kLongMs), DIST_DEADLINE_EXCEEDED, "dist_server_barrier",
         "worker:1, worker:2");
  dist_server_destroy(chief);
}

static void test_misuse(void** state) {
  int32_t ports[2];
  int32_t port = 7;
  dist_cluster_t* no_task = NULL;
  dist_server_t* server = (dist_server_t*)DT_SENTINEL_PTR;
  dist_server_t* chief = NULL;
  dist_value_t* value = (dist_value_t*)DT_SENTINEL_PTR;
  dist_server_options_t* options = NULL;
  dist_cluster_t* cluster = NULL;
  (void)state;
  dt_free_ports(ports, 2);

  DT_ERR(dist_server_create(NULL, NULL, &server), DIST_INVALID_ARGUMENT, "dist_server_create", "cluster");
  assert_null(server);
  no_task = dt_loopback_workers(ports, 1, -1);
  DT_ERR(dist_server_create(no_task, NULL, NULL), DIST_INVALID_ARGUMENT, "dist_server_create", "out");
  server = (dist_server_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_server_create(no_task, NULL, &server), DIST_FAILED_PRECONDITION, "dist_server_create",
         "no current task");
  assert_null(server);
  dist_cluster_destroy(no_task);

  /* A heartbeat interval that is not below the timeout. */
  DT_OK(dist_server_options_create(&options));
  DT_OK(dist_server_options_set_heartbeat_interval_ms(options, 2000));
  DT_OK(dist_server_options_set_heartbeat_timeout_ms(options, 1000));
  cluster = dt_loopback_workers(ports, 1, 0);
  DT_ERR(dist_server_create(cluster, options, &server), DIST_INVALID_ARGUMENT, "dist_server_create",
         "heartbeat_timeout_ms (1000) must be longer than heartbeat_interval_ms (2000)");
  dist_cluster_destroy(cluster);
  dist_server_options_destroy(options);

  DT_ERR(dist_server_port(NULL, &port), DIST_INVALID_ARGUMENT, "dist_server_port", "server");
  assert_int_equal(port, 0);
  DT_ERR(dist_server_stop(NULL), DIST_INVALID_ARGUMENT, "dist_server_stop", "server");
  DT_ERR(dist_server_join(NULL), DIST_INVALID_ARGUMENT, "dist_server_join", "server");
  DT_ERR(dist_server_key_value_set(NULL, "k", "v", 1), DIST_INVALID_ARGUMENT, "dist_server_key_value_set",
         "server");
  DT_ERR(dist_server_key_value_get(NULL, "k", 0, &value), DIST_INVALID_ARGUMENT, "dist_server_key_value_get",
         "server");
  assert_null(value);
  DT_ERR(dist_server_barrier(NULL, "b", 0), DIST_INVALID_ARGUMENT, "dist_server_barrier", "server");
  DT_ERR(dist_server_peer_health(NULL), DIST_INVALID_ARGUMENT, "dist_server_peer_health", "server");

  chief = start(ports, 2, 0, NULL);
  DT_ERR(dist_server_port(chief, NULL), DIST_INVALID_ARGUMENT, "dist_server_port", "out_port");
  DT_ERR(dist_server_key_value_set(chief, NULL, "v", 1), DIST_INVALID_ARGUMENT, "dist_server_key_value_set",
         "key");
  DT_ERR(dist_server_key_value_set(chief, "k", NULL, 1), DIST_INVALID_ARGUMENT, "dist_server_key_value_set",
         "value");
  DT_ERR(dist_server_key_value_set(chief, "", "v", 1), DIST_INVALID_ARGUMENT, "dist_server_key_value_set",
         "key is empty");
  DT_ERR(dist_server_key_value_get(chief, NULL, 0, &value), DIST_INVALID_ARGUMENT, "dist_server_key_value_get",
         "key");
  DT_ERR(dist_server_key_value_get(chief, "k", -1, &value), DIST_INVALID_ARGUMENT, "dist_server_key_value_get",
         "timeout_ms is -1 ms");
  DT_ERR(dist_server_key_value_get(chief, "k", 86400001, &value), DIST_INVALID_ARGUMENT,
         "dist_server_key_value_get", "timeout_ms");
  DT_ERR(dist_server_key_value_get(chief, "k", 0, NULL), DIST_INVALID_ARGUMENT, "dist_server_key_value_get",
         "out_value");
  DT_ERR(dist_server_barrier(chief, NULL, 0), DIST_INVALID_ARGUMENT, "dist_server_barrier", "name");
  DT_ERR(dist_server_barrier(chief, "b", -5), DIST_INVALID_ARGUMENT, "dist_server_barrier", "timeout_ms");
  /* None of that changed anything. */
  DT_ERR(dist_server_key_value_get(chief, "k", 0, &value), DIST_DEADLINE_EXCEEDED, "dist_server_key_value_get",
         "'k'");
  DT_OK(dist_server_peer_health(chief));
  dist_server_destroy(chief);
}

static void test_port_in_use(void** state) {
  int32_t ports[1];
  dist_server_t* chief = NULL;
  dist_server_t* clash = (dist_server_t*)DT_SENTINEL_PTR;
  dist_cluster_t* cluster = NULL;
  (void)state;
  dt_free_ports(ports, 1);
  chief = start(ports, 1, 0, NULL);
  cluster = dt_loopback_workers(ports, 1, 0); /* a second chief on the same address */
  DT_ERR(dist_server_create(cluster, NULL, &clash), DIST_UNAVAILABLE, "dist_server_create",
         "Address already in use");
  assert_null(clash);
  dist_cluster_destroy(cluster);
  dist_server_destroy(chief);
}

static void test_chief_never_starts(void** state) {
  int32_t ports[2];
  dist_server_options_t* options = NULL;
  dist_cluster_t* cluster = NULL;
  dist_server_t* worker = (dist_server_t*)DT_SENTINEL_PTR;
  char expected[96];
  (void)state;
  dt_free_ports(ports, 2);
  DT_OK(dist_server_options_create(&options));
  DT_OK(dist_server_options_set_startup_timeout_ms(options, 200));
  cluster = dt_loopback_workers(ports, 2, 1);
  snprintf(expected, sizeof(expected), "chief task worker:0 at 127.0.0.1:%d within 200 ms", (int)ports[0]);
  DT_ERR(dist_server_create(cluster, options, &worker), DIST_UNAVAILABLE, "dist_server_create", expected);
  assert_null(worker);
  dist_cluster_destroy(cluster);
  dist_server_options_destroy(options);
}

/* The job token: setters check the token (and change nothing when it is bad); a chief
 * with a token refuses a worker with another one or none (DIST_UNAUTHENTICATED naming the
 * rule), and a worker with the same token joins. */
static void test_job_token(void** state) {
  dist_server_options_t* options = NULL;
  dist_server_options_t* impostor = NULL;
  dist_communication_options_t* communication = NULL;
  dist_server_t *chief, *worker = (dist_server_t*)DT_SENTINEL_PTR;
  dist_cluster_t* cluster;
  int32_t ports[2];
  (void)state;
  DT_OK(dist_server_options_create(&options));
  DT_ERR(dist_server_options_set_job_token(NULL, "0123456789abcdef"), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_job_token", "options");
  DT_ERR(dist_server_options_set_job_token(options, "too-short"), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_job_token", "token has 9 characters");
  DT_ERR(dist_server_options_set_job_token(options, "with a space 0123456789"), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_job_token", "printable ASCII without spaces");
  DT_OK(dist_server_options_set_job_token(options, NULL)); /* none: the environment's */
  DT_OK(dist_server_options_set_job_token(options, "the-job-secret-0123456789"));
  DT_ERR(dist_server_options_set_allow_unauthenticated(NULL, 1), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_allow_unauthenticated", "options");
  DT_ERR(dist_server_options_set_allow_unauthenticated(options, 2), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_allow_unauthenticated", "allow is 2: expected 0 or 1");
  DT_OK(dist_server_options_set_allow_unauthenticated(options, 0));
  DT_OK(dist_server_options_set_startup_timeout_ms(options, 20000));
  DT_OK(dist_server_options_create(&impostor));
  DT_OK(dist_server_options_set_startup_timeout_ms(impostor, 20000));
  DT_OK(dist_server_options_set_job_token(impostor, "another-job-secret-0123"));

  dt_free_ports(ports, 2);
  chief = start(ports, 2, 0, options);
  cluster = dt_loopback_workers(ports, 2, 1);
  DT_ERR(dist_server_create(cluster, impostor, &worker), DIST_UNAUTHENTICATED, "dist_server_create",
         "job token is wrong");
  assert_null(worker);
  DT_OK(dist_server_create(cluster, options, &worker));
  DT_OK(dist_server_key_value_set(worker, "k", "v", 1));
  dist_server_destroy(worker);
  dist_server_destroy(chief);
  dist_cluster_destroy(cluster);

  DT_OK(dist_communication_options_create(&communication));
  DT_ERR(dist_communication_options_set_job_token(NULL, NULL), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_job_token", "options");
  DT_ERR(dist_communication_options_set_job_token(communication, "short"), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_job_token", "job_token has 5 characters");
  DT_OK(dist_communication_options_set_job_token(communication, "the-job-secret-0123456789"));
  DT_OK(dist_communication_options_set_job_token(communication, ""));
  dist_communication_options_destroy(communication);
  dist_server_options_destroy(impostor);
  dist_server_options_destroy(options);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_options),
      cmocka_unit_test(test_job_token),
      cmocka_unit_test(test_chief_alone),
      cmocka_unit_test(test_chief_and_worker),
      cmocka_unit_test(test_clean_stop_is_not_a_failure),
      cmocka_unit_test(test_store_cap),
      cmocka_unit_test(test_a_live_task_is_never_replaced),
      cmocka_unit_test(test_timeouts_name_what_is_missing),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_port_in_use),
      cmocka_unit_test(test_chief_never_starts),
  };
  return cmocka_run_group_tests_name("server", tests, NULL, NULL);
}
