// The cluster the server tests start: workers at host:ports[i], running worker `index`.
#ifndef DISTRIBUTE_TESTS_CORE_WORKER_CLUSTER_H_
#define DISTRIBUTE_TESTS_CORE_WORKER_CLUSTER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/cluster/cluster_spec.h"
#include "gtest/gtest.h"
#include "tests/core/status_test_util.h"

namespace distribute::testing {

inline ClusterSpec WorkerCluster(const std::vector<int>& ports, int index, const std::string& host = "127.0.0.1") {
  ClusterSpec cluster;
  for (size_t i = 0; i < ports.size(); ++i) {
    EXPECT_TRUE(IsOk(cluster.AddTask("worker", static_cast<int64_t>(i), absl::StrCat(host, ":", ports[i]))));
  }
  EXPECT_TRUE(IsOk(cluster.SetTask("worker", index)));
  return cluster;
}

}  // namespace distribute::testing

#endif  // DISTRIBUTE_TESTS_CORE_WORKER_CLUSTER_H_
