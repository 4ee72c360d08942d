/* Free loopback ports for the C tests that start servers (server.h, multi-worker
 * strategies). */
#ifndef DIST_TESTS_C_DIST_PORTS_TEST_H_
#define DIST_TESTS_C_DIST_PORTS_TEST_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dist_test.h"

/* Fills ports[0..n) with ports that were free on 127.0.0.1 a moment ago (all sockets are
 * held until every port is chosen, so the ports are distinct). */
static inline void dt_free_ports(int32_t* ports, int n) {
  int fds[8];
  int i;
  assert_true(n <= 8);
  for (i = 0; i < n; ++i) {
    struct sockaddr_in addr;
    socklen_t len = sizeof(addr);
    fds[i] = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fds[i] >= 0);
    memset(&addr, 0, sizeof(addr));
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fds[i], (struct sockaddr*)&addr, sizeof(addr)), 0);
    assert_int_equal(getsockname(fds[i], (struct sockaddr*)&addr, &len), 0);
    ports[i] = ntohs(addr.sin_port);
  }
  for (i = 0; i < n; ++i) close(fds[i]);
}

/* A cluster of `n` workers on 127.0.0.1 at `ports` (worker 0 is the chief), running
 * worker `index` (or no task when index < 0). */
static inline dist_cluster_t* dt_loopback_workers(const int32_t* ports, int n, int index) {
  dist_cluster_t* cluster = NULL;
  char address[32];
  int i;
  DT_OK(dist_cluster_create(&cluster));
  for (i = 0; i < n; ++i) {
    snprintf(address, sizeof(address), "127.0.0.1:%d", (int)ports[i]);
    DT_OK(dist_cluster_add_task(cluster, "worker", i, address));
  }
  if (index >= 0) DT_OK(dist_cluster_set_task(cluster, "worker", index));
  return cluster;
}

#endif /* DIST_TESTS_C_DIST_PORTS_TEST_H_ */
