/* Loads libdistribute at run time, as a plugin host or a language runtime (Python ctypes,
 * JNA, Go purego, ...) would: the headers are used for the typedefs and constants only and
 * the program does not link libdistribute (the packaging test checks it has no DT_NEEDED
 * on it). Usage: dlopen_test <path or SONAME of libdistribute>.
 * Resolves dist_version, dist_version_number, dist_status_name, dist_last_error_message,
 * dist_tensor_create, dist_tensor_data and dist_value_destroy with dlsym, creates a tensor,
 * provokes an error, reads its message, and dlcloses the library. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "distribute/distribute.h"

/* Function pointer types spelled out from the prototypes in the headers. */
typedef const char* (*version_fn)(void);
typedef int32_t (*version_number_fn)(void);
typedef const char* (*status_name_fn)(dist_status_t);
typedef const char* (*last_error_message_fn)(void);
typedef dist_status_t (*tensor_create_fn)(dist_dtype_t, const int64_t*, int32_t, const void*,
                                          size_t, const char*, dist_value_t**);
typedef dist_status_t (*tensor_data_fn)(const dist_value_t*, void**);
typedef void (*value_destroy_fn)(dist_value_t*);

/* Compile-time check that each type matches its prototype: comparing pointers to different
 * function types is a constraint violation (an error with -pedantic-errors). sizeof does not
 * evaluate its operand, so no reference to the symbol is emitted and nothing is linked. */
#define CHECK_TYPE(fn_type, fn) (void)sizeof((fn_type)0 == &fn)

static int failures = 0;

#define EXPECT(cond)                                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "dlopen_test: %s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                                      \
    }                                                                                  \
  } while (0)

/* dlsym returns void*; converting it to a function pointer is what POSIX guarantees but
 * ISO C does not, so go through memcpy to stay -pedantic clean. */
static int resolve(void* handle, const char* name, void* out_fn, size_t fn_size) {
  dlerror();
  void* symbol = dlsym(handle, name);
  const char* error = dlerror();
  if (symbol == NULL || error != NULL) {
    fprintf(stderr, "dlopen_test: dlsym(%s) failed: %s\n", name, error ? error : "NULL");
    return 0;
  }
  memcpy(out_fn, &symbol, fn_size);
  return 1;
}

#define RESOLVE(handle, name, var) resolve((handle), (name), &(var), sizeof(var))

int main(int argc, char** argv) {
  CHECK_TYPE(version_fn, dist_version);
  CHECK_TYPE(version_number_fn, dist_version_number);
  CHECK_TYPE(status_name_fn, dist_status_name);
  CHECK_TYPE(last_error_message_fn, dist_last_error_message);
  CHECK_TYPE(tensor_create_fn, dist_tensor_create);
  CHECK_TYPE(tensor_data_fn, dist_tensor_data);
  CHECK_TYPE(value_destroy_fn, dist_value_destroy);

  if (argc != 2) {
    fprintf(stderr, "usage: %s <libdistribute path or SONAME>\n", argv[0]);
    return 2;
  }
  const char* library = argv[1];

  void* handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    fprintf(stderr, "dlopen_test: dlopen(%s) failed: %s\n", library, dlerror());
    return 1;
  }

  version_fn version = NULL;
  version_number_fn version_number = NULL;
  status_name_fn status_name = NULL;
  last_error_message_fn last_error_message = NULL;
  tensor_create_fn tensor_create = NULL;
  tensor_data_fn tensor_data = NULL;
  value_destroy_fn value_destroy = NULL;
  if (!RESOLVE(handle, "dist_version", version) ||
      !RESOLVE(handle, "dist_version_number", version_number) ||
      !RESOLVE(handle, "dist_status_name", status_name) ||
      !RESOLVE(handle, "dist_last_error_message", last_error_message) ||
      !RESOLVE(handle, "dist_tensor_create", tensor_create) ||
      !RESOLVE(handle, "dist_tensor_data", tensor_data) ||
      !RESOLVE(handle, "dist_value_destroy", value_destroy)) {
    dlclose(handle);
    return 1;
  }

  /* A symbol that is not part of the C API must not resolve. */
  dlerror();
  EXPECT(dlsym(handle, "dist_no_such_function") == NULL);
  dlerror();

  const char* v = version();
  EXPECT(v != NULL && strcmp(v, DIST_VERSION_STRING) == 0);
  EXPECT(version_number() == DIST_VERSION_NUMBER);
  EXPECT(strcmp(status_name(DIST_OK), "OK") == 0);
  EXPECT(strcmp(status_name(DIST_INVALID_ARGUMENT), "INVALID_ARGUMENT") == 0);
  EXPECT(strcmp(status_name(-12345), "UNKNOWN_STATUS_CODE") == 0);

  /* Success: a float64 vector, read back. */
  const double values[3] = {0.5, -1.25, 3.0};
  const int64_t shape[1] = {3};
  dist_value_t* tensor = NULL;
  EXPECT(tensor_create(DIST_FLOAT64, shape, 1, values, sizeof values, NULL, &tensor) == DIST_OK);
  EXPECT(tensor != NULL);
  EXPECT(strcmp(last_error_message(), "") == 0);
  if (tensor != NULL) {
    void* data = NULL;
    EXPECT(tensor_data(tensor, &data) == DIST_OK);
    EXPECT(data != NULL && memcmp(data, values, sizeof values) == 0);
    value_destroy(tensor);
  }

  /* Failure: an unknown dtype. The status and the message come back through the
   * dlsym'ed functions just as through linked ones. */
  dist_value_t* bad = NULL;
  dist_status_t status = tensor_create(12345, shape, 1, values, sizeof values, NULL, &bad);
  EXPECT(status == DIST_INVALID_ARGUMENT);
  EXPECT(bad == NULL);
  const char* message = last_error_message();
  EXPECT(message != NULL && message[0] != '\0');
  printf("error case: %s: %s\n", status_name(status), message ? message : "(null)");

  printf("dlopen OK: %s -> distribute %s\n", library, v ? v : "(null)");

  if (dlclose(handle) != 0) {
    fprintf(stderr, "dlopen_test: dlclose failed: %s\n", dlerror());
    ++failures;
  }
  /* Informational: glibc keeps a library loaded after dlclose when it defines
   * STB_GNU_UNIQUE symbols (a leak the version script prevents) or when a thread_local
   * with a destructor (the last error message) is alive on a running thread. */
  void* again = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  printf("after dlclose: library %s\n", again ? "still loaded" : "unloaded");
  if (again != NULL) dlclose(again);

  if (failures != 0) {
    fprintf(stderr, "dlopen_test: %d check(s) failed\n", failures);
    return 1;
  }
  return 0;
}
