// Strategy::run with lambdas, and the replica context's collectives.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "distribute/distribute.hpp"
#include "mirrored_fixture.h"

namespace {

TEST_F(MirroredTest, Properties) {
  EXPECT_EQ(strategy().kind().value(), DIST_STRATEGY_MIRRORED);
  EXPECT_EQ(strategy().num_replicas_in_sync().value(), 2);
  EXPECT_STREQ(strategy().worker_device(1).value(), "/device:CPU:1");
  EXPECT_EQ(strategy().worker_device(2).status().code(), DIST_OUT_OF_RANGE);
  EXPECT_EQ(strategy().set_timeout_ms(0).code(), DIST_INVALID_ARGUMENT);
}

TEST_F(MirroredTest, RunCallsTheLambdaOncePerReplica) {
  std::atomic<int> calls{0};
  std::vector<int32_t> ids(2, -1);
  std::vector<std::string> devices(2);
  dist::Status s = strategy().run([&](dist::ReplicaContext& ctx) {
    ++calls;
    const int32_t id = ctx.replica_id().value();
    ids[static_cast<size_t>(id)] = id;
    devices[static_cast<size_t>(id)] = ctx.device().value();
    EXPECT_EQ(ctx.num_replicas_in_sync().value(), 2);
    EXPECT_EQ(ctx.strategy().value().num_replicas_in_sync().value(), 2);  // a new reference to it
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(calls.load(), 2);
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(devices[1], "/device:CPU:1");
}

TEST_F(MirroredTest, AllReduceSumAndMean) {
  std::vector<float> sums(2), means(2);
  dist::Status s = strategy().run([&](dist::ReplicaContext& ctx) -> dist::Status {
    const int32_t id = ctx.replica_id().value();
    // Replica 0 holds {1, 2}, replica 1 holds {3, 4}.
    dist::Value mine = dist::tensor<float>({2.0f * id + 1, 2.0f * id + 2}, {2}).value();
    dist::Result<dist::Value> sum = ctx.all_reduce(DIST_REDUCE_SUM, mine);
    if (!sum) return sum.status();
    dist::Result<dist::Value> mean = ctx.all_reduce(DIST_REDUCE_MEAN, mine);
    if (!mean) return mean.status();
    sums[static_cast<size_t>(id)] = sum->data<float>().value()[1];
    means[static_cast<size_t>(id)] = mean->data<float>().value()[0];
    return dist::Status();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(sums, (std::vector<float>{6.0f, 6.0f}));    // 2 + 4
  EXPECT_EQ(means, (std::vector<float>{2.0f, 2.0f}));   // (1 + 3) / 2
}

// all_reduce_into: the sum written into a separate tensor, then into the input itself.
TEST_F(MirroredTest, AllReduceIntoATensorAndInPlace) {
  std::vector<std::vector<float>> separate(2), input(2), in_place(2);
  dist::Status s = strategy().run([&](dist::ReplicaContext& ctx) -> dist::Status {
    const int32_t id = ctx.replica_id().value();
    const size_t r = static_cast<size_t>(id);
    const char* device = ctx.device().value();
    // Replica r holds {r + 1, 10 r, -r}.
    dist::Value x = dist::tensor<float>({id + 1.0f, 10.0f * id, -1.0f * id}, {3}, device).value();
    dist::Value out = dist::zeros(DIST_FLOAT32, {3}, device).value();
    dist::Status st = ctx.all_reduce_into(DIST_REDUCE_SUM, x, out);
    if (!st.ok()) return st;
    auto o = out.data<float>().value();
    separate[r].assign(o.begin(), o.end());
    auto xs = x.data<float>().value();
    input[r].assign(xs.begin(), xs.end());
    st = ctx.all_reduce_into(DIST_REDUCE_SUM, x, x);
    if (!st.ok()) return st;
    in_place[r].assign(xs.begin(), xs.end());
    return dist::Status();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  const std::vector<float> expected{1.0f + 2.0f, 0.0f + 10.0f, 0.0f - 1.0f};  // the sum over r = 0, 1
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(separate[r], expected) << "replica " << r;
    EXPECT_EQ(input[r], (std::vector<float>{r + 1.0f, 10.0f * r, -1.0f * r})) << "replica " << r;
    EXPECT_EQ(in_place[r], expected) << "replica " << r;
  }
}

// A wrong-shape out on one replica fails the call on every replica, nothing is written,
// and a right call after it works.
TEST_F(MirroredTest, AllReduceIntoAWrongShapeFailsOnEveryReplica) {
  std::vector<dist::Status> errors(2);
  std::vector<float> after(2), retried(2);
  dist::Status s = strategy().run([&](dist::ReplicaContext& ctx) -> dist::Status {
    const int32_t id = ctx.replica_id().value();
    const size_t r = static_cast<size_t>(id);
    dist::Value x = dist::tensor<float>({1.0f}, {1}).value();
    dist::Value out = dist::tensor<float>({-7.0f}, {1}).value();
    dist::Value wrong = dist::tensor<float>({0.0f, 0.0f}, {2}).value();
    errors[r] = ctx.all_reduce_into(DIST_REDUCE_SUM, x, id == 1 ? wrong : out);
    after[r] = out.scalar<float>().value();
    dist::Status st = ctx.all_reduce_into(DIST_REDUCE_SUM, x, out);
    if (!st.ok()) return st;
    retried[r] = out.scalar<float>().value();
    return dist::Status();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  for (size_t r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r].code(), DIST_INVALID_ARGUMENT) << "replica " << r << ": " << errors[r].to_string();
    EXPECT_NE(errors[r].message().find("replica 1: out is float32[2]"), std::string::npos) << errors[r].to_string();
    EXPECT_EQ(after[r], -7.0f) << "replica " << r << "'s out was written by a failed call";
    EXPECT_EQ(retried[r], 2.0f) << "replica " << r;
  }
}

TEST_F(MirroredTest, BatchAllReduceGatherAndBroadcast) {
  std::vector<std::vector<int32_t>> gathered(2);
  std::vector<int32_t> broadcast(2), batch_a(2), batch_b(2);
  dist::Status s = strategy().run([&](dist::ReplicaContext& ctx) {
    const int32_t id = ctx.replica_id().value();
    std::vector<dist::Value> in;
    in.push_back(dist::scalar<int32_t>(id + 1).value());
    in.push_back(dist::scalar<int32_t>(10 * (id + 1)).value());
    std::vector<dist::Value> out(2);
    dist::throw_if_error(ctx.batch_all_reduce(DIST_REDUCE_MAX, in, out));
    batch_a[id] = out[0].scalar<int32_t>().value();
    batch_b[id] = out[1].scalar<int32_t>().value();

    dist::Value row = dist::tensor<int32_t>({id * 10, id * 10 + 1}, {1, 2}).value();
    dist::Value all = ctx.all_gather(row, 0).value();
    EXPECT_EQ(all.shape().value(), (std::vector<int64_t>{2, 2}));
    auto data = all.data<int32_t>().value();
    gathered[id].assign(data.begin(), data.end());

    dist::Value b = ctx.broadcast(dist::scalar<int32_t>(100 + id).value(), 1).value();
    broadcast[id] = b.scalar<int32_t>().value();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(batch_a, (std::vector<int32_t>{2, 2}));
  EXPECT_EQ(batch_b, (std::vector<int32_t>{20, 20}));
  EXPECT_EQ(gathered[0], (std::vector<int32_t>{0, 1, 10, 11}));
  EXPECT_EQ(gathered[1], gathered[0]);
  EXPECT_EQ(broadcast, (std::vector<int32_t>{101, 101}));
}

TEST_F(MirroredTest, BatchAllReduceChecksItsOutputs) {
  dist::Status s = strategy().run([&](dist::ReplicaContext& ctx) {
    std::vector<dist::Value> in;
    in.push_back(dist::scalar<int32_t>(1).value());
    std::vector<dist::Value> out(2);
    dist::Status mismatch = ctx.batch_all_reduce(DIST_REDUCE_SUM, in, out);
    EXPECT_EQ(mismatch.code(), DIST_INVALID_ARGUMENT);
    EXPECT_NE(mismatch.message().find("1 values but 2 outputs"), std::string::npos);
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST_F(MirroredTest, ArgumentsAndResults) {
  std::vector<dist::Value> parts;
  parts.push_back(dist::tensor<double>({1, 2}, {2}).value());
  parts.push_back(dist::tensor<double>({3, 4}, {2}).value());
  std::vector<dist::Value> args;
  args.push_back(dist::per_replica(parts).value());
  args.push_back(dist::scalar<double>(10.0).value());
  std::vector<dist::Value> results(2);
  dist::Status s = strategy().run(
      [](dist::ReplicaContext&, dist::Args in, dist::Results out) -> dist::Status {
        if (in.size() != 2 || out.size() != 2) return dist::Status(DIST_INTERNAL, "wrong counts");
        const double factor = in[1].scalar<double>().value();
        auto x = in[0].data<double>().value();
        return out.set(0, dist::tensor<double>({x[0] * factor, x[1] * factor}, {2}).value());
      },
      args, results);
  ASSERT_TRUE(s.ok()) << s.to_string();
  ASSERT_TRUE(static_cast<bool>(results[0]));
  EXPECT_FALSE(static_cast<bool>(results[1])) << "no replica filled slot 1";
  EXPECT_EQ(results[0].kind().value(), DIST_VALUE_PER_REPLICA);
  EXPECT_EQ(results[0].component(0).value().data<double>().value()[1], 20.0);
  EXPECT_EQ(results[0].component(1).value().data<double>().value()[0], 30.0);
}

TEST_F(MirroredTest, MergeCallRunsOnceWithTheGatheredArguments) {
  std::atomic<int> merges{0};
  std::vector<float> got(2);
  dist::Status s = strategy().run([&](dist::ReplicaContext& ctx) {
    const int32_t id = ctx.replica_id().value();
    std::vector<dist::Value> args;
    args.push_back(dist::scalar<float>(id + 1.0f).value());
    dist::Value merged = ctx.merge_call(
                                [&](dist::Strategy& s, dist::Args gathered) -> dist::Result<dist::Value> {
                                  ++merges;
                                  EXPECT_EQ(gathered[0].kind().value(), DIST_VALUE_PER_REPLICA);
                                  return s.reduce(DIST_REDUCE_SUM, gathered[0]);
                                },
                                args)
                             .value();
    got[static_cast<size_t>(id)] = merged.scalar<float>().value();
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(merges.load(), 1);
  EXPECT_EQ(got, (std::vector<float>{3.0f, 3.0f}));
}

TEST_F(MirroredTest, MergeFunctionsMayReturnAValueOrAStatus) {
  std::vector<int32_t> values(2, -1);
  std::vector<int> empty(2, 0);
  dist::Status s = strategy().run([&](dist::ReplicaContext& ctx) {
    const int32_t id = ctx.replica_id().value();
    dist::Value seven = ctx.merge_call([](dist::Strategy&, dist::Args) { return dist::scalar<int32_t>(7).value(); })
                            .value();
    values[id] = seven.scalar<int32_t>().value();
    dist::Value none = ctx.merge_call([](dist::Strategy&, dist::Args) { return dist::Status(); }).value();
    empty[id] = none ? 0 : 1;
  });
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(values, (std::vector<int32_t>{7, 7}));
  EXPECT_EQ(empty, (std::vector<int>{1, 1}));
}

TEST_F(MirroredTest, ContextTimeout) {
  dist::Status s = strategy().run([&](dist::ReplicaContext& ctx) {
    EXPECT_TRUE(ctx.set_timeout_ms(5000).ok());
    EXPECT_EQ(ctx.set_timeout_ms(-1).code(), DIST_INVALID_ARGUMENT);
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

TEST(OneDeviceTest, RunsOneReplica) {
  dist::Strategy s = dist::Strategy::one_device("CPU:0").value();
  EXPECT_EQ(s.kind().value(), DIST_STRATEGY_ONE_DEVICE);
  int calls = 0;
  ASSERT_TRUE(s.run([&](dist::ReplicaContext& ctx) {
                 ++calls;
                 EXPECT_EQ(ctx.all_reduce(DIST_REDUCE_SUM, dist::scalar<float>(4.0f).value())
                               .value()
                               .scalar<float>()
                               .value(),
                           4.0f);
               }).ok());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(dist::Strategy::one_device("CPU:nope").status().code(), DIST_INVALID_ARGUMENT);
}

TEST(DefaultStrategyTest, IsTheDefault) {
  dist::Strategy s = dist::Strategy::default_strategy().value();
  EXPECT_EQ(s.kind().value(), DIST_STRATEGY_DEFAULT);
  EXPECT_EQ(s.num_replicas_in_sync().value(), 1);
}

TEST(StrategyMoveTest, MovedFromIsEmpty) {
  dist::Strategy a = dist::Strategy::one_device("CPU:0").value();
  dist_strategy_t* raw = a.get();
  dist::Strategy b = std::move(a);
  EXPECT_EQ(a.get(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.get(), raw);
  EXPECT_EQ(a.kind().status().code(), DIST_INVALID_ARGUMENT);  // NOLINT(bugprone-use-after-move)
}

}  // namespace
