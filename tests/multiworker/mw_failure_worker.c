/* One worker of the multi-worker failure tests (failure_test.cc starts several of them on
 * loopback and injects faults). It creates a MultiWorkerMirroredStrategy from TF_CONFIG
 * and, depending on --mode:
 *
 *   loop      prints READY after creation and a first correct all-reduce, then all-reduces
 *             (SUM, 64 KiB of float32, each result checked) until a call fails, printing
 *             ALIVE <calls> every 1000 calls, and then
 *               FAILED <status name> <ms the failing call took> <message>
 *               AGAIN <status name> <ms> <message>     (one more call: the failure sticks)
 *   mismatch  prints READY like loop, then makes one all-reduce whose shape, dtype or op
 *             (--mismatch shape|dtype|op) depends on its rank (DIST_RANK), and prints
 *               RESULT <status name> <ms> <message>
 *   start     only creates the strategy and prints
 *               CREATED <status name> <ms> <message>
 *
 * Every line is flushed at once; messages are kept on one line. Exits 0 whenever it could
 * report, 1 when an unexpected step failed.
 *
 * --elements N sets the all-reduce's float32 count (default 16000, just under 64 KiB, which
 * goes through the shared-memory transport's rings; from 16384, 64 KiB, the workers of one
 * host reduce in place out of each other's tensors).
 *
 * Usage: mw_failure_worker --mode loop|mismatch|start [--timeout-ms T] [--replicas K]
 *                          [--mismatch shape|dtype|op] [--elements N] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distribute/distribute.h"

static int64_t elements = 16000; /* --elements */

struct Call {
  dist_reduce_op_t op;
  int check; /* verify the result: every element == number of replicas in sync */
};

static double NowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* "<TAG> <status name> <ms> <message>" on one line. */
static void Report(const char* tag, dist_status_t status, double ms) {
  char message[4096];
  snprintf(message, sizeof message, "%s", status == DIST_OK ? "" : dist_last_error_message());
  for (char* c = message; *c != '\0'; ++c) {
    if (*c == '\n' || *c == '\r') *c = ' ';
  }
  printf("%s %s %.1f %s\n", tag, dist_status_name(status), ms, message);
  fflush(stdout);
}

static dist_status_t AllReduceStep(dist_context_t* context, const dist_value_t* const* args,
                                   int32_t num_args, dist_value_t** results, int32_t num_results,
                                   void* user_data) {
  (void)num_args;
  (void)results;
  (void)num_results;
  const struct Call* call = user_data;
  dist_value_t* out = NULL;
  dist_status_t status = dist_context_all_reduce(context, call->op, args[0], &out);
  if (status != DIST_OK || !call->check) {
    dist_value_destroy(out);
    return status;
  }
  int32_t replicas = 0;
  void* data = NULL;
  if (dist_context_num_replicas_in_sync(context, &replicas) != DIST_OK ||
      dist_tensor_data(out, &data) != DIST_OK) {
    dist_value_destroy(out);
    return DIST_INTERNAL;
  }
  const float* values = data;
  for (int64_t i = 0; i < elements && status == DIST_OK; ++i) {
    if (values[i] != (float)replicas) status = DIST_INTERNAL;
  }
  dist_value_destroy(out);
  return status;
}

/* One all-reduce of `tensor` on every replica; *ms takes how long it took. */
static dist_status_t AllReduce(dist_strategy_t* strategy, dist_value_t* tensor, dist_reduce_op_t op,
                               int check, double* ms) {
  struct Call call = {op, check};
  const dist_value_t* args[1] = {tensor};
  const double start = NowMs();
  const dist_status_t status = dist_strategy_run(strategy, AllReduceStep, &call, args, 1, NULL, 0);
  *ms = NowMs() - start;
  return status;
}

static dist_value_t* Tensor(dist_dtype_t dtype, int64_t count) {
  const size_t element = dtype == DIST_FLOAT64 ? sizeof(double) : sizeof(float);
  void* data = calloc((size_t)count, element);
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DIST_FLOAT64) {
      ((double*)data)[i] = 1.0;
    } else {
      ((float*)data)[i] = 1.0f;
    }
  }
  dist_value_t* tensor = NULL;
  const int64_t shape[1] = {count};
  const dist_status_t status =
      dist_tensor_create(dtype, shape, 1, data, (size_t)count * element, "CPU:0", &tensor);
  free(data);
  if (status != DIST_OK) {
    Report("ERROR", status, 0);
    exit(1);
  }
  return tensor;
}

static int Usage(void) {
  fprintf(stderr,
          "usage: mw_failure_worker --mode loop|mismatch|start [--timeout-ms T] "
          "[--replicas K] [--mismatch shape|dtype|op] [--elements N]\n");
  return 2;
}

int main(int argc, char** argv) {
  const char* mode = NULL;
  const char* mismatch = "shape";
  int64_t timeout_ms = 5000;
  int replicas = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--mode") == 0) {
      mode = argv[i + 1];
    } else if (strcmp(argv[i], "--timeout-ms") == 0) {
      timeout_ms = atoll(argv[i + 1]);
    } else if (strcmp(argv[i], "--replicas") == 0) {
      replicas = atoi(argv[i + 1]);
    } else if (strcmp(argv[i], "--mismatch") == 0) {
      mismatch = argv[i + 1];
    } else if (strcmp(argv[i], "--elements") == 0) {
      elements = atoll(argv[i + 1]);
      if (elements < 1) return Usage();
    } else {
      return Usage();
    }
  }
  if (mode == NULL || argc % 2 == 0) return Usage();
  const char* rank_text = getenv("DIST_RANK");
  const int rank = rank_text != NULL ? atoi(rank_text) : 0;

  dist_communication_options_t* options = NULL;
  dist_status_t status = dist_communication_options_create(&options);
  if (status == DIST_OK) status = dist_communication_options_set_replicas_per_worker(options, replicas);
  if (status == DIST_OK) status = dist_communication_options_set_timeout_ms(options, timeout_ms);
  if (status != DIST_OK) {
    Report("ERROR", status, 0);
    return 1;
  }
  dist_strategy_t* strategy = NULL;
  const double start = NowMs();
  status = dist_strategy_create_multi_worker_mirrored(NULL, options, &strategy);
  const double create_ms = NowMs() - start;
  dist_communication_options_destroy(options);
  if (strcmp(mode, "start") == 0) {
    Report("CREATED", status, create_ms);
    dist_strategy_destroy(strategy);
    return 0;
  }
  if (status != DIST_OK) {
    Report("ERROR", status, create_ms);
    return 1;
  }

  dist_value_t* tensor = Tensor(DIST_FLOAT32, elements);
  double ms = 0;
  status = AllReduce(strategy, tensor, DIST_REDUCE_SUM, 1, &ms);
  if (status != DIST_OK) {
    Report("ERROR", status, ms);
    return 1;
  }
  printf("READY\n");
  fflush(stdout);

  if (strcmp(mode, "loop") == 0) {
    /* Every result is checked (a wrong one fails with INTERNAL); ALIVE every 1000 calls
     * shows progress (the multi-host tests watch it while strangers knock). */
    long calls = 0;
    while ((status = AllReduce(strategy, tensor, DIST_REDUCE_SUM, 1, &ms)) == DIST_OK) {
      if (++calls % 1000 == 0) {
        printf("ALIVE %ld\n", calls);
        fflush(stdout);
      }
    }
    Report("FAILED", status, ms);
    status = AllReduce(strategy, tensor, DIST_REDUCE_SUM, 0, &ms);
    Report("AGAIN", status, ms);
  } else if (strcmp(mode, "mismatch") == 0) {
    /* Rank 0 makes the same call as before; the others change one thing. */
    dist_dtype_t dtype = DIST_FLOAT32;
    int64_t count = elements;
    dist_reduce_op_t op = DIST_REDUCE_SUM;
    if (rank != 0 && strcmp(mismatch, "shape") == 0) count = elements + rank;
    if (rank != 0 && strcmp(mismatch, "dtype") == 0) dtype = DIST_FLOAT64;
    if (rank != 0 && strcmp(mismatch, "op") == 0) op = DIST_REDUCE_MAX;
    dist_value_t* mine = Tensor(dtype, count);
    status = AllReduce(strategy, mine, op, 0, &ms);
    Report("RESULT", status, ms);
    dist_value_destroy(mine);
  } else {
    return Usage();
  }
  dist_value_destroy(tensor);
  dist_strategy_destroy(strategy);
  return 0;
}
