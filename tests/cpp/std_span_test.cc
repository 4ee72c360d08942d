// Compiled as C++20: dist::Span and std::span convert into each other, so tensor data
// comes back as a std::span.
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "distribute/distribute.hpp"

namespace {

static_assert(DIST_CPP_HAS_STD_SPAN == 1, "C++20 must see <span>");

TEST(StdSpanTest, TensorDataAsStdSpan) {
  std::vector<float> values = {1.5f, -2.0f, 3.25f};
  std::span<const float> in(values);
  dist::Result<dist::Value> t = dist::tensor<float>(in, {3});
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  std::span<float> out = t->data<float>().value();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[2], 3.25f);
  out[1] = 9.0f;  // written in place
  EXPECT_EQ(t->data<float>().value()[1], 9.0f);
}

TEST(StdSpanTest, MirroredRunWithStdSpanDevices) {
  ASSERT_TRUE(dist::set_logical_cpu_device_count(2).ok());
  const char* devices[] = {"CPU:0", "CPU:1"};
  dist::Result<dist::Strategy> s = dist::Strategy::mirrored(std::span<const char* const>(devices));
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  std::vector<double> got(2);
  dist::Status run = s->run([&](dist::ReplicaContext& ctx) -> dist::Status {
    const int32_t id = ctx.replica_id().value();
    dist::Value one = dist::scalar<double>(id + 1.0).value();
    got[static_cast<size_t>(id)] = ctx.all_reduce(DIST_REDUCE_SUM, one).value().scalar<double>().value();
    return dist::Status();
  });
  ASSERT_TRUE(run.ok()) << run.to_string();
  EXPECT_EQ(got, (std::vector<double>{3.0, 3.0}));
}

}  // namespace
