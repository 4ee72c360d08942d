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
#define DIST_GPU_UNIQUE_ID_BYTES 128
/* The most inputs one `reduce` call takes (one per GPU of a machine). */
#define DIST_GPU_REDUCE_MAX_INPUTS 16

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

  /* ---- GPU replicas (present when struct_size covers them) ----------------------------
   * Streams are ordered queues of work on one device (cudaStream_t, non-blocking). Work is
   * queued by the calls below and finishes later; stream_query tells when. Pointers are
   * device pointers from `allocate` (or pinned host memory where a call says so).
   * dtype is a DIST_* dtype number (TF's DataType), op a dist reduce op number:
   * 1 SUM, 3 MIN, 4 MAX, 5 PRODUCT (MEAN is SUM followed by `divisor`). */
  int (*stream_create)(int32_t device, void** out_stream, char* err, size_t err_len);
  void (*stream_destroy)(int32_t device, void* stream);
  /* 0: everything queued so far has finished; 1: still running; -1: an operation failed
   * (message in err; the stream is unusable). Never blocks. A collective stuck on a lost
   * peer reads 1 forever: the caller polls comm_status and aborts at its deadline. */
  int (*stream_query)(int32_t device, void* stream, char* err, size_t err_len);
  /* Queues a copy on `stream` (of device `stream_device`); the rules of `copy`. */
  int (*copy_async)(int32_t dst_device, void* dst, int32_t src_device, const void* src,
                    size_t bytes, int32_t stream_device, void* stream, char* err, size_t err_len);
  /* Page-locked host memory, so that copies to and from devices run asynchronously. */
  int (*host_allocate_pinned)(size_t bytes, void** out_ptr, char* err, size_t err_len);
  void (*host_release_pinned)(void* ptr);
  /* Queues output[i] = inputs[0][i] op inputs[1][i] op ... for i < count, on `stream` of
   * `device`, combined in the CPU kernels' order (a binary tree splitting after the first
   * ceil(n/2) inputs), so results are bit-identical to theirs; at most
   * DIST_GPU_REDUCE_MAX_INPUTS inputs. With divisor > 1 the
   * result is divided by it (true division: floats only). 16-bit floats accumulate in
   * float32. Every input must be readable from `device`: its own memory, or a peer's
   * after enable_peer_access. `output` may alias inputs[0]. */
  int (*reduce)(int32_t device, void* stream, int32_t dtype, int32_t op,
                const void* const* inputs, int32_t num_inputs, void* output, size_t count,
                int64_t divisor, char* err, size_t err_len);
  /* Lets `device` read `peer`'s memory; *out_enabled is 0 where the hardware cannot. */
  int (*enable_peer_access)(int32_t device, int32_t peer, int32_t* out_enabled, char* err,
                            size_t err_len);

  /* ---- NCCL communicators: one per device; each used by one thread at a time. ---------
   * Handles are the plugin's own (not ncclComm_t). There is no group call: the ranks of
   * comm_init_all must each be driven from their own thread, as the core does. */
  /* The id every rank of a multi-process communicator is created with (ncclUniqueId). */
  int (*comm_unique_id)(uint8_t out_id[DIST_GPU_UNIQUE_ID_BYTES], char* err, size_t err_len);
  /* One communicator per entry of devices[count], all in this process (ncclCommInitAll);
   * out_comms[i] is devices[i]'s, rank i. */
  int (*comm_init_all)(int32_t count, const int32_t* devices, void** out_comms, char* err,
                       size_t err_len);
  /* Rank `rank` of `nranks` on `device`, the ranks in any processes that share `id`. Starts
   * the creation without blocking: comm_status reports 1 until it has finished. */
  int (*comm_init_rank)(int32_t device, int32_t nranks, const uint8_t id[DIST_GPU_UNIQUE_ID_BYTES],
                        int32_t rank, void** out_comm, char* err, size_t err_len);
  /* 0: usable; 1: still being created; -1: failed, asynchronously (message in err). */
  int (*comm_status)(void* comm, char* err, size_t err_len);
  /* Stops every operation queued on the communicator (ncclCommAbort) and frees it: what a
   * deadline or a lost peer does. Frees the communicator either way. */
  void (*comm_abort)(void* comm);
  void (*comm_destroy)(void* comm);
  /* Queues collectives on `stream`, the stream of the communicator's device. NCCL's dtypes
   * only (int8, uint8, int32, int64, float16, bfloat16, float32, float64): others fail. */
  int (*all_reduce)(void* comm, void* stream, const void* send, void* recv, size_t count,
                    int32_t dtype, int32_t op, char* err, size_t err_len);
  /* recv holds every rank's `bytes`, in rank order. */
  int (*all_gather)(void* comm, void* stream, const void* send, void* recv, size_t bytes,
                    char* err, size_t err_len);
  /* recv (on every rank) takes rank `root`'s send. */
  int (*broadcast)(void* comm, void* stream, const void* send, void* recv, size_t bytes,
                   int32_t root, char* err, size_t err_len);

  /* ---- Variable updates (present when struct_size covers them) ------------------------
   * Queues output[i] = a[i] - b[i] for i < count on `stream` of `device` (NULL: the
   * device's default stream), with the CPU kernels' arithmetic (integers wrap, 16-bit
   * floats in float32), so results are bit-identical to theirs; not bool. `output` may
   * alias `a`. (Addition is `reduce` with SUM of two inputs.) */
  int (*difference)(int32_t device, void* stream, int32_t dtype, const void* a, const void* b,
                    void* output, size_t count, char* err, size_t err_len);
} dist_gpu_plugin_v1;

/* The table's size before the GPU-replica entries: a plugin this small has none of them. */
/* ... and with them but before the variable updates. */
#define DIST_GPU_PLUGIN_V1_REPLICA_SIZE (offsetof(dist_gpu_plugin_v1, difference))
#define DIST_GPU_PLUGIN_V1_BASE_SIZE (offsetof(dist_gpu_plugin_v1, stream_create))

typedef const dist_gpu_plugin_v1* (*dist_gpu_plugin_get_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* DISTRIBUTE_CORE_DEVICE_GPU_PLUGIN_API_H_ */
