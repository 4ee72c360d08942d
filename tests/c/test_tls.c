/* Tests for TLS in server.h and strategy.h: dist_server_options_set_tls_files and
 * dist_communication_options_set_tls_files (accepted combinations, refusals that change
 * nothing, misuse), a chief and a worker over mutual TLS, a plaintext worker and a worker
 * trusting another CA refused within the startup timeout, bad files named at creation,
 * the DIST_TLS_* environment variables, and a MultiWorkerMirrored strategy over TLS.
 * Certificates are made at run time by tests/common/make_tls_certs.sh (openssl). */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dist_ports_test.h"

enum { kLongMs = 30000, kStartupMs = 1500 };

static char cert_dir[64];

static const char* path_of(const char* name) {
  /* A few rotating buffers: one call may need three paths at once. */
  static char paths[4][128];
  static int next = 0;
  char* path = paths[next++ % 4];
  snprintf(path, sizeof paths[0], "%s/%s", cert_dir, name);
  return path;
}

static int make_certificates(void** state) {
  char command[1024];
  (void)state;
  strcpy(cert_dir, "/tmp/dist_test_tls.XXXXXX");
  if (mkdtemp(cert_dir) == NULL) return -1;
  snprintf(command, sizeof command, "'%s' '%s'", DIST_MAKE_TLS_CERTS, cert_dir);
  return system(command) == 0 ? 0 : -1;
}

static int remove_certificates(void** state) {
  char command[128];
  (void)state;
  snprintf(command, sizeof command, "rm -rf %s", cert_dir);
  return system(command) == 0 ? 0 : -1;
}

static double seconds_since(const struct timespec* start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* Server options with the job token, a short startup timeout and the given TLS files
 * (cert NULL: none). */
static dist_server_options_t* options_with(const char* cert, const char* key, const char* ca) {
  dist_server_options_t* options = NULL;
  DT_OK(dist_server_options_create(&options));
  DT_OK(dist_server_options_set_job_token(options, "the-job-secret-0123456789"));
  DT_OK(dist_server_options_set_startup_timeout_ms(options, kStartupMs));
  if (cert != NULL) DT_OK(dist_server_options_set_tls_files(options, path_of(cert), path_of(key), ca ? path_of(ca) : NULL));
  return options;
}

static dist_server_t* start(const int32_t* ports, int n, int index, const dist_server_options_t* options) {
  dist_cluster_t* cluster = dt_loopback_workers(ports, n, index);
  dist_server_t* server = NULL;
  DT_OK(dist_server_create(cluster, options, &server));
  dist_cluster_destroy(cluster);
  assert_non_null(server);
  return server;
}

/* Creating worker `index` with `options` fails with `code`, naming `part`. */
static void start_fails(const int32_t* ports, int n, int index, const dist_server_options_t* options,
                        dist_status_t code, const char* part) {
  dist_cluster_t* cluster = dt_loopback_workers(ports, n, index);
  dist_server_t* server = (dist_server_t*)DT_SENTINEL_PTR;
  DT_ERR(dist_server_create(cluster, options, &server), code, "dist_server_create", part);
  assert_null(server);
  dist_cluster_destroy(cluster);
}

static void test_server_options_setter_and_misuse(void** state) {
  dist_server_options_t* options = NULL;
  char long_path[4200];
  (void)state;
  memset(long_path, 'a', sizeof long_path - 1);
  long_path[sizeof long_path - 1] = '\0';
  DT_OK(dist_server_options_create(&options));
  DT_OK(dist_server_options_set_tls_files(options, "node.pem", "node.key", "ca.pem"));
  DT_OK(dist_server_options_set_tls_files(options, "node.pem", "node.key", NULL));
  DT_OK(dist_server_options_set_tls_files(options, "node.pem", "node.key", ""));
  DT_OK(dist_server_options_set_tls_files(options, NULL, NULL, NULL)); /* back to the environment's */
  DT_OK(dist_server_options_set_tls_files(options, "", "", ""));
  DT_ERR(dist_server_options_set_tls_files(NULL, "node.pem", "node.key", "ca.pem"), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_tls_files", "options");
  DT_ERR(dist_server_options_set_tls_files(options, "node.pem", NULL, NULL), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_tls_files", "cert_path is set but key_path is not");
  DT_ERR(dist_server_options_set_tls_files(options, NULL, "node.key", "ca.pem"), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_tls_files", "key_path is set but cert_path is not");
  DT_ERR(dist_server_options_set_tls_files(options, NULL, NULL, "ca.pem"), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_tls_files", "ca_path is set but cert_path and key_path are not");
  DT_ERR(dist_server_options_set_tls_files(options, long_path, "node.key", NULL), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_tls_files", "cert_path is a path of 4199 bytes");
  dist_server_options_destroy(options);
}

/* A chief and a worker over mutual TLS share keys; a refused setter changed nothing: the
 * chief still serves TLS only, so a plaintext worker cannot join, and the job's can. */
static void test_chief_and_worker_over_tls(void** state) {
  int32_t ports[2];
  dist_server_options_t* job = options_with("node.pem", "node.key", "ca.pem");
  dist_server_options_t* plaintext = options_with(NULL, NULL, NULL);
  dist_server_t *chief, *worker;
  dist_value_t* value = NULL;
  void* data = NULL;
  size_t size = 0;
  (void)state;
  DT_ERR(dist_server_options_set_tls_files(job, NULL, NULL, "ca.pem"), DIST_INVALID_ARGUMENT,
         "dist_server_options_set_tls_files", "ca_path");
  dt_free_ports(ports, 2);
  chief = start(ports, 2, 0, job);
  start_fails(ports, 2, 1, plaintext, DIST_UNAVAILABLE, "chief task worker:0");
  worker = start(ports, 2, 1, job);
  DT_OK(dist_server_key_value_set(worker, "from/worker", "sealed", 6));
  DT_OK(dist_server_key_value_get(chief, "from/worker", kLongMs, &value));
  DT_OK(dist_tensor_byte_size(value, &size));
  assert_int_equal(size, 6);
  DT_OK(dist_tensor_data(value, &data));
  assert_memory_equal(data, "sealed", 6);
  dist_value_destroy(value);
  DT_OK(dist_server_peer_health(chief));
  DT_OK(dist_server_peer_health(worker));
  dist_server_destroy(worker);
  dist_server_destroy(chief);
  dist_server_options_destroy(plaintext);
  dist_server_options_destroy(job);
}

/* Workers that cannot complete a handshake with the chief fail with DIST_UNAVAILABLE
 * within the startup timeout (plus the time a stop takes), never later. */
static void test_strangers_are_refused_within_the_startup_timeout(void** state) {
  int32_t ports[2];
  dist_server_options_t* job = options_with("node.pem", "node.key", "ca.pem");
  dist_server_options_t* strangers[3];
  const char* hints[3] = {"which uses no TLS: if the job uses TLS, give this task its certificate", "this task uses TLS",
                          "this task's certificate must be signed by it"};
  dist_server_t* chief;
  struct timespec start_time;
  int i;
  (void)state;
  strangers[0] = options_with(NULL, NULL, NULL);                                /* plaintext */
  strangers[1] = options_with("node.pem", "node.key", "other_ca.pem");          /* trusts another CA */
  strangers[2] = options_with("other_node.pem", "other_node.key", "ca.pem");    /* another CA's certificate */
  dt_free_ports(ports, 2);
  chief = start(ports, 2, 0, job);
  for (i = 0; i < 3; ++i) {
    clock_gettime(CLOCK_MONOTONIC, &start_time);
    start_fails(ports, 2, 1, strangers[i], DIST_UNAVAILABLE, hints[i]);
    assert_true(seconds_since(&start_time) < 20.0);
    dist_server_options_destroy(strangers[i]);
  }
  DT_OK(dist_server_peer_health(chief));
  dist_server_destroy(chief);
  dist_server_options_destroy(job);
}

static void test_bad_files_are_named_at_creation(void** state) {
  int32_t ports[1];
  FILE* huge;
  long i;
  dist_server_options_t* options = NULL;
  (void)state;
  dt_free_ports(ports, 1);
  options = options_with("missing.pem", "node.key", "ca.pem");
  start_fails(ports, 1, 0, options, DIST_NOT_FOUND, "missing.pem");
  dist_server_options_destroy(options);
  options = options_with("garbage.pem", "node.key", "ca.pem");
  start_fails(ports, 1, 0, options, DIST_INVALID_ARGUMENT, "garbage.pem' holds no PEM certificate");
  dist_server_options_destroy(options);
  options = options_with("node.pem", "other_node.key", "ca.pem");
  start_fails(ports, 1, 0, options, DIST_INVALID_ARGUMENT, "does not belong to the certificate");
  dist_server_options_destroy(options);
  options = options_with("node.pem", "node_encrypted.key", NULL);
  start_fails(ports, 1, 0, options, DIST_INVALID_ARGUMENT, "encrypted private key");
  dist_server_options_destroy(options);
  huge = fopen(path_of("huge.pem"), "w");
  assert_non_null(huge);
  for (i = 0; i < (1L << 20) + 1; ++i) fputc('\n', huge);
  fclose(huge);
  options = options_with("node.pem", "node.key", "huge.pem");
  start_fails(ports, 1, 0, options, DIST_INVALID_ARGUMENT, "more than 1048576 bytes");
  dist_server_options_destroy(options);
  /* None of that bound the port. */
  options = options_with("node.pem", "node.key", "ca.pem");
  dist_server_destroy(start(ports, 1, 0, options));
  dist_server_options_destroy(options);
}

/* Without TLS in the options, DIST_TLS_CERT, DIST_TLS_KEY and DIST_TLS_CA turn it on. */
static void test_environment(void** state) {
  int32_t ports[2];
  dist_server_options_t* from_environment = options_with(NULL, NULL, NULL);
  dist_server_options_t* job = options_with("node.pem", "node.key", "ca.pem");
  dist_server_t *chief, *worker;
  (void)state;
  dt_free_ports(ports, 2);
  chief = start(ports, 2, 0, job);
  assert_int_equal(setenv("DIST_TLS_CERT", path_of("node.pem"), 1), 0);
  start_fails(ports, 2, 1, from_environment, DIST_INVALID_ARGUMENT, "DIST_TLS_CERT is set but DIST_TLS_KEY is not");
  assert_int_equal(setenv("DIST_TLS_KEY", path_of("node.key"), 1), 0);
  assert_int_equal(setenv("DIST_TLS_CA", path_of("garbage.pem"), 1), 0);
  start_fails(ports, 2, 1, from_environment, DIST_INVALID_ARGUMENT, "DIST_TLS_CA '");
  assert_int_equal(setenv("DIST_TLS_CA", path_of("ca.pem"), 1), 0);
  worker = start(ports, 2, 1, from_environment);
  DT_OK(dist_server_key_value_set(worker, "k", "v", 1));
  dist_server_destroy(worker);
  unsetenv("DIST_TLS_CERT");
  unsetenv("DIST_TLS_KEY");
  unsetenv("DIST_TLS_CA");
  dist_server_destroy(chief);
  dist_server_options_destroy(from_environment);
  dist_server_options_destroy(job);
}

static void test_communication_options_setter_and_misuse(void** state) {
  dist_communication_options_t* options = NULL;
  (void)state;
  DT_OK(dist_communication_options_create(&options));
  DT_OK(dist_communication_options_set_tls_files(options, "node.pem", "node.key", "ca.pem"));
  DT_OK(dist_communication_options_set_tls_files(options, "node.pem", "node.key", NULL));
  DT_OK(dist_communication_options_set_tls_files(options, NULL, NULL, NULL));
  DT_ERR(dist_communication_options_set_tls_files(NULL, "node.pem", "node.key", NULL), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_tls_files", "options");
  DT_ERR(dist_communication_options_set_tls_files(options, "node.pem", "", NULL), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_tls_files", "cert_path is set but key_path is not");
  DT_ERR(dist_communication_options_set_tls_files(options, NULL, NULL, "ca.pem"), DIST_INVALID_ARGUMENT,
         "dist_communication_options_set_tls_files", "ca_path is set but");
  dist_communication_options_destroy(options);
}

/* The strategy's server reads the files at creation: a bad one fails it, naming the file;
 * good ones give a strategy (the all-reduces of several workers over TLS are checked in
 * tests/multiworker/tls_collectives.sh). */
static void test_multi_worker_strategy_over_tls(void** state) {
  int32_t ports[1];
  dist_cluster_t* cluster;
  dist_communication_options_t* options = NULL;
  dist_strategy_t* strategy = (dist_strategy_t*)DT_SENTINEL_PTR;
  int32_t replicas = 0;
  (void)state;
  dt_free_ports(ports, 1);
  cluster = dt_loopback_workers(ports, 1, 0);
  DT_OK(dist_communication_options_create(&options));
  DT_OK(dist_communication_options_set_timeout_ms(options, kLongMs));
  DT_OK(dist_communication_options_set_replicas_per_worker(options, 2));
  DT_OK(dist_communication_options_set_tls_files(options, path_of("node.pem"), path_of("missing.key"), NULL));
  DT_ERR(dist_strategy_create_multi_worker_mirrored(cluster, options, &strategy), DIST_NOT_FOUND,
         "dist_strategy_create_multi_worker_mirrored", "missing.key");
  assert_null(strategy);
  DT_OK(dist_communication_options_set_tls_files(options, path_of("node.pem"), path_of("node.key"),
                                                 path_of("ca.pem")));
  DT_OK(dist_strategy_create_multi_worker_mirrored(cluster, options, &strategy));
  DT_OK(dist_strategy_num_replicas_in_sync(strategy, &replicas));
  assert_int_equal(replicas, 2);
  dist_strategy_destroy(strategy);
  dist_communication_options_destroy(options);
  dist_cluster_destroy(cluster);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_server_options_setter_and_misuse),
      cmocka_unit_test(test_chief_and_worker_over_tls),
      cmocka_unit_test(test_strangers_are_refused_within_the_startup_timeout),
      cmocka_unit_test(test_bad_files_are_named_at_creation),
      cmocka_unit_test(test_environment),
      cmocka_unit_test(test_communication_options_setter_and_misuse),
      cmocka_unit_test(test_multi_worker_strategy_over_tls),
  };
  return cmocka_run_group_tests_name("tls", tests, make_certificates, remove_certificates);
}
