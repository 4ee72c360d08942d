/* The first example: list this process's devices, create a tensor on each logical CPU
 * device (one copied from host memory, one borrowing it), move it between devices and
 * print it. Every call's status is checked, as a real program should. */
#include <stdio.h>
#include <stdlib.h>

#include "distribute/distribute.h"

#define CHECK(call)                                                                   \
  do {                                                                                \
    dist_status_t status_ = (call);                                                   \
    if (status_ != DIST_OK) {                                                         \
      fprintf(stderr, "%s failed: %s: %s\n", #call, dist_status_name(status_),       \
              dist_last_error_message());                                             \
      exit(1);                                                                        \
    }                                                                                 \
  } while (0)

static void print_tensor(const dist_value_t* tensor) {
  int64_t dims[DIST_MAX_RANK];
  int32_t rank = 0;
  dist_dtype_t dtype = 0;
  const char* device = NULL;
  void* data = NULL;
  int64_t count = 0;
  CHECK(dist_tensor_rank(tensor, &rank));
  CHECK(dist_tensor_shape(tensor, dims, DIST_MAX_RANK));
  CHECK(dist_tensor_dtype(tensor, &dtype));
  CHECK(dist_tensor_device(tensor, &device));
  CHECK(dist_tensor_num_elements(tensor, &count));
  CHECK(dist_tensor_data(tensor, &data));
  printf("  %-15s %-8s shape [", device, dist_dtype_name(dtype));
  for (int32_t i = 0; i < rank; ++i) printf(i ? ", %lld" : "%lld", (long long)dims[i]);
  printf("] = [");
  for (int64_t i = 0; i < count; ++i) printf(i ? ", %g" : "%g", ((const float*)data)[i]);
  printf("]\n");
}

static void on_release(void* data, void* user_data) {
  (void)data;
  printf("  (borrowed buffer released: %s)\n", (const char*)user_data);
}

int main(void) {
  printf("distribute %s\n\n", dist_version());

  CHECK(dist_set_logical_cpu_device_count(4));
  int32_t count = 0;
  CHECK(dist_local_device_count(&count));
  printf("local devices (%d):\n", count);
  for (int32_t i = 0; i < count; ++i) {
    dist_device_t* device = NULL;
    const char* name = NULL;
    CHECK(dist_local_device_get(i, &device));
    CHECK(dist_device_name(device, &name));
    printf("  %s\n", name);
    dist_device_destroy(device);
  }
  const char* gpu_reason = NULL;
  CHECK(dist_gpu_unavailable_reason(&gpu_reason));
  if (gpu_reason[0] != '\0') printf("  no GPU: %s\n", gpu_reason);

  printf("\none tensor per logical CPU device:\n");
  const int64_t shape[2] = {2, 3};
  for (int32_t replica = 0; replica < 4; ++replica) {
    float host[6];
    for (int i = 0; i < 6; ++i) host[i] = (float)(replica * 10 + i);
    char device[16];
    snprintf(device, sizeof device, "CPU:%d", replica);
    dist_value_t* tensor = NULL;
    CHECK(dist_tensor_create(DIST_FLOAT32, shape, 2, host, sizeof host, device, &tensor));
    print_tensor(tensor);
    dist_value_destroy(tensor);
  }

  printf("\na borrowed buffer, copied to another device:\n");
  static float shared[3] = {1.5f, 2.5f, 3.5f};
  const int64_t vector_shape[1] = {3};
  dist_value_t* borrowed = NULL;
  dist_value_t* copy = NULL;
  CHECK(dist_tensor_wrap(DIST_FLOAT32, vector_shape, 1, shared, sizeof shared, "CPU:0",
                         on_release, "shared", &borrowed));
  CHECK(dist_tensor_copy_to_device(borrowed, "/job:localhost/replica:0/task:0/device:CPU:3", &copy));
  print_tensor(borrowed);
  print_tensor(copy);
  dist_value_destroy(borrowed);
  dist_value_destroy(copy);

  printf("\nwhat a mistake looks like:\n");
  dist_value_t* bad = NULL;
  const int64_t bad_shape[1] = {-3};
  dist_status_t status = dist_tensor_create(DIST_FLOAT32, bad_shape, 1, NULL, 0, "CPU:0", &bad);
  printf("  %s: %s\n", dist_status_name(status), dist_last_error_message());
  status = dist_tensor_create(DIST_FLOAT32, shape, 2, NULL, 0, "TPU:0", &bad);
  printf("  %s: %s\n", dist_status_name(status), dist_last_error_message());
  return 0;
}
