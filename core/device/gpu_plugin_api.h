/* The ABI between libdistribute and its CUDA plugin (libdistribute_cuda.so.0).
 *
 * Internal: not installed, not part of the public API. The core loads the plugin with
 * dlopen on the first use of GPU devices and calls dist_gpu_plugin_get(), which returns
 * a static table. The table only grows at the end; struct_size tells the core which
 * entries exist. Every function returns 0 on success and otherwise writes a
 * NUL-terminated message into err (err_len bytes, err_len > 0). Device -1 means host
 * memory in dist_gpu_memcpy. */
#ifndef DISTRIBUTE_CORE_DEVICE_GPU_PLUGIN_API_H_
#define DISTRIBUTE_CORE_DEVICE_GPU_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DIST_GPU_PLUGIN_ABI_VERSION 1
#define DIST_GPU_PLUGIN_ENTRY "dist_gpu_plugin_get"
#define DIST_GPU_HOST_DEVICE (-1)

typedef struct dist_gpu_plugin_v1 {
  size_t struct_size;
  int32_t abi_version;
  /* Number of usable GPUs; 0 with a message when there is no driver or no device. */
  int (*device_count)(int32_t* out_count, char* err, size_t err_len);
  int (*allocate)(int32_t device, size_t bytes, void** out_ptr, char* err, size_t err_len);
  /* Never fails from the caller's point of view; errors are ignored. */
  void (*release)(int32_t device, void* ptr);
  int (*copy)(int32_t dst_device, void* dst, int32_t src_device, const void* src, size_t bytes,
              char* err, size_t err_len);
  int (*zero)(int32_t device, void* ptr, size_t bytes, char* err, size_t err_len);
} dist_gpu_plugin_v1;

typedef const dist_gpu_plugin_v1* (*dist_gpu_plugin_get_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* DISTRIBUTE_CORE_DEVICE_GPU_PLUGIN_API_H_ */
