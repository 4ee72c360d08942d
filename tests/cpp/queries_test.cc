// The wrapper's smaller corners, against the C API's documented answers: device names and
// the local devices, dtype sizes, the cluster resolvers and TF_CONFIG's resolver fields, the
// communication options' shared-memory and TLS settings, this thread's distribution context
// (get_strategy, has_strategy, in_cross_replica_context, current_replica_context,
// experimental_set_strategy, get_loss_reduction), colocation, parameter devices,
// value_container, a variable's placement queries and the C scalar getters.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "distribute/distribute.hpp"
#include "mirrored_fixture.h"

namespace {

TEST(DeviceTest, NamesParseIntoTheirParts) {
  dist::Device full = dist::Device::parse("/job:worker/replica:0/task:1/device:GPU:3").value();
  EXPECT_STREQ(full.name().value(), "/job:worker/replica:0/task:1/device:GPU:3");
  EXPECT_STREQ(full.job().value(), "worker");
  EXPECT_EQ(full.replica().value(), 0);
  EXPECT_EQ(full.task().value(), 1);
  EXPECT_EQ(full.type().value(), DIST_DEVICE_GPU);
  EXPECT_EQ(full.index().value(), 3);
  dist::Device bare = dist::Device::parse("cpu:2").value();
  EXPECT_STREQ(bare.job().value(), "");
  EXPECT_EQ(bare.replica().value(), -1);
  EXPECT_EQ(bare.task().value(), -1);
  EXPECT_EQ(bare.type().value(), DIST_DEVICE_CPU);
  EXPECT_EQ(dist::Device::parse("/device:TPU:0").status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(dist::Device().name().status().code(), DIST_INVALID_ARGUMENT);
}

TEST(DeviceTest, LocalDevicesStartWithTheLogicalCpus) {
  ASSERT_TRUE(dist::set_logical_cpu_device_count(2).ok());
  const int32_t count = dist::local_device_count().value();
  ASSERT_GE(count, 2);
  EXPECT_STREQ(dist::local_device(0).value().name().value(), "/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_STREQ(dist::local_device(1).value().name().value(), "/job:localhost/replica:0/task:0/device:CPU:1");
  const dist_status_t past = dist::local_device(count).status().code();
  EXPECT_TRUE(past == DIST_INVALID_ARGUMENT || past == DIST_OUT_OF_RANGE) << past;
  EXPECT_NE(dist::gpu_unavailable_reason().value(), nullptr);
  EXPECT_EQ(dist::dtype_size(DIST_FLOAT64).value(), 8u);
  EXPECT_EQ(dist::dtype_size(DIST_BFLOAT16).value(), 2u);
  EXPECT_EQ(dist::dtype_size(999).status().code(), DIST_INVALID_ARGUMENT);
}

TEST(ClusterQueriesTest, ResolversAndTfConfigFields) {
  dist::Cluster cluster = dist::Cluster::from_tf_config(
                              "{\"cluster\": {\"chief\": [\"c:1\"], \"worker\": [\"w:2\", \"w:3\"]}, "
                              "\"task\": {\"type\": \"worker\", \"index\": 1}, \"rpc_layer\": \"grpc\", "
                              "\"environment\": \"cloud\"}")
                              .value();
  EXPECT_STREQ(cluster.rpc_layer().value(), "grpc");
  EXPECT_STREQ(cluster.environment().value(), "cloud");
  EXPECT_STREQ(cluster.master().value(), "grpc://w:3");
  EXPECT_EQ(cluster.task_index_at("worker", 1).value(), 1);
  EXPECT_EQ(cluster.task_index_at("worker", 2).status().code(), DIST_INVALID_ARGUMENT);

  // A StatefulSet of 3 pods, this one the second.
  dist::Cluster pods = dist::Cluster::from_statefulset("train-1", "train", 3, 2222).value();
  EXPECT_EQ(pods.num_tasks("worker").value(), 3);
  EXPECT_EQ(pods.task_index().value(), 1);
  EXPECT_STREQ(pods.task_address("worker", 2).value(), "train-2.train:2222");
  EXPECT_EQ(dist::Cluster::from_statefulset("train", "train", 3, 2222).status().code(), DIST_INVALID_ARGUMENT);

  // Slurm: outside srun its variables are missing; lopsided lists are refused here.
  unsetenv("SLURM_PROCID");
  unsetenv("SLURM_STEP_NODELIST");
  unsetenv("SLURM_JOB_NODELIST");
  const char* jobs[] = {"worker"};
  const int32_t counts[] = {2};
  EXPECT_EQ(dist::Cluster::from_slurm(jobs, counts).status().code(), DIST_NOT_FOUND);
  EXPECT_EQ(dist::Cluster::from_slurm(jobs, {}).status().code(), DIST_INVALID_ARGUMENT);
}

TEST(ClusterQueriesTest, CommunicationOptionsSharedMemoryAndTls) {
  dist::CommunicationOptions options = dist::CommunicationOptions::create().value();
  EXPECT_TRUE(options.set_shared_memory(DIST_SHARED_MEMORY_ON).ok());
  EXPECT_TRUE(options.set_shared_memory(DIST_SHARED_MEMORY_AUTO).ok());
  EXPECT_EQ(options.set_shared_memory(9).code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(options.set_tls_files("cert.pem", nullptr, nullptr).code(), DIST_INVALID_ARGUMENT);
  EXPECT_TRUE(options.set_tls_files(nullptr, nullptr, nullptr).ok());
}

class ThreadContextTest : public MirroredTest {};

TEST_F(ThreadContextTest, TheCurrentStrategyFollowsScopesAndSetStrategy) {
  // No strategy: the default one, in its replica context.
  EXPECT_FALSE(dist::has_strategy().value());
  EXPECT_FALSE(dist::in_cross_replica_context().value());
  EXPECT_TRUE(dist::current_replica_context().has_value());
  EXPECT_EQ(dist::get_strategy().value().kind().value(), DIST_STRATEGY_DEFAULT);
  EXPECT_EQ(dist::get_loss_reduction().value(), DIST_REDUCE_SUM);
  {
    dist::Scope scope = strategy().scope().value();
    EXPECT_TRUE(dist::has_strategy().value());
    EXPECT_TRUE(dist::in_cross_replica_context().value());
    EXPECT_FALSE(dist::current_replica_context().has_value());
    EXPECT_EQ(dist::get_strategy().value().kind().value(), DIST_STRATEGY_MIRRORED);
    EXPECT_EQ(dist::experimental_set_strategy(&strategy()).code(), DIST_FAILED_PRECONDITION);  // inside a scope
  }
  ASSERT_TRUE(dist::experimental_set_strategy(&strategy()).ok());
  EXPECT_TRUE(dist::has_strategy().value());
  EXPECT_EQ(dist::get_strategy().value().num_replicas_in_sync().value(), 2);
  ASSERT_TRUE(dist::experimental_set_strategy(nullptr).ok());
  EXPECT_FALSE(dist::has_strategy().value());
  // In a replica function: its replica context, by id.
  std::vector<int32_t> ids(2, -1);
  ASSERT_TRUE(strategy()
                  .run([&](dist::ReplicaContext& context) {
                    std::optional<dist::ReplicaContext> current = dist::current_replica_context();
                    const int32_t id = context.replica_id().value();
                    ids[static_cast<size_t>(id)] = current.has_value() ? current->replica_id().value() : -2;
                  })
                  .ok());
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1}));
}

TEST_F(ThreadContextTest, ColocationParameterDevicesAndVariableQueries) {
  EXPECT_EQ(strategy().parameter_device_count().value(), 2);
  EXPECT_STREQ(strategy().parameter_device(1).value(), "/device:CPU:1");
  EXPECT_EQ(strategy().parameter_device(2).status().code(), DIST_OUT_OF_RANGE);
  dist::Value a;
  dist::Value b;
  {
    dist::Scope scope = strategy().scope().value();
    a = dist::variable(dist::scalar<float>(2.5f).value(), DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN).value();
    dist::Colocation beside = strategy().colocate_vars_with(a).value();
    b = dist::variable(dist::scalar<float>(1.0f).value()).value();
  }
  EXPECT_EQ(a.variable_synchronization().value(), DIST_SYNC_ON_WRITE);
  EXPECT_EQ(a.variable_aggregation().value(), DIST_AGGREGATION_MEAN);
  EXPECT_EQ(b.variable_device_count().value(), a.variable_device_count().value());
  for (int32_t i = 0; i < a.variable_device_count().value(); ++i) {
    EXPECT_STREQ(b.variable_device(i).value(), a.variable_device(i).value());
  }
  EXPECT_EQ(a.variable_device(5).status().code(), DIST_OUT_OF_RANGE);
  // Colocation outside the strategy's scope is refused.
  EXPECT_EQ(strategy().colocate_vars_with(a).status().code(), DIST_FAILED_PRECONDITION);
  EXPECT_TRUE(strategy().variable_created_in_scope(a).value());
  dist::Strategy other = dist::Strategy::one_device("CPU:0").value();
  EXPECT_FALSE(other.variable_created_in_scope(a).value());
  // value_container: a component of a mirrored variable leads back to the variable.
  dist::Value component = a.component(1).value();
  dist::Value container = strategy().value_container(component).value();
  EXPECT_EQ(container.kind().value(), DIST_VALUE_MIRRORED_VARIABLE);
  EXPECT_STREQ(container.variable_name().value(), a.variable_name().value());
  // The C scalar getters: no conversion between dtypes.
  EXPECT_EQ(a.read().value().read_scalar<float>().value(), 2.5f);
  EXPECT_EQ(dist::scalar<int64_t>(7).value().read_scalar<int64_t>().value(), 7);
  EXPECT_EQ(dist::scalar<int32_t>(-3).value().read_scalar<int32_t>().value(), -3);
  EXPECT_EQ(dist::scalar<double>(0.25).value().read_scalar<double>().value(), 0.25);
  EXPECT_EQ(dist::scalar<int32_t>(1).value().read_scalar<float>().status().code(), DIST_INVALID_ARGUMENT);
}

}  // namespace
