// The functions behind dist_gpu_plugin_v1's entries (core/device/gpu_plugin_api.h has
// their contracts), grouped by the file that defines them. plugin.cc puts them in the table.
#ifndef DISTRIBUTE_CORE_CUDA_PLUGIN_ENTRIES_H_
#define DISTRIBUTE_CORE_CUDA_PLUGIN_ENTRIES_H_

#include <cstddef>
#include <cstdint>

namespace distribute::gpu_plugin {

// devices.cc
int DeviceCount(int32_t* out_count, char* err, size_t err_len);
int EnablePeerAccess(int32_t device, int32_t peer, int32_t* out_enabled, char* err, size_t err_len);

// memory.cc
int Allocate(int32_t device, size_t bytes, void** out_ptr, char* err, size_t err_len);
void Release(int32_t device, void* ptr);
int Copy(int32_t dst_device, void* dst, int32_t src_device, const void* src, size_t bytes,
         char* err, size_t err_len);
int Zero(int32_t device, void* ptr, size_t bytes, char* err, size_t err_len);
int CopyAsync(int32_t dst_device, void* dst, int32_t src_device, const void* src, size_t bytes,
              int32_t stream_device, void* stream, char* err, size_t err_len);
int HostAllocatePinned(size_t bytes, void** out_ptr, char* err, size_t err_len);
void HostReleasePinned(void* ptr);

// streams.cc
int StreamCreate(int32_t device, void** out_stream, char* err, size_t err_len);
void StreamDestroy(int32_t device, void* stream);
int StreamQuery(int32_t device, void* stream, char* err, size_t err_len);

// reduce_kernels.cu
int Reduce(int32_t device, void* stream, int32_t dtype, int32_t op, const void* const* inputs,
           int32_t num_inputs, void* output, size_t count, int64_t divisor, char* err,
           size_t err_len);
int Difference(int32_t device, void* stream, int32_t dtype, const void* a, const void* b, void* output,
               size_t count, char* err, size_t err_len);

// nccl_comms.cc
int CommUniqueId(uint8_t* out_id, char* err, size_t err_len);
int CommInitAll(int32_t count, const int32_t* devices, void** out_comms, char* err, size_t err_len);
int CommInitRank(int32_t device, int32_t nranks, const uint8_t* id, int32_t rank, void** out_comm,
                 char* err, size_t err_len);
int CommStatus(void* comm, char* err, size_t err_len);
void CommAbort(void* comm);
void CommDestroy(void* comm);

// nccl_collectives.cc
int AllReduce(void* comm, void* stream, const void* send, void* recv, size_t count, int32_t dtype,
              int32_t op, char* err, size_t err_len);
int AllGather(void* comm, void* stream, const void* send, void* recv, size_t bytes, char* err,
              size_t err_len);
int Broadcast(void* comm, void* stream, const void* send, void* recv, size_t bytes, int32_t root,
              char* err, size_t err_len);

}  // namespace distribute::gpu_plugin

#endif  // DISTRIBUTE_CORE_CUDA_PLUGIN_ENTRIES_H_
