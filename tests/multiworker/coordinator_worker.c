/* One task of the coordinator's multi-process tests (coordinator_test.sh starts every task
 * itself with its own TF_CONFIG, so that it can kill and restart them). Tasks of type
 * "worker" and "ps" register the job's functions, write DIR/<job>.<index>.pid, create their
 * server (retrying while the chief's service still holds a killed incarnation) and serve
 * until the chief is gone. The chief runs one case and prints "ok ..." lines:
 *
 *   count N        N closures over the workers; each adds 1 to "counter" on the ps and
 *                  returns [its index, the worker's task index]: every index fetched once,
 *                  the counter exactly N.
 *   kill N         the same, closures sleeping 30 ms; after scheduling the chief writes
 *                  DIR/scheduled (the script then SIGKILLs worker 1 and restarts it): every
 *                  index fetched once, join OK, N <= counter <= N + 1 (the killed closure may
 *                  have counted before it died: TF's at-least-once); then closures until
 *                  one runs on the restarted worker 1 (20 s at most).
 *   stop N         timeout 3000 ms; once worker 1 has run a closure the chief writes
 *                  DIR/scheduled, the script SIGSTOPs
 *                  worker 1 for good and writes DIR/stopped; then 6 rounds of 1 closure
 *                  and 4 of 3, sleeping 30 ms, each joined at once, then N: every join OK (a closure
 *                  that hangs on the stopped worker runs again on another before join gives
 *                  up), no closure ran on worker 1, every index fetched once, the counter
 *                  exact (a stopped worker never ran the closure it hangs on).
 *   kill_ps        timeout 3000 ms; closures that add to a variable and sleep; after
 *                  DIR/scheduled the script SIGKILLs ps 0: join must fail with
 *                  DIST_UNAVAILABLE naming ps:0 within the timeout + 1 s of the kill
 *                  (DIR/killed holds the kill's CLOCK_REALTIME ms).
 *   fail           every worker kept busy, then a failing closure and 50 sleeping ones: join reports its error once,
 *                  closures queued behind it are DIST_CANCELLED, join is then OK.
 *   data POLICY    per-worker dataset of range(60) batched by 3 workers (DATA), or of the
 *                  6 files DIR/shard.<i> holding 10 lines each (FILE): every element once
 *                  across the workers per epoch, two epochs.
 *
 * Usage: coordinator_worker DIR CASE [ARG] */
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "distribute/distribute.h"

static const char* g_dir;
static int32_t g_task_index;

static void Die(const char* what, dist_status_t status) {
  fprintf(stderr, "coordinator_worker: %s: %s: %s\n", what, dist_status_name(status), dist_last_error_message());
  exit(1);
}
#define CHECK(call)                          \
  do {                                       \
    dist_status_t s_ = (call);               \
    if (s_ != DIST_OK) Die(#call, s_);       \
  } while (0)
#define EXPECT(cond, ...)                                        \
  do {                                                           \
    if (!(cond)) {                                               \
      fprintf(stderr, "coordinator_worker: FAILED: " __VA_ARGS__); \
      fprintf(stderr, "\n");                                     \
      exit(1);                                                   \
    }                                                            \
  } while (0)

static int64_t NowMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void SleepMs(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static void WriteFile(const char* name, const char* text) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", g_dir, name);
  FILE* f = fopen(path, "w");
  if (f == NULL) Die("fopen", DIST_INTERNAL);
  fputs(text, f);
  fclose(f);
}

static int FileExists(const char* name) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", g_dir, name);
  return access(path, F_OK) == 0;
}

/* ---- The job's functions ---- */

static dist_status_t ReturnPair(int64_t index, dist_value_t** out) {
  const int64_t pair[2] = {index, g_task_index};
  const int64_t dims[1] = {2};
  return dist_tensor_create(DIST_INT64, dims, 1, pair, sizeof(pair), "CPU:0", out);
}

/* args: counter, index (int64 scalar), sleep ms (int64 scalar). */
static dist_status_t Count(dist_strategy_t* strategy, const dist_closure_args_t* args, dist_value_t** out,
                           void* user_data) {
  dist_value_t* counter = NULL;
  dist_value_t* index = NULL;
  dist_value_t* pause = NULL;
  dist_value_t* one = NULL;
  void* data = NULL;
  int64_t i = 0, ms = 0;
  const float value = 1.0f;
  dist_status_t s;
  (void)strategy;
  (void)user_data;
  if ((s = dist_closure_args_value(args, 0, &counter)) != DIST_OK) return s;
  if ((s = dist_closure_args_value(args, 1, &index)) != DIST_OK) return s;
  if ((s = dist_closure_args_value(args, 2, &pause)) != DIST_OK) return s;
  if ((s = dist_tensor_data(index, &data)) != DIST_OK) return s;
  memcpy(&i, data, sizeof(i));
  if ((s = dist_tensor_data(pause, &data)) != DIST_OK) return s;
  memcpy(&ms, data, sizeof(ms));
  if (ms > 0) SleepMs((int)ms);
  if ((s = dist_tensor_create(DIST_FLOAT32, NULL, 0, &value, sizeof(value), "CPU:0", &one)) != DIST_OK) return s;
  s = dist_variable_assign_add(counter, one);
  dist_value_destroy(one);
  if (s != DIST_OK) return s;
  return ReturnPair(i, out);
}

static dist_status_t Fails(dist_strategy_t* strategy, const dist_closure_args_t* args, dist_value_t** out,
                           void* user_data) {
  (void)strategy;
  (void)user_data;
  return dist_closure_args_value(args, 7, out); /* DIST_OUT_OF_RANGE naming index 7 */
}

static dist_status_t Nap(dist_strategy_t* strategy, const dist_closure_args_t* args, dist_value_t** out,
                         void* user_data) {
  (void)strategy;
  (void)args;
  (void)out;
  (void)user_data;
  SleepMs(20);
  return DIST_OK;
}

/* Keeps a worker busy for 500 ms, so that what is scheduled after it queues up. */
static dist_status_t NapLong(dist_strategy_t* strategy, const dist_closure_args_t* args, dist_value_t** out,
                             void* user_data) {
  (void)strategy;
  (void)args;
  (void)out;
  (void)user_data;
  SleepMs(500);
  return DIST_OK;
}

/* args: a per-worker iterator; returns [element, task index], or [-1, task index] at its end. */
static dist_status_t NextElement(dist_strategy_t* strategy, const dist_closure_args_t* args, dist_value_t** out,
                                 void* user_data) {
  dist_iterator_t* iterator = NULL;
  dist_value_t* element = NULL;
  int32_t has = 0;
  void* data = NULL;
  int64_t value = -1;
  dist_status_t s;
  (void)strategy;
  (void)user_data;
  if ((s = dist_closure_args_iterator(args, 0, &iterator)) != DIST_OK) return s;
  if ((s = dist_iterator_get_next_as_optional(iterator, &element, 1, &has)) != DIST_OK) return s;
  if (has) {
    dist_value_kind_t kind = 0;
    if ((s = dist_value_kind(element, &kind)) != DIST_OK) return s;
    if (kind != DIST_VALUE_TENSOR) {
      dist_value_t* component = NULL;
      if ((s = dist_value_component(element, 0, &component)) != DIST_OK) return s;
      dist_value_destroy(element);
      element = component;
    }
    if ((s = dist_tensor_data(element, &data)) != DIST_OK) return s;
    memcpy(&value, data, sizeof(value));
    dist_value_destroy(element);
  }
  return ReturnPair(value, out);
}

static dist_status_t RangeDataset(const dist_input_context_t* context, dist_dataset_t** out, void* user_data) {
  dist_dataset_t* range = NULL;
  dist_status_t s;
  (void)context;
  (void)user_data;
  if ((s = dist_dataset_range(0, 60, 1, &range)) != DIST_OK) return s;
  s = dist_dataset_batch(range, 3, 0, out); /* a global batch: one row per worker */
  dist_dataset_destroy(range);
  return s;
}

/* The shard files' lines as int64: "<n>" -> n, batched by 3 like RangeDataset. */
static dist_status_t ParseLine(const dist_value_t* const* inputs, int32_t num_inputs, dist_value_t** outputs,
                               int32_t num_outputs, void* user_data) {
  void* data = NULL;
  int64_t size = 0;
  char text[32] = {0};
  int64_t n;
  dist_status_t s;
  (void)num_inputs;
  (void)num_outputs;
  (void)user_data;
  if ((s = dist_tensor_data(inputs[0], &data)) != DIST_OK) return s;
  if ((s = dist_tensor_num_elements(inputs[0], &size)) != DIST_OK) return s;
  memcpy(text, data, size < 31 ? (size_t)size : 31);
  n = strtoll(text, NULL, 10);
  return dist_tensor_create(DIST_INT64, NULL, 0, &n, sizeof(n), "CPU:0", &outputs[0]);
}

static dist_status_t FileDataset(const dist_input_context_t* context, dist_dataset_t** out, void* user_data) {
  char paths[6][512];
  const char* p[6];
  dist_dataset_t* lines = NULL;
  dist_dataset_t* parsed = NULL;
  dist_status_t s;
  (void)context;
  (void)user_data;
  for (int i = 0; i < 6; ++i) {
    snprintf(paths[i], sizeof(paths[i]), "%s/shard.%d", g_dir, i);
    p[i] = paths[i];
  }
  if ((s = dist_dataset_from_text_files(p, 6, &lines)) != DIST_OK) return s;
  s = dist_dataset_map(lines, ParseLine, NULL, NULL, 1, 1, &parsed);
  dist_dataset_destroy(lines);
  if (s != DIST_OK) return s;
  s = dist_dataset_batch(parsed, 1, 0, out);
  dist_dataset_destroy(parsed);
  return s;
}

/* ---- Serving tasks ---- */

static volatile sig_atomic_t g_stop;
static void OnSignal(int sig) {
  (void)sig;
  g_stop = 1;
}

static int Serve(dist_cluster_t* cluster, const char* job) {
  dist_server_t* server = NULL;
  dist_status_t s = DIST_UNAVAILABLE;
  char name[64];
  char pid[32];
  const int64_t give_up = NowMs() + 30000;
  snprintf(name, sizeof(name), "%s.%d.pid", job, g_task_index);
  snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
  WriteFile(name, pid);
  /* A restarted worker may find its killed incarnation still registered for a moment, and
   * its port taken for a moment (another process's connection got it as its local port
   * while this task was down: seen once in CI as "Address already in use"). */
  for (;;) {
    s = dist_server_create(cluster, NULL, &server);
    const int port_taken = s == DIST_UNAVAILABLE && strstr(dist_last_error_message(), "Address already in use") != NULL;
    if ((s != DIST_ALREADY_EXISTS && !port_taken) || NowMs() >= give_up) break;
    SleepMs(100);
  }
  if (s != DIST_OK) Die("dist_server_create", s);
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  /* Serve until the chief is gone (its stop or death is seen as a lost peer) or the script
   * stops this task; a lost ps task is not a reason to stop serving. */
  while (!g_stop) {
    if (dist_server_peer_health(server) != DIST_OK && strstr(dist_last_error_message(), "chief") != NULL) break;
    SleepMs(100);
  }
  dist_server_destroy(server);
  return 0;
}

/* ---- The chief's cases ---- */

static dist_value_t* Int64Scalar(int64_t v) {
  dist_value_t* t = NULL;
  CHECK(dist_tensor_create(DIST_INT64, NULL, 0, &v, sizeof(v), "CPU:0", &t));
  return t;
}

static void ReadPair(dist_remote_value_t* value, int64_t pair[2]) {
  dist_value_t* result = NULL;
  void* data = NULL;
  CHECK(dist_remote_value_fetch(value, &result));
  EXPECT(result != NULL, "a closure returned no result");
  CHECK(dist_tensor_data(result, &data));
  memcpy(pair, data, 2 * sizeof(int64_t));
  dist_value_destroy(result);
}

static float ReadScalar(const dist_value_t* variable) {
  dist_value_t* value = NULL;
  void* data = NULL;
  float f = 0;
  CHECK(dist_variable_read(variable, &value));
  CHECK(dist_tensor_data(value, &data));
  memcpy(&f, data, sizeof(f));
  dist_value_destroy(value);
  return f;
}

static dist_remote_value_t* ScheduleCount(dist_coordinator_t* c, const dist_value_t* counter, int64_t index,
                                          int64_t sleep_ms) {
  dist_closure_args_t* args = NULL;
  dist_remote_value_t* value = NULL;
  dist_value_t* i = Int64Scalar(index);
  dist_value_t* ms = Int64Scalar(sleep_ms);
  CHECK(dist_closure_args_create(&args));
  CHECK(dist_closure_args_add_value(args, counter));
  CHECK(dist_closure_args_add_value(args, i));
  CHECK(dist_closure_args_add_value(args, ms));
  CHECK(dist_coordinator_schedule(c, "count", args, &value));
  dist_closure_args_destroy(args);
  dist_value_destroy(i);
  dist_value_destroy(ms);
  return value;
}

static dist_value_t* Counter(dist_strategy_t* strategy, const char* name) {
  dist_value_t* zero = NULL;
  dist_value_t* v = NULL;
  const float f = 0;
  CHECK(dist_tensor_create(DIST_FLOAT32, NULL, 0, &f, sizeof(f), "CPU:0", &zero));
  CHECK(dist_strategy_scope_enter(strategy));
  CHECK(dist_variable_create(zero, DIST_SYNC_AUTO, DIST_AGGREGATION_SUM, name, &v));
  CHECK(dist_strategy_scope_exit(strategy));
  dist_value_destroy(zero);
  return v;
}

/* count / kill: n closures, each index fetched once. */
static void RunCounting(dist_strategy_t* strategy, dist_coordinator_t* c, int n, int with_kill) {
  dist_value_t* counter = Counter(strategy, "counter");
  dist_remote_value_t** values = calloc((size_t)n, sizeof(*values));
  char* seen = calloc((size_t)n, 1);
  int per_worker[3] = {0, 0, 0};
  float total;
  for (int i = 0; i < n; ++i) values[i] = ScheduleCount(c, counter, i, with_kill ? 30 : 0);
  if (with_kill) WriteFile("scheduled", "1\n");
  CHECK(dist_coordinator_join(c));
  for (int i = 0; i < n; ++i) {
    int64_t pair[2];
    ReadPair(values[i], pair);
    EXPECT(pair[0] == i, "closure %d returned index %lld", i, (long long)pair[0]);
    EXPECT(!seen[i], "index %d fetched twice", i);
    seen[i] = 1;
    if (pair[1] >= 0 && pair[1] < 3) ++per_worker[pair[1]];
    dist_remote_value_destroy(values[i]);
  }
  total = ReadScalar(counter);
  printf("ok %d closures resolved once each (workers 0/1/2 ran %d/%d/%d), counter %.0f\n", n, per_worker[0],
         per_worker[1], per_worker[2], total);
  if (with_kill) {
    EXPECT(total >= (float)n && total <= (float)n + 1, "counter %.0f after %d closures and one kill", total, n);
    /* The restarted worker 1 is used again. */
    const int64_t give_up = NowMs() + 20000;
    int on_restarted = 0;
    while (!FileExists("restarted") && NowMs() < give_up) SleepMs(50);
    EXPECT(FileExists("restarted"), "the script did not restart worker 1");
    while (!on_restarted && NowMs() < give_up) {
      dist_remote_value_t* batch[12];
      for (int i = 0; i < 12; ++i) batch[i] = ScheduleCount(c, counter, n + i, 30);
      CHECK(dist_coordinator_join(c));
      for (int i = 0; i < 12; ++i) {
        int64_t pair[2];
        ReadPair(batch[i], pair);
        if (pair[1] == 1) on_restarted = 1;
        dist_remote_value_destroy(batch[i]);
      }
    }
    EXPECT(on_restarted, "no closure ran on the restarted worker 1 within 20 s");
    printf("ok the restarted worker 1 runs closures again\n");
  } else {
    EXPECT(total == (float)n, "counter %.0f after %d closures", total, n);
  }
  free(values);
  free(seen);
  dist_value_destroy(counter);
}

/* stop: worker 1 is stopped (SIGSTOP) for good before any closure: rounds of 3 closures,
 * each joined at once (a closure that hangs on the stopped worker, sent there after join
 * began waiting, must be run elsewhere before join gives up), then n closures; each index
 * comes back once. */
static void ExpectRound(dist_coordinator_t* c, const dist_value_t* counter, int first, int count) {
  dist_remote_value_t** batch = calloc((size_t)count, sizeof(*batch));
  for (int i = 0; i < count; ++i) batch[i] = ScheduleCount(c, counter, first + i, 30);
  CHECK(dist_coordinator_join(c));
  for (int i = 0; i < count; ++i) {
    int64_t pair[2];
    ReadPair(batch[i], pair);
    EXPECT(pair[0] == first + i, "closure %d returned index %lld", first + i, (long long)pair[0]);
    EXPECT(pair[1] != 1, "closure %d ran on the stopped worker 1", first + i);
    dist_remote_value_destroy(batch[i]);
  }
  free(batch);
}

static void RunStopped(dist_strategy_t* strategy, dist_coordinator_t* c, int n) {
  dist_value_t* counter = Counter(strategy, "counter");
  /* First every worker serves (worker 1 has run a closure), so that the stop finds it
   * answering. These closures do not count. */
  dist_value_t* scratch = Counter(strategy, "scratch");
  int worker_1_served = 0;
  for (int64_t limit = NowMs() + 20000; !worker_1_served && NowMs() < limit;) {
    dist_remote_value_t* batch[6];
    for (int i = 0; i < 6; ++i) batch[i] = ScheduleCount(c, scratch, i, 10);
    CHECK(dist_coordinator_join(c));
    for (int i = 0; i < 6; ++i) {
      int64_t pair[2];
      ReadPair(batch[i], pair);
      worker_1_served |= pair[1] == 1;
      dist_remote_value_destroy(batch[i]);
    }
  }
  EXPECT(worker_1_served, "worker 1 ran no closure within 20 s");
  dist_value_destroy(scratch);
  WriteFile("scheduled", "1\n");
  const int64_t give_up = NowMs() + 20000;
  while (!FileExists("stopped") && NowMs() < give_up) SleepMs(20);
  EXPECT(FileExists("stopped"), "the script did not stop worker 1");
  /* Rounds of one closure first: join then starts before the closure is sent, so nothing
   * but the hung request's own deadline can end the wait. */
  int done = 0;
  for (int round = 0; round < 6; ++round, ++done) ExpectRound(c, counter, done, 1);
  for (int round = 0; round < 4; ++round, done += 3) ExpectRound(c, counter, done, 3);
  ExpectRound(c, counter, done, n);
  done += n;
  const float total = ReadScalar(counter);
  EXPECT(total == (float)done, "counter %.0f after %d closures", total, done);
  printf("ok %d closures resolved once each with worker 1 stopped, counter %.0f\n", done, total);
  dist_value_destroy(counter);
}

static void RunKillPs(dist_strategy_t* strategy, dist_coordinator_t* c) {
  dist_value_t* counter = Counter(strategy, "counter");
  dist_status_t joined = DIST_OK;
  int64_t killed_at = 0, failed_at;
  char path[512];
  FILE* f;
  for (int round = 0; round < 2000 && joined == DIST_OK; ++round) {
    dist_remote_value_t* values[6];
    for (int i = 0; i < 6; ++i) values[i] = ScheduleCount(c, counter, i, 20);
    if (round == 0) WriteFile("scheduled", "1\n");
    joined = dist_coordinator_join(c);
    for (int i = 0; i < 6; ++i) dist_remote_value_destroy(values[i]);
  }
  failed_at = NowMs();
  EXPECT(joined == DIST_UNAVAILABLE, "join returned %s: %s", dist_status_name(joined), dist_last_error_message());
  EXPECT(strstr(dist_last_error_message(), "ps:0") != NULL, "the error does not name ps:0: %s",
         dist_last_error_message());
  snprintf(path, sizeof(path), "%s/killed", g_dir);
  f = fopen(path, "r");
  EXPECT(f != NULL && fscanf(f, "%lld", (long long*)&killed_at) == 1, "no kill time");
  fclose(f);
  printf("ok join failed with DIST_UNAVAILABLE naming ps:0, %lld ms after the kill\n",
         (long long)(failed_at - killed_at));
  EXPECT(failed_at - killed_at <= 3000 + 1000, "%lld ms after the kill: more than the timeout + 1 s",
         (long long)(failed_at - killed_at));
  dist_value_destroy(counter);
}

static void RunFail(dist_coordinator_t* c) {
  dist_remote_value_t* failing = NULL;
  dist_remote_value_t* naps[50];
  dist_value_t* out = NULL;
  int cancelled = 0, reported_by_schedule = 0;
  dist_status_t joined;
  dist_remote_value_t* busy[3];
  /* Every worker busy first: the failing closure and the naps behind it queue up. */
  for (int w = 0; w < 3; ++w) CHECK(dist_coordinator_schedule(c, "nap_long", NULL, &busy[w]));
  CHECK(dist_coordinator_schedule(c, "fails", NULL, &failing));
  for (int i = 0; i < 50; ++i) {
    naps[i] = NULL;
    dist_status_t s = dist_coordinator_schedule(c, "nap", NULL, &naps[i]);
    if (s == DIST_OUT_OF_RANGE) reported_by_schedule = 1;
    EXPECT(s == DIST_OK || s == DIST_OUT_OF_RANGE, "schedule: %s", dist_status_name(s));
  }
  joined = dist_coordinator_join(c);
  EXPECT(joined == DIST_OUT_OF_RANGE || (reported_by_schedule && joined == DIST_OK), "join: %s",
         dist_status_name(joined));
  CHECK(dist_coordinator_join(c)); /* reported once */
  EXPECT(dist_remote_value_fetch(failing, &out) == DIST_OUT_OF_RANGE, "the failing closure's fetch");
  EXPECT(strstr(dist_last_error_message(), "7") != NULL, "its message: %s", dist_last_error_message());
  for (int i = 0; i < 50; ++i) {
    if (naps[i] == NULL) continue;
    dist_status_t s = dist_remote_value_fetch(naps[i], &out);
    EXPECT(s == DIST_OK || s == DIST_CANCELLED, "a queued closure: %s", dist_status_name(s));
    if (s == DIST_CANCELLED) ++cancelled;
    dist_remote_value_destroy(naps[i]);
  }
  EXPECT(cancelled > 0, "no queued closure was cancelled");
  printf("ok the failure was reported once; %d queued closures were cancelled\n", cancelled);
  dist_remote_value_destroy(failing);
  for (int w = 0; w < 3; ++w) dist_remote_value_destroy(busy[w]);
}

static void RunData(dist_coordinator_t* c, const char* policy) {
  dist_input_options_t* options = NULL;
  dist_per_worker_t* dataset = NULL;
  const int file = strcmp(policy, "file") == 0;
  CHECK(dist_input_options_create(&options));
  CHECK(dist_input_options_set_auto_shard_policy(options, file ? DIST_AUTO_SHARD_FILE : DIST_AUTO_SHARD_DATA));
  CHECK(dist_coordinator_create_per_worker_dataset(c, file ? "files" : "range", options, &dataset));
  for (int epoch = 0; epoch < 2; ++epoch) {
    dist_per_worker_t* iterator = NULL;
    int seen[60] = {0};
    int ended[3] = {0, 0, 0};
    int total = 0;
    CHECK(dist_per_worker_make_iterator(dataset, &iterator));
    const int64_t give_up = NowMs() + 60000;
    while ((!ended[0] || !ended[1] || !ended[2]) && NowMs() < give_up) {
      dist_remote_value_t* values[6];
      for (int i = 0; i < 6; ++i) {
        dist_closure_args_t* args = NULL;
        CHECK(dist_closure_args_create(&args));
        CHECK(dist_closure_args_add_per_worker(args, iterator));
        CHECK(dist_coordinator_schedule(c, "next_element", args, &values[i]));
        dist_closure_args_destroy(args);
      }
      CHECK(dist_coordinator_join(c));
      for (int i = 0; i < 6; ++i) {
        int64_t pair[2];
        ReadPair(values[i], pair);
        if (pair[0] < 0) {
          if (pair[1] >= 0 && pair[1] < 3) ended[pair[1]] = 1;
        } else {
          EXPECT(pair[0] < 60, "element %lld", (long long)pair[0]);
          ++seen[pair[0]];
          ++total;
        }
        dist_remote_value_destroy(values[i]);
      }
    }
    for (int i = 0; i < 60; ++i) EXPECT(seen[i] == 1, "epoch %d: element %d seen %d times", epoch, i, seen[i]);
    printf("ok %s sharding, epoch %d: 60 elements, each once across 3 workers\n", policy, epoch);
    dist_per_worker_destroy(iterator);
  }
  dist_per_worker_destroy(dataset);
  dist_input_options_destroy(options);
}

int main(int argc, char** argv) {
  dist_cluster_t* cluster = NULL;
  const char* job = NULL;
  if (argc < 3) {
    fprintf(stderr, "usage: coordinator_worker DIR CASE [ARG]\n");
    return 2;
  }
  g_dir = argv[1];
  CHECK(dist_closure_register("count", Count, NULL, NULL));
  CHECK(dist_closure_register("fails", Fails, NULL, NULL));
  CHECK(dist_closure_register("nap", Nap, NULL, NULL));
  CHECK(dist_closure_register("nap_long", NapLong, NULL, NULL));
  CHECK(dist_closure_register("next_element", NextElement, NULL, NULL));
  CHECK(dist_dataset_function_register("range", RangeDataset, NULL, NULL));
  CHECK(dist_dataset_function_register("files", FileDataset, NULL, NULL));
  CHECK(dist_cluster_from_tf_config(NULL, &cluster));
  CHECK(dist_cluster_task_type(cluster, &job));
  CHECK(dist_cluster_task_index(cluster, &g_task_index));
  if (strcmp(job, "chief") != 0) return Serve(cluster, job);

  dist_communication_options_t* comm = NULL;
  dist_strategy_t* strategy = NULL;
  dist_coordinator_t* coordinator = NULL;
  const char* which = argv[2];
  CHECK(dist_communication_options_create(&comm));
  const int short_timeout = strcmp(which, "kill_ps") == 0 || strcmp(which, "stop") == 0;
  CHECK(dist_communication_options_set_timeout_ms(comm, short_timeout ? 3000 : 30000));
  CHECK(dist_strategy_create_parameter_server(cluster, comm, NULL, &strategy));
  CHECK(dist_coordinator_create(strategy, &coordinator));
  if (strcmp(which, "count") == 0 || strcmp(which, "kill") == 0) {
    RunCounting(strategy, coordinator, argc > 3 ? atoi(argv[3]) : 100, strcmp(which, "kill") == 0);
  } else if (strcmp(which, "stop") == 0) {
    RunStopped(strategy, coordinator, argc > 3 ? atoi(argv[3]) : 40);
  } else if (strcmp(which, "kill_ps") == 0) {
    RunKillPs(strategy, coordinator);
  } else if (strcmp(which, "fail") == 0) {
    RunFail(coordinator);
  } else if (strcmp(which, "data") == 0) {
    RunData(coordinator, argc > 3 ? argv[3] : "data");
  } else {
    fprintf(stderr, "unknown case %s\n", which);
    return 2;
  }
  dist_coordinator_destroy(coordinator);
  dist_strategy_destroy(strategy);
  dist_communication_options_destroy(comm);
  dist_cluster_destroy(cluster);
  return 0;
}
