// Bring-your-own-threads through the wrapper: threads the test owns join as replicas,
// all-reduce, and leave when their JoinedReplica is destroyed.
#include <gtest/gtest.h>

#include <optional>
#include <thread>
#include <vector>

#include "distribute/distribute.hpp"
#include "mirrored_fixture.h"

namespace {

TEST_F(MirroredTest, OwnThreadsJoinAllReduceAndLeave) {
  std::vector<double> sums(2, 0.0);
  std::vector<dist::Status> errors(2);
  auto replica = [&](int32_t id) {
    dist::Result<dist::JoinedReplica> joined = strategy().join_replica(id);
    if (!joined) {
      errors[id] = joined.status();
      return;
    }
    dist::ReplicaContext ctx = joined->context();
    EXPECT_EQ(ctx.replica_id().value(), id);
    // Many steps on the same threads, as an engine's frame loop does.
    for (int step = 0; step < 100; ++step) {
      dist::Result<dist::Value> sum = ctx.all_reduce(DIST_REDUCE_SUM, dist::scalar<double>(id + step).value());
      if (!sum) {
        errors[id] = sum.status();
        return;
      }
      sums[id] += sum->scalar<double>().value();
    }
  };  // ~JoinedReplica leaves here, on the joining thread
  std::thread t0(replica, 0), t1(replica, 1);
  t0.join();
  t1.join();
  ASSERT_TRUE(errors[0].ok()) << errors[0].to_string();
  ASSERT_TRUE(errors[1].ok()) << errors[1].to_string();
  // Step s sums s + (1 + s): over 100 steps, 2 * 4950 + 100.
  EXPECT_EQ(sums[0], 10000.0);
  EXPECT_EQ(sums[1], 10000.0);
  // Both left: run works again.
  EXPECT_TRUE(strategy().run([](dist::ReplicaContext&) {}).ok());
}

TEST_F(MirroredTest, JoinMisuse) {
  EXPECT_EQ(strategy().join_replica(2).status().code(), DIST_INVALID_ARGUMENT);
  EXPECT_EQ(strategy().join_replica(-1).status().code(), DIST_INVALID_ARGUMENT);
  dist::Result<dist::JoinedReplica> first = strategy().join_replica(0);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  dist_status_t second_code = DIST_OK;
  std::thread other([&] { second_code = strategy().join_replica(0).status().code(); });
  other.join();
  EXPECT_EQ(second_code, DIST_ALREADY_EXISTS);
  // While a replica is joined, run is refused.
  EXPECT_EQ(strategy().run([](dist::ReplicaContext&) {}).code(), DIST_FAILED_PRECONDITION);
  ASSERT_TRUE(first->leave().ok());
  EXPECT_TRUE(first->leave().ok()) << "leaving twice is a no-op";
  EXPECT_TRUE(strategy().run([](dist::ReplicaContext&) {}).ok());
}

TEST_F(MirroredTest, MovedJoinedReplicaLeavesOnce) {
  std::optional<dist::JoinedReplica> holder;
  {
    dist::JoinedReplica joined = strategy().join_replica(1).value();
    holder.emplace(std::move(joined));
  }  // the moved-from one leaves nothing
  dist_status_t again = DIST_OK;
  std::thread other([&] { again = strategy().join_replica(1).status().code(); });
  other.join();
  EXPECT_EQ(again, DIST_ALREADY_EXISTS) << "still joined through holder";
  EXPECT_EQ(strategy().join_replica(0).status().code(), DIST_FAILED_PRECONDITION)
      << "this thread already acts as a replica";
  holder.reset();
  dist::Result<dist::JoinedReplica> now = strategy().join_replica(1);
  EXPECT_TRUE(now.ok()) << now.status().to_string();
}

}  // namespace
