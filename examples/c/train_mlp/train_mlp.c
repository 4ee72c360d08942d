/* Data-parallel training, end to end: a multilayer perceptron (144-128-10, ReLU, softmax)
 * learns to read noisy, shifted 12x12 digit glyphs, with the same code under
 * OneDeviceStrategy, MirroredStrategy over 4 CPU replicas, MultiWorkerMirroredStrategy
 * over 2 processes x 2 replicas started by distrun, and ParameterServerStrategy with 2
 * workers x 2 replicas and 2 ps tasks (parameter_server.h: the variables live on the ps
 * tasks, each split over both, and the workers update them asynchronously).
 *
 * Each step: dist_strategy_distribute_dataset splits a global batch across the replicas;
 * in dist_strategy_run every replica computes the SUM of its rows' gradients, the replicas
 * all-reduce those sums (one fused dist_context_batch_all_reduce, with the row count), and
 * a merge_call adds -learning_rate * sum / rows to every copy of the mirrored variables
 * (StrategyExtended.update), as TF's apply_gradients does after an explicit all-reduce.
 * That is the one-device step on the same global batch; with the gradient sums in float64
 * (see mlp.h) and deterministic reductions, all three strategies train the same weights
 * to the last bit. The loss and accuracy come back per replica and are summed with
 * dist_strategy_reduce. Variables are saved to safetensors and reloaded into a fresh
 * strategy, which must give the same held-out accuracy.
 *
 *   train_mlp --all                      what `make demo` runs: the three strategies, a table
 *   train_mlp --strategy mirrored --replicas 4 --epochs 5
 *   distrun -n 2 --replicas-per-worker 2 train_mlp --strategy multi_worker
 *   distrun -n 2 --ps 2 train_mlp --strategy parameter_server
 *   train_mlp --all --csv curves.csv     also the per-epoch figures, for tools/plot_bench.py
 *
 * See usage() for every flag. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "distribute/distribute.h"
#include "check.h"
#include "glyphs.h"
#include "mlp.h"
#include "parameter_server.h"

extern char** environ;


/* Inside replica and map functions: remember the first failure and go to `done`. */
#define TRY(call)                                \
  do {                                           \
    if ((status = (call)) != DIST_OK) goto done; \
  } while (0)

/* ---- Options ---- */

typedef enum { ONE_DEVICE, MIRRORED, MULTI_WORKER, PARAMETER_SERVER, COORDINATOR, NUM_KINDS } strategy_kind_t;

static const char* const kKindFlag[] = {"one_device", "mirrored", "multi_worker",
                                        "parameter_server", "coordinator"};
static const char* const kKindName[] = {"OneDevice", "Mirrored", "MultiWorker", "ParameterServer",
                                        "Coordinator"};
static const char* const kKindTitle[] = {"OneDeviceStrategy", "MirroredStrategy",
                                         "MultiWorkerMirroredStrategy", "ParameterServerStrategy",
                                         "ClusterCoordinator over ParameterServerStrategy"};

/* The ParameterServer and Coordinator rows of --all are not bit-identical to the others
 * (asynchronous updates); their held-out accuracy must be at least OneDevice's minus this
 * instead. */
static const double kPsAccuracyTolerance = 0.05;

typedef struct {
  int all;
  strategy_kind_t kind;
  int32_t replicas; /* mirrored; 0: 4 */
  int32_t epochs;   /* 0: 10, or 3 with --quick */
  int64_t batch;    /* global batch */
  int32_t hidden;
  double learning_rate;
  uint64_t seed;
  int quick;
  const char* data_dir;
  const char* make_data;
  const char* workdir;
  const char* save;
  const char* report;
  const char* csv;        /* --csv: the per-epoch rows go there */
  FILE* csv_file;         /* open on the process that writes them (the chief), else NULL */
  const char* distrun;
  const char* cluster;    /* multi_worker: "tf_config" (default), "slurm", "statefulset" */
  double check_accuracy;  /* < 0: not checked */
  double check_agreement; /* < 0: not checked */
} options_t;

static void usage(FILE* out) {
  fprintf(
      out,
      "usage: train_mlp --all [options]          train with all five setups, print a table\n"
      "       train_mlp --strategy one_device|mirrored|multi_worker|parameter_server|coordinator\n"
      "                 [options]\n"
      "       train_mlp --make-data DIR [--quick] [--seed N]\n"
      "\n"
      "  --strategy S          one_device (CPU:0), mirrored (--replicas CPU replicas), or\n"
      "                        multi_worker (under distrun: distrun -n 2 --replicas-per-worker 2\n"
      "                        train_mlp --strategy multi_worker ...), or parameter_server\n"
      "                        (2 replicas per worker; under distrun with ps tasks: distrun\n"
      "                        -n 2 --ps 2 train_mlp --strategy parameter_server ...; without\n"
      "                        TF_CONFIG in local mode), or coordinator (TF 2 parameter-server\n"
      "                        training: distrun -n 3 --ps 2 --coordinator train_mlp\n"
      "                        --strategy coordinator: rank 0 schedules the steps on the\n"
      "                        other workers)\n"
      "  --replicas N          replicas of the mirrored strategy (default 4, also with --all)\n"
      "  --epochs N            passes over the training set (default 10; 3 with --quick)\n"
      "  --batch N             global batch size, split across the replicas (default 64)\n"
      "  --hidden N            hidden units (default 128)\n"
      "  --learning-rate X     SGD step size (default 1.0)\n"
      "  --seed N              data and initial weights (default 1)\n"
      "  --quick               4096 training and 1024 held-out images instead of 16384 and 4096\n"
      "  --data DIR            read DIR/train.bin and DIR/test.bin (written by --make-data)\n"
      "                        instead of generating them\n"
      "  --make-data DIR       write DIR/train.bin and DIR/test.bin and exit\n"
      "  --workdir DIR         --all: where data, checkpoints and reports go (default: a\n"
      "                        temporary directory, removed at the end)\n"
      "  --save FILE           save the trained variables (safetensors), reload them into a\n"
      "                        fresh strategy and evaluate again\n"
      "  --report FILE         write the results as 'key value' lines\n"
      "  --csv FILE            write every epoch's loss, accuracy and held-out accuracy as CSV\n"
      "                        (one row per epoch and strategy; tools/plot_bench.py draws it)\n"
      "  --distrun PATH        --all: the launcher (default: distrun next to this program)\n"
      "  --check-accuracy X    exit 1 unless every held-out accuracy is >= X\n"
      "  --cluster C           multi_worker: where the cluster comes from: tf_config\n"
      "                        (TF_CONFIG, the default: distrun, Kubernetes TFJob), slurm (the\n"
      "                        srun step: every task a worker, ports 8888 up on each node) or\n"
      "                        statefulset (a Kubernetes StatefulSet pod: POD_NAME,\n"
      "                        DIST_K8S_SERVICE, DIST_K8S_REPLICAS, DIST_K8S_PORT)\n"
      "  --check-agreement X   --all: exit 1 unless every synchronous run's weights are\n"
      "                        within X of the OneDevice run's (--all always checks the\n"
      "                        ParameterServer run's accuracy: at least OneDevice's - 0.05)\n");
}

static int usage_error(const char* fmt, const char* what) {
  fprintf(stderr, "train_mlp: ");
  fprintf(stderr, fmt, what);
  fprintf(stderr, "\n\n");
  usage(stderr);
  return 2;
}

static int parse_int(const char* text, long long min, long long max, long long* out) {
  char* end = NULL;
  errno = 0;
  const long long v = strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min || v > max) return -1;
  *out = v;
  return 0;
}

static int parse_double(const char* text, double min, double max, double* out) {
  char* end = NULL;
  errno = 0;
  const double v = strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !(v >= min && v <= max)) return -1;
  *out = v;
  return 0;
}

/* Returns 0, or the exit status for a usage error (already printed). */
static int parse_options(int argc, char** argv, options_t* o) {
  memset(o, 0, sizeof *o);
  o->kind = ONE_DEVICE;
  o->batch = 64;
  o->hidden = 128;
  o->learning_rate = 1.0;
  o->seed = 1;
  o->check_accuracy = -1;
  o->check_agreement = -1;
  int have_strategy = 0;
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
      usage(stdout);
      exit(0);
    }
    if (strcmp(flag, "--all") == 0) {
      o->all = 1;
      continue;
    }
    if (strcmp(flag, "--quick") == 0) {
      o->quick = 1;
      continue;
    }
    static const char* const kWithValue[] = {
        "--strategy",      "--replicas", "--epochs",  "--batch",          "--hidden",
        "--learning-rate", "--seed",     "--data",    "--make-data",      "--workdir",
        "--save",          "--report",   "--distrun", "--check-accuracy", "--check-agreement",
        "--cluster",       "--csv"};
    int known = 0;
    for (size_t k = 0; k < sizeof kWithValue / sizeof *kWithValue; ++k)
      known |= strcmp(flag, kWithValue[k]) == 0;
    if (!known) return usage_error("unknown option '%s'", flag);
    if (i + 1 >= argc) return usage_error("%s needs a value", flag);
    const char* value = argv[++i];
    long long n = 0;
    if (strcmp(flag, "--strategy") == 0) {
      int found = 0;
      for (int k = 0; k < NUM_KINDS; ++k) {
        if (strcmp(value, kKindFlag[k]) == 0) o->kind = (strategy_kind_t)k, found = 1;
      }
      if (!found) {
        return usage_error(
            "--strategy '%s': expected one_device, mirrored, multi_worker, parameter_server or "
            "coordinator",
            value);
      }
      have_strategy = 1;
    } else if (strcmp(flag, "--replicas") == 0) {
      if (parse_int(value, 1, DIST_MAX_LOGICAL_CPU_DEVICES, &n))
        return usage_error("--replicas '%s': expected 1 to 256", value);
      o->replicas = (int32_t)n;
    } else if (strcmp(flag, "--epochs") == 0) {
      if (parse_int(value, 1, 10000, &n))
        return usage_error("--epochs '%s': expected 1 to 10000", value);
      o->epochs = (int32_t)n;
    } else if (strcmp(flag, "--batch") == 0) {
      if (parse_int(value, 1, 1 << 20, &n))
        return usage_error("--batch '%s': expected a positive integer", value);
      o->batch = n;
    } else if (strcmp(flag, "--hidden") == 0) {
      if (parse_int(value, 1, 1 << 16, &n))
        return usage_error("--hidden '%s': expected 1 to 65536", value);
      o->hidden = (int32_t)n;
    } else if (strcmp(flag, "--learning-rate") == 0) {
      if (parse_double(value, 1e-9, 1e3, &o->learning_rate))
        return usage_error("--learning-rate '%s': expected a number > 0", value);
    } else if (strcmp(flag, "--seed") == 0) {
      if (parse_int(value, 0, LLONG_MAX, &n))
        return usage_error("--seed '%s': expected a non-negative integer", value);
      o->seed = (uint64_t)n;
    } else if (strcmp(flag, "--check-accuracy") == 0) {
      if (parse_double(value, 0, 1, &o->check_accuracy))
        return usage_error("--check-accuracy '%s': expected 0 to 1", value);
    } else if (strcmp(flag, "--check-agreement") == 0) {
      if (parse_double(value, 0, 1e30, &o->check_agreement))
        return usage_error("--check-agreement '%s': expected a number >= 0", value);
    } else if (strcmp(flag, "--data") == 0) {
      o->data_dir = value;
    } else if (strcmp(flag, "--make-data") == 0) {
      o->make_data = value;
    } else if (strcmp(flag, "--workdir") == 0) {
      o->workdir = value;
    } else if (strcmp(flag, "--save") == 0) {
      o->save = value;
    } else if (strcmp(flag, "--report") == 0) {
      o->report = value;
    } else if (strcmp(flag, "--csv") == 0) {
      o->csv = value;
    } else if (strcmp(flag, "--cluster") == 0) {
      if (strcmp(value, "tf_config") != 0 && strcmp(value, "slurm") != 0 && strcmp(value, "statefulset") != 0)
        return usage_error("--cluster '%s': expected tf_config, slurm or statefulset", value);
      o->cluster = value;
    } else {
      o->distrun = value;
    }
  }
  if (!o->all && !have_strategy && !o->make_data) {
    return usage_error("%s", "choose what to run: --all, --strategy S or --make-data DIR");
  }
  if (o->all && have_strategy)
    return usage_error("%s", "--all runs every strategy: drop --strategy");
  if (o->all && (o->save || o->report))
    return usage_error("%s", "--all saves into --workdir: drop --save and --report");
  if (o->make_data && (o->all || have_strategy))
    return usage_error("%s", "--make-data only writes the data: drop --all and --strategy");
  if (o->make_data && o->csv) return usage_error("%s", "--make-data trains nothing: drop --csv");
  if (!o->all && (o->workdir || o->distrun || o->check_agreement >= 0)) {
    return usage_error("%s", "--workdir, --distrun and --check-agreement go with --all");
  }
  if (o->cluster && (o->all || o->kind != MULTI_WORKER))
    return usage_error("%s", "--cluster goes with --strategy multi_worker");
  if (o->replicas != 0 && !o->all && o->kind != MIRRORED) {
    return usage_error("%s",
                       "--replicas is for --strategy mirrored (multi_worker takes "
                       "DIST_REPLICAS_PER_WORKER from distrun; parameter_server and coordinator "
                       "run 2 per worker)");
  }
  if (o->replicas == 0) o->replicas = 4;
  if (o->epochs == 0) o->epochs = o->quick ? 3 : 10;
  return 0;
}

/* ---- Data files ---- */

typedef struct {
  char train_path[PATH_MAX];
  char test_path[PATH_MAX];
  int64_t train_count;
  int64_t test_count;
} data_t;

static int join_path(char* out, const char* dir, const char* name) {
  return snprintf(out, PATH_MAX, "%s/%s", dir, name) < PATH_MAX ? 0 : -1;
}

/* A private temporary directory, removed with what this program wrote in it at exit, on
 * an error exit, and on SIGINT, SIGTERM, SIGHUP or SIGPIPE (distrun stops a job's other
 * ranks with SIGTERM). */
static const char* const kTempFiles[] = {
    "train.bin",          "test.bin",
    "one_device.safetensors", "mirrored.safetensors",
    "multi_worker.safetensors", "multi_worker.report",
    "parameter_server.safetensors", "parameter_server.report", "coordinator.safetensors",
    "coordinator.report",     "multi_worker.csv",         "parameter_server.csv",
    "coordinator.csv"};
enum { NUM_TEMP_FILES = sizeof kTempFiles / sizeof *kTempFiles };
static char g_temp_dir[PATH_MAX];
static char g_temp_paths[NUM_TEMP_FILES][PATH_MAX];

static void remove_temp_dir(void) {
  if (g_temp_dir[0] == '\0') return;
  for (int f = 0; f < NUM_TEMP_FILES; ++f) unlink(g_temp_paths[f]); /* async-signal-safe */
  rmdir(g_temp_dir);
}

static void on_fatal_signal(int signo) {
  remove_temp_dir();
  signal(signo, SIG_DFL);
  raise(signo);
}

static const char* make_temp_dir(void) {
  snprintf(g_temp_dir, sizeof g_temp_dir, "%s", "/tmp/train_mlp.XXXXXX");
  if (mkdtemp(g_temp_dir) == NULL) {
    fprintf(stderr, "train_mlp: mkdtemp: %s\n", strerror(errno));
    g_temp_dir[0] = '\0';
    return NULL;
  }
  for (int f = 0; f < NUM_TEMP_FILES; ++f) {
    if (join_path(g_temp_paths[f], g_temp_dir, kTempFiles[f]) != 0) g_temp_paths[f][0] = '\0';
  }
  atexit(remove_temp_dir);
  const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
  for (size_t i = 0; i < sizeof signals / sizeof *signals; ++i) signal(signals[i], on_fatal_signal);
  return g_temp_dir;
}

static int make_data(const char* dir, int quick, uint64_t seed) {
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "train_mlp: cannot create %s: %s\n", dir, strerror(errno));
    return -1;
  }
  char path[PATH_MAX];
  const int64_t counts[2] = {quick ? 4096 : 16384, quick ? 1024 : 4096};
  const char* const names[2] = {"train.bin", "test.bin"};
  for (int f = 0; f < 2; ++f) {
    /* Different seeds for the two files: the held-out images are new ones. */
    if (join_path(path, dir, names[f]) != 0 ||
        glyphs_write_file(path, counts[f], seed * 2 + (uint64_t)f) != 0) {
      fprintf(stderr, "train_mlp: cannot write %s/%s: %s\n", dir, names[f], strerror(errno));
      return -1;
    }
  }
  return 0;
}

/* Returns 0, or 2 after printing a usage error naming the bad file. */
static int open_data(const char* dir, data_t* data) {
  if (join_path(data->train_path, dir, "train.bin") != 0 ||
      join_path(data->test_path, dir, "test.bin") != 0) {
    return usage_error("--data '%s': path too long", dir);
  }
  const char* why = NULL;
  const char* paths[2] = {data->train_path, data->test_path};
  int64_t* counts[2] = {&data->train_count, &data->test_count};
  for (int f = 0; f < 2; ++f) {
    *counts[f] = glyphs_check_file(paths[f], &why);
    if (*counts[f] < 0) {
      fprintf(stderr, "train_mlp: --data: %s: %s\n", paths[f], why);
      return usage_error("%s", "(train_mlp --make-data DIR writes DIR/train.bin and DIR/test.bin)");
    }
    if (*counts[f] == 0) return usage_error("--data: %s has no images", paths[f]);
  }
  return 0;
}

/* ---- The input pipeline ---- */

static void free_buffer(void* data, void* user_data) {
  (void)user_data;
  free(data);
}

/* Map function on a batch of records (uint8 [rows, 1 + 144]): features float32
 * [rows, 144] in [0, 1] and labels int32 [rows]. */
static dist_status_t decode_batch(const dist_value_t* const* inputs, int32_t num_inputs,
                                  dist_value_t** outputs, int32_t num_outputs, void* user_data) {
  (void)num_inputs;
  (void)num_outputs;
  (void)user_data;
  dist_status_t status = DIST_OK;
  int64_t dims[2] = {0, 0};
  void* bytes = NULL;
  float* features = NULL;
  int32_t* labels = NULL;
  TRY(dist_tensor_shape(inputs[0], dims, 2));
  TRY(dist_tensor_data(inputs[0], &bytes));
  const int64_t rows = dims[0];
  features = malloc((size_t)(rows * GLYPHS_PIXELS) * sizeof *features + 1);
  labels = malloc((size_t)rows * sizeof *labels + 1);
  if (features == NULL || labels == NULL) {
    status = DIST_RESOURCE_EXHAUSTED;
    goto done;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const unsigned char* record = (const unsigned char*)bytes + r * GLYPHS_RECORD_BYTES;
    labels[r] = record[0];
    for (int p = 0; p < GLYPHS_PIXELS; ++p)
      features[r * GLYPHS_PIXELS + p] = record[1 + p] * (1.0f / 255.0f);
  }
  const int64_t feature_shape[2] = {rows, GLYPHS_PIXELS};
  TRY(dist_tensor_wrap(DIST_FLOAT32, feature_shape, 2, features,
                       (size_t)(rows * GLYPHS_PIXELS) * sizeof *features, NULL, free_buffer, NULL,
                       &outputs[0]));
  features = NULL; /* the tensor owns it now */
  TRY(dist_tensor_wrap(DIST_INT32, &rows, 1, labels, (size_t)rows * sizeof *labels, NULL,
                       free_buffer, NULL, &outputs[1]));
  labels = NULL;
done:
  free(features);
  free(labels);
  return status;
}

/* One pass over a glyph file as global batches distributed over the strategy's replicas:
 * records -> [shuffle] -> batch -> map(decode) -> distribute_dataset. whole: every worker
 * reads every batch (no sharding by worker). */
static dist_iterator_t* make_input(dist_strategy_t* strategy, const char* path, int64_t count,
                                   int64_t global_batch, int training, uint64_t shuffle_seed,
                                   int whole) {
  dist_dataset_t* records = NULL;
  dist_dataset_t* shuffled = NULL;
  dist_dataset_t* batches = NULL;
  dist_dataset_t* decoded = NULL;
  dist_distributed_dataset_t* distributed = NULL;
  dist_iterator_t* iterator = NULL;
  CHECK(dist_dataset_from_fixed_length_records(&path, 1, GLYPHS_RECORD_BYTES, GLYPHS_HEADER_BYTES,
                                               0, &records));
  if (training) {
    CHECK(dist_dataset_shuffle(records, count, shuffle_seed, &shuffled));
  } else {
    shuffled = records, records = NULL;
  }
  /* Training drops the last partial batch, so that every step has the full global batch. */
  CHECK(dist_dataset_batch(shuffled, global_batch, training, &batches));
  CHECK(dist_dataset_map(batches, decode_batch, NULL, NULL, 2, 2, &decoded));
  dist_input_options_t* input_options = NULL;
  if (whole) {
    CHECK(dist_input_options_create(&input_options));
    CHECK(dist_input_options_set_auto_shard_policy(input_options, DIST_AUTO_SHARD_OFF));
  }
  CHECK(dist_strategy_distribute_dataset(strategy, decoded, input_options, &distributed));
  dist_input_options_destroy(input_options);
  CHECK(dist_distributed_dataset_make_iterator(distributed, &iterator));
  /* The iterator keeps what it needs alive. */
  dist_dataset_destroy(records);
  dist_dataset_destroy(shuffled);
  dist_dataset_destroy(batches);
  dist_dataset_destroy(decoded);
  dist_distributed_dataset_destroy(distributed);
  return iterator;
}

/* ---- The replica functions ---- */

typedef struct {
  mlp_shape_t shape;
  double learning_rate;
  int parameter_server; /* updates go to the ps tasks (ps_apply_sgd), no merge_call */
} step_config_t;

enum { ARG_FEATURES, ARG_LABELS, ARG_PARAMS, NUM_STEP_ARGS = ARG_PARAMS + MLP_NUM_PARAMS };
enum { METRIC_LOSS, METRIC_CORRECT, METRIC_ROWS, NUM_METRICS };

/* StrategyExtended.update's function: one copy of a variable += its share of the update. */
static dist_status_t add_to_copy(dist_value_t* variable, const dist_value_t* const* args,
                                 int32_t num_args, dist_value_t** out, void* user_data) {
  (void)num_args;
  (void)out;
  (void)user_data;
  return dist_variable_assign_add(variable, args[0]);
}

/* merge_call's function, in cross-replica context: args[0 .. 3] are the replicas' updates
 * (equal on every replica: they come from the all-reduce), args[4 .. 7] the variables.
 * As TF's apply_gradients after an explicit all-reduce: each update becomes a Mirrored
 * value and StrategyExtended.update adds it to every copy of its variable. */
static dist_status_t apply_updates(dist_strategy_t* strategy, const dist_value_t* const* args,
                                   int32_t num_args, dist_value_t** out, void* user_data) {
  (void)num_args;
  (void)out;
  (void)user_data;
  dist_status_t status = DIST_OK;
  for (int p = 0; p < MLP_NUM_PARAMS && status == DIST_OK; ++p) {
    dist_value_t* copies[DIST_MAX_LOGICAL_CPU_DEVICES] = {NULL};
    dist_value_t* mirrored = NULL;
    dist_value_t* updated = NULL;
    int32_t count = 0;
    TRY(dist_value_num_components(args[p], &count));
    for (int32_t i = 0; i < count && status == DIST_OK; ++i)
      status = dist_value_component(args[p], i, &copies[i]);
    if (status == DIST_OK)
      status = dist_value_create_mirrored((const dist_value_t* const*)copies, count, &mirrored);
    if (status == DIST_OK) {
      const dist_value_t* update_args[1] = {mirrored};
      status = dist_strategy_update(strategy, (dist_value_t*)args[MLP_NUM_PARAMS + p], add_to_copy,
                                    NULL, update_args, 1, 1, &updated);
    }
    for (int32_t i = 0; i < count; ++i) dist_value_destroy(copies[i]);
    dist_value_destroy(mirrored);
    dist_value_destroy(updated);
  }
done:
  return status;
}

/* Forward (and, when training, backward and the update) on this replica's rows. Returns
 * float32 [3] metrics: loss sum, correct predictions, rows. */
static dist_status_t replica_step(dist_context_t* context, const dist_value_t* const* args,
                                  int training, dist_value_t** metrics_out,
                                  const step_config_t* config) {
  dist_status_t status = DIST_OK;
  dist_value_t* weights[MLP_NUM_PARAMS] = {NULL};
  dist_value_t* grads[MLP_NUM_PARAMS + 1] = {NULL}; /* + the row count */
  dist_value_t* summed[MLP_NUM_PARAMS + 1] = {NULL};
  dist_value_t* updates[MLP_NUM_PARAMS] = {NULL};
  const char* device = NULL;
  void* data = NULL;
  const float* params[MLP_NUM_PARAMS];
  double* grad_data[MLP_NUM_PARAMS];
  int64_t dims[2] = {0, 0};
  void* features = NULL;
  void* labels = NULL;
  TRY(dist_context_device(context, &device));
  TRY(dist_tensor_shape(args[ARG_FEATURES], dims, 2));
  TRY(dist_tensor_data(args[ARG_FEATURES], &features));
  TRY(dist_tensor_data(args[ARG_LABELS], &labels));
  const int64_t rows = dims[0];
  /* In replica context a read gives this replica's copy; under ParameterServerStrategy the
   * batch asks each ps task once for every shard it holds. */
  TRY(dist_variables_read(args + ARG_PARAMS, MLP_NUM_PARAMS, weights));
  for (int p = 0; p < MLP_NUM_PARAMS; ++p) {
    TRY(dist_tensor_data(weights[p], &data));
    params[p] = data;
    if (training) {
      int64_t pdims[2];
      int32_t rank;
      mlp_param_size(config->shape, p, pdims, &rank);
      TRY(dist_tensor_create(DIST_FLOAT64, pdims, rank, NULL, 0, device, &grads[p]));
      TRY(dist_tensor_data(grads[p], &data));
      grad_data[p] = data;
    }
  }
  mlp_stats_t stats;
  if (mlp_forward_backward(config->shape, params, features, labels, rows,
                           training ? grad_data : NULL, &stats) != 0) {
    status = DIST_RESOURCE_EXHAUSTED;
    goto done;
  }
  if (training && config->parameter_server) {
    for (int p = 0; p < MLP_NUM_PARAMS; ++p) {
      int64_t pdims[2];
      int32_t rank;
      const int64_t n = mlp_param_size(config->shape, p, pdims, &rank);
      TRY(ps_mean_gradient(grad_data[p], n, pdims, rank, rows, device, &updates[p]));
    }
    TRY(ps_apply_sgd((dist_value_t* const*)(args + ARG_PARAMS), (const dist_value_t* const*)updates,
                     MLP_NUM_PARAMS, config->learning_rate));
  } else if (training) {
    /* The gradient sums and row counts of all replicas, in one fused all-reduce. */
    const double local_rows = (double)rows;
    TRY(dist_tensor_create(DIST_FLOAT64, NULL, 0, &local_rows, sizeof local_rows, device,
                           &grads[MLP_NUM_PARAMS]));
    TRY(dist_context_batch_all_reduce(context, DIST_REDUCE_SUM, (const dist_value_t* const*)grads,
                                      MLP_NUM_PARAMS + 1, summed));
    TRY(dist_tensor_data(summed[MLP_NUM_PARAMS], &data));
    const double global_rows = *(const double*)data;
    const double scale = global_rows > 0 ? -config->learning_rate / global_rows : 0.0;
    const dist_value_t* merge_args[2 * MLP_NUM_PARAMS];
    for (int p = 0; p < MLP_NUM_PARAMS; ++p) {
      int64_t pdims[2];
      int32_t rank;
      const int64_t n = mlp_param_size(config->shape, p, pdims, &rank);
      void* sum = NULL;
      TRY(dist_tensor_data(summed[p], &sum));
      TRY(dist_tensor_create(DIST_FLOAT32, pdims, rank, NULL, 0, device, &updates[p]));
      TRY(dist_tensor_data(updates[p], &data));
      for (int64_t i = 0; i < n; ++i) ((float*)data)[i] = (float)(scale * ((const double*)sum)[i]);
      merge_args[p] = updates[p];
      merge_args[MLP_NUM_PARAMS + p] = args[ARG_PARAMS + p];
    }
    dist_value_t* merged = NULL; /* apply_updates returns nothing */
    TRY(dist_context_merge_call(context, apply_updates, NULL, merge_args, 2 * MLP_NUM_PARAMS,
                                &merged));
    dist_value_destroy(merged);
  }
  const float metrics[NUM_METRICS] = {(float)stats.loss_sum, (float)stats.correct, (float)rows};
  const int64_t metrics_shape[1] = {NUM_METRICS};
  TRY(dist_tensor_create(DIST_FLOAT32, metrics_shape, 1, metrics, sizeof metrics, device,
                         metrics_out));
done:
  for (int p = 0; p <= MLP_NUM_PARAMS; ++p) {
    if (p < MLP_NUM_PARAMS) dist_value_destroy(weights[p]);
    if (p < MLP_NUM_PARAMS) dist_value_destroy(updates[p]);
    dist_value_destroy(grads[p]);
    dist_value_destroy(summed[p]);
  }
  return status;
}

static dist_status_t train_step(dist_context_t* context, const dist_value_t* const* args,
                                int32_t num_args, dist_value_t** results, int32_t num_results,
                                void* user_data) {
  (void)num_args;
  (void)num_results;
  return replica_step(context, args, 1, &results[0], user_data);
}

static dist_status_t eval_step(dist_context_t* context, const dist_value_t* const* args,
                               int32_t num_args, dist_value_t** results, int32_t num_results,
                               void* user_data) {
  (void)num_args;
  (void)num_results;
  return replica_step(context, args, 0, &results[0], user_data);
}

/* ---- Training and evaluation, the same for every strategy ---- */

typedef struct {
  double loss, accuracy;
} metrics_t;

typedef struct {
  int32_t replicas;
  metrics_t train; /* the last epoch */
  metrics_t test;  /* held out, after training */
  double examples_per_sec;
  metrics_t restored; /* held out, from the saved variables in a fresh strategy */
  int have_restored;
  float* params[MLP_NUM_PARAMS];
} result_t;

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- --csv: one row per epoch ---- */

static const char kCsvHeader[] = "strategy,epoch,loss,accuracy,held_out_accuracy,examples_per_sec\n";

/* Creates `path` with the header line; NULL (with a message) when it cannot. */
static FILE* open_csv(const char* path) {
  FILE* file = fopen(path, "w");
  if (file == NULL || fputs(kCsvHeader, file) == EOF) {
    fprintf(stderr, "train_mlp: cannot write %s: %s\n", path, strerror(errno));
    if (file != NULL) fclose(file);
    return NULL;
  }
  return file;
}

static int close_csv(FILE* file, const char* path) {
  if (file == NULL) return 0;
  const int failed = ferror(file) != 0;
  if (fclose(file) != 0 || failed) {
    fprintf(stderr, "train_mlp: cannot write %s\n", path);
    return -1;
  }
  return 0;
}

/* The row of one epoch (the same figures as its "epoch" line, in full precision). */
static void write_csv_row(FILE* file, strategy_kind_t kind, int32_t epoch, double loss, double accuracy,
                          double held_out_accuracy, double examples_per_sec) {
  if (file == NULL) return;
  fprintf(file, "%s,%d,%.9g,%.9g,%.9g,%.1f\n", kKindFlag[kind], epoch, loss, accuracy, held_out_accuracy,
          examples_per_sec);
  fflush(file);
}

/* Appends the rows of `path` (a child run's --csv file) to `out`, without its header. */
static int append_csv(FILE* out, const char* path) {
  FILE* in = fopen(path, "r");
  if (in == NULL) {
    fprintf(stderr, "train_mlp: the run left no CSV in %s: %s\n", path, strerror(errno));
    return -1;
  }
  char line[512];
  int first = 1;
  while (fgets(line, sizeof line, in) != NULL) {
    if (!first) fputs(line, out);
    first = 0;
  }
  fclose(in);
  fflush(out);
  return 0;
}

static mlp_shape_t model_shape(const options_t* o) {
  mlp_shape_t shape = {GLYPHS_PIXELS, o->hidden, GLYPHS_CLASSES};
  return shape;
}

/* The model's variables, created in the strategy's scope: Glorot-initialised from `seed`,
 * or zeros (to be restored) when zeros != 0. With aggregation MEAN under
 * ParameterServerStrategy (the replicas' updates are averaged), NONE otherwise (updates
 * are applied in merge_call, in cross-replica context). */
static void create_model(dist_strategy_t* strategy, mlp_shape_t shape, uint64_t seed, int zeros,
                         dist_variable_aggregation_t aggregation,
                         dist_value_t* variables[MLP_NUM_PARAMS]) {
  float* initial[MLP_NUM_PARAMS];
  int64_t dims[MLP_NUM_PARAMS][2];
  int32_t ranks[MLP_NUM_PARAMS];
  for (int p = 0; p < MLP_NUM_PARAMS; ++p) {
    const int64_t n = mlp_param_size(shape, p, dims[p], &ranks[p]);
    initial[p] = calloc((size_t)n, sizeof(float));
    if (initial[p] == NULL) {
      fprintf(stderr, "train_mlp: out of memory\n");
      exit(1);
    }
  }
  if (!zeros) mlp_init(shape, seed, initial);
  CHECK(dist_strategy_scope_enter(strategy));
  for (int p = 0; p < MLP_NUM_PARAMS; ++p) {
    dist_value_t* value = NULL;
    CHECK(dist_tensor_create(DIST_FLOAT32, dims[p], ranks[p], initial[p],
                             (size_t)(dims[p][0] * dims[p][1]) * sizeof(float), NULL, &value));
    CHECK(dist_variable_create(value, DIST_SYNC_ON_WRITE, aggregation, mlp_param_name(p),
                               &variables[p]));
    dist_value_destroy(value);
    free(initial[p]);
  }
  CHECK(dist_strategy_scope_exit(strategy));
}

/* Runs `step` over one pass of `iterator`; returns the loss and accuracy summed over every
 * replica with dist_strategy_reduce, and the rows seen. */
static metrics_t run_pass(dist_strategy_t* strategy, dist_iterator_t* iterator,
                          dist_replica_fn step, dist_value_t* const variables[MLP_NUM_PARAMS],
                          const step_config_t* config, int64_t* out_rows) {
  double sums[NUM_METRICS] = {0, 0, 0};
  for (;;) {
    dist_value_t* args[NUM_STEP_ARGS] = {NULL};
    int32_t has_value = 0;
    CHECK(dist_iterator_get_next_as_optional(iterator, args, 2, &has_value));
    if (!has_value) break;
    for (int p = 0; p < MLP_NUM_PARAMS; ++p) args[ARG_PARAMS + p] = variables[p];
    dist_value_t* per_replica = NULL;
    dist_value_t* total = NULL;
    void* data = NULL;
    CHECK(dist_strategy_run(strategy, step, (void*)config, (const dist_value_t* const*)args,
                            NUM_STEP_ARGS, &per_replica, 1));
    CHECK(dist_strategy_reduce(strategy, DIST_REDUCE_SUM, per_replica, &total));
    CHECK(dist_tensor_data(total, &data));
    for (int m = 0; m < NUM_METRICS; ++m) sums[m] += ((const float*)data)[m];
    dist_value_destroy(total);
    dist_value_destroy(per_replica);
    dist_value_destroy(args[ARG_FEATURES]);
    dist_value_destroy(args[ARG_LABELS]);
  }
  metrics_t m = {0, 0};
  if (sums[METRIC_ROWS] > 0) {
    m.loss = sums[METRIC_LOSS] / sums[METRIC_ROWS];
    m.accuracy = sums[METRIC_CORRECT] / sums[METRIC_ROWS];
  }
  *out_rows = (int64_t)sums[METRIC_ROWS];
  return m;
}

static metrics_t evaluate(dist_strategy_t* strategy, const data_t* data, const options_t* o,
                          dist_value_t* const variables[MLP_NUM_PARAMS]) {
  const step_config_t config = {model_shape(o), o->learning_rate, 0};
  /* Larger batches than training's: fewer steps, and the same sums of correct predictions.
   * Under ParameterServer only the chief evaluates, so it reads the whole held-out set
   * (its workers' input is otherwise sharded by worker). */
  dist_iterator_t* iterator = make_input(strategy, data->test_path, data->test_count,
                                         4 * o->batch, 0, 0,
                                         o->kind == PARAMETER_SERVER || o->kind == COORDINATOR);
  int64_t rows = 0;
  const metrics_t m = run_pass(strategy, iterator, eval_step, variables, &config, &rows);
  dist_iterator_destroy(iterator);
  return m;
}

/* Host copies of the variables' values (the first copy: all copies are equal). Fails the
 * program if the copies of a mirrored variable differ. */
static void read_params(dist_strategy_t* strategy, mlp_shape_t shape,
                        dist_value_t* const variables[MLP_NUM_PARAMS], float* out[MLP_NUM_PARAMS]) {
  CHECK(dist_strategy_scope_enter(strategy));
  for (int p = 0; p < MLP_NUM_PARAMS; ++p) {
    int64_t dims[2];
    int32_t rank, copies = 0;
    const int64_t n = mlp_param_size(shape, p, dims, &rank);
    out[p] = malloc((size_t)n * sizeof(float));
    if (out[p] == NULL) exit(1);
    CHECK(dist_value_num_components(variables[p], &copies));
    for (int32_t c = 0; c < copies; ++c) {
      dist_value_t* copy = NULL;
      dist_value_t* value = NULL;
      void* data = NULL;
      CHECK(dist_value_component(variables[p], c, &copy));
      CHECK(dist_variable_read(copy, &value));
      CHECK(dist_tensor_data(value, &data));
      if (c == 0) {
        memcpy(out[p], data, (size_t)n * sizeof(float));
      } else if (memcmp(out[p], data, (size_t)n * sizeof(float)) != 0) {
        fprintf(stderr, "train_mlp: the copies of '%s' differ (copy %d)\n", mlp_param_name(p), c);
        exit(1);
      }
      dist_value_destroy(value);
      dist_value_destroy(copy);
    }
  }
  CHECK(dist_strategy_scope_exit(strategy));
}

static void destroy_model(dist_value_t* variables[MLP_NUM_PARAMS]) {
  for (int p = 0; p < MLP_NUM_PARAMS; ++p) dist_value_destroy(variables[p]);
}

/* Trains a fresh model under `strategy`. chief: print the per-epoch lines (and, under
 * ParameterServerStrategy, where only the chief evaluates, evaluate). */
static result_t train(dist_strategy_t* strategy, const data_t* data, const options_t* o,
                      int32_t chief, int32_t workers) {
  result_t result;
  memset(&result, 0, sizeof result);
  CHECK(dist_strategy_num_replicas_in_sync(strategy, &result.replicas));
  const mlp_shape_t shape = model_shape(o);
  const int parameter_server = o->kind == PARAMETER_SERVER;
  const step_config_t config = {shape, o->learning_rate, parameter_server};
  /* Evaluation is a collective of every worker under MultiWorkerMirrored; under
   * ParameterServer it is the chief's own reading of the variables. */
  const int evaluates = chief || !parameter_server;
  dist_value_t* variables[MLP_NUM_PARAMS];
  create_model(strategy, shape, o->seed, 0,
               parameter_server ? DIST_AGGREGATION_MEAN : DIST_AGGREGATION_NONE, variables);
  double train_seconds = 0;
  int64_t train_rows = 0;
  for (int32_t epoch = 1; epoch <= o->epochs; ++epoch) {
    /* The same seed on every strategy (and every worker): the same global batches. */
    dist_iterator_t* iterator = make_input(strategy, data->train_path, data->train_count, o->batch,
                                           1, o->seed * 1000003u + (uint64_t)epoch, 0);
    const double start = now_seconds();
    int64_t rows = 0;
    result.train = run_pass(strategy, iterator, train_step, variables, &config, &rows);
    const double seconds = now_seconds() - start;
    dist_iterator_destroy(iterator);
    train_seconds += seconds;
    train_rows += rows;
    if (evaluates) result.test = evaluate(strategy, data, o, variables);
    if (chief) {
      printf("epoch %2d/%d  loss %.4f  accuracy %.4f  held-out accuracy %.4f  %6.0f examples/s\n",
             epoch, o->epochs, result.train.loss, result.train.accuracy, result.test.accuracy,
             seconds > 0 ? (double)rows / seconds : 0.0);
      fflush(stdout);
      write_csv_row(o->csv_file, o->kind, epoch, result.train.loss, result.train.accuracy,
                    result.test.accuracy, seconds > 0 ? (double)rows / seconds : 0.0);
    }
  }
  result.examples_per_sec = train_seconds > 0 ? (double)train_rows / train_seconds : 0.0;
  if (parameter_server) {
    /* The other workers may still be training: the chief evaluates (and saves) the values
     * they leave once all of them are done. */
    ps_finish_training(strategy, chief, workers);
    if (chief) result.test = evaluate(strategy, data, o, variables);
  }
  read_params(strategy, shape, variables, result.params);
  if (o->save != NULL) CHECK(dist_strategy_save_variables(strategy, o->save));
  destroy_model(variables);
  return result;
}

/* ---- ClusterCoordinator: TF 2 parameter-server training ----
 * Every process registers the training step and the dataset function by name; the chief
 * (rank 0) creates the ParameterServerStrategy, the model (on the ps tasks) and a
 * coordinator, and schedules steps that the other workers run with their own strategy;
 * ps tasks and workers only serve. As in TF's tutorial: a per-worker dataset, a loop of
 * schedule + join per epoch, and a checkpoint after every epoch. */

/* What the registered functions need: set in main before any server starts. */
static struct {
  data_t data;
  options_t options;
  step_config_t config;
  int32_t task_index; /* this worker's, returned with every step's metrics */
} g_coordinated;

enum { COORDINATED_METRICS = NUM_METRICS + 1 }; /* + the worker's task index */

/* dataset function "train_mlp/train": the training batches, before distribution (the
 * coordinator distributes them with DATA sharding: every worker its rows of each batch),
 * repeated without end: an epoch is a number of rows, not the end of every worker's data,
 * as TF's parameter-server training counts steps_per_epoch, so that a worker that is lost
 * (killed, stopped) cannot hold the epoch open: the others cover its share. */
static dist_status_t coordinated_train_data(const dist_input_context_t* context, dist_dataset_t** out,
                                            void* user_data) {
  (void)context;
  (void)user_data;
  const char* path = g_coordinated.data.train_path;
  dist_dataset_t* records = NULL;
  dist_dataset_t* repeated = NULL;
  dist_dataset_t* shuffled = NULL;
  dist_dataset_t* batches = NULL;
  dist_status_t status = dist_dataset_from_fixed_length_records(&path, 1, GLYPHS_RECORD_BYTES,
                                                                GLYPHS_HEADER_BYTES, 0, &records);
  if (status == DIST_OK) status = dist_dataset_repeat(records, -1, &repeated);
  if (status == DIST_OK) {
    status = dist_dataset_shuffle(repeated, g_coordinated.data.train_count, g_coordinated.options.seed,
                                  &shuffled);
  }
  if (status == DIST_OK) status = dist_dataset_batch(shuffled, g_coordinated.options.batch, 1, &batches);
  if (status == DIST_OK) status = dist_dataset_map(batches, decode_batch, NULL, NULL, 2, 2, out);
  dist_dataset_destroy(records);
  dist_dataset_destroy(repeated);
  dist_dataset_destroy(shuffled);
  dist_dataset_destroy(batches);
  return status;
}

/* closure "train_mlp/step": args are the model's variables and the per-worker iterator.
 * One training step on this worker's replicas, its updates sent to the ps tasks; returns
 * the step's summed metrics and the worker's task index. */
static dist_status_t coordinated_step(dist_strategy_t* strategy, const dist_closure_args_t* args,
                                      dist_value_t** out, void* user_data) {
  (void)user_data;
  dist_status_t status = DIST_OK;
  dist_iterator_t* iterator = NULL;
  dist_value_t* step_args[NUM_STEP_ARGS] = {NULL};
  dist_value_t* per_replica = NULL;
  dist_value_t* total = NULL;
  int32_t has_value = 0;
  float metrics[COORDINATED_METRICS] = {0, 0, 0, (float)g_coordinated.task_index};
  TRY(dist_closure_args_iterator(args, MLP_NUM_PARAMS, &iterator));
  TRY(dist_iterator_get_next_as_optional(iterator, step_args, 2, &has_value));
  if (has_value) {
    void* data = NULL;
    for (int p = 0; p < MLP_NUM_PARAMS; ++p) TRY(dist_closure_args_value(args, p, &step_args[ARG_PARAMS + p]));
    TRY(dist_strategy_run(strategy, train_step, &g_coordinated.config, (const dist_value_t* const*)step_args,
                          NUM_STEP_ARGS, &per_replica, 1));
    TRY(dist_strategy_reduce(strategy, DIST_REDUCE_SUM, per_replica, &total));
    TRY(dist_tensor_data(total, &data));
    memcpy(metrics, data, NUM_METRICS * sizeof(float));
  }
  const int64_t dims[1] = {COORDINATED_METRICS};
  TRY(dist_tensor_create(DIST_FLOAT32, dims, 1, metrics, sizeof metrics, "CPU:0", out));
done:
  dist_value_destroy(step_args[ARG_FEATURES]);
  dist_value_destroy(step_args[ARG_LABELS]);
  dist_value_destroy(per_replica);
  dist_value_destroy(total);
  return status;
}

static void coordinated_register(const options_t* o) {
  g_coordinated.options = *o;
  g_coordinated.config.shape = model_shape(o);
  g_coordinated.config.learning_rate = o->learning_rate;
  g_coordinated.config.parameter_server = 1;
  CHECK(dist_closure_register("train_mlp/step", coordinated_step, NULL, NULL));
  CHECK(dist_dataset_function_register("train_mlp/train", coordinated_train_data, NULL, NULL));
}

/* A worker other than the chief: serves the coordinator's closures until the chief (or a
 * ps task) is gone. Returns -1 on the chief. */
static int coordinated_serve_unless_chief(void) {
  dist_cluster_t* cluster = NULL;
  int32_t is_chief = 0;
  CHECK(dist_cluster_from_tf_config(NULL, &cluster)); /* main checked that TF_CONFIG is set */
  CHECK(dist_cluster_is_chief(cluster, &is_chief));
  CHECK(dist_cluster_task_index(cluster, &g_coordinated.task_index));
  if (is_chief) {
    dist_cluster_destroy(cluster);
    return -1;
  }
  dist_server_t* server = NULL;
  CHECK(dist_server_create(cluster, NULL, &server));
  dist_cluster_destroy(cluster);
  while (dist_server_peer_health(server) == DIST_OK) {
    const struct timespec pause = {0, 100 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  dist_server_destroy(server);
  return 0;
}

/* The chief's training: per epoch a fresh per-worker iterator, steps scheduled (and joined)
 * until every worker's data has ended, then evaluation and a checkpoint. */
static result_t train_coordinated(dist_strategy_t* strategy, const data_t* data, const options_t* o,
                                  int32_t* out_workers) {
  result_t result;
  memset(&result, 0, sizeof result);
  CHECK(dist_strategy_num_replicas_in_sync(strategy, &result.replicas));
  const mlp_shape_t shape = model_shape(o);
  dist_value_t* variables[MLP_NUM_PARAMS];
  create_model(strategy, shape, o->seed, 0, DIST_AGGREGATION_MEAN, variables);
  dist_coordinator_t* coordinator = NULL;
  CHECK(dist_coordinator_create(strategy, &coordinator));
  int32_t workers = 0;
  CHECK(dist_coordinator_num_workers(coordinator, &workers));
  *out_workers = workers;
  dist_input_options_t* input_options = NULL;
  CHECK(dist_input_options_create(&input_options));
  CHECK(dist_input_options_set_auto_shard_policy(input_options, DIST_AUTO_SHARD_DATA));
  dist_per_worker_t* dataset = NULL;
  CHECK(dist_coordinator_create_per_worker_dataset(coordinator, "train_mlp/train", input_options, &dataset));
  double train_seconds = 0;
  int64_t train_rows = 0;
  for (int32_t epoch = 1; epoch <= o->epochs; ++epoch) {
    dist_per_worker_t* iterator = NULL;
    CHECK(dist_per_worker_make_iterator(dataset, &iterator));
    dist_closure_args_t* args = NULL;
    CHECK(dist_closure_args_create(&args));
    for (int p = 0; p < MLP_NUM_PARAMS; ++p) CHECK(dist_closure_args_add_value(args, variables[p]));
    CHECK(dist_closure_args_add_per_worker(args, iterator));
    double sums[NUM_METRICS] = {0, 0, 0};
    const double start = now_seconds();
    /* An epoch is as many rows as the training set holds, wherever they were trained. */
    while (sums[METRIC_ROWS] < (double)data->train_count) {
      enum { ROUND = 8 };
      dist_remote_value_t* values[ROUND];
      for (int i = 0; i < ROUND; ++i) CHECK(dist_coordinator_schedule(coordinator, "train_mlp/step", args, &values[i]));
      CHECK(dist_coordinator_join(coordinator));
      for (int i = 0; i < ROUND; ++i) {
        dist_value_t* metrics = NULL;
        void* m = NULL;
        CHECK(dist_remote_value_fetch(values[i], &metrics));
        CHECK(dist_tensor_data(metrics, &m));
        const float* f = m;
        for (int k = 0; k < NUM_METRICS; ++k) sums[k] += f[k];
        dist_value_destroy(metrics);
        dist_remote_value_destroy(values[i]);
      }
    }
    const double seconds = now_seconds() - start;
    dist_closure_args_destroy(args);
    dist_per_worker_destroy(iterator);
    train_seconds += seconds;
    train_rows += (int64_t)sums[METRIC_ROWS];
    if (sums[METRIC_ROWS] > 0) {
      result.train.loss = sums[METRIC_LOSS] / sums[METRIC_ROWS];
      result.train.accuracy = sums[METRIC_CORRECT] / sums[METRIC_ROWS];
    }
    result.test = evaluate(strategy, data, o, variables);
    /* A checkpoint every epoch, as the tutorial's training loop saves one periodically. */
    if (o->save != NULL) CHECK(dist_strategy_save_variables(strategy, o->save));
    printf("epoch %2d/%d  loss %.4f  accuracy %.4f  held-out accuracy %.4f  %6.0f examples/s\n", epoch,
           o->epochs, result.train.loss, result.train.accuracy, result.test.accuracy,
           seconds > 0 ? sums[METRIC_ROWS] / seconds : 0.0);
    fflush(stdout);
    write_csv_row(o->csv_file, o->kind, epoch, result.train.loss, result.train.accuracy,
                  result.test.accuracy, seconds > 0 ? sums[METRIC_ROWS] / seconds : 0.0);
  }
  result.examples_per_sec = train_seconds > 0 ? (double)train_rows / train_seconds : 0.0;
  read_params(strategy, shape, variables, result.params);
  dist_per_worker_destroy(dataset);
  dist_input_options_destroy(input_options);
  dist_coordinator_destroy(coordinator);
  destroy_model(variables);
  return result;
}

/* Loads a checkpoint into a fresh model under `strategy` (variables created as zeros, then
 * restored) and evaluates it. Optionally returns the restored weights. */
static metrics_t restore_and_evaluate(dist_strategy_t* strategy, const char* path,
                                      const data_t* data, const options_t* o,
                                      float* params_out[MLP_NUM_PARAMS]) {
  dist_value_t* variables[MLP_NUM_PARAMS];
  create_model(strategy, model_shape(o), 0, 1, DIST_AGGREGATION_NONE, variables);
  CHECK(dist_strategy_scope_enter(strategy));
  CHECK(dist_strategy_restore_variables(strategy, path));
  CHECK(dist_strategy_scope_exit(strategy));
  const metrics_t m = evaluate(strategy, data, o, variables);
  if (params_out != NULL) read_params(strategy, model_shape(o), variables, params_out);
  destroy_model(variables);
  return m;
}

/* ---- Strategies ---- */

static dist_strategy_t* create_strategy(strategy_kind_t kind, int32_t replicas) {
  dist_strategy_t* strategy = NULL;
  if (kind == ONE_DEVICE) {
    CHECK(dist_strategy_create_one_device("CPU:0", &strategy));
  } else {
    char names[DIST_MAX_LOGICAL_CPU_DEVICES][16];
    const char* devices[DIST_MAX_LOGICAL_CPU_DEVICES];
    CHECK(dist_set_logical_cpu_device_count(replicas));
    for (int32_t i = 0; i < replicas; ++i) {
      snprintf(names[i], sizeof names[i], "CPU:%d", i);
      devices[i] = names[i];
    }
    CHECK(dist_strategy_create_mirrored(devices, replicas, NULL, &strategy));
  }
  return strategy;
}

/* The multi-worker strategy of this task: its cluster from TF_CONFIG (distrun, TFJob),
 * from the Slurm step (srun; every task a worker, ports from 8888) or from a Kubernetes
 * StatefulSet pod (POD_NAME, DIST_K8S_SERVICE, DIST_K8S_REPLICAS, DIST_K8S_PORT).
 * Returns 2 (usage) without TF_CONFIG. */
static int create_multi_worker(const char* source, dist_strategy_t** out, int32_t* is_chief, int32_t* workers) {
  dist_cluster_t* cluster = NULL;
  if (source != NULL && strcmp(source, "slurm") == 0) {
    CHECK(dist_cluster_from_slurm(NULL, NULL, 0, 0, 0, &cluster));
  } else if (source != NULL && strcmp(source, "statefulset") == 0) {
    CHECK(dist_cluster_from_statefulset(NULL, NULL, 0, 0, &cluster));
  }
  const dist_status_t found = cluster != NULL ? DIST_OK : dist_cluster_from_tf_config(NULL, &cluster);
  if (found == DIST_NOT_FOUND) {
    return usage_error("%s",
                       "--strategy multi_worker needs TF_CONFIG: start it with\n"
                       "  distrun -n 2 --replicas-per-worker 2 train_mlp --strategy multi_worker");
  }
  CHECK(found);
  CHECK(dist_cluster_is_chief(cluster, is_chief));
  CHECK(dist_cluster_num_workers(cluster, workers));
  /* The strategy runs DIST_REPLICAS_PER_WORKER replicas on this worker (distrun sets it;
   * one without it) and rejects a bad value with a message naming the variable. */
  CHECK(dist_strategy_create_multi_worker_mirrored(cluster, NULL, out));
  dist_cluster_destroy(cluster);
  return 0;
}

/* ---- Reports and weights ---- */

static double max_abs_diff(mlp_shape_t shape, float* const a[MLP_NUM_PARAMS],
                           float* const b[MLP_NUM_PARAMS]) {
  double worst = 0;
  for (int p = 0; p < MLP_NUM_PARAMS; ++p) {
    int64_t dims[2];
    int32_t rank;
    const int64_t n = mlp_param_size(shape, p, dims, &rank);
    for (int64_t i = 0; i < n; ++i) {
      const double d = fabs((double)a[p][i] - (double)b[p][i]);
      if (d > worst || d != d) worst = d;
    }
  }
  return worst;
}

static void free_params(float* params[MLP_NUM_PARAMS]) {
  for (int p = 0; p < MLP_NUM_PARAMS; ++p) free(params[p]), params[p] = NULL;
}

static int write_report(const char* path, const char* strategy, int32_t workers,
                        const result_t* r) {
  FILE* file = fopen(path, "w");
  if (file == NULL) {
    fprintf(stderr, "train_mlp: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  /* %.17g: the values read back are the same doubles. */
  fprintf(file,
          "strategy %s\nworkers %d\nreplicas %d\ntrain_loss %.17g\ntrain_accuracy %.17g\n"
          "test_loss %.17g\ntest_accuracy %.17g\nexamples_per_sec %.17g\n",
          strategy, workers, r->replicas, r->train.loss, r->train.accuracy, r->test.loss,
          r->test.accuracy, r->examples_per_sec);
  if (r->have_restored) fprintf(file, "restored_test_accuracy %.17g\n", r->restored.accuracy);
  return fclose(file) == 0 ? 0 : -1;
}

static int read_report(const char* path, int32_t* workers, result_t* r) {
  FILE* file = fopen(path, "r");
  if (file == NULL) return -1;
  char key[64];
  double value;
  int found = 0;
  while (fscanf(file, "%63s", key) == 1) {
    if (strcmp(key, "strategy") == 0) {
      if (fscanf(file, "%63s", key) != 1) break;
      continue;
    }
    if (fscanf(file, "%lf", &value) != 1) break;
    if (strcmp(key, "workers") == 0) *workers = (int32_t)value, found |= 1;
    if (strcmp(key, "replicas") == 0) r->replicas = (int32_t)value, found |= 2;
    if (strcmp(key, "train_loss") == 0) r->train.loss = value, found |= 4;
    if (strcmp(key, "train_accuracy") == 0) r->train.accuracy = value;
    if (strcmp(key, "test_loss") == 0) r->test.loss = value;
    if (strcmp(key, "test_accuracy") == 0) r->test.accuracy = value, found |= 8;
    if (strcmp(key, "examples_per_sec") == 0) r->examples_per_sec = value, found |= 16;
  }
  fclose(file);
  return found == 31 ? 0 : -1;
}

static void print_restored(const char* path, strategy_kind_t kind, metrics_t trained,
                           metrics_t restored) {
  const char* slash = strrchr(path, '/');
  printf("saved %s; restored into a fresh %s: held-out accuracy %.4f (%s)\n",
         slash ? slash + 1 : path, kKindTitle[kind], restored.accuracy,
         restored.accuracy == trained.accuracy ? "same" : "DIFFERENT");
}

/* ---- One strategy (--strategy) ---- */

static int run_single(const options_t* o, const data_t* data) {
  dist_strategy_t* strategy = NULL;
  int32_t is_chief = 1, workers = 1;
  if (o->kind == MULTI_WORKER) {
    const int bad = create_multi_worker(o->cluster, &strategy, &is_chief, &workers);
    if (bad) return bad;
  } else if (o->kind == PARAMETER_SERVER || o->kind == COORDINATOR) {
    strategy = ps_create_strategy(&is_chief, &workers);
  } else {
    strategy = create_strategy(o->kind, o->replicas);
  }
  int32_t replicas = 0;
  CHECK(dist_strategy_num_replicas_in_sync(strategy, &replicas));
  if (is_chief) {
    printf("%s: %d replica%s", kKindTitle[o->kind], replicas, replicas == 1 ? "" : "s");
    if (o->kind == MULTI_WORKER) printf(" (%d workers)", workers);
    if (o->kind == PARAMETER_SERVER) printf(" per worker (%d workers)", workers);
    if (o->kind == COORDINATOR) printf(" per worker (%d workers and the chief)", workers - 1);
    printf(", global batch %lld, %lld training and %lld held-out images\n", (long long)o->batch,
           (long long)data->train_count, (long long)data->test_count);
  }
  /* Only the chief saves: every worker holds the same variables (or, under
   * ParameterServer, reads the same ones from the ps tasks). */
  options_t mine = *o;
  if (!is_chief) mine.save = NULL;
  mine.csv_file = NULL;
  if (is_chief && o->csv != NULL && (mine.csv_file = open_csv(o->csv)) == NULL) {
    dist_strategy_destroy(strategy);
    return 1;
  }
  result_t result;
  if (o->kind == COORDINATOR) {
    result = train_coordinated(strategy, data, &mine, &workers);
  } else {
    result = train(strategy, data, &mine, is_chief, workers);
  }
  int failed = 0;
  if (mine.save != NULL) {
    /* A fresh strategy of the same kind; a fresh local Mirrored one with a worker's
     * replicas for a multi-worker or parameter-server run. */
    const int32_t fresh_replicas = o->kind == MULTI_WORKER       ? replicas / workers
                                   : o->kind == PARAMETER_SERVER || o->kind == COORDINATOR ? replicas
                                                                 : o->replicas;
    dist_strategy_t* fresh =
        create_strategy(o->kind == ONE_DEVICE ? ONE_DEVICE : MIRRORED, fresh_replicas);
    result.restored = restore_and_evaluate(fresh, mine.save, data, &mine, NULL);
    result.have_restored = 1;
    dist_strategy_destroy(fresh);
    print_restored(mine.save, o->kind == ONE_DEVICE ? ONE_DEVICE : MIRRORED, result.test,
                   result.restored);
    failed |= result.restored.accuracy != result.test.accuracy;
  }
  if (close_csv(mine.csv_file, o->csv) != 0) failed = 1;
  if (is_chief) {
    printf("held-out accuracy %.4f (chance 0.1), loss %.4f, %.0f examples/s\n",
           result.test.accuracy, result.test.loss, result.examples_per_sec);
    if (o->report != NULL && write_report(o->report, kKindFlag[o->kind], workers, &result) != 0)
      failed = 1;
  }
  /* A parameter-server worker other than the chief does not evaluate. */
  const int evaluated = is_chief || (o->kind != PARAMETER_SERVER && o->kind != COORDINATOR);
  if (evaluated && o->check_accuracy >= 0 && result.test.accuracy < o->check_accuracy) {
    fprintf(stderr, "train_mlp: held-out accuracy %.4f is below --check-accuracy %g\n",
            result.test.accuracy, o->check_accuracy);
    failed = 1;
  }
  free_params(result.params);
  dist_strategy_destroy(strategy);
  return failed;
}

/* ---- All three (--all) ---- */

static int find_distrun(const options_t* o, char* out) {
  if (o->distrun != NULL) {
    snprintf(out, PATH_MAX, "%s", o->distrun);
  } else {
    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return -1;
    self[n] = '\0';
    char* slash = strrchr(self, '/');
    if (slash == NULL) return -1;
    *slash = '\0';
    if (join_path(out, self, "distrun") != 0) return -1;
  }
  return access(out, X_OK);
}

/* Runs distrun -n 2 --replicas-per-worker 2 <this program> --strategy multi_worker ...
 * (or distrun -n 2 --ps 2 <this program> --strategy parameter_server ...) and waits for
 * it. Returns its exit status. */
static int spawn_distributed(strategy_kind_t kind, const options_t* o, const char* distrun,
                             const char* data_dir, const char* save, const char* report,
                             const char* csv) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return -1;
  self[n] = '\0';
  char epochs[32], batch[32], hidden[32], rate[64], seed[32];
  snprintf(epochs, sizeof epochs, "%d", o->epochs);
  snprintf(batch, sizeof batch, "%lld", (long long)o->batch);
  snprintf(hidden, sizeof hidden, "%d", o->hidden);
  snprintf(rate, sizeof rate, "%.17g", o->learning_rate);
  snprintf(seed, sizeof seed, "%llu", (unsigned long long)o->seed);
  const int ps = kind == PARAMETER_SERVER || kind == COORDINATOR;
  /* The coordinator's job has one more worker: rank 0 only schedules, and distrun lets the
   * job go on when a worker that only serves it dies (and starts it again once). */
  const int coordinated = kind == COORDINATOR;
  char* launcher[] = {(char*)distrun, "-n", coordinated ? "3" : "2", ps ? "--ps" : "--replicas-per-worker", "2",
                      "--timeout", "240", "--coordinator", "--max-restarts", "1"};
  const size_t launcher_count = coordinated ? 10 : 7;
  char* program[] = {"--", self, "--strategy", (char*)kKindFlag[kind],
                     "--data", (char*)data_dir, "--epochs", epochs, "--batch", batch,
                     "--hidden", hidden, "--learning-rate", rate, "--seed", seed,
                     "--save", (char*)save, "--report", (char*)report, NULL, NULL, NULL};
  if (csv != NULL) { /* in the two slots before the last NULL */
    program[sizeof program / sizeof program[0] - 3] = "--csv";
    program[sizeof program / sizeof program[0] - 2] = (char*)csv;
  }
  char* argv[sizeof launcher / sizeof launcher[0] + sizeof program / sizeof program[0]];
  memcpy(argv, launcher, launcher_count * sizeof(char*));
  memcpy(argv + launcher_count, program, sizeof program);
  printf("$ distrun -n %d %s 2%s train_mlp --strategy %s ...\n", coordinated ? 3 : 2,
         ps ? "--ps" : "--replicas-per-worker", coordinated ? " --coordinator --max-restarts 1" : "",
         kKindFlag[kind]);
  fflush(stdout);
  fflush(stderr);
  pid_t pid;
  const int spawned = posix_spawn(&pid, distrun, NULL, NULL, argv, environ);
  if (spawned != 0) {
    fprintf(stderr, "train_mlp: cannot start %s: %s\n", distrun, strerror(spawned));
    return -1;
  }
  int wstatus = 0;
  while (waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
}

static void print_header(const char* title) { printf("\n== %s ==\n", title); }

/* The first `count` training images side by side, in ASCII shades. */
static void print_samples(const char* path, int count) {
  enum { MAX_SAMPLES = 6 };
  unsigned char records[MAX_SAMPLES][GLYPHS_RECORD_BYTES];
  FILE* file = fopen(path, "rb");
  if (file == NULL) return;
  if (count > MAX_SAMPLES) count = MAX_SAMPLES;
  const int ok = fseek(file, GLYPHS_HEADER_BYTES, SEEK_SET) == 0 &&
                 fread(records, GLYPHS_RECORD_BYTES, (size_t)count, file) == (size_t)count;
  fclose(file);
  if (!ok) return;
  static const char kShades[] = " .:-=+*#%@";
  for (int row = 0; row < GLYPHS_SIDE; ++row) {
    printf("  ");
    for (int i = 0; i < count; ++i) {
      for (int col = 0; col < GLYPHS_SIDE; ++col) {
        const int shade = records[i][1 + row * GLYPHS_SIDE + col] * 10 / 256;
        putchar(kShades[shade]);
      }
      printf(i + 1 < count ? "   " : "\n");
    }
  }
  printf("  ");
  for (int i = 0; i < count; ++i)
    printf("  digit %-4d%s", records[i][0], i + 1 < count ? "   " : "\n");
}

static int run_all(const options_t* o) {
  const mlp_shape_t shape = model_shape(o);
  char distrun[PATH_MAX];
  if (find_distrun(o, distrun) != 0) {
    return usage_error("cannot run '%s': build distrun next to train_mlp or pass --distrun PATH",
                       o->distrun ? o->distrun : "distrun");
  }
  /* The work directory holds the data, the checkpoints and the multi-worker report. */
  const char* workdir = o->workdir;
  if (workdir == NULL) {
    if ((workdir = make_temp_dir()) == NULL) return 1;
  } else if (mkdir(workdir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "train_mlp: cannot create %s: %s\n", workdir, strerror(errno));
    return 1;
  }
  const char* data_dir = o->data_dir != NULL ? o->data_dir : workdir;
  if (o->data_dir == NULL && make_data(workdir, o->quick, o->seed) != 0) return 1;
  data_t data;
  const int bad = open_data(data_dir, &data);
  if (bad) return bad;
  printf(
      "distribute %s: a %d-%d-%d MLP learns noisy 12x12 digit glyphs (10 classes, chance 0.1),\n"
      "%lld training and %lld held-out images, global batch %lld, SGD learning rate %g, "
      "%d epochs\n\n",
      dist_version(), shape.inputs, shape.hidden, shape.classes, (long long)data.train_count,
      (long long)data.test_count, (long long)o->batch, o->learning_rate, o->epochs);
  print_samples(data.train_path, 5);

  enum { RUNS = NUM_KINDS };
  result_t results[RUNS];
  memset(results, 0, sizeof results);
  char saved[RUNS][PATH_MAX];
  char report_paths[RUNS][PATH_MAX];
  char csv_paths[RUNS][PATH_MAX];
  int failed = 0;
  int have[RUNS] = {0};
  int32_t workers[RUNS] = {1, 1, 1, 1, 1};
  for (int k = 0; k < RUNS; ++k) {
    char name[64];
    snprintf(name, sizeof name, "%s.safetensors", kKindFlag[k]);
    if (join_path(saved[k], workdir, name) != 0) return 1;
    snprintf(name, sizeof name, "%s.report", kKindFlag[k]);
    if (join_path(report_paths[k], workdir, name) != 0) return 1;
    snprintf(name, sizeof name, "%s.csv", kKindFlag[k]);
    if (join_path(csv_paths[k], workdir, name) != 0) return 1;
  }
  /* --csv: this process writes the in-process runs' rows and appends the others'. */
  FILE* csv = NULL;
  if (o->csv != NULL && (csv = open_csv(o->csv)) == NULL) return 1;

  /* In this process: OneDevice, then Mirrored over 4 logical CPU devices. */
  for (int k = 0; k < 2; ++k) {
    const strategy_kind_t kind = k == 0 ? ONE_DEVICE : MIRRORED;
    const int32_t replicas = kind == ONE_DEVICE ? 1 : o->replicas;
    char title[128];
    snprintf(title, sizeof title, "%s, %d replica%s", kKindTitle[kind], replicas,
             replicas == 1 ? "" : "s");
    print_header(title);
    dist_strategy_t* strategy = create_strategy(kind, replicas);
    options_t mine = *o;
    mine.save = saved[k];
    mine.kind = kind;
    mine.csv_file = csv;
    results[k] = train(strategy, &data, &mine, 1, 1);
    dist_strategy_destroy(strategy);
    dist_strategy_t* fresh = create_strategy(kind, replicas);
    results[k].restored = restore_and_evaluate(fresh, saved[k], &data, &mine, NULL);
    results[k].have_restored = 1;
    dist_strategy_destroy(fresh);
    print_restored(saved[k], kind, results[k].test, results[k].restored);
    have[k] = 1;
  }

  /* Two processes of two replicas each, started by distrun (with two ps tasks for the
   * parameter-server run); the chief saves and reports. */
  for (int k = MULTI_WORKER; k <= COORDINATOR; ++k) {
    print_header(k == MULTI_WORKER       ? "MultiWorkerMirroredStrategy, 2 workers x 2 replicas"
                 : k == PARAMETER_SERVER ? "ParameterServerStrategy, 2 workers x 2 replicas, 2 ps tasks"
                                         : "ClusterCoordinator over ParameterServerStrategy: the chief "
                                           "schedules, 2 workers x 2 replicas, 2 ps tasks");
    const int status = spawn_distributed((strategy_kind_t)k, o, distrun, data_dir, saved[k],
                                         report_paths[k], csv != NULL ? csv_paths[k] : NULL);
    if (status != 0) {
      fprintf(stderr, "train_mlp: the %s run failed (distrun exit status %d)\n", kKindFlag[k],
              status);
      failed = 1;
      continue;
    }
    if (read_report(report_paths[k], &workers[k], &results[k]) != 0) {
      fprintf(stderr, "train_mlp: the %s run left no report in %s\n", kKindFlag[k],
              report_paths[k]);
      failed = 1;
      continue;
    }
    if (csv != NULL && append_csv(csv, csv_paths[k]) != 0) failed = 1;
    /* Its weights, from the chief's checkpoint, for the comparison below; evaluated again
     * here (the table checks the accuracy is the one the chief reported). A
     * parameter-server report counts one worker's replicas, a multi-worker one all. */
    const int32_t per_worker = k == PARAMETER_SERVER || k == COORDINATOR ? results[k].replicas
                                                     : results[k].replicas / workers[k];
    dist_strategy_t* fresh = create_strategy(MIRRORED, per_worker);
    results[k].restored = restore_and_evaluate(fresh, saved[k], &data, o, results[k].params);
    results[k].have_restored = 1;
    results[k].replicas = per_worker; /* from here on: per worker */
    dist_strategy_destroy(fresh);
    have[k] = 1;
  }

  printf("\n%-15s %8s %11s %12s %11s %24s\n", "strategy", "replicas", "train loss", "held-out acc",
         "examples/s", "max |w - w(OneDevice)|");
  for (int k = 0; k < RUNS; ++k) {
    if (!have[k]) continue;
    char replicas[32];
    if (k == MULTI_WORKER || k == PARAMETER_SERVER || k == COORDINATOR) {
      snprintf(replicas, sizeof replicas, "%dx%d", workers[k], results[k].replicas);
    } else {
      snprintf(replicas, sizeof replicas, "%d", results[k].replicas);
    }
    const double diff = k == 0 ? 0.0 : max_abs_diff(shape, results[k].params, results[0].params);
    char diff_text[32];
    if (k == 0) {
      snprintf(diff_text, sizeof diff_text, "(reference)");
    } else {
      snprintf(diff_text, sizeof diff_text, diff == 0 ? "0 (bit-identical)" : "%.2g", diff);
    }
    printf("%-15s %8s %11.4f %12.4f %11.0f %24s\n", kKindName[k], replicas, results[k].train.loss,
           results[k].test.accuracy, results[k].examples_per_sec, diff_text);
    if (results[k].restored.accuracy != results[k].test.accuracy) {
      fprintf(stderr, "train_mlp: %s: the restored variables give accuracy %.4f, trained %.4f\n",
              kKindName[k], results[k].restored.accuracy, results[k].test.accuracy);
      failed = 1;
    }
    if (o->check_accuracy >= 0 && results[k].test.accuracy < o->check_accuracy) {
      fprintf(stderr, "train_mlp: %s: held-out accuracy %.4f is below --check-accuracy %g\n",
              kKindName[k], results[k].test.accuracy, o->check_accuracy);
      failed = 1;
    }
    if (k == PARAMETER_SERVER || k == COORDINATOR) {
      if (have[ONE_DEVICE] && !(results[k].test.accuracy >=
                                results[ONE_DEVICE].test.accuracy - kPsAccuracyTolerance)) {
        fprintf(stderr,
                "train_mlp: %s: held-out accuracy %.4f is more than %g below OneDevice's %.4f\n",
                kKindName[k], results[k].test.accuracy, kPsAccuracyTolerance,
                results[ONE_DEVICE].test.accuracy);
        failed = 1;
      }
    } else if (o->check_agreement >= 0 && !(diff <= o->check_agreement)) {
      fprintf(stderr,
              "train_mlp: %s: weights differ from OneDevice's by %.3g, more than "
              "--check-agreement %g\n",
              kKindName[k], diff, o->check_agreement);
      failed = 1;
    }
  }
  if (have[PARAMETER_SERVER]) {
    printf(
        "\nParameterServer is not bit-identical to the others: its two workers update the\n"
        "variables on the ps tasks asynchronously, each with its own half of every global\n"
        "batch, and the order in which their updates arrive varies from run to run. Its\n"
        "held-out accuracy is checked to be at least OneDevice's minus %g; its train loss and\n"
        "examples/s are the chief's own (its half of the data).\n",
        kPsAccuracyTolerance);
  }
  if (have[COORDINATOR]) {
    printf(
        "Coordinator is TF 2's parameter-server training: the chief schedules every step on\n"
        "whichever worker is free, the workers update the ps tasks asynchronously, and the\n"
        "chief checkpoints after every epoch. Its accuracy is checked as ParameterServer's;\n"
        "its loss and examples/s cover both workers' steps.\n");
  }
  for (int k = 0; k < RUNS; ++k) free_params(results[k].params);
  if (close_csv(csv, o->csv) != 0) failed = 1;

  return failed;
}

int main(int argc, char** argv) {
  options_t o;
  const int bad = parse_options(argc, argv, &o);
  if (bad) return bad;
  if (o.make_data != NULL) return make_data(o.make_data, o.quick, o.seed) == 0 ? 0 : 1;
  if (o.all) return run_all(&o);
  if (o.kind == COORDINATOR && getenv("TF_CONFIG") == NULL) {
    return usage_error("%s", "--strategy coordinator needs a cluster: run it under distrun -n 3 --ps 2 --coordinator");
  }
  if (o.kind == COORDINATOR) coordinated_register(&o);
  if (o.kind == PARAMETER_SERVER || o.kind == COORDINATOR) {
    /* A ps task of the job only serves the variables: it needs no data. */
    const int served = ps_serve_if_ps_task();
    if (served >= 0) return served;
  }

  data_t data;
  const char* data_dir = o.data_dir;
  if (data_dir == NULL) {
    /* Generated into a private directory (each distrun rank draws the same images). */
    if ((data_dir = make_temp_dir()) == NULL || make_data(data_dir, o.quick, o.seed) != 0) return 1;
  }
  const int status = open_data(data_dir, &data);
  if (status != 0) return status;
  if (o.kind == COORDINATOR) {
    g_coordinated.data = data;
    const int served = coordinated_serve_unless_chief();
    if (served >= 0) return served;
  }
  return run_single(&o, &data);
}
