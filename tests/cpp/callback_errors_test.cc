// What a lambda reports reaches the caller unchanged: a returned status with its code and
// message, a thrown dist::Error, any other exception as UNKNOWN with its what(). The
// other replicas are released, and the strategy is usable again afterwards.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "distribute/distribute.hpp"
#include "mirrored_fixture.h"

namespace {

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// After a failed run, a plain run with an all-reduce must work again.
void ExpectUsable(dist::Strategy& strategy) {
  dist::Status s = strategy.run([](dist::ReplicaContext& ctx) {
    EXPECT_EQ(ctx.all_reduce(DIST_REDUCE_SUM, dist::scalar<int32_t>(1).value()).value().scalar<int32_t>().value(), 2);
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST_F(MirroredTest, ReturnedStatusReachesTheCaller) {
  std::vector<dist_status_t> others(2, DIST_OK);
  dist::Status s = strategy().run([&](dist::ReplicaContext& ctx) -> dist::Status {
    const int32_t id = ctx.replica_id().value();
    if (id == 1) return dist::Status(DIST_FAILED_PRECONDITION, "the engine is not ready");
    dist::Result<dist::Value> r = ctx.all_reduce(DIST_REDUCE_SUM, dist::scalar<float>(1.0f).value());
    others[static_cast<size_t>(id)] = r.status().code();
    return r.status();
  });
  EXPECT_EQ(s.code(), DIST_FAILED_PRECONDITION) << s.to_string();
  EXPECT_TRUE(Contains(s.message(), "replica 1: the engine is not ready")) << s.message();
  EXPECT_EQ(others[0], DIST_ABORTED) << "replica 0 is released from its all-reduce";
  ExpectUsable(strategy());
}

TEST_F(MirroredTest, ThrownStdExceptionIsUnknown) {
  dist::Status s = strategy().run([](dist::ReplicaContext& ctx) {
    if (ctx.replica_id().value() == 0) throw std::runtime_error("boom");
  });
  EXPECT_EQ(s.code(), DIST_UNKNOWN) << s.to_string();
  EXPECT_TRUE(Contains(s.message(), "replica 0: the replica function threw: boom")) << s.message();
  ExpectUsable(strategy());
}

TEST_F(MirroredTest, ThrownNonStdExceptionIsUnknown) {
  dist::Status s = strategy().run([](dist::ReplicaContext&) { throw 42; });
  EXPECT_EQ(s.code(), DIST_UNKNOWN);
  EXPECT_TRUE(Contains(s.message(), "not a std::exception")) << s.message();
}

TEST_F(MirroredTest, ThrownDistErrorKeepsItsCode) {
  dist::Status s = strategy().run([](dist::ReplicaContext&) {
    throw dist::Error(dist::Status(DIST_DATA_LOSS, "the save file is torn"));
  });
  EXPECT_EQ(s.code(), DIST_DATA_LOSS);
  EXPECT_TRUE(Contains(s.message(), "the save file is torn")) << s.message();
}

TEST_F(MirroredTest, ValueOfAFailedCallInsideTheLambda) {
  dist::Status s = strategy().run([](dist::ReplicaContext& ctx) {
    // A rank-1 tensor gathered along axis 3: the library rejects it, value() throws.
    (void)ctx.all_gather(dist::tensor<float>({1.0f}, {1}).value(), 3).value();
  });
  EXPECT_EQ(s.code(), DIST_INVALID_ARGUMENT) << s.to_string();
  EXPECT_TRUE(Contains(s.message(), "axis")) << s.message();
  ExpectUsable(strategy());
}

TEST_F(MirroredTest, ResultSlotOutOfRange) {
  std::vector<dist::Value> results(1);
  dist::Status s = strategy().run(
      [](dist::ReplicaContext&, dist::Args, dist::Results out) {
        return out.set(1, dist::scalar<float>(1.0f).value());
      },
      {}, results);
  EXPECT_EQ(s.code(), DIST_OUT_OF_RANGE);
  EXPECT_TRUE(Contains(s.message(), "slot 1 of 1")) << s.message();
  EXPECT_FALSE(static_cast<bool>(results[0]));
}

TEST_F(MirroredTest, MergeFunctionErrors) {
  dist::Status s = strategy().run([](dist::ReplicaContext& ctx) -> dist::Status {
    dist::Result<dist::Value> r = ctx.merge_call([](dist::Strategy&, dist::Args) -> dist::Result<dist::Value> {
      throw std::logic_error("merge failed");
    });
    return r.status();
  });
  EXPECT_EQ(s.code(), DIST_UNKNOWN) << s.to_string();
  EXPECT_TRUE(Contains(s.message(), "merge failed")) << s.message();
  ExpectUsable(strategy());
}

TEST_F(MirroredTest, RunInsideRunIsRefused) {
  dist::Status s = strategy().run([&](dist::ReplicaContext& ctx) {
    if (ctx.replica_id().value() != 0) return;
    dist::Status inner = strategy().run([](dist::ReplicaContext&) {});
    EXPECT_EQ(inner.code(), DIST_FAILED_PRECONDITION) << inner.to_string();
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST_F(MirroredTest, ValueFunctionErrors) {
  dist::Result<dist::Value> r = strategy().distribute_values_from_function(
      [](int32_t replica, int32_t) -> dist::Result<dist::Value> {
        if (replica == 1) return dist::Status(DIST_RESOURCE_EXHAUSTED, "no memory for replica 1");
        return dist::scalar<float>(1.0f);
      });
  EXPECT_EQ(r.status().code(), DIST_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Contains(r.status().message(), "no memory for replica 1")) << r.status().message();
}

}  // namespace
