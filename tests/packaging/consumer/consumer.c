/* A minimal downstream program for the packaging tests: built against an installed (or
 * build-tree) libdistribute found through pkg-config or find_package, it checks that the
 * headers and the library agree on the version, creates a tensor, reads it back and
 * checks one error path. Prints "consumer OK: distribute <version>" and exits 0. */
#include <stdio.h>
#include <string.h>

#include <distribute/distribute.h>

static int failures = 0;

#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "consumer: %s:%d: expected %s (last error: %s)\n",  \
              __FILE__, __LINE__, #cond, dist_last_error_message());      \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

int main(void) {
  const char* version = dist_version();
  EXPECT(version != NULL);
  if (version == NULL) return 1;
  /* The headers the consumer was compiled with must match the library it runs with. */
  EXPECT(strcmp(version, DIST_VERSION_STRING) == 0);
  EXPECT(dist_version_number() == DIST_VERSION_NUMBER);

  const float values[6] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  const int64_t shape[2] = {2, 3};
  dist_value_t* tensor = NULL;
  EXPECT(dist_tensor_create(DIST_FLOAT32, shape, 2, values, sizeof values, NULL, &tensor) ==
         DIST_OK);
  if (tensor == NULL) return 1;

  dist_dtype_t dtype = 0;
  int32_t rank = 0;
  int64_t dims[DIST_MAX_RANK] = {0};
  int64_t count = 0;
  size_t byte_size = 0;
  void* data = NULL;
  EXPECT(dist_tensor_dtype(tensor, &dtype) == DIST_OK && dtype == DIST_FLOAT32);
  EXPECT(dist_tensor_rank(tensor, &rank) == DIST_OK && rank == 2);
  EXPECT(dist_tensor_shape(tensor, dims, DIST_MAX_RANK) == DIST_OK && dims[0] == 2 &&
         dims[1] == 3);
  EXPECT(dist_tensor_num_elements(tensor, &count) == DIST_OK && count == 6);
  EXPECT(dist_tensor_byte_size(tensor, &byte_size) == DIST_OK && byte_size == sizeof values);
  EXPECT(dist_tensor_data(tensor, &data) == DIST_OK && data != NULL);
  if (data != NULL) {
    /* A copy, not the caller's buffer, with the same contents. */
    EXPECT(data != (const void*)values);
    EXPECT(memcmp(data, values, sizeof values) == 0);
  }
  dist_value_destroy(tensor);

  /* An error: the size does not match the shape. */
  dist_value_t* bad = NULL;
  dist_status_t status =
      dist_tensor_create(DIST_FLOAT32, shape, 2, values, sizeof values - 1, NULL, &bad);
  EXPECT(status == DIST_INVALID_ARGUMENT);
  EXPECT(bad == NULL);
  EXPECT(strcmp(dist_status_name(status), "INVALID_ARGUMENT") == 0);
  EXPECT(dist_last_error_message()[0] != '\0');

  if (failures != 0) {
    fprintf(stderr, "consumer: %d check(s) failed\n", failures);
    return 1;
  }
  printf("consumer OK: distribute %s\n", version);
  return 0;
}
