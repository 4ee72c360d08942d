// distribute C++ wrapper — configuration handles: Cluster (TF_CONFIG or an explicit
// spec), CommunicationOptions (MultiWorkerMirrored) and CrossDeviceOps (Mirrored).
// Each owns its C handle, is move-only, and destroys it with the object.
#ifndef DISTRIBUTE_CPP_OPTIONS_HPP_
#define DISTRIBUTE_CPP_OPTIONS_HPP_

#include <cstdint>
#include <utility>

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

// Exposes `count` logical CPU devices (CPU:0 ... CPU:count-1) for Mirrored replicas.
inline Status set_logical_cpu_device_count(int32_t count) {
  return Status::FromCall(dist_set_logical_cpu_device_count(count));
}

}  // namespace dist

#endif  // DISTRIBUTE_CPP_OPTIONS_HPP_
