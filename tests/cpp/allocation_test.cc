// The wrapper adds no allocation to a step: a Mirrored step through Strategy::run with a
// lambda and ReplicaContext::all_reduce allocates exactly what the same step written
// against the C API allocates (the library's own allocations are the same in both).
// Allocations are counted with a replacement global operator new.
#include <gtest/gtest.h>

#include <cstdio>

#include "distribute/distribute.hpp"
#include "mirrored_fixture.h"
#include "tests/common/counting_operator_new.h"

namespace {

constexpr int kSteps = 200;

// The step in C: each replica all-reduces a wrapped scalar.
dist_status_t CStep(dist_context_t* context, const dist_value_t* const*, int32_t, dist_value_t**, int32_t,
                    void* user_data) {
  double* slots = static_cast<double*>(user_data);
  int32_t id = 0;
  dist_status_t s = dist_context_replica_id(context, &id);
  if (s != DIST_OK) return s;
  dist_value_t* in = nullptr;
  s = dist_tensor_wrap(DIST_FLOAT64, nullptr, 0, &slots[id], sizeof(double), nullptr, nullptr, nullptr, &in);
  if (s != DIST_OK) return s;
  dist_value_t* out = nullptr;
  s = dist_context_all_reduce(context, DIST_REDUCE_SUM, in, &out);
  dist_value_destroy(in);
  if (s != DIST_OK) return s;
  double sum = 0;
  s = dist_tensor_scalar_float64(out, &sum);
  dist_value_destroy(out);
  slots[2 + id] = sum;
  return s;
}

long CountC(dist::Strategy& strategy, double* slots) {
  return counting_operator_new::AllocationsOf([&] {
    for (int i = 0; i < kSteps; ++i) {
      EXPECT_EQ(dist_strategy_run(strategy.get(), CStep, slots, nullptr, 0, nullptr, 0), DIST_OK);
    }
  });
}

long CountWrapper(dist::Strategy& strategy, double* slots) {
  auto step = [slots](dist::ReplicaContext& ctx) -> dist::Status {
    dist::Result<int32_t> id = ctx.replica_id();
    if (!id) return id.status();
    dist::Result<dist::Value> in = dist::wrap<double>({&slots[*id], 1}, {});
    if (!in) return in.status();
    dist::Result<dist::Value> out = ctx.all_reduce(DIST_REDUCE_SUM, *in);
    if (!out) return out.status();
    dist::Result<double> sum = out->scalar<double>();
    if (!sum) return sum.status();
    slots[2 + *id] = *sum;
    return dist::Status();
  };
  return counting_operator_new::AllocationsOf([&] {
    for (int i = 0; i < kSteps; ++i) EXPECT_TRUE(strategy.run(step).ok());
  });
}

TEST_F(MirroredTest, WrapperStepAllocatesNoMoreThanTheCStep) {
  double slots[4] = {1.0, 2.0, 0.0, 0.0};
  // Warm both paths (thread-local caches, pools), then compare steady-state counts.
  CountC(strategy(), slots);
  CountWrapper(strategy(), slots);
  const long c = CountC(strategy(), slots);
  const long wrapper = CountWrapper(strategy(), slots);
  EXPECT_EQ(slots[2], 3.0);
  EXPECT_EQ(slots[3], 3.0);
  EXPECT_LE(wrapper, c) << "C step: " << c << " allocations in " << kSteps << " steps, wrapper: " << wrapper;
  std::printf("allocations in %d two-replica steps: C API %ld, wrapper %ld\n", kSteps, c, wrapper);
  RecordProperty("c_allocations", static_cast<int>(c));
  RecordProperty("wrapper_allocations", static_cast<int>(wrapper));
}

}  // namespace
