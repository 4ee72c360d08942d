/* Tests for dist_server_options_set_limit / get_limit (server.h): every limit's default as
 * server.h documents it (the memory-dependent ones worked out here from sysconf), a value
 * at each end of every range read back, values out of range and unknown limits refused
 * with nothing changed, NULL arguments, and limits that take effect in a running server:
 * the store's byte cap, a ps task's in-flight bytes below its request bytes, and the
 * handshake timeout closing a connection that never speaks. */
#define _POSIX_C_SOURCE 200112L

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "dist_ports_test.h"

enum { kLimits = 15 };

static const int64_t kGiB = INT64_C(1) << 30;

static int64_t memory_bytes(void) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  return (int64_t)pages * (int64_t)page_size;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Each limit with its documented default and range. */
struct limit_row {
  dist_server_limit_t limit;
  const char* name;
  int64_t default_value;
  int64_t min;
  int64_t max;
};

static void rows(struct limit_row* out) {
  const int64_t memory = memory_bytes();
  const struct limit_row table[kLimits] = {
      {DIST_SERVER_LIMIT_MAX_CONNECTIONS, "max_connections", 0, 0, INT64_C(1) << 20},
      {DIST_SERVER_LIMIT_MAX_CONNECTIONS_PER_PEER, "max_connections_per_peer", 0, 0, INT64_C(1) << 20},
      {DIST_SERVER_LIMIT_MAX_STREAMS_PER_CONNECTION, "max_streams_per_connection", 128, 1, INT32_MAX},
      {DIST_SERVER_LIMIT_CONNECTION_IDLE_TIMEOUT_MS, "connection_idle_timeout_ms", 120000, 1, 86400000},
      {DIST_SERVER_LIMIT_HANDSHAKE_TIMEOUT_MS, "handshake_timeout_ms", 10000, 1, 86400000},
      {DIST_SERVER_LIMIT_STREAM_IDLE_TIMEOUT_MS, "stream_idle_timeout_ms", 10000, 1, 86400000},
      {DIST_SERVER_LIMIT_MAX_MESSAGE_BYTES, "max_message_bytes", INT64_C(4) << 20, 10240, INT32_MAX},
      {DIST_SERVER_LIMIT_MAX_STORE_BYTES, "max_store_bytes", INT64_C(64) << 20, 1, INT64_MAX},
      {DIST_SERVER_LIMIT_MAX_STORE_KEYS, "max_store_keys", 65536, 1, INT64_MAX},
      {DIST_SERVER_LIMIT_MAX_BARRIERS, "max_barriers", 16384, 1, INT64_MAX},
      {DIST_SERVER_LIMIT_MAX_PENDING_WAITS, "max_pending_waits", 0, 0, 65536},
      {DIST_SERVER_LIMIT_MAX_VARIABLE_BYTES, "max_variable_bytes", min64(memory / 2, 16 * kGiB), 1, INT64_MAX},
      {DIST_SERVER_LIMIT_MAX_VARIABLES, "max_variables", INT64_C(1) << 20, 1, INT64_C(1) << 22},
      {DIST_SERVER_LIMIT_MAX_VARIABLE_REQUEST_BYTES, "max_variable_request_bytes", kGiB, 1, INT64_MAX},
      {DIST_SERVER_LIMIT_MAX_VARIABLE_INFLIGHT_BYTES, "max_variable_inflight_bytes",
       min64(max64(memory / 8, kGiB), 4 * kGiB), 1, INT64_MAX},
  };
  memcpy(out, table, sizeof(table));
}

static int64_t get(const dist_server_options_t* options, dist_server_limit_t limit) {
  int64_t value = -12345;
  DT_OK(dist_server_options_get_limit(options, limit, &value));
  return value;
}

static void test_defaults_and_ranges(void** state) {
  struct limit_row table[kLimits];
  dist_server_options_t* options = NULL;
  int i;
  (void)state;
  rows(table);
  DT_OK(dist_server_options_create(&options));
  for (i = 0; i < kLimits; ++i) {
    const struct limit_row* row = &table[i];
    print_message("%s: default %lld\n", row->name, (long long)get(options, row->limit));
    assert_int_equal(get(options, row->limit), row->default_value);
    DT_OK(dist_server_options_set_limit(options, row->limit, row->min));
    assert_int_equal(get(options, row->limit), row->min);
    DT_OK(dist_server_options_set_limit(options, row->limit, row->max));
    assert_int_equal(get(options, row->limit), row->max);
    /* Out of range: refused naming the field and the value; the last value stays. */
    {
      char expected[96];
      snprintf(expected, sizeof expected, "%s (limit %d) cannot be %lld", row->name, (int)row->limit,
               (long long)(row->min - 1));
      DT_ERR(dist_server_options_set_limit(options, row->limit, row->min - 1), DIST_INVALID_ARGUMENT,
             "dist_server_options_set_limit", expected);
      if (row->max < INT64_MAX) {
        snprintf(expected, sizeof expected, "%s (limit %d) cannot be %lld", row->name, (int)row->limit,
                 (long long)(row->max + 1));
        DT_ERR(dist_server_options_set_limit(options, row->limit, row->max + 1), DIST_INVALID_ARGUMENT,
               "dist_server_options_set_limit", expected);
      }
      DT_ERR(dist_server_options_set_limit(options, row->limit, INT64_MIN), DIST_INVALID_ARGUMENT,
             "dist_server_options_set_limit", row->name);
    }
    assert_int_equal(get(options, row->limit), row->max);
  }
  dist_server_options_destroy(options);
}

static void test_misuse(void** state) {
  dist_server_options_t* options = NULL;
  int64_t value = 99;
  (void)state;
  DT_OK(dist_server_options_create(&options));
  DT_ERR(dist_server_options_set_limit(NULL, DIST_SERVER_LIMIT_MAX_BARRIERS, 5), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_limit", "options");
  DT_ERR(dist_server_options_get_limit(NULL, DIST_SERVER_LIMIT_MAX_BARRIERS, &value), DIST_INVALID_ARGUMENT,
         "dist_server_options_get_limit", "options");
  assert_int_equal(value, 0); /* cleared on failure */
  DT_ERR(dist_server_options_get_limit(options, DIST_SERVER_LIMIT_MAX_BARRIERS, NULL), DIST_INVALID_ARGUMENT,
         "dist_server_options_get_limit", "out_value");
  DT_ERR(dist_server_options_set_limit(options, 0, 5), DIST_INVALID_ARGUMENT, "dist_server_options_set_limit",
         "limit is 0: expected one of the DIST_SERVER_LIMIT_* constants");
  DT_ERR(dist_server_options_set_limit(options, kLimits + 1, 5), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_limit", "limit is 16");
  DT_ERR(dist_server_options_set_limit(options, -1, 5), DIST_INVALID_ARGUMENT, "dist_server_options_set_limit",
         "limit is -1");
  value = 99;
  DT_ERR(dist_server_options_get_limit(options, 1000, &value), DIST_INVALID_ARGUMENT,
         "dist_server_options_get_limit", "limit is 1000");
  assert_int_equal(value, 0);
  /* A ps task whose in-flight budget is below one request's bound is refused at creation. */
  DT_OK(dist_server_options_set_limit(options, DIST_SERVER_LIMIT_MAX_VARIABLE_REQUEST_BYTES, 4096));
  DT_OK(dist_server_options_set_limit(options, DIST_SERVER_LIMIT_MAX_VARIABLE_INFLIGHT_BYTES, 4095));
  {
    int32_t ports[1];
    dist_cluster_t* cluster = NULL;
    dist_server_t* server = (dist_server_t*)DT_SENTINEL_PTR;
    dt_free_ports(ports, 1);
    cluster = dt_loopback_workers(ports, 1, 0);
    DT_ERR(dist_server_create(cluster, options, &server), DIST_INVALID_ARGUMENT, "dist_server_create",
           "max_variable_inflight_bytes (4095) is less than max_variable_request_bytes (4096)");
    assert_null(server);
    dist_cluster_destroy(cluster);
  }
  dist_server_options_destroy(options);
}

/* The store's byte cap set through the limit: a value past it is refused. */
static void test_store_bytes_take_effect(void** state) {
  int32_t ports[1];
  dist_server_options_t* options = NULL;
  dist_cluster_t* cluster = NULL;
  dist_server_t* server = NULL;
  char value[64];
  (void)state;
  memset(value, 'x', sizeof value);
  DT_OK(dist_server_options_create(&options));
  DT_OK(dist_server_options_set_limit(options, DIST_SERVER_LIMIT_MAX_STORE_BYTES, 100));
  dt_free_ports(ports, 1);
  cluster = dt_loopback_workers(ports, 1, 0);
  DT_OK(dist_server_create(cluster, options, &server));
  DT_OK(dist_server_key_value_set(server, "a", value, 60)); /* 1 + 60 bytes */
  DT_ERR(dist_server_key_value_set(server, "b", value, 60), DIST_RESOURCE_EXHAUSTED, "dist_server_key_value_set",
         "max_store_bytes");
  dist_server_destroy(server);
  dist_cluster_destroy(cluster);
  dist_server_options_destroy(options);
}

/* A connection that never starts its handshake is closed after the limit (gRPC's own
 * default would keep it two minutes). */
static void test_handshake_timeout_takes_effect(void** state) {
  int32_t ports[1];
  dist_server_options_t* options = NULL;
  dist_cluster_t* cluster = NULL;
  dist_server_t* server = NULL;
  struct sockaddr_in address;
  int fd;
  int closed = 0;
  int i;
  (void)state;
  DT_OK(dist_server_options_create(&options));
  DT_OK(dist_server_options_set_limit(options, DIST_SERVER_LIMIT_HANDSHAKE_TIMEOUT_MS, 200));
  dt_free_ports(ports, 1);
  cluster = dt_loopback_workers(ports, 1, 0);
  DT_OK(dist_server_create(cluster, options, &server));
  fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_port = htons((uint16_t)ports[0]);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr*)&address, sizeof address), 0);
  /* Read (and drop) the server's HTTP/2 settings until end of stream: at most 10 s. */
  for (i = 0; i < 1000 && !closed; ++i) {
    char bytes[256];
    const ssize_t got = recv(fd, bytes, sizeof bytes, MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
      closed = 1;
    } else if (got < 0) {
      struct timespec pause = {0, 10 * 1000 * 1000};
      nanosleep(&pause, NULL);
    }
  }
  print_message("closed after about %d polls of 10 ms\n", i);
  assert_true(closed);
  close(fd);
  dist_server_destroy(server);
  dist_cluster_destroy(cluster);
  dist_server_options_destroy(options);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_defaults_and_ranges),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_store_bytes_take_effect),
      cmocka_unit_test(test_handshake_timeout_takes_effect),
  };
  return cmocka_run_group_tests_name("server_limits", tests, NULL, NULL);
}
