/* A host that finds libdistribute at run time, as a scripting-language runtime or a game's
 * mod loader does: it does not link the library (only the dynamic loader), uses the
 * headers for types and constants only, checks the library's version against the one it
 * was written for, resolves every function it calls through one table, and runs a
 * Mirrored step. A missing or too old library is a clear message and exit status, never
 * a crash.
 *
 *   plugin_loader [--library PATH] [--require-version MAJOR.MINOR.PATCH]
 *
 * Where the library is found: --library PATH; else the libdir pkg-config gives for
 * "distribute" (PKG_CONFIG_PATH is honoured); else the dynamic loader's search for the
 * SONAME libdistribute.so.0 (LD_LIBRARY_PATH, the ld.so cache).
 * Exit status: 0 on success, 2 for a usage error, 3 when the library cannot be loaded,
 * 4 when it is too old or not libdistribute, 1 when the step fails. */
#define _POSIX_C_SOURCE 200809L /* popen */

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "distribute/distribute.h"

/* The version this host was written against: the same major, this minor or newer. */
#define WRITTEN_FOR_MAJOR 0
#define WRITTEN_FOR_MINOR 1
#define WRITTEN_FOR_PATCH 0

/* Every library function the host calls: name, return type, parameter list. One list
 * makes the table's members, the names to resolve, and the checks of the types against
 * the header's prototypes. */
#define DIST_FUNCTIONS(X)                                                                      \
  X(version, const char*, (void))                                                              \
  X(version_number, int32_t, (void))                                                          \
  X(status_name, const char*, (dist_status_t))                                                 \
  X(last_error_message, const char*, (void))                                                   \
  X(set_logical_cpu_device_count, dist_status_t, (int32_t))                                    \
  X(strategy_create_mirrored, dist_status_t,                                                   \
    (const char* const*, int32_t, const dist_cross_device_ops_t*, dist_strategy_t**))          \
  X(strategy_destroy, void, (dist_strategy_t*))                                                \
  X(strategy_run, dist_status_t,                                                               \
    (dist_strategy_t*, dist_replica_fn, void*, const dist_value_t* const*, int32_t,            \
     dist_value_t**, int32_t))                                                                 \
  X(context_replica_id, dist_status_t, (const dist_context_t*, int32_t*))                      \
  X(context_all_reduce, dist_status_t,                                                         \
    (dist_context_t*, dist_reduce_op_t, const dist_value_t*, dist_value_t**))                  \
  X(tensor_create, dist_status_t,                                                              \
    (dist_dtype_t, const int64_t*, int32_t, const void*, size_t, const char*, dist_value_t**)) \
  X(tensor_scalar_float32, dist_status_t, (const dist_value_t*, float*))                       \
  X(value_destroy, void, (dist_value_t*))

/* The table: one function pointer per entry, named without the dist_ prefix. */
struct dist_api {
#define MEMBER(name, ret, params) ret(*name) params;
  DIST_FUNCTIONS(MEMBER)
#undef MEMBER
};

/* The member types must equal the header's prototypes: comparing pointers to different
 * function types is a constraint violation, an error under -pedantic-errors. sizeof does
 * not evaluate its operand, so nothing refers to the symbols at link time. */
static void check_prototypes(const struct dist_api* api) {
#define CHECK(name, ret, params) (void)sizeof(api->name == &dist_##name);
  DIST_FUNCTIONS(CHECK)
#undef CHECK
  (void)api;
}

static const struct {
  const char* symbol;
  size_t offset;
} kSymbols[] = {
#define ENTRY(name, ret, params) {"dist_" #name, offsetof(struct dist_api, name)},
    DIST_FUNCTIONS(ENTRY)
#undef ENTRY
};

static struct dist_api api;

/* Fills `api` from the loaded library; on a missing symbol, names it. ISO C has no
 * conversion from void* to a function pointer, POSIX guarantees the bytes: memcpy. */
static int resolve_all(void* library, const char* path) {
  size_t i;
  for (i = 0; i < sizeof kSymbols / sizeof kSymbols[0]; ++i) {
    void* symbol;
    dlerror();
    symbol = dlsym(library, kSymbols[i].symbol);
    if (symbol == NULL) {
      const char* why = dlerror();
      fprintf(stderr,
              "plugin_loader: '%s' has no %s (%s): it is not libdistribute, or older than %d.%d.%d\n",
              path, kSymbols[i].symbol, why ? why : "NULL", WRITTEN_FOR_MAJOR, WRITTEN_FOR_MINOR,
              WRITTEN_FOR_PATCH);
      return 0;
    }
    memcpy((char*)&api + kSymbols[i].offset, &symbol, sizeof symbol);
  }
  return 1;
}

/* The libdir pkg-config knows for "distribute", as <libdir>/libdistribute.so.0 in `out`. */
static int path_from_pkg_config(char* out, size_t size) {
  char libdir[4096];
  size_t length;
  FILE* pipe = popen("pkg-config --variable=libdir distribute 2>/dev/null", "r");
  if (pipe == NULL) return 0;
  if (fgets(libdir, sizeof libdir, pipe) == NULL) libdir[0] = '\0';
  if (pclose(pipe) != 0) return 0;
  length = strcspn(libdir, "\r\n");
  libdir[length] = '\0';
  if (length == 0) return 0;
  return snprintf(out, size, "%s/libdistribute.so.%d", libdir, WRITTEN_FOR_MAJOR) < (int)size;
}

static int parse_version(const char* text, int* out) {
  int major, minor, patch;
  char extra;
  if (sscanf(text, "%d.%d.%d%c", &major, &minor, &patch, &extra) != 3) return 0;
  if (major < 0 || minor < 0 || minor > 99 || patch < 0 || patch > 99 || major > 20000) return 0;
  *out = major * 10000 + minor * 100 + patch;
  return 1;
}

/* The step: each replica all-reduces (replica id + 1). */
static dist_status_t replica_step(dist_context_t* context, const dist_value_t* const* args,
                                  int32_t num_args, dist_value_t** results, int32_t num_results,
                                  void* user_data) {
  float* sums = (float*)user_data;
  int32_t id = 0;
  float mine;
  dist_value_t* in = NULL;
  dist_value_t* out = NULL;
  dist_status_t status;
  (void)args;
  (void)num_args;
  (void)results;
  (void)num_results;
  status = api.context_replica_id(context, &id);
  if (status != DIST_OK) return status;
  mine = (float)(id + 1);
  status = api.tensor_create(DIST_FLOAT32, NULL, 0, &mine, sizeof mine, NULL, &in);
  if (status != DIST_OK) return status;
  status = api.context_all_reduce(context, DIST_REDUCE_SUM, in, &out);
  api.value_destroy(in);
  if (status != DIST_OK) return status;
  status = api.tensor_scalar_float32(out, &sums[id]);
  api.value_destroy(out);
  return status;
}

static int fail_step(const char* call, dist_status_t status) {
  fprintf(stderr, "plugin_loader: %s failed: %s: %s\n", call, api.status_name(status),
          api.last_error_message());
  return 1;
}

static int run_mirrored_step(void) {
  const char* devices[] = {"CPU:0", "CPU:1"};
  dist_strategy_t* strategy = NULL;
  float sums[2] = {0, 0};
  dist_status_t status = api.set_logical_cpu_device_count(2);
  if (status != DIST_OK) return fail_step("dist_set_logical_cpu_device_count", status);
  status = api.strategy_create_mirrored(devices, 2, NULL, &strategy);
  if (status != DIST_OK) return fail_step("dist_strategy_create_mirrored", status);
  status = api.strategy_run(strategy, replica_step, sums, NULL, 0, NULL, 0);
  api.strategy_destroy(strategy);
  if (status != DIST_OK) return fail_step("dist_strategy_run", status);
  printf("Mirrored step on 2 replicas: all-reduce SUM of 1 and 2 gives %.1f and %.1f\n",
         (double)sums[0], (double)sums[1]);
  return sums[0] == 3.0f && sums[1] == 3.0f ? 0 : 1;
}

static int usage(const char* why) {
  fprintf(stderr,
          "plugin_loader: %s\nusage: plugin_loader [--library PATH] [--require-version "
          "MAJOR.MINOR.PATCH]\n",
          why);
  return 2;
}

int main(int argc, char** argv) {
  char found[4096];
  const char* path = NULL;
  int required = WRITTEN_FOR_MAJOR * 10000 + WRITTEN_FOR_MINOR * 100 + WRITTEN_FOR_PATCH;
  void* library;
  int32_t runtime;
  int i, result;

  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--library") == 0 && i + 1 < argc) {
      path = argv[++i];
    } else if (strcmp(argv[i], "--require-version") == 0 && i + 1 < argc) {
      if (!parse_version(argv[++i], &required)) return usage("bad --require-version");
    } else {
      return usage("unknown or incomplete argument");
    }
  }
  if (path == NULL) {
    path = path_from_pkg_config(found, sizeof found) ? found : "libdistribute.so.0";
  }

  library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    fprintf(stderr,
            "plugin_loader: cannot load libdistribute from '%s': %s\n"
            "  install it, or pass --library PATH (pkg-config --variable=libdir distribute "
            "says where it is)\n",
            path, dlerror());
    return 3;
  }
  check_prototypes(&api);
  if (!resolve_all(library, path)) {
    dlclose(library);
    return 4;
  }
  runtime = api.version_number();
  if (runtime / 10000 != required / 10000 || runtime < required) {
    fprintf(stderr,
            "plugin_loader: '%s' is libdistribute %s; this program needs %d.%d.%d or newer with "
            "the same major version\n",
            path, api.version(), required / 10000, required / 100 % 100, required % 100);
    dlclose(library);
    return 4;
  }
  printf("loaded libdistribute %s from %s (%u functions resolved)\n", api.version(), path,
         (unsigned)(sizeof kSymbols / sizeof kSymbols[0]));
  result = run_mirrored_step();
  dlclose(library);
  return result;
}
