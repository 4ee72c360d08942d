/* The conformance matrix's program: one scripted sequence of operations, run under the
 * strategy and configuration its arguments name, every observable result compared with
 * the independent model (model.h). A failing cell prints the configuration, the cell and
 * both values; the program exits 1 when any cell failed.
 *
 * Usage: conformance --label TEXT --strategy one_device|mirrored|central_storage|
 *                    multi_worker|parameter_server [--replicas N] [--restore PATH]
 *                    [--save PATH]
 * multi_worker and a parameter_server with a cluster run under distrun (which sets
 * TF_CONFIG, DIST_RANK and DIST_REPLICAS_PER_WORKER); parameter_server without TF_CONFIG
 * is local mode. --restore checks a checkpoint of the checkpoint cell written by another
 * configuration; --save writes this configuration's. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "distribute/distribute.h"
#include "model.h"

static const char* g_label = "";
static int g_failures = 0;
static int g_cells = 0;
static pthread_mutex_t g_report_mu = PTHREAD_MUTEX_INITIALIZER;

/* The configuration as the model sees it. */
static int32_t g_in_sync = 1;   /* replicas that aggregate together */
static int32_t g_local = 1;     /* this process's replicas */
static int32_t g_first = 0;     /* this process's first replica in sync */
static int32_t g_workers = 1;   /* processes with replicas */
static int g_plain = 0;         /* variables have one copy (OneDevice, CentralStorage) */
static int g_ps = 0;            /* ParameterServer: variables live on ps tasks */

static void Fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  pthread_mutex_lock(&g_report_mu);
  ++g_failures;
  fprintf(stderr, "FAIL [%s] ", g_label);
  vfprintf(stderr, format, args);
  fputc('\n', stderr);
  pthread_mutex_unlock(&g_report_mu);
  va_end(args);
}

static void Count(void) {
  pthread_mutex_lock(&g_report_mu);
  ++g_cells;
  pthread_mutex_unlock(&g_report_mu);
}

/* A call the script needs to go on: a failure ends the program. */
#define MUST(call)                                                                      \
  do {                                                                                  \
    dist_status_t must_ = (call);                                                       \
    if (must_ != DIST_OK) {                                                             \
      fprintf(stderr, "FAIL [%s] %s:%d: %s: %s: %s\n", g_label, __FILE__, __LINE__, #call, \
              dist_status_name(must_), dist_last_error_message());                      \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

static const char* OpName(dist_reduce_op_t op) {
  static const char* const names[] = {"?", "SUM", "MEAN", "MIN", "MAX", "PRODUCT"};
  return op >= 1 && op <= 5 ? names[op] : "?";
}
static const char* SyncName(dist_variable_sync_t sync) { return sync == DIST_SYNC_ON_READ ? "ON_READ" : "ON_WRITE"; }
static const char* AggregationName(dist_variable_aggregation_t a) {
  static const char* const names[] = {"NONE", "SUM", "MEAN", "ONLY_FIRST_REPLICA"};
  return a >= 0 && a <= 3 ? names[a] : "?";
}
static const char* KindName(int kind) { return kind == 0 ? "assign" : kind == 1 ? "assign_add" : "assign_sub"; }

/* Every dtype the collectives reduce with every op (bool reduces only with MIN and MAX). */
static const dist_dtype_t kDtypes[] = {DIST_FLOAT32, DIST_FLOAT64, DIST_INT32, DIST_INT64, DIST_FLOAT16,
                                       DIST_BFLOAT16, DIST_INT16, DIST_INT8, DIST_UINT8};
enum { kNumDtypes = 9 };
static const dist_reduce_op_t kOps[] = {DIST_REDUCE_SUM, DIST_REDUCE_MEAN, DIST_REDUCE_MIN, DIST_REDUCE_MAX,
                                        DIST_REDUCE_PRODUCT};
enum { kNumOps = 5 };

static size_t DtypeSize(dist_dtype_t dtype) {
  size_t size = 0;
  MUST(dist_dtype_size(dtype, &size));
  return size;
}

/* A tensor of `count` elements of `dtype` holding `values` (shape [count] or `shape`). */
static dist_value_t* MakeTensor(dist_dtype_t dtype, const int64_t* shape, int32_t rank, const double* values,
                                int64_t count) {
  unsigned char bytes[8 * 64];
  const size_t size = DtypeSize(dtype);
  for (int64_t i = 0; i < count; ++i) ModelEncode(dtype, values[i], bytes + (size_t)i * size);
  const int64_t flat[1] = {count};
  dist_value_t* t = NULL;
  MUST(dist_tensor_create(dtype, shape ? shape : flat, shape ? rank : 1, bytes, (size_t)count * size, "CPU:0", &t));
  return t;
}

static dist_value_t* Scalar(dist_dtype_t dtype, double value) {
  return MakeTensor(dtype, (const int64_t[]){0}, 0, &value, 1);
}

/* Compares a tensor with the model's dtype and values; `what` names the cell. */
static void Expect(const char* what, const dist_value_t* tensor, dist_dtype_t dtype, const double* expected,
                   int64_t count) {
  Count();
  dist_dtype_t actual_dtype = 0;
  int64_t actual_count = 0;
  void* data = NULL;
  if (dist_tensor_dtype(tensor, &actual_dtype) != DIST_OK || dist_tensor_num_elements(tensor, &actual_count) != DIST_OK ||
      dist_tensor_data(tensor, &data) != DIST_OK) {
    Fail("%s: not a tensor: %s", what, dist_last_error_message());
    return;
  }
  if (actual_dtype != dtype || actual_count != count) {
    Fail("%s: expected %s[%lld], got %s[%lld]", what, dist_dtype_name(dtype), (long long)count,
         dist_dtype_name(actual_dtype), (long long)actual_count);
    return;
  }
  const size_t size = DtypeSize(dtype);
  for (int64_t i = 0; i < count; ++i) {
    const double got = ModelDecode(dtype, (const char*)data + (size_t)i * size);
    if (got != expected[i]) {
      Fail("%s: element %lld: expected %.17g, got %.17g", what, (long long)i, expected[i], got);
      return;
    }
  }
}

static void ExpectStatus(const char* what, dist_status_t got, dist_status_t expected) {
  Count();
  if (got != expected) {
    Fail("%s: expected status %s, got %s (%s)", what, dist_status_name(expected), dist_status_name(got),
         got == DIST_OK ? "no error" : dist_last_error_message());
  }
}

/* ---- Collectives in replica context ---- */

static dist_value_t* ReplicaInput(int32_t g, dist_reduce_op_t op, dist_dtype_t dtype) {
  double values[kModelElements];
  for (int32_t i = 0; i < kModelElements; ++i) values[i] = ModelInput(g, i, op, dtype);
  return MakeTensor(dtype, NULL, 0, values, kModelElements);
}

/* Replica g's block for the gathers: (g % 2 + 1) rows (axis 0) or columns (axis 1) of 2,
 * element (r, c) = 100 g + 10 r + c. */
static dist_value_t* GatherBlock(int32_t g, int32_t axis) {
  const int64_t n = g % 2 + 1;
  const int64_t shape[2] = {axis == 0 ? n : 2, axis == 0 ? 2 : n};
  double values[8];
  for (int64_t r = 0; r < shape[0]; ++r) {
    for (int64_t c = 0; c < shape[1]; ++c) values[r * shape[1] + c] = 100.0 * g + 10.0 * (double)r + (double)c;
  }
  return MakeTensor(DIST_FLOAT32, shape, 2, values, shape[0] * shape[1]);
}

/* The model's gather of every replica's block along `axis`. */
static int64_t ModelGather(int32_t replicas, int32_t axis, double* out) {
  int64_t total = 0;
  for (int32_t g = 0; g < replicas; ++g) total += g % 2 + 1;
  const int64_t rows = axis == 0 ? total : 2, cols = axis == 0 ? 2 : total;
  int64_t offset = 0;
  for (int32_t g = 0; g < replicas; ++g) {
    const int64_t n = g % 2 + 1;
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t r = axis == 0 ? offset + k : j, c = axis == 0 ? j : offset + k;
        const int64_t own_r = axis == 0 ? k : j, own_c = axis == 0 ? j : k;
        out[r * cols + c] = 100.0 * g + 10.0 * (double)own_r + (double)own_c;
      }
    }
    offset += n;
  }
  return rows * cols;
}

static void CollectiveCells(dist_context_t* context, int32_t g) {
  char what[256];
  for (int d = 0; d < kNumDtypes; ++d) {
    for (int o = 0; o < kNumOps; ++o) {
      const dist_dtype_t dtype = kDtypes[d];
      const dist_reduce_op_t op = kOps[o];
      dist_value_t* x = ReplicaInput(g, op, dtype);
      double expected[kModelElements];
      dist_dtype_t expected_dtype = 0;
      ModelAllReduce(op, dtype, g_in_sync, expected, &expected_dtype);
      dist_value_t* out = NULL;
      snprintf(what, sizeof what, "replica %d: all_reduce(%s) %s", g, OpName(op), dist_dtype_name(dtype));
      const dist_status_t status = dist_context_all_reduce(context, op, x, &out);
      ExpectStatus(what, status, DIST_OK);
      if (status == DIST_OK) Expect(what, out, expected_dtype, expected, kModelElements);
      dist_value_destroy(out);
      dist_value_destroy(x);
    }
  }
  /* A batch of every dtype, SUM and MEAN (integer MEAN's dtype inside a batch). */
  for (int o = 0; o < 2; ++o) {
    const dist_reduce_op_t op = kOps[o];
    dist_value_t* batch[kNumDtypes];
    dist_value_t* outs[kNumDtypes] = {0};
    for (int d = 0; d < kNumDtypes; ++d) batch[d] = ReplicaInput(g, op, kDtypes[d]);
    snprintf(what, sizeof what, "replica %d: batch_all_reduce(%s) of every dtype", g, OpName(op));
    const dist_status_t status =
        dist_context_batch_all_reduce(context, op, (const dist_value_t* const*)batch, kNumDtypes, outs);
    ExpectStatus(what, status, DIST_OK);
    for (int d = 0; d < kNumDtypes; ++d) {
      double expected[kModelElements];
      dist_dtype_t expected_dtype = 0;
      ModelAllReduce(op, kDtypes[d], g_in_sync, expected, &expected_dtype);
      snprintf(what, sizeof what, "replica %d: batch_all_reduce(%s) item %s", g, OpName(op), dist_dtype_name(kDtypes[d]));
      if (status == DIST_OK) Expect(what, outs[d], expected_dtype, expected, kModelElements);
      dist_value_destroy(outs[d]);
      dist_value_destroy(batch[d]);
    }
  }
  for (int32_t axis = 0; axis < 2; ++axis) {
    dist_value_t* block = GatherBlock(g, axis);
    dist_value_t* out = NULL;
    double expected[64 * 2 * 2];
    const int64_t count = ModelGather(g_in_sync, axis, expected);
    snprintf(what, sizeof what, "replica %d: all_gather(axis %d)", g, axis);
    const dist_status_t status = dist_context_all_gather(context, block, axis, &out);
    ExpectStatus(what, status, DIST_OK);
    if (status == DIST_OK) Expect(what, out, DIST_FLOAT32, expected, count);
    dist_value_destroy(out);
    dist_value_destroy(block);
  }
  /* bool: MIN is a logical and, MAX an or; SUM is refused on every replica. */
  {
    double flags[3] = {g % 2 == 0, 1, 0};
    dist_value_t* b = MakeTensor(DIST_BOOL, NULL, 0, flags, 3);
    const double all[3] = {g_in_sync == 1, 1, 0}, any[3] = {1, 1, 0};
    for (int o = 0; o < 3; ++o) {
      static const dist_reduce_op_t ops[] = {DIST_REDUCE_MIN, DIST_REDUCE_MAX, DIST_REDUCE_SUM};
      dist_value_t* out = NULL;
      snprintf(what, sizeof what, "replica %d: all_reduce(%s) bool", g, OpName(ops[o]));
      const dist_status_t status = dist_context_all_reduce(context, ops[o], b, &out);
      ExpectStatus(what, status, o < 2 ? DIST_OK : DIST_INVALID_ARGUMENT);
      if (status == DIST_OK) Expect(what, out, DIST_BOOL, o == 0 ? all : any, 3);
      dist_value_destroy(out);
    }
    dist_value_destroy(b);
  }
  /* all_reduce_into this replica's own input (in place), every op on float32. */
  for (int o = 0; o < kNumOps; ++o) {
    dist_value_t* x = ReplicaInput(g, kOps[o], DIST_FLOAT32);
    double expected[kModelElements];
    dist_dtype_t expected_dtype = 0;
    ModelAllReduce(kOps[o], DIST_FLOAT32, g_in_sync, expected, &expected_dtype);
    snprintf(what, sizeof what, "replica %d: all_reduce_into(%s) float32 in place", g, OpName(kOps[o]));
    const dist_status_t status = dist_context_all_reduce_into(context, kOps[o], x, x);
    ExpectStatus(what, status, DIST_OK);
    if (status == DIST_OK) Expect(what, x, DIST_FLOAT32, expected, kModelElements);
    dist_value_destroy(x);
  }
  for (int32_t source = 0; source < g_in_sync; ++source) {
    dist_value_t* x = ReplicaInput(g, DIST_REDUCE_SUM, DIST_FLOAT64);
    double expected[kModelElements];
    for (int32_t i = 0; i < kModelElements; ++i) expected[i] = ModelInput(source, i, DIST_REDUCE_SUM, DIST_FLOAT64);
    dist_value_t* out = NULL;
    snprintf(what, sizeof what, "replica %d: broadcast from replica %d", g, source);
    const dist_status_t status = dist_context_broadcast(context, x, source, &out);
    ExpectStatus(what, status, DIST_OK);
    if (status == DIST_OK) Expect(what, out, DIST_FLOAT64, expected, kModelElements);
    dist_value_destroy(out);
    dist_value_destroy(x);
  }
}

/* ---- Bits where the reduction order shows ---- */

/* A float for replica g, element i, whose sums depend on the order of additions. */
static double Arbitrary(int32_t g, int32_t i) {
  const uint32_t h = (uint32_t)g * 2654435761u ^ ((uint32_t)i * 40503u + 17u);
  const double unit = (double)(h % 100003u) / 100003.0 - 0.5;
  return ldexp(unit, (int)(h % 23u) - 11);
}

enum { kOrderElements = 1000 };
static uint64_t g_order_digest[64];  /* each local replica's */

static uint64_t Fnv(uint64_t hash, const void* data, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) hash = (hash ^ ((const unsigned char*)data)[i]) * 1099511628211u;
  return hash;
}

/* SUM and MEAN all-reduces of arbitrary float32 and float64 values: their bits must be
 * the same on every replica and in every configuration with as many replicas (the
 * reduction order is fixed). matrix.sh compares the digests across configurations. */
static void OrderCells(dist_context_t* context, int32_t g) {
  static const dist_dtype_t dtypes[] = {DIST_FLOAT32, DIST_FLOAT64};
  uint64_t digest = 1469598103934665603u;
  for (int d = 0; d < 2; ++d) {
    for (int o = 0; o < 2; ++o) {
      unsigned char bytes[8 * kOrderElements];
      const size_t size = DtypeSize(dtypes[d]);
      for (int32_t i = 0; i < kOrderElements; ++i) ModelEncode(dtypes[d], Arbitrary(g, i), bytes + (size_t)i * size);
      const int64_t shape[1] = {kOrderElements};
      dist_value_t* x = NULL;
      MUST(dist_tensor_create(dtypes[d], shape, 1, bytes, size * kOrderElements, "CPU:0", &x));
      dist_value_t* out = NULL;
      MUST(dist_context_all_reduce(context, kOps[o], x, &out));
      void* data = NULL;
      MUST(dist_tensor_data(out, &data));
      digest = Fnv(digest, data, size * kOrderElements);
      dist_value_destroy(out);
      dist_value_destroy(x);
    }
  }
  g_order_digest[g - g_first] = digest;
}

/* ---- Variables ---- */

/* The variable cells: every synchronization x aggregation x assignment x dtype. */
typedef struct {
  dist_variable_sync_t sync;
  dist_variable_aggregation_t aggregation;
  int kind;
  dist_dtype_t dtype;
  dist_value_t* variable;   /* NULL: creation refused (and checked) */
} VariableCell;

enum { kMaxVariableCells = 64 };
static VariableCell g_replica_cells[kMaxVariableCells];
static VariableCell g_cross_cells[kMaxVariableCells];
static int g_num_variable_cells = 0;

static int CreationRefused(dist_dtype_t dtype, dist_variable_aggregation_t aggregation) {
  return ModelIsInteger(dtype) && aggregation == DIST_AGGREGATION_MEAN;  /* TF refuses it */
}

static void CreateVariableCells(VariableCell* cells, const char* prefix) {
  static const dist_variable_sync_t syncs[] = {DIST_SYNC_ON_WRITE, DIST_SYNC_ON_READ};
  static const dist_dtype_t dtypes[] = {DIST_FLOAT32, DIST_INT32};
  int n = 0;
  for (int s = 0; s < 2; ++s) {
    for (int a = 0; a < 4; ++a) {
      for (int k = 0; k < 3; ++k) {
        for (int d = 0; d < 2; ++d) {
          if (g_ps && syncs[s] == DIST_SYNC_ON_READ) continue;  /* ps variables: see PsVariableCells */
          VariableCell* cell = &cells[n++];
          cell->sync = syncs[s];
          cell->aggregation = a;
          cell->kind = k;
          cell->dtype = dtypes[d];
          char name[96];
          snprintf(name, sizeof name, "%s_%s_%s_%s_%s", prefix, SyncName(cell->sync), AggregationName(a), KindName(k),
                   dist_dtype_name(cell->dtype));
          dist_value_t* initial = Scalar(cell->dtype, ModelInitial());
          char what[160];
          snprintf(what, sizeof what, "create %s", name);
          const dist_status_t status = dist_variable_create(initial, cell->sync, a, name, &cell->variable);
          ExpectStatus(what, status, CreationRefused(cell->dtype, a) ? DIST_INVALID_ARGUMENT : DIST_OK);
          if (status != DIST_OK) cell->variable = NULL;
          dist_value_destroy(initial);
        }
      }
    }
  }
  g_num_variable_cells = n;
}

static void VariableCellName(const VariableCell* cell, char* out, size_t size) {
  snprintf(out, size, "%s %s %s %s", SyncName(cell->sync), AggregationName(cell->aggregation),
           dist_dtype_name(cell->dtype), KindName(cell->kind));
}

static dist_status_t Assign(int kind, dist_value_t* variable, const dist_value_t* value) {
  return kind == 0 ? dist_variable_assign(variable, value)
         : kind == 1 ? dist_variable_assign_add(variable, value)
                     : dist_variable_assign_sub(variable, value);
}

/* The model of a cell under this configuration: a variable with one copy (OneDevice,
 * CentralStorage) follows the MirroredVariable rules of one copy whatever its
 * synchronization. */
static void ModelCell(const VariableCell* cell, int cross_replica, ModelVariableOutcome* out) {
  const dist_variable_sync_t sync = g_plain ? DIST_SYNC_ON_WRITE : cell->sync;
  if (cross_replica) {
    ModelVariableInCrossReplicaContext(sync, cell->aggregation, cell->kind, cell->dtype, g_in_sync, 24.0, out);
  } else {
    ModelVariableInReplicaContext(sync, cell->aggregation, cell->kind, cell->dtype, g_in_sync, out);
  }
}

static void VariableCellsInReplicaContext(int32_t g) {
  char name[128], what[256];
  for (int c = 0; c < g_num_variable_cells; ++c) {
    const VariableCell* cell = &g_replica_cells[c];
    if (cell->variable == NULL) continue;
    ModelVariableOutcome model;
    ModelCell(cell, 0, &model);
    VariableCellName(cell, name, sizeof name);
    dist_value_t* update = Scalar(cell->dtype, ModelUpdate(g));
    snprintf(what, sizeof what, "replica %d: %s in replica context", g, name);
    ExpectStatus(what, Assign(cell->kind, cell->variable, update), model.refused ? DIST_INVALID_ARGUMENT : DIST_OK);
    dist_value_destroy(update);
    if (g_ps) continue;  /* the ps tasks' value is read once every worker is done */
    dist_value_t* read = NULL;
    snprintf(what, sizeof what, "replica %d: %s: read in replica context", g, name);
    const dist_status_t status = dist_variable_read(cell->variable, &read);
    ExpectStatus(what, status, DIST_OK);
    const double mine = g_plain ? model.cross_replica : model.copy[g];
    if (status == DIST_OK) Expect(what, read, cell->dtype, &mine, 1);
    dist_value_destroy(read);
  }
}

/* Every worker reads the cross-replica value and each copy it holds. */
static void CheckVariableCells(VariableCell* cells, int cross_replica, const char* context_name) {
  char name[128], what[256];
  for (int c = 0; c < g_num_variable_cells; ++c) {
    const VariableCell* cell = &cells[c];
    if (cell->variable == NULL) continue;
    ModelVariableOutcome model;
    ModelCell(cell, cross_replica, &model);
    VariableCellName(cell, name, sizeof name);
    dist_value_t* read = NULL;
    snprintf(what, sizeof what, "%s in %s context: cross-replica read", name, context_name);
    const dist_status_t status = dist_variable_read(cell->variable, &read);
    ExpectStatus(what, status, model.read_refused && !g_plain ? DIST_INVALID_ARGUMENT : DIST_OK);
    if (status == DIST_OK) Expect(what, read, cell->dtype, &model.cross_replica, 1);
    dist_value_destroy(read);
    int32_t copies = 0;
    MUST(dist_variable_device_count(cell->variable, &copies));
    const int32_t expected_copies = g_plain || g_ps ? 1 : g_local;
    snprintf(what, sizeof what, "%s: copies on this worker", name);
    Count();
    if (copies != expected_copies) Fail("%s: expected %d, got %d", what, expected_copies, copies);
    for (int32_t i = 0; i < copies && copies > 1; ++i) {
      dist_value_t* component = NULL;
      MUST(dist_value_component(cell->variable, i, &component));
      snprintf(what, sizeof what, "%s in %s context: copy of replica %d", name, context_name, g_first + i);
      MUST(dist_variable_read(component, &read));
      Expect(what, read, cell->dtype, &model.copy[g_first + i], 1);
      dist_value_destroy(read);
      dist_value_destroy(component);
    }
  }
}

static void VariableCellsInCrossReplicaContext(void) {
  char name[128], what[256];
  for (int c = 0; c < g_num_variable_cells; ++c) {
    const VariableCell* cell = &g_cross_cells[c];
    if (cell->variable == NULL) continue;
    ModelVariableOutcome model;
    ModelCell(cell, 1, &model);
    VariableCellName(cell, name, sizeof name);
    dist_value_t* value = Scalar(cell->dtype, 24.0);
    snprintf(what, sizeof what, "%s in cross-replica context", name);
    ExpectStatus(what, Assign(cell->kind, cell->variable, value), model.refused ? DIST_INVALID_ARGUMENT : DIST_OK);
    dist_value_destroy(value);
  }
}

/* ---- merge_call, reduce_to, batch_reduce_to, update ---- */

typedef struct {
  dist_value_t* target;  /* ON_WRITE SUM float32, starts at ModelInitial */
  dist_value_t* second;  /* ON_WRITE MEAN float64, starts at ModelInitial */
} MergeTargets;

static dist_status_t AddUpdate(dist_value_t* variable, const dist_value_t* const* args, int32_t num_args,
                               dist_value_t** out, void* user_data) {
  (void)num_args;
  (void)out;
  (void)user_data;
  return dist_variable_assign_add(variable, args[0]);
}

/* merge_call's function: reduce the PerReplica argument (SUM over every replica of every
 * worker), reduce_to the first target, batch_reduce_to both, and update the first with
 * the reduced value; returns the reduced value for every replica. */
static dist_status_t MergeFn(dist_strategy_t* strategy, const dist_value_t* const* args, int32_t num_args,
                             dist_value_t** out, void* user_data) {
  (void)num_args;
  MergeTargets* targets = user_data;
  dist_value_t* reduced = NULL;
  dist_status_t status = dist_strategy_reduce(strategy, DIST_REDUCE_SUM, args[0], &reduced);
  if (status != DIST_OK) return status;
  dist_value_t* to_target = NULL;
  status = dist_strategy_reduce_to(strategy, DIST_REDUCE_SUM, args[1], targets->target, &to_target);
  if (status == DIST_OK) {
    const dist_value_t* const update_args[1] = {to_target};
    dist_value_t* updated = NULL;
    status = dist_strategy_update(strategy, targets->target, AddUpdate, NULL, update_args, 1, 1, &updated);
    dist_value_destroy(updated);
  }
  dist_value_destroy(to_target);
  if (status == DIST_OK) {
    const dist_value_t* values[2] = {args[1], args[2]};
    const dist_value_t* destinations[2] = {targets->target, targets->second};
    dist_value_t* outs[2] = {0};
    status = dist_strategy_batch_reduce_to(strategy, DIST_REDUCE_MEAN, values, destinations, 2, outs);
    if (status == DIST_OK) status = dist_variable_assign(targets->second, outs[1]);
    dist_value_destroy(outs[0]);
    dist_value_destroy(outs[1]);
  }
  if (status != DIST_OK) {
    dist_value_destroy(reduced);
    return status;
  }
  *out = reduced;
  return DIST_OK;
}

static void MergeCells(dist_context_t* context, int32_t g, MergeTargets* targets) {
  dist_value_t* x = ReplicaInput(g, DIST_REDUCE_SUM, DIST_FLOAT32);
  dist_value_t* update = Scalar(DIST_FLOAT32, ModelUpdate(g));
  dist_value_t* update64 = Scalar(DIST_FLOAT64, ModelUpdate(g));
  const dist_value_t* args[3] = {x, update, update64};
  dist_value_t* merged = NULL;
  char what[160];
  snprintf(what, sizeof what, "replica %d: merge_call(reduce, reduce_to, update, batch_reduce_to)", g);
  const dist_status_t status = dist_context_merge_call(context, MergeFn, targets, args, 3, &merged);
  ExpectStatus(what, status, DIST_OK);
  double expected[kModelElements];
  dist_dtype_t expected_dtype = 0;
  ModelAllReduce(DIST_REDUCE_SUM, DIST_FLOAT32, g_in_sync, expected, &expected_dtype);
  snprintf(what, sizeof what, "replica %d: merge_call's reduce(SUM) as this replica's result", g);
  if (status == DIST_OK) Expect(what, merged, DIST_FLOAT32, expected, kModelElements);
  dist_value_destroy(merged);
  dist_value_destroy(x);
  dist_value_destroy(update);
  dist_value_destroy(update64);
}

static dist_strategy_t* StrategyUnderTest(void);

static void CheckMergeTargets(const MergeTargets* targets) {
  double sum = 0;
  for (int32_t g = 0; g < g_in_sync; ++g) sum += ModelUpdate(g);
  /* reduce_to(SUM) then update(assign_add) of the sum; the second gets the MEAN. */
  const double first = ModelRound(DIST_FLOAT32, ModelInitial() + sum);
  const double second = sum / g_in_sync;
  dist_value_t* read = NULL;
  MUST(dist_variable_read(targets->target, &read));
  Expect("merge_call: reduce_to(SUM) + update(assign_add) of a MirroredVariable", read, DIST_FLOAT32, &first, 1);
  dist_value_destroy(read);
  MUST(dist_variable_read(targets->second, &read));
  Expect("merge_call: batch_reduce_to(MEAN) + assign of a MirroredVariable", read, DIST_FLOAT64, &second, 1);
  dist_value_destroy(read);
}

/* update() in cross-replica context on each synchronization: fn gets every copy (this
 * worker's), and adds 1 to it. A SyncOnRead SUM variable then reads the sum of the copies
 * of every worker. */
static void UpdateCells(void) {
  static const dist_variable_sync_t syncs[] = {DIST_SYNC_ON_WRITE, DIST_SYNC_ON_READ};
  for (int s = 0; s < 2; ++s) {
    char name[64], what[160];
    snprintf(name, sizeof name, "update_%s", SyncName(syncs[s]));
    dist_value_t* initial = Scalar(DIST_FLOAT32, ModelInitial());
    dist_value_t* variable = NULL;
    MUST(dist_variable_create(initial, syncs[s], DIST_AGGREGATION_SUM, name, &variable));
    dist_value_t* one = Scalar(DIST_FLOAT32, 1.0);
    const dist_value_t* args[1] = {one};
    dist_value_t* out = NULL;
    snprintf(what, sizeof what, "update(assign_add 1) of an %s SUM variable", SyncName(syncs[s]));
    ExpectStatus(what, dist_strategy_update(StrategyUnderTest(), variable, AddUpdate, NULL, args, 1, 1, &out),
                 DIST_OK);
    dist_value_destroy(out);
    const int on_read = syncs[s] == DIST_SYNC_ON_READ && !g_plain;
    const double copy = ModelInitial() + 1.0;
    const double expected = on_read ? copy * g_in_sync : copy;
    dist_value_t* read = NULL;
    MUST(dist_variable_read(variable, &read));
    snprintf(what, sizeof what, "update(assign_add 1) of an %s SUM variable: cross-replica read", SyncName(syncs[s]));
    Expect(what, read, DIST_FLOAT32, &expected, 1);
    dist_value_destroy(read);
    dist_value_destroy(one);
    dist_value_destroy(initial);
    dist_value_destroy(variable);
  }
}

/* ---- Bring your own threads ---- */

/* Each local replica joined on a thread of this program's own: an all-reduce, a mirrored
 * variable's assign_add in replica context, and merge_call's reduce, as under run. */
typedef struct {
  dist_strategy_t* strategy;
  int32_t local;
  dist_value_t* variable;  /* ON_WRITE MEAN float32, starts at ModelInitial */
} JoinedReplica;

static dist_status_t SumInMerge(dist_strategy_t* strategy, const dist_value_t* const* args, int32_t num_args,
                                dist_value_t** out, void* user_data) {
  (void)num_args;
  (void)user_data;
  return dist_strategy_reduce(strategy, DIST_REDUCE_SUM, args[0], out);
}

static void* JoinedReplicaThread(void* arg) {
  JoinedReplica* joined = arg;
  dist_context_t* context = NULL;
  MUST(dist_strategy_join_replica(joined->strategy, joined->local, &context));
  int32_t g = 0;
  MUST(dist_context_replica_id(context, &g));
  Count();
  if (g != g_first + joined->local) Fail("joined replica %d: replica id %d, expected %d", joined->local, g, g_first + joined->local);
  char what[160];
  double expected[kModelElements];
  dist_dtype_t expected_dtype = 0;
  ModelAllReduce(DIST_REDUCE_SUM, DIST_FLOAT64, g_in_sync, expected, &expected_dtype);
  dist_value_t* x = ReplicaInput(g, DIST_REDUCE_SUM, DIST_FLOAT64);
  dist_value_t* out = NULL;
  snprintf(what, sizeof what, "joined replica %d: all_reduce(SUM) float64", g);
  dist_status_t status = dist_context_all_reduce(context, DIST_REDUCE_SUM, x, &out);
  ExpectStatus(what, status, DIST_OK);
  if (status == DIST_OK) Expect(what, out, DIST_FLOAT64, expected, kModelElements);
  dist_value_destroy(out);
  out = NULL;
  const dist_value_t* args[1] = {x};
  snprintf(what, sizeof what, "joined replica %d: merge_call's reduce(SUM)", g);
  status = dist_context_merge_call(context, SumInMerge, NULL, args, 1, &out);
  ExpectStatus(what, status, DIST_OK);
  if (status == DIST_OK) Expect(what, out, DIST_FLOAT64, expected, kModelElements);
  dist_value_destroy(out);
  dist_value_destroy(x);
  dist_value_t* update = Scalar(DIST_FLOAT32, ModelUpdate(g));
  snprintf(what, sizeof what, "joined replica %d: assign_add of an ON_WRITE MEAN variable", g);
  ExpectStatus(what, dist_variable_assign_add(joined->variable, update), DIST_OK);
  dist_value_destroy(update);
  MUST(dist_context_leave(context));
  return NULL;
}

static void JoinedReplicaCells(dist_strategy_t* strategy) {
  dist_value_t* initial = Scalar(DIST_FLOAT32, ModelInitial());
  dist_value_t* variable = NULL;
  MUST(dist_variable_create(initial, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN, "joined_mean", &variable));
  pthread_t threads[64];
  JoinedReplica joined[64];
  for (int32_t r = 0; r < g_local; ++r) {
    joined[r] = (JoinedReplica){strategy, r, variable};
    if (pthread_create(&threads[r], NULL, JoinedReplicaThread, &joined[r]) != 0) {
      Fail("pthread_create failed");
      exit(1);
    }
  }
  for (int32_t r = 0; r < g_local; ++r) pthread_join(threads[r], NULL);
  ModelVariableOutcome model;
  ModelVariableInReplicaContext(DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN, 1, DIST_FLOAT32, g_in_sync, &model);
  dist_value_t* read = NULL;
  MUST(dist_variable_read(variable, &read));
  Expect("joined replicas: the ON_WRITE MEAN variable after assign_add", read, DIST_FLOAT32, &model.cross_replica, 1);
  dist_value_destroy(read);
  dist_value_destroy(variable);
  dist_value_destroy(initial);
}

/* ---- The replica function and the cross-replica reductions ---- */

typedef struct {
  MergeTargets targets;
} Script;

/* Results: [0, kReduceResults) each dtype x op input (for the cross-replica reduce), then
 * the gather blocks along axis 0 and 1 and this replica's partial batch for reduce with
 * an axis. */
enum { kReduceResults = kNumOps * kNumDtypes, kNumResults = kReduceResults + 3 };

static dist_status_t ReplicaFn(dist_context_t* context, const dist_value_t* const* args, int32_t num_args,
                               dist_value_t** results, int32_t num_results, void* user_data) {
  (void)args;
  (void)num_args;
  (void)num_results;
  Script* script = user_data;
  int32_t g = 0, in_sync = 0;
  MUST(dist_context_replica_id(context, &g));
  MUST(dist_context_num_replicas_in_sync(context, &in_sync));
  Count();
  if (g < g_first || g >= g_first + g_local || in_sync != g_in_sync) {
    Fail("replica id %d of %d: expected one of %d ... %d of %d", g, in_sync, g_first, g_first + g_local - 1, g_in_sync);
  }
  CollectiveCells(context, g);
  OrderCells(context, g);
  VariableCellsInReplicaContext(g);
  if (!g_ps) MergeCells(context, g, &script->targets);
  for (int d = 0; d < kNumDtypes; ++d) {
    for (int o = 0; o < kNumOps; ++o) results[d * kNumOps + o] = ReplicaInput(g, kOps[o], kDtypes[d]);
  }
  results[kReduceResults] = GatherBlock(g, 0);
  results[kReduceResults + 1] = GatherBlock(g, 1);
  /* A partial batch: replica g has g % 3 rows of 2 (some have none). */
  const int64_t rows = g % 3;
  double values[4];
  for (int64_t i = 0; i < rows * 2; ++i) values[i] = (double)(g + 1) * 0.5 + (double)i;
  const int64_t shape[2] = {rows, 2};
  results[kReduceResults + 2] = MakeTensor(DIST_FLOAT32, shape, 2, values, rows * 2);
  return DIST_OK;
}

/* A scalar float32 per replica (its ModelUpdate), as run's only result. */
static dist_status_t ScalarOfReplica(dist_context_t* context, const dist_value_t* const* args, int32_t num_args,
                                     dist_value_t** results, int32_t num_results, void* user_data) {
  (void)args;
  (void)num_args;
  (void)num_results;
  (void)user_data;
  int32_t g = 0;
  MUST(dist_context_replica_id(context, &g));
  results[0] = Scalar(DIST_FLOAT32, ModelUpdate(g));
  return DIST_OK;
}

static void CrossReplicaReductions(dist_strategy_t* strategy, dist_value_t** results) {
  char what[160];
  for (int d = 0; d < kNumDtypes; ++d) {
    for (int o = 0; o < kNumOps; ++o) {
      double expected[kModelElements];
      dist_dtype_t expected_dtype = 0;
      ModelAllReduce(kOps[o], kDtypes[d], g_in_sync, expected, &expected_dtype);
      dist_value_t* out = NULL;
      snprintf(what, sizeof what, "reduce(%s) %s", OpName(kOps[o]), dist_dtype_name(kDtypes[d]));
      const dist_status_t status = dist_strategy_reduce(strategy, kOps[o], results[d * kNumOps + o], &out);
      ExpectStatus(what, status, DIST_OK);
      if (status == DIST_OK) Expect(what, out, expected_dtype, expected, kModelElements);
      dist_value_destroy(out);
    }
  }
  for (int32_t axis = 0; axis < 2; ++axis) {
    double expected[64 * 2 * 2];
    const int64_t count = ModelGather(g_in_sync, axis, expected);
    dist_value_t* out = NULL;
    snprintf(what, sizeof what, "gather(axis %d)", axis);
    const dist_status_t status = dist_strategy_gather(strategy, results[kReduceResults + axis], axis, &out);
    ExpectStatus(what, status, DIST_OK);
    if (status == DIST_OK) Expect(what, out, DIST_FLOAT32, expected, count);
    dist_value_destroy(out);
  }
  /* reduce along axis 0 of the partial batches: SUM over every row; MEAN over the rows. */
  double sum[2] = {0, 0};
  int64_t rows = 0;
  for (int32_t g = 0; g < g_in_sync; ++g) {
    for (int64_t r = 0; r < g % 3; ++r) {
      for (int c = 0; c < 2; ++c) sum[c] += (double)(g + 1) * 0.5 + (double)(r * 2 + c);
    }
    rows += g % 3;
  }
  for (int o = 0; o < 2; ++o) {
    double expected[2];
    for (int c = 0; c < 2; ++c) {
      expected[c] = ModelRound(DIST_FLOAT32, o == 0 ? sum[c] : rows == 0 ? 0.0 : sum[c] / (double)rows);
    }
    if (rows == 0) continue;  /* one replica with no rows: MEAN of nothing */
    dist_value_t* out = NULL;
    snprintf(what, sizeof what, "reduce_axis(%s, axis 0) of partial batches", OpName(kOps[o]));
    const dist_status_t status = dist_strategy_reduce_axis(strategy, kOps[o], results[kReduceResults + 2], 0, &out);
    ExpectStatus(what, status, DIST_OK);
    if (status == DIST_OK) Expect(what, out, DIST_FLOAT32, expected, 2);
    dist_value_destroy(out);
  }
  /* run's results are PerReplica values when other replicas exist, here or on other
   * workers (TF's regroup); a per-replica value cannot be assigned to a mirrored variable
   * in cross-replica context, nor passed to update. */
  const int per_replica = g_local > 1 || (g_workers > 1 && !g_ps);
  dist_value_kind_t kind = 0;
  MUST(dist_value_kind(results[0], &kind));
  Count();
  if (kind != (per_replica ? DIST_VALUE_PER_REPLICA : DIST_VALUE_TENSOR)) {
    Fail("run's result: expected a %s, got value kind %d", per_replica ? "PerReplica value" : "tensor", kind);
  }
  {
    dist_value_t* initial = Scalar(DIST_FLOAT32, ModelInitial());
    dist_value_t* variable = NULL;
    MUST(dist_variable_create(initial, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "per_replica_target", &variable));
    dist_value_t* mine = NULL;
    MUST(dist_strategy_run(strategy, ScalarOfReplica, NULL, NULL, 0, &mine, 1));
    const dist_status_t refused = per_replica ? DIST_INVALID_ARGUMENT : DIST_OK;
    ExpectStatus("cross-replica assign of run's per-replica result to an ON_WRITE variable",
                 dist_variable_assign(variable, mine), refused);
    const dist_value_t* args[1] = {mine};
    dist_value_t* out = NULL;
    ExpectStatus("update() with run's per-replica result as its argument",
                 dist_strategy_update(strategy, variable, AddUpdate, NULL, args, 1, 1, &out),
                 per_replica ? DIST_INVALID_ARGUMENT : DIST_OK);
    dist_value_destroy(out);
    dist_value_destroy(mine);
    dist_value_destroy(variable);
    dist_value_destroy(initial);
  }
  /* A plain tensor is the same on every replica: SUM of it is undefined with several. */
  dist_value_t* plain = Scalar(DIST_FLOAT32, 3.0);
  dist_value_t* out = NULL;
  const dist_status_t status = dist_strategy_reduce(strategy, DIST_REDUCE_SUM, plain, &out);
  ExpectStatus("reduce(SUM) of a plain tensor", status, g_in_sync > 1 ? DIST_INVALID_ARGUMENT : DIST_OK);
  const double three = 3.0;
  if (status == DIST_OK) Expect("reduce(SUM) of a plain tensor", out, DIST_FLOAT32, &three, 1);
  dist_value_destroy(out);
  MUST(dist_strategy_reduce(strategy, DIST_REDUCE_MEAN, plain, &out));
  Expect("reduce(MEAN) of a plain tensor", out, DIST_FLOAT32, &three, 1);
  dist_value_destroy(out);
  dist_value_destroy(plain);
}

/* distribute_values_from_function: replica g's value is g + 1; its SUM spans every worker. */
static dist_status_t ValueOfReplica(int32_t replica_id, int32_t num_replicas, dist_value_t** out, void* user_data) {
  (void)user_data;
  (void)num_replicas;
  *out = Scalar(DIST_FLOAT64, ModelUpdate(replica_id));
  return DIST_OK;
}

static void ValuesFromFunction(dist_strategy_t* strategy) {
  dist_value_t* values = NULL;
  MUST(dist_strategy_distribute_values_from_function(strategy, ValueOfReplica, NULL, &values));
  double sum = 0;
  for (int32_t g = 0; g < g_in_sync; ++g) sum += ModelUpdate(g);
  dist_value_t* out = NULL;
  const dist_status_t status = dist_strategy_reduce(strategy, DIST_REDUCE_SUM, values, &out);
  ExpectStatus("reduce(SUM) of distribute_values_from_function", status, DIST_OK);
  if (status == DIST_OK) Expect("reduce(SUM) of distribute_values_from_function", out, DIST_FLOAT64, &sum, 1);
  dist_value_destroy(out);
  dist_value_destroy(values);
}

/* ---- Input ---- */

enum { kElements = 25 };

static dist_status_t CountElements(dist_context_t* context, const dist_value_t* const* args, int32_t num_args,
                                   dist_value_t** results, int32_t num_results, void* user_data) {
  (void)context;
  (void)num_args;
  (void)num_results;
  (void)user_data;
  int64_t count = 0;
  void* data = NULL;
  MUST(dist_tensor_num_elements(args[0], &count));
  MUST(dist_tensor_data(args[0], &data));
  double histogram[kElements] = {0};
  for (int64_t i = 0; i < count; ++i) {
    const int64_t element = ((const int64_t*)data)[i];
    if (element >= 0 && element < kElements) histogram[element] += 1;
  }
  results[0] = MakeTensor(DIST_INT64, NULL, 0, histogram, kElements);
  return DIST_OK;
}

/* Iterates `distributed` to its end, one run per step, and checks that every element of
 * range(kElements) reached exactly one replica of one worker, in `expected_steps` steps
 * (every worker ends in the same step: the step's reduce spans them all). */
static void ExpectEveryElementOnce(dist_strategy_t* strategy, dist_distributed_dataset_t* distributed,
                                   const char* what, int expected_steps) {
  dist_iterator_t* iterator = NULL;
  MUST(dist_distributed_dataset_make_iterator(distributed, &iterator));
  double total[kElements] = {0};
  int steps = 0;
  for (;;) {
    dist_value_t* element = NULL;
    const dist_status_t status = dist_iterator_get_next(iterator, &element, 1);
    if (status == DIST_OUT_OF_RANGE) break;
    MUST(status);
    dist_value_t* histogram = NULL;
    const dist_value_t* args[1] = {element};
    MUST(dist_strategy_run(strategy, CountElements, NULL, args, 1, &histogram, 1));
    dist_value_t* merged = NULL;
    MUST(dist_strategy_reduce(strategy, DIST_REDUCE_SUM, histogram, &merged));
    void* data = NULL;
    MUST(dist_tensor_data(merged, &data));
    for (int i = 0; i < kElements; ++i) total[i] += (double)((const int64_t*)data)[i];
    dist_value_destroy(merged);
    dist_value_destroy(histogram);
    dist_value_destroy(element);
    ++steps;
  }
  double ones[kElements];
  for (int i = 0; i < kElements; ++i) ones[i] = 1.0;
  dist_value_t* seen = MakeTensor(DIST_FLOAT64, NULL, 0, total, kElements);
  Expect(what, seen, DIST_FLOAT64, ones, kElements);
  dist_value_destroy(seen);
  Count();
  if (expected_steps > 0 && steps != expected_steps) Fail("%s: expected %d steps, got %d", what, expected_steps, steps);
  dist_iterator_destroy(iterator);
}

static void InputCells(dist_strategy_t* strategy) {
  for (int split = 0; split < 2; ++split) {
    const int64_t global_batch = 2 * g_in_sync;
    dist_dataset_t *range = NULL, *batched = NULL;
    MUST(dist_dataset_range(0, kElements, 1, &range));
    MUST(dist_dataset_batch(range, global_batch, 0, &batched));
    dist_input_options_t* options = NULL;
    MUST(dist_input_options_create(&options));
    MUST(dist_input_options_set_partial_batch_split(options, split == 0 ? DIST_PARTIAL_BATCH_IN_ORDER : DIST_PARTIAL_BATCH_EVEN));
    dist_distributed_dataset_t* distributed = NULL;
    MUST(dist_strategy_distribute_dataset(strategy, batched, options, &distributed));
    char what[160];
    snprintf(what, sizeof what, "distribute_dataset(range(%d).batch(%lld)), %s split: every element exactly once",
             kElements, (long long)global_batch, split == 0 ? "IN_ORDER" : "EVEN");
    ExpectEveryElementOnce(strategy, distributed, what, (int)((kElements + global_batch - 1) / global_batch));
    dist_distributed_dataset_destroy(distributed);
    dist_input_options_destroy(options);
    dist_dataset_destroy(batched);
    dist_dataset_destroy(range);
  }
}

/* distribute_datasets_from_function's fn: range(kElements) sharded by input pipeline and
 * batched by the per-replica batch size of a global batch of 3 per replica (the shards'
 * batch counts differ between workers for some worker counts). */
static dist_status_t ShardedRange(const dist_input_context_t* context, dist_dataset_t** out, void* user_data) {
  (void)user_data;
  int32_t pipelines = 0, id = 0;
  int64_t per_replica = 0;
  MUST(dist_input_context_num_input_pipelines(context, &pipelines));
  MUST(dist_input_context_input_pipeline_id(context, &id));
  MUST(dist_input_context_per_replica_batch_size(context, 3 * (int64_t)g_in_sync, &per_replica));
  Count();
  if (per_replica != 3) Fail("per_replica_batch_size(%d): expected 3, got %lld", 3 * g_in_sync, (long long)per_replica);
  dist_dataset_t *range = NULL, *shard = NULL;
  MUST(dist_dataset_range(0, kElements, 1, &range));
  MUST(dist_dataset_shard(range, pipelines, id, &shard));
  const dist_status_t status = dist_dataset_batch(shard, per_replica, 0, out);
  dist_dataset_destroy(shard);
  dist_dataset_destroy(range);
  return status;
}

static void InputFromFunctionCells(dist_strategy_t* strategy) {
  static const dist_input_replication_mode_t modes[] = {DIST_INPUT_PER_WORKER, DIST_INPUT_PER_REPLICA};
  for (int m = 0; m < 2; ++m) {
    dist_input_options_t* options = NULL;
    MUST(dist_input_options_create(&options));
    MUST(dist_input_options_set_replication_mode(options, modes[m]));
    dist_distributed_dataset_t* distributed = NULL;
    MUST(dist_strategy_distribute_datasets_from_function(strategy, ShardedRange, NULL, NULL, options, &distributed));
    char what[160];
    snprintf(what, sizeof what, "distribute_datasets_from_function(%s, range(%d) sharded): every element exactly once",
             m == 0 ? "PER_WORKER" : "PER_REPLICA", kElements);
    ExpectEveryElementOnce(strategy, distributed, what, 0);
    dist_distributed_dataset_destroy(distributed);
    dist_input_options_destroy(options);
  }
}

/* ---- Checkpoints ---- */

/* The checkpoint cell's variables and the values every configuration saves: an ON_WRITE
 * MEAN float32 [3], an ON_READ SUM float32 [3] (saved as its sum) and an ON_WRITE SUM
 * int64 [2]. */
static const double kSavedW[3] = {1.5, -2.0, 7.25};
static const double kSavedR[3] = {24.0, 48.0, -12.0};
static const double kSavedI[2] = {123456789.0, -5.0};

static void CheckpointCells(dist_strategy_t* strategy, const char* restore, const char* save) {
  const double zeros[3] = {0, 0, 0};
  dist_value_t* zero3 = MakeTensor(DIST_FLOAT32, NULL, 0, zeros, 3);
  dist_value_t* zero2 = MakeTensor(DIST_INT64, NULL, 0, zeros, 2);
  dist_value_t *w = NULL, *r = NULL, *i = NULL;
  MUST(dist_variable_create(zero3, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN, "ckpt_w", &w));
  MUST(dist_variable_create(zero3, g_ps ? DIST_SYNC_ON_WRITE : DIST_SYNC_ON_READ, DIST_AGGREGATION_SUM, "ckpt_r", &r));
  MUST(dist_variable_create(zero2, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "ckpt_i", &i));
  if (restore != NULL) {
    char what[512];
    snprintf(what, sizeof what, "restore_variables(%s)", restore);
    ExpectStatus(what, dist_strategy_restore_variables(strategy, restore), DIST_OK);
  } else {
    dist_value_t* tw = MakeTensor(DIST_FLOAT32, NULL, 0, kSavedW, 3);
    dist_value_t* tr = MakeTensor(DIST_FLOAT32, NULL, 0, kSavedR, 3);
    dist_value_t* ti = MakeTensor(DIST_INT64, NULL, 0, kSavedI, 2);
    MUST(dist_variable_assign(w, tw));
    MUST(dist_variable_assign(r, tr));
    MUST(dist_variable_assign(i, ti));
    dist_value_destroy(tw);
    dist_value_destroy(tr);
    dist_value_destroy(ti);
  }
  dist_value_t* read = NULL;
  MUST(dist_variable_read(w, &read));
  Expect("checkpoint: ON_WRITE MEAN float32", read, DIST_FLOAT32, kSavedW, 3);
  dist_value_destroy(read);
  MUST(dist_variable_read(r, &read));
  Expect("checkpoint: ON_READ SUM float32 (read as its sum)", read, DIST_FLOAT32, kSavedR, 3);
  dist_value_destroy(read);
  MUST(dist_variable_read(i, &read));
  Expect("checkpoint: ON_WRITE SUM int64", read, DIST_INT64, kSavedI, 2);
  dist_value_destroy(read);
  if (!g_plain && !g_ps) {
    /* Each SyncOnRead SUM copy holds its share of the total (TF's restore rule). */
    dist_value_t* copy = NULL;
    MUST(dist_value_component(r, 0, &copy));
    MUST(dist_variable_read(copy, &read));
    double share[3];
    for (int k = 0; k < 3; ++k) share[k] = ModelRound(DIST_FLOAT32, kSavedR[k] / g_in_sync);
    Expect("checkpoint: ON_READ SUM copy holds total / replicas", read, DIST_FLOAT32, share, 3);
    dist_value_destroy(read);
    dist_value_destroy(copy);
  }
  if (save != NULL) {
    char path[4096];
    const char* rank = getenv("DIST_RANK");
    /* Every worker takes part (SyncOnRead reads are collective); the chief's is the file. */
    if (rank != NULL && strcmp(rank, "0") != 0) {
      snprintf(path, sizeof path, "%s.rank%s", save, rank);
    } else {
      snprintf(path, sizeof path, "%s", save);
    }
    MUST(dist_strategy_save_variables(strategy, path));
  }
  dist_value_destroy(w);
  dist_value_destroy(r);
  dist_value_destroy(i);
  dist_value_destroy(zero3);
  dist_value_destroy(zero2);
}

/* ---- ParameterServer: variables on ps tasks, updated asynchronously by each worker ---- */

/* Polls `variable` until it reads `expected` or 20 s pass (the other workers' updates
 * arrive in their own time); returns the last value read. */
static double PollVariable(dist_value_t* variable, double expected) {
  double last = 0;
  dist_dtype_t dtype = 0;
  for (int attempt = 0; attempt < 400; ++attempt) {
    dist_value_t* read = NULL;
    MUST(dist_variable_read(variable, &read));
    void* data = NULL;
    MUST(dist_tensor_data(read, &data));
    MUST(dist_tensor_dtype(read, &dtype));
    last = ModelDecode(dtype, data);
    dist_value_destroy(read);
    if (last == expected) return last;
    nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
  }
  return last;
}

/* Each worker's replicas aggregate within the worker (its replicas are the ones in sync);
 * every worker applies its aggregate to the one copy on a ps task: W assign_adds add up,
 * W assigns of the same value leave it. */
static void CheckPsVariableCells(void) {
  char name[128], what[256];
  for (int c = 0; c < g_num_variable_cells; ++c) {
    const VariableCell* cell = &g_replica_cells[c];
    if (cell->variable == NULL) continue;
    ModelVariableOutcome model;
    ModelVariableInReplicaContext(DIST_SYNC_ON_WRITE, cell->aggregation, cell->kind, cell->dtype, g_in_sync, &model);
    if (model.refused) continue;
    const double aggregated = cell->kind == 0 ? model.cross_replica
                              : cell->kind == 1 ? model.cross_replica - ModelInitial()
                                                : ModelInitial() - model.cross_replica;
    const double expected = cell->kind == 0   ? aggregated
                            : cell->kind == 1 ? ModelInitial() + g_workers * aggregated
                                              : ModelInitial() - g_workers * aggregated;
    VariableCellName(cell, name, sizeof name);
    snprintf(what, sizeof what, "%s in replica context on %d workers: the ps task's value", name, g_workers);
    Count();
    const double got = PollVariable(cell->variable, expected);
    if (got != expected) Fail("%s: expected %.17g, got %.17g", what, expected, got);
  }
}

/* ---- main ---- */

static dist_strategy_t* g_strategy = NULL;
static dist_strategy_t* StrategyUnderTest(void) { return g_strategy; }

static dist_strategy_t* CreateStrategy(const char* kind, int32_t replicas) {
  dist_strategy_t* strategy = NULL;
  if (strcmp(kind, "one_device") == 0) {
    MUST(dist_strategy_create_one_device("CPU:0", &strategy));
    g_plain = 1;
  } else if (strcmp(kind, "mirrored") == 0) {
    MUST(dist_set_logical_cpu_device_count(replicas));
    MUST(dist_strategy_create_mirrored(NULL, 0, NULL, &strategy));
  } else if (strcmp(kind, "central_storage") == 0) {
    MUST(dist_set_logical_cpu_device_count(replicas));
    MUST(dist_strategy_create_central_storage(NULL, 0, NULL, &strategy));
    g_plain = 1;
  } else if (strcmp(kind, "multi_worker") == 0 || strcmp(kind, "parameter_server") == 0) {
    dist_communication_options_t* options = NULL;
    MUST(dist_communication_options_create(&options));
    MUST(dist_communication_options_set_timeout_ms(options, 30000));
    if (getenv("DIST_REPLICAS_PER_WORKER") == NULL) MUST(dist_communication_options_set_replicas_per_worker(options, replicas));
    if (kind[0] == 'm') {
      MUST(dist_strategy_create_multi_worker_mirrored(NULL, options, &strategy));
    } else {
      MUST(dist_strategy_create_parameter_server(NULL, options, NULL, &strategy));
      g_ps = 1;
    }
    dist_communication_options_destroy(options);
  } else {
    fprintf(stderr, "conformance: unknown strategy %s\n", kind);
    exit(2);
  }
  return strategy;
}

static int Serve(void) {
  dist_cluster_t* cluster = NULL;
  MUST(dist_cluster_from_tf_config(NULL, &cluster));
  dist_server_t* server = NULL;
  MUST(dist_server_create(cluster, NULL, &server));
  MUST(dist_server_join(server));
  dist_server_destroy(server);
  dist_cluster_destroy(cluster);
  return 0;
}

int main(int argc, char** argv) {
  const char *kind = NULL, *restore = NULL, *save = NULL;
  int32_t replicas = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--label") == 0) {
      g_label = argv[i + 1];
    } else if (strcmp(argv[i], "--strategy") == 0) {
      kind = argv[i + 1];
    } else if (strcmp(argv[i], "--replicas") == 0) {
      replicas = atoi(argv[i + 1]);
    } else if (strcmp(argv[i], "--restore") == 0) {
      restore = argv[i + 1];
    } else if (strcmp(argv[i], "--save") == 0) {
      save = argv[i + 1];
    } else {
      kind = NULL;
      break;
    }
  }
  if (kind == NULL || argc % 2 == 0) {
    fprintf(stderr, "usage: conformance --label TEXT --strategy NAME [--replicas N] [--restore PATH] [--save PATH]\n");
    return 2;
  }
  if (strcmp(kind, "parameter_server") == 0 && getenv("TF_CONFIG") != NULL) {
    dist_cluster_t* cluster = NULL;
    MUST(dist_cluster_from_tf_config(NULL, &cluster));
    const char* type = NULL;
    MUST(dist_cluster_task_type(cluster, &type));
    const int serve = strcmp(type, "ps") == 0;
    dist_cluster_destroy(cluster);
    if (serve) return Serve();
  }
  dist_strategy_t* strategy = CreateStrategy(kind, replicas);
  g_strategy = strategy;
  MUST(dist_strategy_num_replicas_in_sync(strategy, &g_in_sync));
  const char* world = getenv("DIST_WORLD_SIZE");
  g_workers = world != NULL ? atoi(world) : 1;
  g_local = g_ps || strcmp(kind, "multi_worker") != 0 ? g_in_sync : g_in_sync / g_workers;
  const char* rank = getenv("DIST_RANK");
  g_first = g_ps || rank == NULL ? 0 : atoi(rank) * g_local;
  if (g_in_sync > 64) {
    fprintf(stderr, "conformance: at most 64 replicas\n");
    return 2;
  }
  MUST(dist_strategy_scope_enter(strategy));
  CreateVariableCells(g_replica_cells, "r");
  CreateVariableCells(g_cross_cells, "x");
  Script script;
  const double initial = ModelInitial();
  dist_value_t* initial32 = Scalar(DIST_FLOAT32, initial);
  dist_value_t* initial64 = Scalar(DIST_FLOAT64, initial);
  MUST(dist_variable_create(initial32, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_SUM, "merge_target", &script.targets.target));
  MUST(dist_variable_create(initial64, DIST_SYNC_ON_WRITE, DIST_AGGREGATION_MEAN, "merge_second", &script.targets.second));
  dist_value_destroy(initial32);
  dist_value_destroy(initial64);

  dist_value_t* results[kNumResults] = {0};
  MUST(dist_strategy_run(strategy, ReplicaFn, &script, NULL, 0, results, kNumResults));
  Count();
  for (int32_t r = 1; r < g_local; ++r) {
    if (g_order_digest[r] != g_order_digest[0]) Fail("order-sensitive all-reduces: replica %d's bits differ from replica %d's", g_first + r, g_first);
  }
  /* One process with all the replicas combines in the same tree when the worker count is
   * a power of 2 or every worker has one replica (reduce_kernels.h): those rows share a key. */
  const int flat = g_ps || g_local == 1 || (g_workers & (g_workers - 1)) == 0;
  if (flat) {
    printf("digest G=%d %016llx\n", g_in_sync, (unsigned long long)g_order_digest[0]);
  } else {
    printf("digest G=%d,W=%d %016llx\n", g_in_sync, g_workers, (unsigned long long)g_order_digest[0]);
  }
  if (g_ps) {
    CheckPsVariableCells();
  } else {
    CheckVariableCells(g_replica_cells, 0, "replica");
    CheckMergeTargets(&script.targets);
    VariableCellsInCrossReplicaContext();
    CheckVariableCells(g_cross_cells, 1, "cross-replica");
    UpdateCells();
  }
  CrossReplicaReductions(strategy, results);
  if (!g_ps) JoinedReplicaCells(strategy);
  ValuesFromFunction(strategy);
  /* Under ParameterServer each worker's input is its own shard, reduced within the
   * worker only: the exactly-once check spans one process. */
  if (!(g_ps && g_workers > 1)) {
    InputCells(strategy);
    InputFromFunctionCells(strategy);
  }
  for (int i = 0; i < kNumResults; ++i) dist_value_destroy(results[i]);
  /* The checkpoint holds only its own variables (a SyncOnRead NONE one cannot be saved). */
  for (int c = 0; c < g_num_variable_cells; ++c) {
    dist_value_destroy(g_replica_cells[c].variable);
    dist_value_destroy(g_cross_cells[c].variable);
  }
  dist_value_destroy(script.targets.target);
  dist_value_destroy(script.targets.second);
  CheckpointCells(strategy, restore, save);
  (void)dist_strategy_scope_exit(strategy);
  dist_strategy_destroy(strategy);
  printf("[%s] %d cells, %d failed\n", g_label, g_cells, g_failures);
  return g_failures == 0 ? 0 : 1;
}
