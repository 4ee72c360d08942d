/* Tests for "bring your own threads": dist_strategy_join_replica and dist_context_leave
 * (strategy.h, context.h). Threads made here act as replicas, use the usual replica calls,
 * and must get what dist_strategy_run gives. Worker threads never call cmocka: they record
 * failures in a dts_errors, checked by the main thread. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>

#include "dist_strategy_test.h"

static int setup(void** state) {
  (void)state;
  return dist_set_logical_cpu_device_count(DTS_NUM_CPUS) == DIST_OK ? 0 : -1;
}

typedef struct worker worker;
typedef void (*worker_body)(worker* w);

struct worker {
  int32_t id;
  void* shared;
  worker_body body;
};

static void* worker_main(void* arg) {
  worker* w = (worker*)arg;
  w->body(w);
  return NULL;
}

/* Runs body on n new threads (ids 0 ... n-1) and waits for them. */
static void run_threads(int32_t n, worker_body body, void* shared) {
  pthread_t threads[DTS_MAX_REPLICAS];
  worker workers[DTS_MAX_REPLICAS];
  int32_t i;
  assert_true(n <= DTS_MAX_REPLICAS);
  for (i = 0; i < n; ++i) {
    workers[i].id = i;
    workers[i].shared = shared;
    workers[i].body = body;
    assert_int_equal(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
  }
  for (i = 0; i < n; ++i) assert_int_equal(pthread_join(threads[i], NULL), 0);
}

/* ---- The same replica body under join_replica and under run ---- */

typedef struct {
  float all_reduce[2];
  float merged;
  float read_after_assign;
  float gathered[DTS_MAX_REPLICAS];
  int32_t replica_id;
  int32_t num_replicas;
  char device[64];
  int32_t in_cross;
} replica_outcome;

typedef struct {
  dts_errors errors;
  dist_strategy_t* strategy;
  dist_value_t* var;
  replica_outcome outcome[DTS_MAX_REPLICAS];
  dist_status_t leave_status[DTS_MAX_REPLICAS];
  int32_t after_leave_in_cross[DTS_MAX_REPLICAS];
  int32_t after_leave_has[DTS_MAX_REPLICAS];
} shared_state;

static dist_status_t sum_merge(dist_strategy_t* strategy, const dist_value_t* const* args,
                               int32_t num_args, dist_value_t** out, void* user_data) {
  (void)num_args;
  (void)user_data;
  return dist_strategy_reduce(strategy, DIST_REDUCE_SUM, args[0], out);
}

/* What a replica does: identity, all_reduce, merge_call, all_gather, a replica-context
 * assign_add on a SUM MirroredVariable, and a read. */
static dist_status_t replica_body(shared_state* st, dist_context_t* context, int32_t expected_id) {
  replica_outcome* o;
  int32_t r = -1, rid = -1;
  const char* device = NULL;
  dist_context_t* current = NULL;
  float x[2];
  dist_value_t* value = NULL;
  dist_value_t* result = NULL;
  RCALL(&st->errors, expected_id, dist_context_replica_id(context, &r));
  RCHECK(&st->errors, expected_id, r == expected_id, "replica id %d, expected %d", r,
         expected_id);
  o = &st->outcome[r];
  o->replica_id = r;
  RCALL(&st->errors, r, dist_context_num_replicas_in_sync(context, &o->num_replicas));
  RCALL(&st->errors, r, dist_context_device(context, &device));
  snprintf(o->device, sizeof(o->device), "%s", device);
  RCALL(&st->errors, r, dist_in_cross_replica_context(&o->in_cross));
  current = dist_current_replica_context();
  RCHECK(&st->errors, r, current != NULL, "no current replica context");
  RCALL(&st->errors, r, dist_context_replica_id(current, &rid));
  RCHECK(&st->errors, r, rid == r, "current replica context has id %d", rid);
  /* all_reduce */
  x[0] = (float)(r + 1);
  x[1] = 2.0f * (float)(r + 1);
  value = dts_make_f32(x, 2, device);
  RCHECK(&st->errors, r, value != NULL, "make");
  RCALL(&st->errors, r, dist_context_all_reduce(context, DIST_REDUCE_SUM, value, &result));
  RCHECK(&st->errors, r, dts_get_f32(result, o->all_reduce, 2) == 2, "all_reduce result");
  dist_value_destroy(result);
  /* merge_call */
  {
    const dist_value_t* args[1];
    args[0] = value;
    result = NULL;
    RCALL(&st->errors, r, dist_context_merge_call(context, sum_merge, NULL, args, 1, &result));
    RCHECK(&st->errors, r, dts_get_f32(result, x, 2) == 2, "merge result");
    o->merged = x[0];
    dist_value_destroy(result);
  }
  /* all_gather of one element each */
  {
    float mine = 100.0f + (float)r;
    dist_value_t* t = dts_make_f32(&mine, 1, device);
    RCHECK(&st->errors, r, t != NULL, "make");
    result = NULL;
    RCALL(&st->errors, r, dist_context_all_gather(context, t, 0, &result));
    RCHECK(&st->errors, r, dts_get_f32(result, o->gathered, DTS_MAX_REPLICAS) == o->num_replicas,
           "gathered count");
    dist_value_destroy(result);
    dist_value_destroy(t);
  }
  /* variable assignment in replica context */
  {
    float add = (float)(r + 1);
    dist_value_t* t = dts_make_f32(&add, -1, device);
    RCHECK(&st->errors, r, t != NULL, "make");
    RCALL(&st->errors, r, dist_variable_assign_add(st->var, t));
    dist_value_destroy(t);
    result = NULL;
    RCALL(&st->errors, r, dist_variable_read(st->var, &result));
    RCHECK(&st->errors, r, dts_get_f32(result, &o->read_after_assign, 1) == 1, "read");
    dist_value_destroy(result);
  }
  dist_value_destroy(value);
  return DIST_OK;
}

static void byot_body(worker* w) {
  shared_state* st = (shared_state*)w->shared;
  dist_context_t* context = (dist_context_t*)DT_SENTINEL_PTR;
  dist_status_t status = dist_strategy_join_replica(st->strategy, w->id, &context);
  if (status != DIST_OK) {
    dts_record(&st->errors, w->id, __LINE__, "join_replica(%d): %s: \"%s\"", (int)w->id,
               dist_status_name(status), dist_last_error_message());
    return;
  }
  (void)replica_body(st, context, w->id);
  st->leave_status[w->id] = dist_context_leave(context);
  dts_ignore(dist_in_cross_replica_context(&st->after_leave_in_cross[w->id]));
  dts_ignore(dist_has_strategy(&st->after_leave_has[w->id]));
}

static dist_status_t run_body(dist_context_t* context, const dist_value_t* const* args,
                              int32_t num_args, dist_value_t** results, int32_t num_results,
                              void* user_data) {
  shared_state* st = (shared_state*)user_data;
  int32_t r = -1;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  if (dist_context_replica_id(context, &r) != DIST_OK) return DIST_INTERNAL;
  return replica_body(st, context, r);
}

static void check_outcomes(const shared_state* st, int32_t n) {
  int32_t r, q;
  float total = 0.0f;
  for (q = 0; q < n; ++q) total += (float)(q + 1);
  for (r = 0; r < n; ++r) {
    const replica_outcome* o = &st->outcome[r];
    char device[32];
    snprintf(device, sizeof(device), "/device:CPU:%d", (int)r);
    assert_int_equal(o->replica_id, r);
    assert_int_equal(o->num_replicas, n);
    assert_string_equal(o->device, device);
    assert_int_equal(o->in_cross, 0);
    assert_true(o->all_reduce[0] == total);
    assert_true(o->all_reduce[1] == 2.0f * total);
    assert_true(o->merged == total);
    for (q = 0; q < n; ++q) assert_true(o->gathered[q] == 100.0f + (float)q);
    /* SUM aggregation: the variable went from 0 to the sum of the replicas' values. */
    assert_true(o->read_after_assign == total);
  }
}

static void test_byot_matches_run(void** state) {
  const int32_t counts[2] = {2, 4};
  int c;
  (void)state;
  for (c = 0; c < 2; ++c) {
    const int32_t n = counts[c];
    shared_state* byot = (shared_state*)calloc(1, sizeof(shared_state));
    shared_state* run = (shared_state*)calloc(1, sizeof(shared_state));
    dist_value_t* zero = dts_f32_scalar(0.0f, NULL);
    int32_t r;
    float total = 0.0f;
    assert_non_null(byot);
    assert_non_null(run);
    for (r = 0; r < n; ++r) total += (float)(r + 1);
    byot->strategy = run->strategy = dts_mirrored(n);
    DT_OK(dist_strategy_scope_enter(byot->strategy));
    DT_OK(dist_variable_create(zero, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &byot->var));
    DT_OK(dist_variable_create(zero, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &run->var));
    DT_OK(dist_strategy_scope_exit(byot->strategy));

    run_threads(n, byot_body, byot);
    dts_check_errors(&byot->errors, n);
    for (r = 0; r < n; ++r) {
      assert_int_equal(byot->leave_status[r], DIST_OK);
      /* After leaving, the thread is back to no scope (default strategy, replica context). */
      assert_int_equal(byot->after_leave_in_cross[r], 0);
      assert_int_equal(byot->after_leave_has[r], 0);
    }
    check_outcomes(byot, n);
    dts_expect_components_f32(byot->var, &total, -1);

    DTS_RUN_OK(&run->errors, n, dist_strategy_run(run->strategy, run_body, run, NULL, 0, NULL, 0));
    check_outcomes(run, n);
    assert_memory_equal(byot->outcome, run->outcome, sizeof(replica_outcome) * (size_t)n);
    dts_expect_components_f32(run->var, &total, -1);

    /* Joining again after everybody left works. */
    memset(byot->outcome, 0, sizeof(byot->outcome));
    run_threads(n, byot_body, byot);
    dts_check_errors(&byot->errors, n);
    for (r = 0; r < n; ++r) assert_true(byot->outcome[r].read_after_assign == 2.0f * total);

    dist_value_destroy(byot->var);
    dist_value_destroy(run->var);
    dist_value_destroy(zero);
    dist_strategy_destroy(byot->strategy);
    free(byot);
    free(run);
  }
}

/* ---- Misuse ---- */

static void test_join_rejects_misuse(void** state) {
  dist_strategy_t* s = dts_mirrored(2);
  dist_context_t* context = (dist_context_t*)DT_SENTINEL_PTR;
  (void)state;
  DT_ERR(dist_strategy_join_replica(NULL, 0, &context), DIST_INVALID_ARGUMENT,
         "dist_strategy_join_replica", "strategy");
  assert_null(context);
  DT_ERR(dist_strategy_join_replica(s, 0, NULL), DIST_INVALID_ARGUMENT,
         "dist_strategy_join_replica", "out");
  context = (dist_context_t*)DT_SENTINEL_PTR;
  DT_ERR2(dist_strategy_join_replica(s, 2, &context), DIST_INVALID_ARGUMENT, DIST_OUT_OF_RANGE,
          "dist_strategy_join_replica", "replica_id");
  assert_null(context);
  DT_ERR2(dist_strategy_join_replica(s, -1, &context), DIST_INVALID_ARGUMENT, DIST_OUT_OF_RANGE,
          "dist_strategy_join_replica", "replica_id");
  /* dist_context_leave accepts NULL. */
  DT_OK(dist_context_leave(NULL));
  /* The thread is still fine: join and leave for real. */
  DT_OK(dist_strategy_join_replica(s, 1, &context));
  DT_OK(dist_context_leave(context));
  dist_strategy_destroy(s);
}

/* Two threads in lock step: the main thread and one worker, with a barrier. */
typedef struct {
  dts_errors errors;
  dist_strategy_t* strategy;
  pthread_barrier_t barrier;
  dist_context_t* context;   /* the worker's */
  dist_status_t second_join; /* the worker joining another id while joined */
  dist_status_t leave_status;
} pair_state;

static void hold_replica_0(worker* w) {
  pair_state* st = (pair_state*)w->shared;
  dist_context_t* other = (dist_context_t*)DT_SENTINEL_PTR;
  dist_status_t status = dist_strategy_join_replica(st->strategy, 0, &st->context);
  if (status != DIST_OK) {
    dts_record(&st->errors, 0, __LINE__, "join: %s", dist_last_error_message());
    st->context = NULL;
  }
  /* A thread already acting as a replica cannot join again. */
  st->second_join = dist_strategy_join_replica(st->strategy, 1, &other);
  if (st->second_join == DIST_OK) dts_ignore(dist_context_leave(other));
  pthread_barrier_wait(&st->barrier); /* 1: joined */
  pthread_barrier_wait(&st->barrier); /* 2: the main thread has tried its misuse */
  if (st->context != NULL) st->leave_status = dist_context_leave(st->context);
  pthread_barrier_wait(&st->barrier); /* 3: left */
}

static void start_pair(pair_state* st, pthread_t* thread, worker* w) {
  memset(st, 0, sizeof(*st));
  st->strategy = dts_mirrored(2);
  assert_int_equal(pthread_barrier_init(&st->barrier, NULL, 2), 0);
  w->id = 0;
  w->shared = st;
  w->body = hold_replica_0;
  assert_int_equal(pthread_create(thread, NULL, worker_main, w), 0);
  pthread_barrier_wait(&st->barrier); /* 1 */
}

static void finish_pair(pair_state* st, pthread_t thread) {
  pthread_barrier_wait(&st->barrier); /* 2 */
  pthread_barrier_wait(&st->barrier); /* 3 */
  assert_int_equal(pthread_join(thread, NULL), 0);
  pthread_barrier_destroy(&st->barrier);
  dts_check_errors(&st->errors, 1);
  assert_int_equal(st->leave_status, DIST_OK);
}

static void test_join_same_id_twice(void** state) {
  pair_state st;
  pthread_t thread;
  worker w;
  dist_context_t* context = (dist_context_t*)DT_SENTINEL_PTR;
  dist_status_t status;
  (void)state;
  start_pair(&st, &thread, &w);
  /* Replica 0 is held by the worker. */
  status = dist_strategy_join_replica(st.strategy, 0, &context);
  if (status == DIST_OK) {
    dts_ignore(dist_context_leave(context));
    fail_msg("replica 0 was joined by two threads at once");
  }
  assert_non_null(strstr(dist_last_error_message(), "dist_strategy_join_replica"));
  assert_null(context);
  finish_pair(&st, thread);
  assert_int_not_equal(st.second_join, DIST_OK);
  /* Once left, the id can be joined again. */
  DT_OK(dist_strategy_join_replica(st.strategy, 0, &context));
  DT_OK(dist_context_leave(context));
  dist_strategy_destroy(st.strategy);
}

static void test_leave_from_another_thread(void** state) {
  pair_state st;
  pthread_t thread;
  worker w;
  (void)state;
  start_pair(&st, &thread, &w);
  assert_non_null(st.context);
  DT_ERR(dist_context_leave(st.context), DIST_FAILED_PRECONDITION, "dist_context_leave", NULL);
  finish_pair(&st, thread);
  dist_strategy_destroy(st.strategy);
}

static void test_run_while_joined(void** state) {
  pair_state st;
  pthread_t thread;
  worker w;
  dts_errors errors;
  (void)state;
  start_pair(&st, &thread, &w);
  DT_ERR(dist_strategy_run(st.strategy, run_body, NULL, NULL, 0, NULL, 0),
         DIST_FAILED_PRECONDITION, "dist_strategy_run", NULL);
  finish_pair(&st, thread);
  /* After the worker left, run works. */
  dts_errors_clear(&errors);
  {
    shared_state* ss = (shared_state*)calloc(1, sizeof(shared_state));
    dist_value_t* zero = dts_f32_scalar(0.0f, NULL);
    assert_non_null(ss);
    ss->strategy = st.strategy;
    DT_OK(dist_strategy_scope_enter(st.strategy));
    DT_OK(dist_variable_create(zero, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &ss->var));
    DT_OK(dist_strategy_scope_exit(st.strategy));
    DTS_RUN_OK(&ss->errors, 2, dist_strategy_run(st.strategy, run_body, ss, NULL, 0, NULL, 0));
    check_outcomes(ss, 2);
    dist_value_destroy(ss->var);
    dist_value_destroy(zero);
    free(ss);
  }
  dist_strategy_destroy(st.strategy);
}

/* join_replica while run is active, from a replica function and from another thread. */
typedef struct {
  dts_errors errors;
  dist_strategy_t* strategy;
  dist_status_t from_helper;
} join_during_run_state;

static void* join_from_helper(void* arg) {
  join_during_run_state* st = (join_during_run_state*)arg;
  dist_context_t* context = NULL;
  st->from_helper = dist_strategy_join_replica(st->strategy, 1, &context);
  if (st->from_helper == DIST_OK) dts_ignore(dist_context_leave(context));
  return NULL;
}

static dist_status_t join_inside_run(dist_context_t* context, const dist_value_t* const* args,
                                     int32_t num_args, dist_value_t** results,
                                     int32_t num_results, void* user_data) {
  join_during_run_state* st = (join_during_run_state*)user_data;
  int32_t r = -1;
  dist_context_t* joined = (dist_context_t*)DT_SENTINEL_PTR;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  RCALL(&st->errors, 0, dist_context_replica_id(context, &r));
  RCHECK_ERR(&st->errors, r, dist_strategy_join_replica(st->strategy, r, &joined),
             DIST_FAILED_PRECONDITION, "dist_strategy_join_replica");
  RCHECK(&st->errors, r, joined == NULL, "out not reset");
  if (r == 0) {
    pthread_t helper;
    RCHECK(&st->errors, r, pthread_create(&helper, NULL, join_from_helper, st) == 0, "thread");
    RCHECK(&st->errors, r, pthread_join(helper, NULL) == 0, "join thread");
  }
  return DIST_OK;
}

static void test_join_during_run(void** state) {
  join_during_run_state st;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.strategy = dts_mirrored(2);
  DTS_RUN_OK(&st.errors, 2, dist_strategy_run(st.strategy, join_inside_run, &st, NULL, 0, NULL,
                                                0));
  assert_int_equal(st.from_helper, DIST_FAILED_PRECONDITION);
  dist_strategy_destroy(st.strategy);
}

/* A joined replica must leave after exiting the scopes it entered (scopes nest: "each
 * enter needs one exit", and the context is released by the leave). The body runs on its
 * own thread so that a library failure cannot leave this thread's scope stack broken. */
typedef struct {
  dist_strategy_t* strategy;
  dist_status_t join, enter, in_cross_status, leave_in_scope, exit, leave;
  int32_t in_cross;
} leave_scope_state;

static void* leave_inside_scope_body(void* arg) {
  leave_scope_state* st = (leave_scope_state*)arg;
  dist_context_t* context = NULL;
  st->join = dist_strategy_join_replica(st->strategy, 1, &context);
  if (st->join != DIST_OK) return NULL;
  st->enter = dist_strategy_scope_enter(st->strategy);
  /* Re-entering the running strategy's scope keeps replica context. */
  st->in_cross_status = dist_in_cross_replica_context(&st->in_cross);
  st->leave_in_scope = dist_context_leave(context);
  if (st->leave_in_scope == DIST_OK) return NULL; /* the context is gone */
  st->exit = dist_strategy_scope_exit(st->strategy);
  st->leave = dist_context_leave(context);
  return NULL;
}

static void test_leave_inside_scope(void** state) {
  leave_scope_state st;
  pthread_t thread;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.leave_in_scope = DIST_UNKNOWN;
  st.strategy = dts_mirrored(2);
  assert_int_equal(pthread_create(&thread, NULL, leave_inside_scope_body, &st), 0);
  assert_int_equal(pthread_join(thread, NULL), 0);
  dist_strategy_destroy(st.strategy); /* before asserting: a failure leaks nothing */
  assert_int_equal(st.join, DIST_OK);
  assert_int_equal(st.enter, DIST_OK);
  assert_int_equal(st.in_cross_status, DIST_OK);
  assert_int_equal(st.in_cross, 0);
  if (st.leave_in_scope != DIST_FAILED_PRECONDITION) {
    fail_msg("dist_context_leave with a scope still entered returned %s, expected "
             "FAILED_PRECONDITION", dist_status_name(st.leave_in_scope));
  }
  assert_int_equal(st.exit, DIST_OK);
  assert_int_equal(st.leave, DIST_OK);
}

/* The joined context keeps its strategy alive after the creating reference is gone. */
static void test_context_outlives_strategy_handle(void** state) {
  const char* devices[1] = {"CPU:2"};
  dist_strategy_t* s = NULL;
  dist_strategy_t* owner = NULL;
  dist_context_t* context = NULL;
  dist_value_t* x = dts_f32_scalar(4.0f, NULL);
  dist_value_t* y = NULL;
  dist_strategy_kind_t kind = 0;
  const char* device = NULL;
  (void)state;
  DT_OK(dist_strategy_create_mirrored(devices, 1, NULL, &s));
  DT_OK(dist_strategy_join_replica(s, 0, &context));
  dist_strategy_destroy(s);
  DT_OK(dist_context_device(context, &device));
  assert_string_equal(device, "/device:CPU:2");
  DT_OK(dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &y));
  assert_true(dts_scalar_f32(y) == 4.0f);
  DT_OK(dist_context_strategy(context, &owner));
  DT_OK(dist_strategy_kind(owner, &kind));
  assert_int_equal(kind, DIST_STRATEGY_MIRRORED);
  dist_strategy_destroy(owner);
  DT_OK(dist_context_leave(context));
  dist_value_destroy(x);
  dist_value_destroy(y);
}

/* ---- Failures among joined replicas ---- */

typedef struct {
  dts_errors errors;
  dist_strategy_t* strategy;
  int case_id;
  dist_status_t seen[DTS_MAX_REPLICAS];
  char messages[DTS_MAX_REPLICAS][512];
  pthread_barrier_t joined; /* every thread has joined before anyone calls a collective */
} failure_state;

static void failing_replicas(worker* w) {
  failure_state* st = (failure_state*)w->shared;
  dist_context_t* context = NULL;
  dist_value_t* x = NULL;
  dist_value_t* y = NULL;
  dist_status_t status;
  const dist_status_t join = dist_strategy_join_replica(st->strategy, w->id, &context);
  /* Without this, a replica could fail and leave before the others join: the last leave
   * resets the group, and they would then wait for it until the timeout. */
  pthread_barrier_wait(&st->joined);
  if (join != DIST_OK) {
    dts_record(&st->errors, w->id, __LINE__, "join: %s", dist_last_error_message());
    return;
  }
  if (st->case_id == 0 && w->id == 0) {
    /* Replica 0's all_reduce fails on its own input (bool SUM). */
    const uint8_t b = 1;
    if (dist_tensor_create(DIST_BOOL, NULL, 0, &b, 1, NULL, &x) != DIST_OK) x = NULL;
  } else if (st->case_id == 2) {
    /* Shapes disagree. */
    const float v[3] = {1, 2, 3};
    x = dts_make_f32(v, w->id == 0 ? 2 : 3, NULL);
  } else {
    const float v = 1.0f;
    x = dts_make_f32(&v, 1, NULL);
  }
  if (st->case_id == 1 && w->id == 0) {
    /* Replica 0 leaves without joining the collective. */
    status = DIST_OK;
  } else {
    status = dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &y);
  }
  st->seen[w->id] = status;
  snprintf(st->messages[w->id], sizeof(st->messages[w->id]), "%s", dist_last_error_message());
  dist_value_destroy(x);
  dist_value_destroy(y);
  status = dist_context_leave(context);
  if (status != DIST_OK) {
    dts_record(&st->errors, w->id, __LINE__, "leave: %s", dist_last_error_message());
  }
}

static void expect_byot_sum(dist_strategy_t* s, int32_t n) {
  shared_state* ss = (shared_state*)calloc(1, sizeof(shared_state));
  dist_value_t* zero = dts_f32_scalar(0.0f, NULL);
  assert_non_null(ss);
  ss->strategy = s;
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(zero, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &ss->var));
  DT_OK(dist_strategy_scope_exit(s));
  run_threads(n, byot_body, ss);
  dts_check_errors(&ss->errors, n);
  check_outcomes(ss, n);
  memset(ss->outcome, 0, sizeof(ss->outcome));
  dist_value_destroy(ss->var);
  DT_OK(dist_strategy_scope_enter(s));
  DT_OK(dist_variable_create(zero, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, NULL, &ss->var));
  DT_OK(dist_strategy_scope_exit(s));
  DTS_RUN_OK(&ss->errors, n, dist_strategy_run(s, run_body, ss, NULL, 0, NULL, 0));
  check_outcomes(ss, n);
  dist_value_destroy(ss->var);
  dist_value_destroy(zero);
  free(ss);
}

static void test_joined_replica_failure_releases_others(void** state) {
  const int32_t n = 3;
  dist_strategy_t* s = dts_mirrored(n);
  failure_state st;
  int32_t r;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.strategy = s;
  st.case_id = 0;
  assert_int_equal(pthread_barrier_init(&st.joined, NULL, (unsigned)n), 0);
  run_threads(n, failing_replicas, &st);
  pthread_barrier_destroy(&st.joined);
  dts_check_errors(&st.errors, n);
  assert_int_equal(st.seen[0], DIST_INVALID_ARGUMENT);
  /* Replica 0's invalid call fails the collective for everyone, with its reason. */
  for (r = 1; r < n; ++r) {
    if (st.seen[r] != DIST_INVALID_ARGUMENT || strstr(st.messages[r], "replica 0") == NULL) {
      fail_msg("replica %d's all_reduce returned %s (\"%s\"), expected INVALID_ARGUMENT naming "
               "replica 0", (int)r, dist_status_name(st.seen[r]), st.messages[r]);
    }
  }
  /* Once everybody left, joined replicas and run work again. */
  expect_byot_sum(s, n);
  dist_strategy_destroy(s);
}

static void test_joined_replica_absent_times_out(void** state) {
  const int32_t n = 2;
  dist_strategy_t* s = dts_mirrored(n);
  failure_state st;
  (void)state;
  DT_OK(dist_strategy_set_timeout_ms(s, 300));
  memset(&st, 0, sizeof(st));
  st.strategy = s;
  st.case_id = 1;
  assert_int_equal(pthread_barrier_init(&st.joined, NULL, (unsigned)n), 0);
  run_threads(n, failing_replicas, &st);
  pthread_barrier_destroy(&st.joined);
  dts_check_errors(&st.errors, n);
  assert_int_equal(st.seen[0], DIST_OK);
  /* Replica 1 waited for replica 0, which left: released by the timeout (or by the leave). */
  if (st.seen[1] != DIST_DEADLINE_EXCEEDED && st.seen[1] != DIST_ABORTED) {
    fail_msg("replica 1's all_reduce returned %s (\"%s\")", dist_status_name(st.seen[1]),
             st.messages[1]);
  }
  DT_OK(dist_strategy_set_timeout_ms(s, DTS_TIMEOUT_MS));
  expect_byot_sum(s, n);
  dist_strategy_destroy(s);
}

static void test_joined_replicas_mismatch(void** state) {
  const int32_t n = 2;
  dist_strategy_t* s = dts_mirrored(n);
  failure_state st;
  int32_t r;
  (void)state;
  memset(&st, 0, sizeof(st));
  st.strategy = s;
  st.case_id = 2;
  assert_int_equal(pthread_barrier_init(&st.joined, NULL, (unsigned)n), 0);
  run_threads(n, failing_replicas, &st);
  pthread_barrier_destroy(&st.joined);
  dts_check_errors(&st.errors, n);
  for (r = 0; r < n; ++r) {
    assert_int_equal(st.seen[r], DIST_INVALID_ARGUMENT);
    if (strstr(st.messages[r], "replica 0") == NULL || strstr(st.messages[r], "replica 1") == NULL) {
      fail_msg("replica %d: message \"%s\" does not name both replicas", (int)r, st.messages[r]);
    }
  }
  expect_byot_sum(s, n);
  dist_strategy_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_byot_matches_run),
      cmocka_unit_test(test_join_rejects_misuse),
      cmocka_unit_test(test_join_same_id_twice),
      cmocka_unit_test(test_leave_from_another_thread),
      cmocka_unit_test(test_run_while_joined),
      cmocka_unit_test(test_join_during_run),
      cmocka_unit_test(test_leave_inside_scope),
      cmocka_unit_test(test_context_outlives_strategy_handle),
      cmocka_unit_test(test_joined_replica_failure_releases_others),
      cmocka_unit_test(test_joined_replica_absent_times_out),
      cmocka_unit_test(test_joined_replicas_mismatch),
  };
  return cmocka_run_group_tests_name("byot", tests, setup, NULL);
}
