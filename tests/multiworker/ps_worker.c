/* One task of the ParameterServerStrategy multi-process tests (ps_test.sh runs it under
 * `distrun -n N --ps P`). A task of type "ps" serves: it writes DIR/ps.<index>.pid, creates
 * its server from TF_CONFIG and joins it until distrun stops it. A worker creates the
 * strategy from TF_CONFIG and runs one case:
 *
 *   placement POLICY   POLICY round_robin, greedy or fixed_shards_2: creates the variables
 *                      a [4], b [100], c [3, 2], d [50], e [10], f [3] in this order and
 *                      prints "placement <name> <task of shard 0>,<task of shard 1>,...".
 *   assign_add STEPS EXPECTED AGGREGATION
 *                      STEPS steps of assign_add(1.0) on "counter" from replica context
 *                      (every replica calls it; AGGREGATION sum or only_first_replica), then
 *                      polls the value until it is EXPECTED (60 s at most) and prints
 *                      "final <value>"; exit 1 unless it is exactly EXPECTED.
 *   kill_ps            with a 2000 ms timeout: assign_add to a variable on ps task 1 until
 *                      a call fails (after writing DIR/ready.<rank> on the first success);
 *                      prints "failed <status name> <CLOCK_REALTIME ms> <message>".
 *   restart [--restarted]
 *                      3 workers on "shared" (initial value 1000): workers 0 and 1 make 50
 *                      steps of assign_add(1), wait for DIR/victim_killed, make 50 more;
 *                      worker 2 makes 20 steps, writes DIR/victim_paused and waits to be
 *                      killed; restarted (--restarted, initial value 0 given), it prints
 *                      "restarted: read <value>", makes 80 steps. All then poll until 1300
 *                      and print "final <value>".
 *   mismatch           worker 0 creates "w" as float32 [4] and writes DIR/created; worker 1
 *                      then creates "w" as float32 [5] and prints "mismatch <status name>
 *                      <message>"; exit 1 unless that is DIST_INVALID_ARGUMENT naming both.
 *   checkpoint         2 workers, fixed_shards(2, 0): "w" [5, 3] and "b" [3], each worker
 *                      adds rank + 1 to w and 10 * (rank + 1) to b; the chief waits for
 *                      both, saves DIR/ckpt.safetensors, checks that its header holds "w"
 *                      [5, 3] and "b" [3] under their own names, zeroes both, restores the
 *                      file and checks the values; prints "checkpoint ok".
 *
 * Every wait on another process is a poll of a file or of a variable, bounded in time.
 *
 * Usage: ps_worker DIR CASE [ARGS...] */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "distribute/distribute.h"

static const char* g_dir;
static int g_rank;

static void Die(const char* what, dist_status_t status) {
  fprintf(stderr, "ps_worker: %s: %s: %s\n", what, dist_status_name(status),
          status == DIST_OK ? "" : dist_last_error_message());
  exit(1);
}

#define CHECK(call)                                  \
  do {                                               \
    const dist_status_t status_ = (call);            \
    if (status_ != DIST_OK) Die(#call, status_);     \
  } while (0)

static void SleepMs(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static double MonotonicMs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void PathOf(const char* name, char* out, size_t size) {
  snprintf(out, size, "%s/%s", g_dir, name);
}

static void TouchFile(const char* name) {
  char path[4096];
  PathOf(name, path, sizeof path);
  FILE* file = fopen(path, "w");
  if (file == NULL || fclose(file) != 0) {
    fprintf(stderr, "ps_worker: cannot create %s\n", path);
    exit(1);
  }
}

/* Waits until DIR/name exists; exit 1 after `seconds`. */
static void WaitForFile(const char* name, int seconds) {
  char path[4096];
  PathOf(name, path, sizeof path);
  const double deadline = MonotonicMs() + seconds * 1e3;
  while (access(path, F_OK) != 0) {
    if (MonotonicMs() > deadline) {
      fprintf(stderr, "ps_worker: %s did not appear within %d s\n", path, seconds);
      exit(1);
    }
    SleepMs(20);
  }
}

/* A ps task serves until distrun stops it (SIGTERM). */
static int Serve(const dist_cluster_t* cluster) {
  int32_t index = 0;
  CHECK(dist_cluster_task_index(cluster, &index));
  char name[64], path[4096];
  snprintf(name, sizeof name, "ps.%d.pid", index);
  PathOf(name, path, sizeof path);
  FILE* file = fopen(path, "w");
  if (file == NULL) {
    fprintf(stderr, "ps_worker: cannot write %s\n", path);
    return 1;
  }
  fprintf(file, "%ld\n", (long)getpid());
  fclose(file);
  dist_server_t* server = NULL;
  CHECK(dist_server_create(cluster, NULL, &server));
  CHECK(dist_server_join(server));
  dist_server_destroy(server);
  return 0;
}

static dist_strategy_t* CreateStrategy(const dist_cluster_t* cluster, int64_t timeout_ms,
                                       const dist_parameter_server_options_t* options) {
  dist_communication_options_t* communication = NULL;
  CHECK(dist_communication_options_create(&communication));
  CHECK(dist_communication_options_set_timeout_ms(communication, timeout_ms));
  dist_strategy_t* strategy = NULL;
  CHECK(dist_strategy_create_parameter_server(cluster, communication, options, &strategy));
  dist_communication_options_destroy(communication);
  return strategy;
}

static dist_value_t* FilledTensor(const int64_t* shape, int32_t rank, float value) {
  int64_t count = 1;
  for (int32_t i = 0; i < rank; ++i) count *= shape[i];
  float* data = malloc((size_t)count * sizeof(float) + 1);
  if (data == NULL) exit(1);
  for (int64_t i = 0; i < count; ++i) data[i] = value;
  dist_value_t* tensor = NULL;
  CHECK(dist_tensor_create(DIST_FLOAT32, shape, rank, data, (size_t)count * sizeof(float), NULL,
                           &tensor));
  free(data);
  return tensor;
}

static dist_value_t* CreateVariable(dist_strategy_t* strategy, const char* name,
                                    const int64_t* shape, int32_t rank, float initial,
                                    dist_variable_aggregation_t aggregation) {
  dist_value_t* value = FilledTensor(shape, rank, initial);
  dist_value_t* variable = NULL;
  CHECK(dist_strategy_scope_enter(strategy));
  CHECK(dist_variable_create(value, DIST_SYNC_ON_WRITE, aggregation, name, &variable));
  CHECK(dist_strategy_scope_exit(strategy));
  dist_value_destroy(value);
  return variable;
}

/* Element `i` of the variable's current value (read in cross-replica context). */
static float ReadElement(const dist_value_t* variable, int64_t i) {
  dist_value_t* value = NULL;
  void* data = NULL;
  CHECK(dist_variable_read(variable, &value));
  CHECK(dist_tensor_data(value, &data));
  const float element = ((const float*)data)[i];
  dist_value_destroy(value);
  return element;
}

/* Polls element 0 of a variable until it is `expected` (60 s at most); returns the last
 * value read. Updates from other workers are asynchronous: this is how a worker knows that
 * every one of them has landed. */
static float PollUntil(const dist_value_t* variable, float expected) {
  const double deadline = MonotonicMs() + 60e3;
  float value = ReadElement(variable, 0);
  while (value != expected && MonotonicMs() < deadline) {
    SleepMs(20);
    value = ReadElement(variable, 0);
  }
  return value;
}

static dist_status_t AddOneInReplica(dist_context_t* context, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** results,
                                     int32_t num_results, void* user_data) {
  (void)context;
  (void)num_args;
  (void)results;
  (void)num_results;
  (void)user_data;
  dist_value_t* one = NULL;
  dist_status_t status = dist_tensor_create(DIST_FLOAT32, NULL, 0, &(float){1.0f},
                                            sizeof(float), NULL, &one);
  if (status == DIST_OK) status = dist_variable_assign_add((dist_value_t*)args[0], one);
  dist_value_destroy(one);
  return status;
}

/* `steps` times, every replica calls assign_add(1.0) in replica context. */
static void AddOneSteps(dist_strategy_t* strategy, dist_value_t* variable, int steps) {
  for (int step = 0; step < steps; ++step) {
    const dist_value_t* args[1] = {variable};
    CHECK(dist_strategy_run(strategy, AddOneInReplica, NULL, args, 1, NULL, 0));
  }
}

/* ---- The cases ---- */

static int Placement(const dist_cluster_t* cluster, const char* policy) {
  dist_parameter_server_options_t* options = NULL;
  CHECK(dist_parameter_server_options_create(&options));
  if (strcmp(policy, "greedy") == 0) {
    CHECK(dist_parameter_server_options_set_placement(options, DIST_PLACEMENT_GREEDY_BYTES));
  } else if (strcmp(policy, "fixed_shards_2") == 0) {
    CHECK(dist_parameter_server_options_set_fixed_shards(options, 2, 0));
  } else if (strcmp(policy, "round_robin") != 0) {
    fprintf(stderr, "ps_worker: unknown policy '%s'\n", policy);
    return 2;
  }
  dist_strategy_t* strategy = CreateStrategy(cluster, 10000, options);
  dist_parameter_server_options_destroy(options);
  static const struct {
    const char* name;
    int64_t shape[2];
    int32_t rank;
  } kVariables[] = {{"a", {4, 0}, 1},  {"b", {100, 0}, 1}, {"c", {3, 2}, 2},
                    {"d", {50, 0}, 1}, {"e", {10, 0}, 1},  {"f", {3, 0}, 1}};
  for (size_t v = 0; v < sizeof kVariables / sizeof *kVariables; ++v) {
    dist_value_t* variable = CreateVariable(strategy, kVariables[v].name, kVariables[v].shape,
                                            kVariables[v].rank, 0.0f, DIST_AGGREGATION_SUM);
    int32_t shards = 0;
    CHECK(dist_variable_num_shards(variable, &shards));
    printf("placement %s ", kVariables[v].name);
    for (int32_t s = 0; s < shards; ++s) {
      int32_t task = -1;
      CHECK(dist_variable_shard_task(variable, s, &task));
      printf("%s%d", s == 0 ? "" : ",", task);
    }
    printf("\n");
    dist_value_destroy(variable);
  }
  fflush(stdout);
  dist_strategy_destroy(strategy);
  return 0;
}

static int AssignAdd(const dist_cluster_t* cluster, int steps, float expected,
                     const char* aggregation_name) {
  dist_variable_aggregation_t aggregation = DIST_AGGREGATION_SUM;
  if (strcmp(aggregation_name, "only_first_replica") == 0) {
    aggregation = DIST_AGGREGATION_ONLY_FIRST_REPLICA;
  } else if (strcmp(aggregation_name, "sum") != 0) {
    fprintf(stderr, "ps_worker: unknown aggregation '%s'\n", aggregation_name);
    return 2;
  }
  dist_strategy_t* strategy = CreateStrategy(cluster, 10000, NULL);
  dist_value_t* counter = CreateVariable(strategy, "counter", NULL, 0, 0.0f, aggregation);
  AddOneSteps(strategy, counter, steps);
  const float final_value = PollUntil(counter, expected);
  printf("final %g\n", final_value);
  fflush(stdout);
  dist_value_destroy(counter);
  dist_strategy_destroy(strategy);
  return final_value == expected ? 0 : 1;
}

static int KillPs(const dist_cluster_t* cluster) {
  dist_strategy_t* strategy = CreateStrategy(cluster, 2000, NULL);
  /* Round-robin: "on_ps_0" lands on ps task 0, "on_ps_1" on ps task 1. */
  dist_value_t* first = CreateVariable(strategy, "on_ps_0", NULL, 0, 0.0f, DIST_AGGREGATION_SUM);
  dist_value_t* victim = CreateVariable(strategy, "on_ps_1", NULL, 0, 0.0f, DIST_AGGREGATION_SUM);
  int32_t task = -1;
  CHECK(dist_variable_shard_task(victim, 0, &task));
  if (task != 1) {
    fprintf(stderr, "ps_worker: on_ps_1 is on ps task %d, expected 1\n", task);
    return 1;
  }
  dist_value_t* one = FilledTensor(NULL, 0, 1.0f);
  char ready[64];
  snprintf(ready, sizeof ready, "ready.%d", g_rank);
  const double deadline = MonotonicMs() + 60e3;
  dist_status_t status = DIST_OK;
  int wrote_ready = 0;
  while (status == DIST_OK && MonotonicMs() < deadline) {
    status = dist_variable_assign_add(victim, one);
    if (status == DIST_OK && !wrote_ready) TouchFile(ready), wrote_ready = 1;
    if (status == DIST_OK) SleepMs(5);
  }
  if (status == DIST_OK) {
    fprintf(stderr, "ps_worker: no failure within 60 s\n");
    return 1;
  }
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  char message[4096];
  snprintf(message, sizeof message, "%s", dist_last_error_message());
  for (char* c = message; *c != '\0'; ++c) {
    if (*c == '\n' || *c == '\r') *c = ' ';
  }
  printf("failed %s %lld %s\n", dist_status_name(status),
         (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000, message);
  fflush(stdout);
  dist_value_destroy(one);
  dist_value_destroy(victim);
  dist_value_destroy(first);
  dist_strategy_destroy(strategy);
  return 0;
}

static int Restart(const dist_cluster_t* cluster, int restarted) {
  enum { kVictim = 2 };
  dist_strategy_t* strategy = CreateStrategy(cluster, 10000, NULL);
  /* The first creator's 1000 is kept; a restarted worker offers 0 and must not get it. */
  dist_value_t* shared =
      CreateVariable(strategy, "shared", NULL, 0, restarted ? 0.0f : 1000.0f, DIST_AGGREGATION_SUM);
  if (g_rank == kVictim && !restarted) {
    AddOneSteps(strategy, shared, 20);
    TouchFile("victim_paused");
    SleepMs(120000); /* killed here by ps_test.sh */
    fprintf(stderr, "ps_worker: the victim was not killed within 120 s\n");
    return 1;
  }
  if (g_rank == kVictim) {
    const float current = ReadElement(shared, 0);
    printf("restarted: read %g\n", current);
    fflush(stdout);
    if (!(current >= 1020.0f && current <= 1220.0f)) {
      fprintf(stderr, "ps_worker: the restarted worker read %g, expected 1020 to 1220\n", current);
      return 1;
    }
    AddOneSteps(strategy, shared, 80);
  } else {
    AddOneSteps(strategy, shared, 50);
    WaitForFile("victim_killed", 60);
    AddOneSteps(strategy, shared, 50);
    printf("finished my 100 steps\n");
    fflush(stdout);
  }
  const float final_value = PollUntil(shared, 1300.0f);
  printf("final %g\n", final_value);
  fflush(stdout);
  dist_value_destroy(shared);
  dist_strategy_destroy(strategy);
  return final_value == 1300.0f ? 0 : 1;
}

static int Mismatch(const dist_cluster_t* cluster) {
  dist_strategy_t* strategy = CreateStrategy(cluster, 10000, NULL);
  int result = 0;
  if (g_rank == 0) {
    const int64_t shape[1] = {4};
    dist_value_t* w = CreateVariable(strategy, "w", shape, 1, 0.0f, DIST_AGGREGATION_SUM);
    TouchFile("created");
    WaitForFile("checked", 60); /* keeps the chief until the other worker has checked */
    dist_value_destroy(w);
  } else {
    WaitForFile("created", 60);
    const int64_t shape[1] = {5};
    dist_value_t* value = FilledTensor(shape, 1, 0.0f);
    dist_value_t* w = NULL;
    CHECK(dist_strategy_scope_enter(strategy));
    const dist_status_t status =
        dist_variable_create(value, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "w", &w);
    /* Copied before the next dist_ call replaces it. */
    char message[4096];
    snprintf(message, sizeof message, "%s", status == DIST_OK ? "" : dist_last_error_message());
    CHECK(dist_strategy_scope_exit(strategy));
    printf("mismatch %s %s\n", dist_status_name(status), message);
    fflush(stdout);
    result = status == DIST_INVALID_ARGUMENT && w == NULL && strstr(message, "[4]") != NULL &&
                     strstr(message, "[5]") != NULL && strstr(message, "w") != NULL
                 ? 0
                 : 1;
    dist_value_destroy(w);
    dist_value_destroy(value);
    TouchFile("checked");
  }
  dist_strategy_destroy(strategy);
  return result;
}

/* The safetensors header (the JSON after the 8-byte little-endian length), or NULL. */
static char* ReadSafetensorsHeader(const char* path) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) return NULL;
  unsigned char length_bytes[8];
  char* header = NULL;
  if (fread(length_bytes, 1, 8, file) == 8) {
    unsigned long long length = 0;
    for (int i = 7; i >= 0; --i) length = length << 8 | length_bytes[i];
    if (length < (1u << 20) && (header = calloc(length + 1, 1)) != NULL &&
        fread(header, 1, length, file) != length) {
      free(header);
      header = NULL;
    }
  }
  fclose(file);
  return header;
}

/* True when the header's entry for tensor `name` has "shape":`shape` (compact JSON, as
 * the library writes it: {"w":{"data_offsets":[0,60],"dtype":"F32","shape":[5,3]},...}). */
static int EntryHasShape(const char* header, const char* name, const char* shape) {
  char key[256], field[256];
  snprintf(key, sizeof key, "\"%s\":{", name);
  snprintf(field, sizeof field, "\"shape\":%s", shape);
  const char* entry = strstr(header, key);
  if (entry == NULL) return 0;
  const char* end = strchr(entry, '}');
  const char* found = strstr(entry, field);
  return end != NULL && found != NULL && found < end;
}

/* True when every element of the variable is `expected`. */
static int AllEqual(const dist_value_t* variable, int64_t count, float expected) {
  for (int64_t i = 0; i < count; ++i) {
    if (ReadElement(variable, i) != expected) return 0;
  }
  return 1;
}

static int Checkpoint(const dist_cluster_t* cluster) {
  dist_parameter_server_options_t* options = NULL;
  CHECK(dist_parameter_server_options_create(&options));
  CHECK(dist_parameter_server_options_set_fixed_shards(options, 2, 0));
  dist_strategy_t* strategy = CreateStrategy(cluster, 10000, options);
  dist_parameter_server_options_destroy(options);
  const int64_t w_shape[2] = {5, 3};
  const int64_t b_shape[1] = {3};
  dist_value_t* w = CreateVariable(strategy, "w", w_shape, 2, 0.0f, DIST_AGGREGATION_SUM);
  dist_value_t* b = CreateVariable(strategy, "b", b_shape, 1, 0.0f, DIST_AGGREGATION_SUM);
  int32_t shards = 0, task0 = -1, task1 = -1;
  CHECK(dist_variable_num_shards(w, &shards));
  CHECK(dist_variable_shard_task(w, 0, &task0));
  CHECK(dist_variable_shard_task(w, 1, &task1));
  if (shards != 2 || task0 == task1) {
    fprintf(stderr, "ps_worker: w has %d shards on tasks %d and %d, expected 2 on both tasks\n",
            shards, task0, task1);
    return 1;
  }
  dist_value_t* w_add = FilledTensor(w_shape, 2, (float)(g_rank + 1));
  dist_value_t* b_add = FilledTensor(b_shape, 1, 10.0f * (float)(g_rank + 1));
  CHECK(dist_variable_assign_add(w, w_add));
  CHECK(dist_variable_assign_add(b, b_add));
  int result = 0;
  if (g_rank == 0) {
    /* Both workers' additions: 1 + 2 on every element of w, 10 + 20 on b. */
    if (PollUntil(w, 3.0f) != 3.0f || PollUntil(b, 30.0f) != 30.0f) {
      fprintf(stderr, "ps_worker: the workers' additions did not all land\n");
      return 1;
    }
    char path[4096];
    PathOf("ckpt.safetensors", path, sizeof path);
    CHECK(dist_strategy_save_variables(strategy, path));
    char* header = ReadSafetensorsHeader(path);
    const int named_whole = header != NULL && EntryHasShape(header, "w", "[5,3]") &&
                            EntryHasShape(header, "b", "[3]") && strstr(header, "part_") == NULL;
    printf("header %s\n", header != NULL ? header : "(unreadable)");
    free(header);
    dist_value_t* w_zero = FilledTensor(w_shape, 2, 0.0f);
    dist_value_t* b_zero = FilledTensor(b_shape, 1, 0.0f);
    CHECK(dist_variable_assign(w, w_zero));
    CHECK(dist_variable_assign(b, b_zero));
    const int zeroed = AllEqual(w, 15, 0.0f) && AllEqual(b, 3, 0.0f);
    CHECK(dist_strategy_restore_variables(strategy, path));
    const int restored = AllEqual(w, 15, 3.0f) && AllEqual(b, 3, 30.0f);
    printf("checkpoint %s (whole names and shapes %d, zeroed %d, restored %d)\n",
           named_whole && zeroed && restored ? "ok" : "FAILED", named_whole, zeroed, restored);
    result = named_whole && zeroed && restored ? 0 : 1;
    dist_value_destroy(w_zero);
    dist_value_destroy(b_zero);
  }
  fflush(stdout);
  dist_value_destroy(w_add);
  dist_value_destroy(b_add);
  dist_value_destroy(w);
  dist_value_destroy(b);
  dist_strategy_destroy(strategy);
  return result;
}

/* The batch calls across processes: in every replica, both variables read in one batch,
 * then sgd with learning rate -1 (so w += g) on both in one batch, g = 1 everywhere. SUM
 * aggregation over the worker's replicas: each step adds the replica count. */
typedef struct {
  dist_value_t* variables[2];
} BatchState;

static dist_status_t BatchStepInReplica(dist_context_t* context, const dist_value_t* const* args,
                                        int32_t num_args, dist_value_t** results,
                                        int32_t num_results, void* user_data) {
  (void)context, (void)args, (void)num_args, (void)results, (void)num_results;
  BatchState* state = (BatchState*)user_data;
  dist_value_t* read[2] = {NULL, NULL};
  dist_status_t status =
      dist_variables_read((const dist_value_t* const*)state->variables, 2, read);
  dist_value_destroy(read[0]);
  dist_value_destroy(read[1]);
  const int64_t w_shape[1] = {6};
  const int64_t b_shape[1] = {2};
  dist_value_t* gradients[2] = {NULL, NULL};
  if (status == DIST_OK) gradients[0] = FilledTensor(w_shape, 1, 1.0f);
  if (status == DIST_OK) gradients[1] = FilledTensor(b_shape, 1, 1.0f);
  const char* names[1] = {"learning_rate"};
  const double minus_one[1] = {-1.0};
  if (status == DIST_OK) {
    status = dist_variables_apply_update(state->variables, 2, "sgd",
                                         (const dist_value_t* const*)gradients, 1, names,
                                         minus_one, 1);
  }
  dist_value_destroy(gradients[0]);
  dist_value_destroy(gradients[1]);
  return status;
}

static int Batch(const dist_cluster_t* cluster, int steps, float expected) {
  dist_parameter_server_options_t* options = NULL;
  CHECK(dist_parameter_server_options_create(&options));
  CHECK(dist_parameter_server_options_set_fixed_shards(options, 2, 0));
  dist_strategy_t* strategy = CreateStrategy(cluster, 10000, options);
  dist_parameter_server_options_destroy(options);
  const int64_t w_shape[1] = {6};
  const int64_t b_shape[1] = {2};
  BatchState state;
  state.variables[0] = CreateVariable(strategy, "w", w_shape, 1, 0.0f, DIST_AGGREGATION_SUM);
  state.variables[1] = CreateVariable(strategy, "b", b_shape, 1, 0.0f, DIST_AGGREGATION_SUM);
  for (int step = 0; step < steps; ++step) {
    CHECK(dist_strategy_run(strategy, BatchStepInReplica, &state, NULL, 0, NULL, 0));
  }
  /* Every worker's updates landed once both variables' last elements (on ps task 1) and
   * first elements (on ps task 0) reach `expected`, read in one batch. */
  const double deadline = MonotonicMs() + 60e3;
  float ends[4] = {0, 0, 0, 0};
  for (;;) {
    dist_value_t* read[2] = {NULL, NULL};
    void* data[2] = {NULL, NULL};
    CHECK(dist_variables_read((const dist_value_t* const*)state.variables, 2, read));
    CHECK(dist_tensor_data(read[0], &data[0]));
    CHECK(dist_tensor_data(read[1], &data[1]));
    ends[0] = ((const float*)data[0])[0], ends[1] = ((const float*)data[0])[5];
    ends[2] = ((const float*)data[1])[0], ends[3] = ((const float*)data[1])[1];
    dist_value_destroy(read[0]);
    dist_value_destroy(read[1]);
    int done = 1;
    for (int i = 0; i < 4; ++i) done &= ends[i] == expected;
    if (done || MonotonicMs() > deadline) break;
    SleepMs(20);
  }
  printf("final %g %g %g %g\n", ends[0], ends[1], ends[2], ends[3]);
  fflush(stdout);
  dist_value_destroy(state.variables[0]);
  dist_value_destroy(state.variables[1]);
  dist_strategy_destroy(strategy);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: ps_worker DIR CASE [ARGS...]\n");
    return 2;
  }
  g_dir = argv[1];
  const char* name = argv[2];
  dist_cluster_t* cluster = NULL;
  CHECK(dist_cluster_from_tf_config(NULL, &cluster));
  const char* type = NULL;
  CHECK(dist_cluster_task_type(cluster, &type));
  if (strcmp(type, "ps") == 0) return Serve(cluster);
  CHECK(dist_cluster_task_index(cluster, &g_rank));
  int result = 2;
  if (strcmp(name, "placement") == 0 && argc == 4) {
    result = Placement(cluster, argv[3]);
  } else if (strcmp(name, "assign_add") == 0 && argc == 6) {
    result = AssignAdd(cluster, atoi(argv[3]), (float)atof(argv[4]), argv[5]);
  } else if (strcmp(name, "kill_ps") == 0 && argc == 3) {
    result = KillPs(cluster);
  } else if (strcmp(name, "restart") == 0 && (argc == 3 || argc == 4)) {
    result = Restart(cluster, argc == 4 && strcmp(argv[3], "--restarted") == 0);
  } else if (strcmp(name, "mismatch") == 0 && argc == 3) {
    result = Mismatch(cluster);
  } else if (strcmp(name, "batch") == 0 && argc == 5) {
    result = Batch(cluster, atoi(argv[3]), (float)atof(argv[4]));
  } else if (strcmp(name, "checkpoint") == 0 && argc == 3) {
    result = Checkpoint(cluster);
  } else {
    fprintf(stderr, "ps_worker: unknown case or arguments: %s\n", name);
  }
  dist_cluster_destroy(cluster);
  return result;
}
