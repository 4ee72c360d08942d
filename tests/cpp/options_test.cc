// Clusters, communication options and cross-device ops through the wrapper.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "distribute/distribute.hpp"

namespace {

constexpr const char* kTfConfig =
    R"({"cluster": {"worker": ["127.0.0.1:1111", "127.0.0.1:2222"]}, "task": {"type": "worker", "index": 1}})";

TEST(ClusterTest, FromTfConfigJson) {
  dist::Cluster c = dist::Cluster::from_tf_config(kTfConfig).value();
  EXPECT_STREQ(c.task_type().value(), "worker");
  EXPECT_EQ(c.task_index().value(), 1);
  EXPECT_EQ(c.num_workers().value(), 2);
  EXPECT_FALSE(c.is_chief().value());
  EXPECT_EQ(c.num_tasks("worker").value(), 2);
  EXPECT_STREQ(c.task_address("worker", 0).value(), "127.0.0.1:1111");
  EXPECT_EQ(c.task_address("worker", 5).status().code(), DIST_INVALID_ARGUMENT);
}

TEST(ClusterTest, MalformedJsonIsInvalidArgument) {
  dist::Result<dist::Cluster> c = dist::Cluster::from_tf_config("{not json");
  EXPECT_EQ(c.status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_FALSE(c.status().message().empty());
}

TEST(ClusterTest, BuiltByHand) {
  dist::Cluster c = dist::Cluster::create().value();
  ASSERT_TRUE(c.add_task("chief", 0, "127.0.0.1:3000").ok());
  ASSERT_TRUE(c.add_task("worker", 0, "127.0.0.1:3001").ok());
  EXPECT_EQ(c.task_type().status().code(), DIST_FAILED_PRECONDITION) << "no current task yet";
  ASSERT_TRUE(c.set_task("chief", 0).ok());
  EXPECT_TRUE(c.is_chief().value());
  EXPECT_EQ(c.num_workers().value(), 2);
  EXPECT_EQ(c.set_task("ps", 0).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(c.add_task("worker", 0, "127.0.0.1:3002").code(), DIST_INVALID_ARGUMENT);
}

TEST(CommunicationOptionsTest, SettersCheckTheirValues) {
  dist::CommunicationOptions o = dist::CommunicationOptions::create().value();
  EXPECT_TRUE(o.set_implementation(DIST_COMMUNICATION_RING).ok());
  EXPECT_EQ(o.set_implementation(99).code(), DIST_INVALID_ARGUMENT);
  EXPECT_TRUE(o.set_bytes_per_pack(1 << 20).ok());
  EXPECT_EQ(o.set_bytes_per_pack(-1).code(), DIST_INVALID_ARGUMENT);
  EXPECT_TRUE(o.set_timeout_ms(5000).ok());
  EXPECT_EQ(o.set_timeout_ms(-5).code(), DIST_INVALID_ARGUMENT);
  EXPECT_TRUE(o.set_replicas_per_worker(2).ok());
  EXPECT_EQ(o.set_replicas_per_worker(100000).code(), DIST_INVALID_ARGUMENT);
}

TEST(MultiWorkerMirroredTest, WithoutAClusterRunsLocally) {
  unsetenv("TF_CONFIG");
  dist::CommunicationOptions o = dist::CommunicationOptions::create().value();
  ASSERT_TRUE(o.set_replicas_per_worker(2).ok());
  dist::Strategy s = dist::Strategy::multi_worker_mirrored(nullptr, &o).value();
  EXPECT_EQ(s.kind().value(), DIST_STRATEGY_MULTI_WORKER_MIRRORED);
  EXPECT_EQ(s.num_replicas_in_sync().value(), 2);
}

TEST(CrossDeviceOpsTest, KindsAndUse) {
  EXPECT_EQ(dist::CrossDeviceOps::reduction_to_one_device().value().kind().value(),
            DIST_CROSS_DEVICE_OPS_REDUCTION_TO_ONE_DEVICE);
  EXPECT_EQ(dist::CrossDeviceOps::hierarchical_copy(2).value().kind().value(), DIST_CROSS_DEVICE_OPS_HIERARCHICAL_COPY);
  EXPECT_EQ(dist::CrossDeviceOps::hierarchical_copy(0).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::CrossDeviceOps::nccl_all_reduce(0).value().kind().value(), DIST_CROSS_DEVICE_OPS_NCCL_ALL_REDUCE);
  EXPECT_EQ(dist::CrossDeviceOps::nccl_all_reduce(-1).status().code(), DIST_INVALID_ARGUMENT);
  dist::CrossDeviceOps ops = dist::CrossDeviceOps::shared_memory().value();
  EXPECT_EQ(ops.kind().value(), DIST_CROSS_DEVICE_OPS_SHARED_MEMORY);

  ASSERT_TRUE(dist::set_logical_cpu_device_count(2).ok());
  const char* devices[] = {"CPU:0", "CPU:1"};
  dist::Strategy s = dist::Strategy::mirrored(devices, &ops).value();
  std::vector<int64_t> got(2);
  ASSERT_TRUE(s.run([&](dist::ReplicaContext& ctx) {
                 const int32_t id = ctx.replica_id().value();
                 got[id] = ctx.all_reduce(DIST_REDUCE_PRODUCT, dist::scalar<int64_t>(id + 3).value())
                               .value()
                               .scalar<int64_t>()
                               .value();
               }).ok());
  EXPECT_EQ(got, (std::vector<int64_t>{12, 12}));
}

TEST(CentralStorageTest, VariablesOnTheParameterDevice) {
  ASSERT_TRUE(dist::set_logical_cpu_device_count(2).ok());
  const char* devices[] = {"CPU:0", "CPU:1"};
  dist::Strategy s = dist::Strategy::central_storage(devices, "CPU:0").value();
  EXPECT_EQ(s.kind().value(), DIST_STRATEGY_CENTRAL_STORAGE);
  dist::Scope scope = s.scope().value();
  dist::Value v = dist::variable(dist::scalar<float>(1.0f).value()).value();
  EXPECT_EQ(v.kind().value(), DIST_VALUE_VARIABLE);
  EXPECT_EQ(v.variable_device_count().value(), 1);
}

}  // namespace
