// Built with -fno-exceptions: the wrapper compiles, Results carry errors, lambdas run as
// replicas. Prints "no-exceptions build OK" when everything held.
#include <cstdio>
#include <string>
#include <vector>

#include "distribute/distribute.hpp"

static_assert(DIST_CPP_EXCEPTIONS == 0, "this file must be built with -fno-exceptions");

namespace {

int failures = 0;

void Expect(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "no_exceptions_test: expected %s\n", what);
    ++failures;
  }
}

}  // namespace

int main() {
  dist::Result<dist::Value> bad = dist::tensor<float>({1.0f}, {2});
  Expect(!bad.ok() && bad.status().code() == DIST_INVALID_ARGUMENT, "a size mismatch to be INVALID_ARGUMENT");

  Expect(dist::set_logical_cpu_device_count(2).ok(), "two logical CPU devices");
  const char* devices[] = {"CPU:0", "CPU:1"};
  dist::Result<dist::Strategy> strategy = dist::Strategy::mirrored(devices);
  Expect(strategy.ok(), "a Mirrored strategy");
  if (!strategy.ok()) return 1;
  std::vector<int32_t> sums(2, 0);
  dist::Status run = strategy->run([&](dist::ReplicaContext& ctx) -> dist::Status {
    dist::Result<int32_t> id = ctx.replica_id();
    if (!id) return id.status();
    dist::Result<dist::Value> one = dist::scalar<int32_t>(*id + 5);
    if (!one) return one.status();
    dist::Result<dist::Value> sum = ctx.all_reduce(DIST_REDUCE_SUM, *one);
    if (!sum) return sum.status();
    sums[static_cast<size_t>(*id)] = sum->scalar<int32_t>().value_or(-1);
    return *id == 1 ? dist::Status(DIST_CANCELLED, "stop") : dist::Status();
  });
  Expect(run.code() == DIST_CANCELLED && run.message().find("replica 1: stop") != std::string::npos, "replica 1's status from run");
  Expect(sums[0] == 11 && sums[1] == 11, "5 + 6 on both replicas");

  // A map lambda, its status reaching get_next.
  dist::Result<dist::Dataset> range = dist::Dataset::range(0, 3);
  if (!range) return 1;
  dist::Result<dist::Dataset> doubled = range->map(
      [](dist::Args in, dist::Results out) -> dist::Status {
        dist::Result<int64_t> x = in[0].scalar<int64_t>();
        if (!x) return x.status();
        if (*x == 2) return dist::Status(DIST_DATA_LOSS, "two");
        dist::Result<dist::Value> y = dist::scalar<int64_t>(2 * *x);
        if (!y) return y.status();
        return out.set(0, std::move(*y));
      },
      1);
  if (!doubled) return 1;
  dist::Result<dist::Iterator> it = doubled->make_iterator();
  if (!it) return 1;
  dist::Value element[1];
  Expect(it->get_next(element).ok() && element[0].scalar<int64_t>().value_or(-1) == 0, "0 doubled");
  Expect(it->get_next(element).ok() && element[0].scalar<int64_t>().value_or(-1) == 2, "1 doubled");
  Expect(it->get_next(element).code() == DIST_DATA_LOSS, "the map's status at element 2");

  // A generator lambda, and a dataset function building each replica's batches from it.
  dist::Result<dist::DistributedDataset> generated = dist::distribute_datasets_from_function(
      *strategy, [](dist::InputContextView context) -> dist::Result<dist::Dataset> {
        dist::Result<int64_t> per_replica = context.per_replica_batch_size(4);
        if (!per_replica) return per_replica.status();
        dist::Result<dist::Dataset> squares = dist::Dataset::from_generator(
            [](int64_t index, dist::Results out) -> dist::Result<bool> {
              if (index == 4) return false;
              dist::Result<dist::Value> square = dist::scalar<int64_t>(index * index);
              if (!square) return square.status();
              dist::Status set = out.set(0, std::move(*square));
              if (!set.ok()) return set;
              return true;
            },
            1);
        if (!squares) return squares.status();
        return squares->batch(*per_replica);
      });
  if (!generated) return 1;
  dist::Result<dist::Iterator> steps = generated->make_iterator();
  if (!steps) return 1;
  Expect(steps->get_next(element).ok(), "the first step of generated squares");
  dist::Result<dist::Value> second_replica = element[0].component(1);
  dist::Result<dist::Span<int64_t>> rows =
      second_replica ? second_replica->data<int64_t>() : dist::Result<dist::Span<int64_t>>(second_replica.status());
  Expect(rows && rows->size() == 2 && (*rows)[0] == 4 && (*rows)[1] == 9, "replica 1's batch [4 9]");
  if (failures == 0) std::printf("no-exceptions build OK\n");
  return failures == 0 ? 0 : 1;
}
