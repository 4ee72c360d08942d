/* One worker of the back-to-back strategies check (issue 13, item 2): CYCLES times in a
 * row, create a MultiWorkerMirroredStrategy from TF_CONFIG, all-reduce once, check the sum,
 * destroy it. Every cycle's chief server listens on the same address as the one before,
 * which may still be shutting down when the other workers come for the next cycle's: they
 * must find the new one, not fail on the old one.
 *
 * Replica r of a job of N workers (one replica each) contributes (r + 1) * (i + 1) + cycle
 * at element i, so the SUM is (i + 1) * N(N + 1)/2 + N * cycle: small integers, exact in
 * float. The first failure prints its cycle and message and exits 1.
 *
 * Usage: mw_back_to_back --cycles CYCLES (under distrun, which sets TF_CONFIG, DIST_RANK
 * and DIST_WORLD_SIZE). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distribute/distribute.h"

enum { kElements = 4 };

static int cycle_now;

#define CHECK(call)                                                                      \
  do {                                                                                   \
    dist_status_t status_ = (call);                                                      \
    if (status_ != DIST_OK) {                                                            \
      fprintf(stderr, "cycle %d: %s failed: %s: %s\n", cycle_now, #call,                 \
              dist_status_name(status_), dist_last_error_message());                     \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

static int EnvInt(const char* name) {
  const char* text = getenv(name);
  if (text == NULL) {
    fprintf(stderr, "%s is not set: run under distrun\n", name);
    exit(2);
  }
  return atoi(text);
}

static dist_status_t AllReduce(dist_context_t* context, const dist_value_t* const* args, int32_t num_args,
                               dist_value_t** results, int32_t num_results, void* user_data) {
  (void)args;
  (void)num_args;
  (void)num_results;
  const int rank = *(const int*)user_data;
  float mine[kElements];
  for (int i = 0; i < kElements; ++i) mine[i] = (float)((rank + 1) * (i + 1) + cycle_now);
  const int64_t shape[1] = {kElements};
  dist_value_t* x = NULL;
  CHECK(dist_tensor_create(DIST_FLOAT32, shape, 1, mine, sizeof mine, "CPU:0", &x));
  const dist_status_t status = dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &results[0]);
  dist_value_destroy(x);
  return status;
}

int main(int argc, char** argv) {
  int cycles = 0;
  if (argc == 3 && strcmp(argv[1], "--cycles") == 0) cycles = atoi(argv[2]);
  if (cycles <= 0) {
    fprintf(stderr, "usage: mw_back_to_back --cycles CYCLES\n");
    return 2;
  }
  int rank = EnvInt("DIST_RANK");
  const int workers = EnvInt("DIST_WORLD_SIZE");
  for (cycle_now = 0; cycle_now < cycles; ++cycle_now) {
    dist_communication_options_t* options = NULL;
    CHECK(dist_communication_options_create(&options));
    CHECK(dist_communication_options_set_timeout_ms(options, 30000));
    dist_strategy_t* strategy = NULL;
    CHECK(dist_strategy_create_multi_worker_mirrored(NULL, options, &strategy));
    dist_communication_options_destroy(options);

    dist_value_t* summed = NULL;
    CHECK(dist_strategy_run(strategy, AllReduce, &rank, NULL, 0, &summed, 1));
    dist_value_t* first = NULL;
    CHECK(dist_value_component(summed, 0, &first));
    void* data = NULL;
    CHECK(dist_tensor_data(first, &data));
    const float* sum = data;
    for (int i = 0; i < kElements; ++i) {
      const float expected = (float)((i + 1) * workers * (workers + 1) / 2 + workers * cycle_now);
      if (sum[i] != expected) {
        fprintf(stderr, "cycle %d: element %d of the sum is %g, expected %g\n", cycle_now, i, sum[i], expected);
        return 1;
      }
    }
    dist_value_destroy(first);
    dist_value_destroy(summed);
    dist_strategy_destroy(strategy);
  }
  printf("%d cycles of create, all-reduce, destroy passed\n", cycles);
  return 0;
}
