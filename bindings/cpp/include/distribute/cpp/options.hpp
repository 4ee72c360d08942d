// distribute C++ wrapper — configuration handles: Cluster (TF_CONFIG or an explicit
// spec), CommunicationOptions (MultiWorkerMirrored) and CrossDeviceOps (Mirrored).
// Each owns its C handle, is move-only, and destroys it with the object.
#ifndef DISTRIBUTE_CPP_OPTIONS_HPP_
#define DISTRIBUTE_CPP_OPTIONS_HPP_

#include <cstddef>
#include <cstdint>
#include <utility>

#include "distribute/cpp/span.hpp"
#include "distribute/cpp/status.hpp"
#include "distribute/distribute.h"

namespace dist {
namespace detail {

// A move-only owner of a C handle released with `Destroy`.
template <class T, void (*Destroy)(T*)>
class Owned {
 public:
  Owned() = default;
  explicit Owned(T* handle) : handle_(handle) {}
  Owned(Owned&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  Owned& operator=(Owned&& other) noexcept {
    if (this != &other) {
      Destroy(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() { Destroy(handle_); }

  T* get() const { return handle_; }
  T* release() { return std::exchange(handle_, nullptr); }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  T* handle_ = nullptr;
};

// Creates a handle with `create(args..., &out)` and wraps it in W.
template <class W, class T, class Fn, class... Args>
Result<W> make_owned(Fn create, Args... args) {
  T* out = nullptr;
  const dist_status_t code = create(args..., &out);
  if (code != DIST_OK) return Status::FromCall(code);
  return W(out);
}

}  // namespace detail

// A cluster description (dist_cluster_t).
class Cluster : public detail::Owned<dist_cluster_t, dist_cluster_destroy> {
 public:
  using Owned::Owned;
  // Parses TF_CONFIG from `json`, or from the environment when `json` is NULL.
  static Result<Cluster> from_tf_config(const char* json = nullptr) {
    return detail::make_owned<Cluster, dist_cluster_t>(dist_cluster_from_tf_config, json);
  }
  // From Slurm's environment (srun): `jobs` with `task_counts` tasks each, ports from
  // `port_base` (0: DIST_SLURM_PORT_BASE, else 8888), `tasks_per_node` (0: Slurm's count).
  static Result<Cluster> from_slurm(Span<const char* const> jobs, Span<const int32_t> task_counts,
                                    int32_t port_base = 0, int32_t tasks_per_node = 0) {
    if (jobs.size() != task_counts.size()) {
      return Status(DIST_INVALID_ARGUMENT, "dist::Cluster::from_slurm: one task count for each job");
    }
    return detail::make_owned<Cluster, dist_cluster_t>(dist_cluster_from_slurm, jobs.data(), task_counts.data(),
                                                       static_cast<int32_t>(jobs.size()), port_base, tasks_per_node);
  }
  // A Kubernetes StatefulSet's pods as the workers, this pod the current task; what is left
  // null or 0 comes from the pod's environment (POD_NAME, DIST_K8S_SERVICE, ...).
  static Result<Cluster> from_statefulset(const char* pod_name = nullptr, const char* service = nullptr,
                                          int32_t replicas = 0, int32_t port = 0) {
    return detail::make_owned<Cluster, dist_cluster_t>(dist_cluster_from_statefulset, pod_name, service, replicas,
                                                       port);
  }
  // An empty cluster to fill with add_task and set_task.
  static Result<Cluster> create() { return detail::make_owned<Cluster, dist_cluster_t>(dist_cluster_create); }

  Status add_task(const char* job, int32_t index, const char* address) {
    return Status::FromCall(dist_cluster_add_task(get(), job, index, address));
  }
  Status set_task(const char* job, int32_t index) {
    return Status::FromCall(dist_cluster_set_task(get(), job, index));
  }
  Result<const char*> task_type() const { return detail::call_out<const char*>(dist_cluster_task_type, get()); }
  Result<int32_t> task_index() const { return detail::call_out<int32_t>(dist_cluster_task_index, get()); }
  Result<bool> is_chief() const {
    Result<int32_t> r = detail::call_out<int32_t>(dist_cluster_is_chief, get());
    if (!r) return r.status();
    return *r != 0;
  }
  Result<int32_t> num_workers() const { return detail::call_out<int32_t>(dist_cluster_num_workers, get()); }
  // TF_CONFIG's "environment" and "rpc_layer" ("" when absent), and the master's address.
  Result<const char*> environment() const {
    return detail::call_out<const char*>(dist_cluster_environment, static_cast<const dist_cluster_t*>(get()));
  }
  Result<const char*> rpc_layer() const {
    return detail::call_out<const char*>(dist_cluster_rpc_layer, static_cast<const dist_cluster_t*>(get()));
  }
  Result<const char*> master() const {
    return detail::call_out<const char*>(dist_cluster_master, static_cast<const dist_cluster_t*>(get()));
  }
  // The task index at `position` of `job`'s tasks in index order.
  Result<int32_t> task_index_at(const char* job, int32_t position) const {
    return detail::call_out<int32_t>(dist_cluster_task_index_at, static_cast<const dist_cluster_t*>(get()), job,
                                     position);
  }
  Result<int32_t> num_tasks(const char* job) const {
    return detail::call_out<int32_t>(dist_cluster_num_tasks, static_cast<const dist_cluster_t*>(get()), job);
  }
  Result<const char*> task_address(const char* job, int32_t index) const {
    return detail::call_out<const char*>(dist_cluster_task_address, static_cast<const dist_cluster_t*>(get()),
                                         job, index);
  }
};

// MultiWorkerMirrored's communication options (dist_communication_options_t).
class CommunicationOptions
    : public detail::Owned<dist_communication_options_t, dist_communication_options_destroy> {
 public:
  using Owned::Owned;
  static Result<CommunicationOptions> create() {
    return detail::make_owned<CommunicationOptions, dist_communication_options_t>(
        dist_communication_options_create);
  }
  Status set_implementation(dist_communication_implementation_t implementation) {
    return Status::FromCall(dist_communication_options_set_implementation(get(), implementation));
  }
  Status set_bytes_per_pack(int64_t bytes) {
    return Status::FromCall(dist_communication_options_set_bytes_per_pack(get(), bytes));
  }
  Status set_timeout_ms(int64_t timeout_ms) {
    return Status::FromCall(dist_communication_options_set_timeout_ms(get(), timeout_ms));
  }
  Status set_replicas_per_worker(int32_t replicas) {
    return Status::FromCall(dist_communication_options_set_replicas_per_worker(get(), replicas));
  }
  Status set_job_token(const char* token) {
    return Status::FromCall(dist_communication_options_set_job_token(get(), token));
  }
  // DIST_SHARED_MEMORY_AUTO, _ON or _OFF between workers of one host.
  Status set_shared_memory(dist_shared_memory_t mode) {
    return Status::FromCall(dist_communication_options_set_shared_memory(get(), mode));
  }
  Status set_tls_files(const char* cert_path, const char* key_path, const char* ca_path) {
    return Status::FromCall(dist_communication_options_set_tls_files(get(), cert_path, key_path, ca_path));
  }
};

// A cross-device reduction algorithm for Mirrored (dist_cross_device_ops_t).
class CrossDeviceOps : public detail::Owned<dist_cross_device_ops_t, dist_cross_device_ops_destroy> {
 public:
  using Owned::Owned;
  static Result<CrossDeviceOps> reduction_to_one_device(const char* device = nullptr) {
    return detail::make_owned<CrossDeviceOps, dist_cross_device_ops_t>(
        dist_cross_device_ops_create_reduction_to_one_device, device);
  }
  static Result<CrossDeviceOps> hierarchical_copy(int32_t num_packs = 1) {
    return detail::make_owned<CrossDeviceOps, dist_cross_device_ops_t>(
        dist_cross_device_ops_create_hierarchical_copy, num_packs);
  }
  // NCCL between GPU replicas (CPU replicas refuse it at strategy creation).
  static Result<CrossDeviceOps> nccl_all_reduce(int32_t num_packs = 1) {
    return detail::make_owned<CrossDeviceOps, dist_cross_device_ops_t>(
        dist_cross_device_ops_create_nccl_all_reduce, num_packs);
  }
  static Result<CrossDeviceOps> shared_memory(int64_t bytes_per_pack = 0) {
    return detail::make_owned<CrossDeviceOps, dist_cross_device_ops_t>(
        dist_cross_device_ops_create_shared_memory, bytes_per_pack);
  }
  Result<dist_cross_device_ops_kind_t> kind() const {
    return detail::call_out<dist_cross_device_ops_kind_t>(dist_cross_device_ops_kind,
                                                          static_cast<const dist_cross_device_ops_t*>(get()));
  }
};

// The library's version ("MAJOR.MINOR.PATCH") and number (MAJOR*10000 + MINOR*100 + PATCH).
inline const char* version() { return dist_version(); }
inline int32_t version_number() { return dist_version_number(); }

// The bytes of one element of `dtype`.
inline Result<size_t> dtype_size(dist_dtype_t dtype) { return detail::call_out<size_t>(dist_dtype_size, dtype); }

// Why no GPU is usable ("" when one is).
inline Result<const char*> gpu_unavailable_reason() {
  return detail::call_out<const char*>(dist_gpu_unavailable_reason);
}

// Exposes `count` logical CPU devices (CPU:0 ... CPU:count-1) for Mirrored replicas.
inline Status set_logical_cpu_device_count(int32_t count) {
  return Status::FromCall(dist_set_logical_cpu_device_count(count));
}

}  // namespace dist

#endif  // DISTRIBUTE_CPP_OPTIONS_HPP_
