/* One worker of a multi-worker collectives check, or (with --single N) the same program as
 * one process with N replicas. Every worker writes what its first replica computed to
 * OUT.<rank> (OUT.single with --single): the results of SUM and MEAN all-reduces of
 * arbitrary floats (where the order of additions shows in the bits), a large all-reduce,
 * an all-gather of replicas with different row counts, a broadcast, broadcasts and
 * all-gathers of large tensors in the library's memory and over the caller's own
 * (dist_tensor_wrap: through shared memory these take different paths), cross-replica reduce
 * and gather, a reduce inside merge_call's function (with one replica per worker its
 * argument is a PerReplica value of one component, so the reduce spans every worker), the initial value of a variable each worker proposes differently, and the
 * rows a distributed dataset gives each replica. The test compares the files byte for
 * byte: every worker must agree, and with the single process.
 *
 * Usage: mw_collectives --out PREFIX [--single N] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distribute/distribute.h"
#include "mw_check.h"

enum { kSmall = 37, kLarge = 300000, kCols = 3 };
static FILE* out_file;

/* A float for replica g, element i whose sum depends on the order of additions. */
static float Arbitrary(int g, int i) {
  const unsigned h = (unsigned)(g * 2654435761u) ^ (unsigned)(i * 40503u + 17u);
  const float unit = (float)(h % 100003u) / 100003.0f - 0.5f;
  return unit * ldexpf(1.0f, (int)(h % 23u) - 11);
}

static void FreeWrapped(void* data, void* user_data) {
  (void)user_data;
  free(data);
}

/* count floats over memory of the caller's own, as from another runtime. */
static dist_value_t* WrappedFloats(const int64_t* shape, int32_t rank, size_t count, float base) {
  float* data = malloc(count * sizeof(float));
  if (data == NULL) abort();
  for (size_t i = 0; i < count; ++i) data[i] = base + (float)(i % 1000);
  dist_value_t* t = NULL;
  CHECK(dist_tensor_wrap(DIST_FLOAT32, shape, rank, data, count * sizeof(float), "CPU:0", FreeWrapped, NULL, &t));
  return t;
}

static dist_value_t* FloatTensor(const int64_t* shape, int32_t rank, const float* data, size_t count) {
  dist_value_t* t = NULL;
  CHECK(dist_tensor_create(DIST_FLOAT32, shape, rank, data, count * sizeof(float), "CPU:0", &t));
  return t;
}

static void Write(const char* label, const dist_value_t* tensor) {
  size_t bytes = 0;
  void* data = NULL;
  CHECK(dist_tensor_byte_size(tensor, &bytes));
  CHECK(dist_tensor_data(tensor, &data));
  fprintf(out_file, "%s %zu\n", label, bytes);
  fwrite(data, 1, bytes, out_file);
  fputc('\n', out_file);
}

/* merge_call's function: the SUM of every replica's argument, across all workers. */
static dist_status_t ReduceInMerge(dist_strategy_t* strategy, const dist_value_t* const* args,
                                   int32_t num_args, dist_value_t** out, void* user_data) {
  (void)num_args;
  (void)user_data;
  return dist_strategy_reduce(strategy, DIST_REDUCE_SUM, args[0], out);
}

static dist_status_t Step(dist_context_t* context, const dist_value_t* const* args, int32_t num_args,
                          dist_value_t** results, int32_t num_results, void* user_data) {
  (void)num_args;
  (void)num_results;
  (void)user_data;
  int32_t g = 0, n = 0;
  CHECK(dist_context_replica_id(context, &g));
  CHECK(dist_context_num_replicas_in_sync(context, &n));
  float small[kSmall];
  for (int i = 0; i < kSmall; ++i) small[i] = Arbitrary(g, i);
  const int64_t small_shape[1] = {kSmall};
  dist_value_t* x = FloatTensor(small_shape, 1, small, kSmall);
  /* This replica's share of the SyncOnRead counter (args[0]): its id + 1. */
  const float share[2] = {(float)(g + 1), 0.5f};
  const int64_t two_shape[1] = {2};
  dist_value_t* mine = FloatTensor(two_shape, 1, share, 2);
  CHECK(dist_variable_assign((dist_value_t*)args[0], mine));
  dist_value_destroy(mine);
  float* large = malloc(sizeof(float) * kLarge);
  for (int i = 0; i < kLarge; ++i) large[i] = Arbitrary(g + 1000, i);
  const int64_t large_shape[1] = {kLarge};
  dist_value_t* y = FloatTensor(large_shape, 1, large, kLarge);
  free(large);
  const int64_t rows = g + 1;
  float block[64 * kCols];
  for (int i = 0; i < rows * kCols; ++i) block[i] = (float)(g * 100 + i);
  const int64_t block_shape[2] = {rows, kCols};
  dist_value_t* z = FloatTensor(block_shape, 2, block, (size_t)(rows * kCols));

  dist_value_t *sum = NULL, *mean = NULL, *big = NULL, *gathered = NULL, *from_last = NULL;
  CHECK(dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &sum));
  CHECK(dist_context_all_reduce(context, DIST_REDUCE_MEAN, x, &mean));
  CHECK(dist_context_all_reduce(context, DIST_REDUCE_SUM, y, &big));
  CHECK(dist_context_all_gather(context, z, 0, &gathered));
  CHECK(dist_context_broadcast(context, x, n - 1, &from_last));
  dist_value_t* merged = NULL;
  const dist_value_t* merge_args[1] = {x};
  CHECK(dist_context_merge_call(context, ReduceInMerge, NULL, merge_args, 1, &merged));
  results[0] = x;  /* for the cross-replica reduce */
  results[1] = z;  /* for the cross-replica gather */
  results[2] = sum;
  results[3] = mean;
  results[4] = big;
  results[5] = gathered;
  results[6] = from_last;
  results[7] = merged;
  /* Integers under MEAN: summed, then divided into float64 as TF's truediv does. */
  int32_t ints[5];
  for (int i = 0; i < 5; ++i) ints[i] = g * 7 + i - 3;
  const int64_t five[1] = {5};
  dist_value_t* w = NULL;
  CHECK(dist_tensor_create(DIST_INT32, five, 1, ints, sizeof ints, "CPU:0", &w));
  CHECK(dist_context_all_reduce(context, DIST_REDUCE_MEAN, w, &results[8]));
  /* Large broadcasts and all-gathers (from 64 KiB, read in place over shared memory): from
   * the library's memory and from the caller's, to replicas of another worker and of this
   * one. Blocks of (g + 1) x 20000 floats. */
  const int64_t wide_shape[1] = {kLarge / 2};
  dist_value_t* yw = WrappedFloats(wide_shape, 1, kLarge / 2, (float)(g * 1000));
  CHECK(dist_context_broadcast(context, y, n - 1, &results[9]));
  CHECK(dist_context_broadcast(context, yw, 0, &results[10]));
  const int64_t tall_shape[2] = {(g + 1) * 10000, 2};
  dist_value_t* tall = WrappedFloats(tall_shape, 2, (size_t)((g + 1) * 20000), (float)(g * 1000));
  CHECK(dist_context_all_gather(context, tall, 0, &results[11]));
  void* tall_data = NULL;
  CHECK(dist_tensor_data(tall, &tall_data));
  dist_value_t* tall_library = NULL;
  CHECK(dist_tensor_create(DIST_FLOAT32, tall_shape, 2, tall_data, (size_t)((g + 1) * 20000) * sizeof(float),
                           "CPU:0", &tall_library));
  CHECK(dist_context_all_gather(context, tall_library, 0, &results[12]));
  dist_value_destroy(tall_library);
  dist_value_destroy(tall);
  dist_value_destroy(yw);
  results[13] = w;  /* for the cross-replica integer MEAN */
  dist_value_destroy(y);
  return DIST_OK;
}

int main(int argc, char** argv) {
  const char* prefix = NULL;
  int single = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      prefix = argv[++i];
    } else if (strcmp(argv[i], "--single") == 0 && i + 1 < argc) {
      single = atoi(argv[++i]);
    } else {
      fprintf(stderr, "usage: mw_collectives --out PREFIX [--single N]\n");
      return 2;
    }
  }
  if (prefix == NULL) {
    fprintf(stderr, "usage: mw_collectives --out PREFIX [--single N]\n");
    return 2;
  }
  dist_strategy_t* strategy = NULL;
  char path[4096];
  int rank = 0;
  if (single > 0) {
    CHECK(dist_set_logical_cpu_device_count(single));
    CHECK(dist_strategy_create_mirrored(NULL, 0, NULL, &strategy));
    snprintf(path, sizeof path, "%s.single", prefix);
  } else {
    /* The strategy takes its replica count from DIST_REPLICAS_PER_WORKER (default 1). */
    const char* rank_text = getenv("DIST_RANK");
    rank = rank_text ? atoi(rank_text) : 0;
    dist_communication_options_t* options = NULL;
    CHECK(dist_communication_options_create(&options));
    CHECK(dist_communication_options_set_timeout_ms(options, 30000));
    CHECK(dist_strategy_create_multi_worker_mirrored(NULL, options, &strategy));
    dist_communication_options_destroy(options);
    snprintf(path, sizeof path, "%s.%d", prefix, rank);
  }
  out_file = fopen(path, "wb");
  if (out_file == NULL) {
    fprintf(stderr, "cannot write %s\n", path);
    return 1;
  }
  CHECK(dist_strategy_scope_enter(strategy));

  /* A variable whose proposed initial value differs by worker: the chief's wins. */
  const float proposed[2] = {(float)rank + 0.25f, -(float)rank};
  const int64_t two[1] = {2};
  dist_value_t* initial = FloatTensor(two, 1, proposed, 2);
  dist_value_t* variable = NULL;
  CHECK(dist_variable_create(initial, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN,
                             "w", &variable));
  dist_value_t* read = NULL;
  CHECK(dist_variable_read(variable, &read));
  Write("variable", read);

  /* A SyncOnRead SUM variable: every replica writes its own copy; the cross-replica read
   * sums every worker's copies. */
  const float zeros[2] = {0, 0};
  dist_value_t* zero = FloatTensor(two, 1, zeros, 2);
  dist_value_t* counter = NULL;
  CHECK(dist_variable_create(zero, DIST_SYNC_ON_READ, DIST_AGGREGATION_SUM, "counter", &counter));

  enum { kResults = 14 };
  dist_value_t* results[kResults] = {0};
  const dist_value_t* run_args[1] = {counter};
  CHECK(dist_strategy_run(strategy, Step, NULL, run_args, 1, results, kResults));
  dist_value_t* counted = NULL;
  CHECK(dist_variable_read(counter, &counted));
  Write("sync_on_read_sum", counted);
  const char* labels[kResults] = {"x",          "z",         "sum",       "mean",
                                  "large",      "all_gather", "broadcast", "merge_reduce_sum",
                                  "int_mean",   "broadcast_large", "broadcast_wrapped",
                                  "all_gather_wrapped", "all_gather_large", "ints"};
  for (int r = 2; r < kResults - 1; ++r) { /* results[13], this replica's input, differs */
    dist_value_t* first = NULL;
    CHECK(dist_value_component(results[r], 0, &first));
    Write(labels[r], first);
    dist_value_destroy(first);
  }
  dist_value_t *reduced = NULL, *mean_reduced = NULL, *gathered = NULL;
  CHECK(dist_strategy_reduce(strategy, DIST_REDUCE_SUM, results[0], &reduced));
  CHECK(dist_strategy_reduce(strategy, DIST_REDUCE_MEAN, results[0], &mean_reduced));
  CHECK(dist_strategy_gather(strategy, results[1], 0, &gathered));
  dist_value_t *int_mean = NULL, *int_mean_axis = NULL;
  CHECK(dist_strategy_reduce(strategy, DIST_REDUCE_MEAN, results[13], &int_mean));
  CHECK(dist_strategy_reduce_axis(strategy, DIST_REDUCE_MEAN, results[13], 0, &int_mean_axis));
  dist_dtype_t int_mean_dtype = 0;
  CHECK(dist_tensor_dtype(int_mean, &int_mean_dtype));
  if (int_mean_dtype != DIST_FLOAT64) {
    fprintf(stderr, "reduce(MEAN) of int32 is %s, expected float64\n",
            dist_dtype_name(int_mean_dtype));
    return 1;
  }
  Write("reduce_int_mean", int_mean);
  Write("reduce_axis_int_mean", int_mean_axis);
  Write("reduce_sum", reduced);
  Write("reduce_mean", mean_reduced);
  Write("gather", gathered);

  /* The rows of a global batch of 8 that each replica gets, as a gather of them. */
  float rows[16][2];
  for (int i = 0; i < 16; ++i) {
    rows[i][0] = (float)i;
    rows[i][1] = (float)(i * i);
  }
  const int64_t rows_shape[2] = {16, 2};
  dist_value_t* table = FloatTensor(rows_shape, 2, &rows[0][0], 32);
  dist_dataset_t *slices = NULL, *batched = NULL;
  CHECK(dist_dataset_from_tensor_slices((const dist_value_t* const*)&table, 1, &slices));
  CHECK(dist_dataset_batch(slices, 8, 0, &batched));
  dist_distributed_dataset_t* distributed = NULL;
  CHECK(dist_strategy_distribute_dataset(strategy, batched, NULL, &distributed));
  dist_iterator_t* iterator = NULL;
  CHECK(dist_distributed_dataset_make_iterator(distributed, &iterator));
  for (;;) {
    dist_value_t* element = NULL;
    int32_t has = 0;
    CHECK(dist_iterator_get_next_as_optional(iterator, &element, 1, &has));
    if (!has) break;
    dist_value_t* step_rows = NULL;
    CHECK(dist_strategy_gather(strategy, element, 0, &step_rows));
    Write("input_rows", step_rows);
    dist_value_destroy(step_rows);
    dist_value_destroy(element);
  }
  fclose(out_file);
  printf("wrote %s\n", path);
  /* Every value this program made goes back (the ASan build checks for leaks). */
  dist_iterator_destroy(iterator);
  dist_distributed_dataset_destroy(distributed);
  dist_dataset_destroy(batched);
  dist_dataset_destroy(slices);
  dist_value_t* made[] = {table, int_mean, int_mean_axis, reduced, mean_reduced, gathered,
                          counted, counter, zero, read, variable, initial};
  for (size_t i = 0; i < sizeof made / sizeof made[0]; ++i) dist_value_destroy(made[i]);
  for (int r = 0; r < kResults; ++r) dist_value_destroy(results[r]);
  /* Destroying the strategy waits for the other workers: exiting without it would look,
   * to a worker still finishing its last collective, like this worker dying. */
  CHECK(dist_strategy_scope_exit(strategy));
  dist_strategy_destroy(strategy);
  return 0;
}
