/* The downstream program of the find_package packaging test: links distribute::distribute,
 * checks the header/library version, creates a tensor and reads it back.
 * Prints "cmake consumer OK: distribute <version>". */
#include <stdio.h>
#include <string.h>

#include <distribute/distribute.h>

int main(void) {
  if (strcmp(dist_version(), DIST_VERSION_STRING) != 0) {
    fprintf(stderr, "header version %s, library version %s\n", DIST_VERSION_STRING,
            dist_version());
    return 1;
  }
  const int32_t values[4] = {7, -1, 0, 42};
  const int64_t shape[1] = {4};
  dist_value_t* tensor = NULL;
  dist_status_t status =
      dist_tensor_create(DIST_INT32, shape, 1, values, sizeof values, "CPU:0", &tensor);
  if (status != DIST_OK) {
    fprintf(stderr, "dist_tensor_create: %s: %s\n", dist_status_name(status),
            dist_last_error_message());
    return 1;
  }
  void* data = NULL;
  int64_t count = 0;
  int ok = dist_tensor_data(tensor, &data) == DIST_OK &&
           dist_tensor_num_elements(tensor, &count) == DIST_OK && count == 4 && data != NULL &&
           memcmp(data, values, sizeof values) == 0;
  dist_value_destroy(tensor);
  if (!ok) {
    fprintf(stderr, "the tensor does not hold the values it was created from\n");
    return 1;
  }
  printf("cmake consumer OK: distribute %s\n", dist_version());
  return 0;
}
