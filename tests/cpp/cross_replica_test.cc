// Cross-replica calls, scopes, variables, update and saving through the wrapper.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include <unistd.h>

#include "distribute/distribute.hpp"
#include "mirrored_fixture.h"

namespace {

// A PerReplica value: replica i holds {i, i + 1}.
dist::Value Ramp(dist::Strategy& strategy) {
  return strategy
      .distribute_values_from_function([](int32_t i, int32_t n) -> dist::Result<dist::Value> {
        EXPECT_EQ(n, 2);
        return dist::tensor<float>({float(i), float(i + 1)}, {2});
      })
      .value();
}

std::vector<float> Floats(const dist::ValueView& v) {
  auto d = v.data<float>().value();
  return std::vector<float>(d.begin(), d.end());
}

TEST_F(MirroredTest, ReduceGatherAndReduceTo) {
  dist::Value ramp = Ramp(strategy());  // {0, 1} and {1, 2}
  EXPECT_EQ(ramp.kind().value(), DIST_VALUE_PER_REPLICA);
  EXPECT_EQ(Floats(strategy().reduce(DIST_REDUCE_SUM, ramp).value()), (std::vector<float>{1, 3}));
  EXPECT_EQ(Floats(strategy().reduce(DIST_REDUCE_MEAN, ramp).value()), (std::vector<float>{0.5f, 1.5f}));
  EXPECT_EQ(strategy().reduce_axis(DIST_REDUCE_SUM, ramp, 0).value().scalar<float>().value(), 4.0f);
  EXPECT_EQ(strategy().reduce_axis(DIST_REDUCE_MEAN, ramp, 0).value().scalar<float>().value(), 1.0f);
  EXPECT_EQ(Floats(strategy().gather(ramp, 0).value()), (std::vector<float>{0, 1, 1, 2}));
  dist::Value on_1 = strategy().reduce_to_device(DIST_REDUCE_MAX, ramp, "CPU:1").value();
  EXPECT_STREQ(on_1.device().value(), "/device:CPU:1");
  EXPECT_EQ(Floats(on_1), (std::vector<float>{1, 2}));
  dist::Value to_ramp = strategy().reduce_to(DIST_REDUCE_SUM, ramp, ramp).value();
  EXPECT_EQ(to_ramp.kind().value(), DIST_VALUE_MIRRORED);
  EXPECT_EQ(Floats(to_ramp.component(1).value()), (std::vector<float>{1, 3}));
  EXPECT_EQ(strategy().reduce_axis(DIST_REDUCE_SUM, ramp, 5).status().code(), DIST_INVALID_ARGUMENT);
}

TEST_F(MirroredTest, BatchReduceTo) {
  std::vector<dist::Value> values;
  values.push_back(Ramp(strategy()));
  values.push_back(Ramp(strategy()));
  std::vector<dist::Value> destinations;
  destinations.push_back(dist::scalar<float>(0.0f, "CPU:0").value());
  destinations.push_back(dist::scalar<float>(0.0f, "CPU:1").value());
  std::vector<dist::Value> outs(2);
  ASSERT_TRUE(strategy().batch_reduce_to(DIST_REDUCE_SUM, values, destinations, outs).ok());
  EXPECT_EQ(Floats(outs[0]), (std::vector<float>{1, 3}));
  EXPECT_STREQ(outs[1].device().value(), "/device:CPU:1");
  std::vector<dist::Value> short_outs(1);
  EXPECT_EQ(strategy().batch_reduce_to(DIST_REDUCE_SUM, values, destinations, short_outs).code(),
            DIST_INVALID_ARGUMENT);
}

TEST_F(MirroredTest, ScopeMakesMirroredVariablesAndUpdateWritesEveryCopy) {
  dist::Value v;
  {
    dist::Scope scope = strategy().scope().value();
    int32_t has = 0;
    ASSERT_EQ(dist_has_strategy(&has), DIST_OK);
    EXPECT_EQ(has, 1);
    v = dist::variable(dist::scalar<float>(1.0f).value(), DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN, "v").value();
  }
  int32_t has = 1;
  ASSERT_EQ(dist_has_strategy(&has), DIST_OK);
  EXPECT_EQ(has, 0) << "the Scope exited when destroyed";
  EXPECT_EQ(v.kind().value(), DIST_VALUE_MIRRORED_VARIABLE);
  EXPECT_EQ(v.variable_device_count().value(), 2);

  std::vector<dist::Value> args;
  args.push_back(dist::scalar<float>(2.0f).value());
  int calls = 0;
  dist::Value updated = strategy()
                            .update(v,
                                    [&](dist::ValueView component, dist::Args in) -> dist::Result<dist::Value> {
                                      ++calls;
                                      dist::Status s = component.assign_add(in[0]);
                                      if (!s.ok()) return s;
                                      return component.read();
                                    },
                                    args)
                            .value();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(updated.kind().value(), DIST_VALUE_MIRRORED);
  EXPECT_EQ(v.component_tensor(1).value().scalar<float>().value(), 3.0f);
  // A function that only assigns returns its Status: nothing is stored.
  dist::Value nothing =
      strategy()
          .update(v, [](dist::ValueView component, dist::Args in) { return component.assign_sub(in[0]); }, args)
          .value();
  EXPECT_FALSE(static_cast<bool>(nothing));
  EXPECT_EQ(v.component_tensor(0).value().scalar<float>().value(), 1.0f);
  ASSERT_TRUE(strategy()
                  .update(v, [](dist::ValueView component, dist::Args in) { return component.assign_add(in[0]); },
                          args)
                  .ok());

  // In replica context, a MEAN variable's assignment aggregates: replicas add 1 and 3.
  ASSERT_TRUE(strategy()
                  .run([&](dist::ReplicaContext& ctx) {
                    const float add = ctx.replica_id().value() == 0 ? 1.0f : 3.0f;
                    dist::throw_if_error(v.assign_add(dist::scalar<float>(add).value()));
                  })
                  .ok());
  EXPECT_EQ(v.read().value().scalar<float>().value(), 5.0f);  // 3 + mean(1, 3)
}

TEST_F(MirroredTest, SaveAndRestoreVariables) {
  char path[] = "/tmp/dist_cpp_save_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  dist::Value v;
  {
    dist::Scope scope = strategy().scope().value();
    v = dist::variable(dist::tensor<double>({1, 2}, {2}).value(), DIST_SYNC_AUTO, DIST_AGGREGATION_NONE,
                       "saved")
            .value();
  }
  ASSERT_TRUE(strategy().save_variables(path).ok());
  ASSERT_TRUE(v.assign(dist::tensor<double>({7, 8}, {2}).value()).ok());
  ASSERT_TRUE(strategy().restore_variables(path).ok());
  auto restored = v.read().value();
  EXPECT_EQ(restored.data<double>().value()[1], 2.0);
  EXPECT_EQ(strategy().restore_variables("/nonexistent/dir/file").code(), DIST_NOT_FOUND);
  std::remove(path);
}

TEST_F(MirroredTest, ScopeOfAnotherStrategyInsideIsRefused) {
  dist::Strategy other = dist::Strategy::one_device("CPU:0").value();
  dist::Scope outer = strategy().scope().value();
  dist::Result<dist::Scope> inner = other.scope();
  EXPECT_EQ(inner.status().code(), DIST_FAILED_PRECONDITION);
}

}  // namespace
