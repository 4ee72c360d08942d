// The GPU-replica half of GpuRuntime: streams, reductions and NCCL communicators, each a
// call through the plugin's table that turns the plugin's message into a Status.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "core/device/gpu_runtime.h"
#include "core/util/status_macros.h"

namespace distribute {
namespace {

constexpr size_t kErrLen = 512;

// The plugin's messages name the CUDA or NCCL call and the device; `what` says which of
// ours it was.
absl::Status PluginError(absl::string_view what, const char* err) {
  return absl::InternalError(absl::StrCat(what, " failed: ", err[0] ? err : "no message"));
}

}  // namespace

absl::Status GpuRuntime::CheckReplicaSupport() const {
  if (device_count_ == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("GPU replicas are not available: ", unavailable_reason_));
  }
  if (!has_replica_entries_) {
    return absl::FailedPreconditionError(
        "GPU replicas are not available: the CUDA plugin predates streams and NCCL "
        "collectives (rebuild libdistribute_cuda.so.0 with this libdistribute)");
  }
  return absl::OkStatus();
}

absl::StatusOr<void*> GpuRuntime::CreateStream(int32_t device) const {
  RETURN_IF_ERROR(CheckReplicaSupport());
  char err[kErrLen] = "";
  void* stream = nullptr;
  if (plugin_->stream_create(device, &stream, err, sizeof err) != 0) {
    return PluginError(absl::StrCat("creating a stream on GPU:", device), err);
  }
  return stream;
}

void GpuRuntime::DestroyStream(int32_t device, void* stream) const {
  if (has_replica_entries_ && stream != nullptr) plugin_->stream_destroy(device, stream);
}

absl::StatusOr<bool> GpuRuntime::StreamDone(int32_t device, void* stream) const {
  RETURN_IF_ERROR(CheckReplicaSupport());
  char err[kErrLen] = "";
  const int rc = plugin_->stream_query(device, stream, err, sizeof err);
  if (rc < 0) return PluginError(absl::StrCat("work queued on GPU:", device), err);
  return rc == 0;
}

absl::Status GpuRuntime::CopyAsync(int32_t dst_device, void* dst, int32_t src_device,
                                   const void* src, size_t bytes, int32_t stream_device,
                                   void* stream) const {
  RETURN_IF_ERROR(CheckReplicaSupport());
  if (bytes == 0) return absl::OkStatus();
  char err[kErrLen] = "";
  if (plugin_->copy_async(dst_device, dst, src_device, src, bytes, stream_device, stream, err,
                          sizeof err) != 0) {
    return PluginError(absl::StrCat("queuing a copy of ", bytes, " bytes on GPU:", stream_device), err);
  }
  return absl::OkStatus();
}

absl::StatusOr<void*> GpuRuntime::AllocatePinned(size_t bytes) const {
  RETURN_IF_ERROR(CheckReplicaSupport());
  char err[kErrLen] = "";
  void* ptr = nullptr;
  if (plugin_->host_allocate_pinned(bytes, &ptr, err, sizeof err) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrCat("allocating ", bytes, " bytes of page-locked host memory failed: ", err));
  }
  return ptr;
}

void GpuRuntime::ReleasePinned(void* ptr) const {
  if (has_replica_entries_ && ptr != nullptr) plugin_->host_release_pinned(ptr);
}

absl::Status GpuRuntime::Reduce(int32_t device, void* stream, int32_t dtype, int32_t op,
                                const void* const* inputs, int32_t num_inputs, void* output,
                                size_t count, int64_t divisor) const {
  RETURN_IF_ERROR(CheckReplicaSupport());
  if (count == 0) return absl::OkStatus();
  char err[kErrLen] = "";
  if (plugin_->reduce(device, stream, dtype, op, inputs, num_inputs, output, count, divisor, err,
                      sizeof err) != 0) {
    return PluginError(absl::StrCat("queuing a reduction of ", num_inputs, " inputs on GPU:", device), err);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> GpuRuntime::EnablePeerAccess(int32_t device, int32_t peer) const {
  RETURN_IF_ERROR(CheckReplicaSupport());
  char err[kErrLen] = "";
  int32_t enabled = 0;
  if (plugin_->enable_peer_access(device, peer, &enabled, err, sizeof err) != 0) {
    return PluginError(absl::StrCat("enabling GPU:", device, " to read GPU:", peer), err);
  }
  return enabled != 0;
}

absl::StatusOr<GpuRuntime::UniqueId> GpuRuntime::NewUniqueId() const {
  RETURN_IF_ERROR(CheckReplicaSupport());
  char err[kErrLen] = "";
  UniqueId id{};
  if (plugin_->comm_unique_id(id.data(), err, sizeof err) != 0) {
    return PluginError("making an NCCL unique id", err);
  }
  return id;
}

absl::StatusOr<std::vector<void*>> GpuRuntime::InitCommunicators(
    std::span<const int32_t> devices) const {
  RETURN_IF_ERROR(CheckReplicaSupport());
  char err[kErrLen] = "";
  std::vector<void*> comms(devices.size(), nullptr);
  if (plugin_->comm_init_all(static_cast<int32_t>(devices.size()), devices.data(), comms.data(),
                             err, sizeof err) != 0) {
    return PluginError(absl::StrCat("creating NCCL communicators for ", devices.size(), " GPUs"), err);
  }
  return comms;
}

absl::StatusOr<void*> GpuRuntime::InitCommunicatorRank(int32_t device, int32_t nranks,
                                                       const UniqueId& id, int32_t rank) const {
  RETURN_IF_ERROR(CheckReplicaSupport());
  char err[kErrLen] = "";
  void* comm = nullptr;
  if (plugin_->comm_init_rank(device, nranks, id.data(), rank, &comm, err, sizeof err) != 0) {
    return PluginError(absl::StrCat("creating NCCL rank ", rank, " of ", nranks, " on GPU:", device), err);
  }
  return comm;
}

absl::StatusOr<bool> GpuRuntime::CommunicatorReady(void* comm) const {
  char err[kErrLen] = "";
  const int rc = plugin_->comm_status(comm, err, sizeof err);
  if (rc < 0) return PluginError("the NCCL communicator", err);
  return rc == 0;
}

void GpuRuntime::AbortCommunicator(void* comm) const {
  if (comm != nullptr) plugin_->comm_abort(comm);
}

void GpuRuntime::DestroyCommunicator(void* comm) const {
  if (comm != nullptr) plugin_->comm_destroy(comm);
}

absl::Status GpuRuntime::AllReduce(void* comm, void* stream, const void* send, void* recv,
                                   size_t count, int32_t dtype, int32_t op) const {
  char err[kErrLen] = "";
  if (plugin_->all_reduce(comm, stream, send, recv, count, dtype, op, err, sizeof err) != 0) {
    return PluginError(absl::StrCat("queuing an NCCL all-reduce of ", count, " elements"), err);
  }
  return absl::OkStatus();
}

absl::Status GpuRuntime::AllGather(void* comm, void* stream, const void* send, void* recv,
                                   size_t bytes) const {
  char err[kErrLen] = "";
  if (plugin_->all_gather(comm, stream, send, recv, bytes, err, sizeof err) != 0) {
    return PluginError(absl::StrCat("queuing an NCCL all-gather of ", bytes, " bytes"), err);
  }
  return absl::OkStatus();
}

absl::Status GpuRuntime::Broadcast(void* comm, void* stream, const void* send, void* recv,
                                   size_t bytes, int32_t root) const {
  char err[kErrLen] = "";
  if (plugin_->broadcast(comm, stream, send, recv, bytes, root, err, sizeof err) != 0) {
    return PluginError(absl::StrCat("queuing an NCCL broadcast of ", bytes, " bytes"), err);
  }
  return absl::OkStatus();
}

}  // namespace distribute
