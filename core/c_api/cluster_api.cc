// C entry points for cluster specs (TF_CONFIG and explicit ones).
#include <string>

#include "absl/strings/str_cat.h"

#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/cluster/cluster_spec.h"
#include "core/cluster/slurm_resolver.h"
#include "core/cluster/statefulset_resolver.h"
#include "core/cluster/tf_config.h"
#include "core/util/status_macros.h"
#include "distribute/cluster.h"

using distribute::ClusterSpec;
using distribute::c_api::Accessor;
using distribute::c_api::CheckHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

// A string the cluster owns, by accessor.
dist_status_t ClusterString(const char* function, const dist_cluster_t* cluster,
                            const char** out, const char* out_name,
                            const std::string& (ClusterSpec::*get)() const) {
  return Accessor(function, cluster, "cluster", out, out_name,
                  [&](const dist_cluster& c, const char*& value) {
                    value = (c.spec.*get)().c_str();
                    return absl::OkStatus();
                  });
}

}  // namespace

extern "C" {

dist_status_t dist_cluster_from_tf_config(const char* json, dist_cluster_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(ClusterSpec spec, json == nullptr ? distribute::ClusterSpecFromEnvironment()
                                                       : distribute::ParseTfConfig(json));
    *out = new dist_cluster{std::move(spec)};
    return absl::OkStatus();
  });
}

dist_status_t dist_cluster_from_slurm(const char* const* jobs, const int32_t* task_counts, int32_t num_jobs,
                                      int32_t port_base, int32_t tasks_per_node, dist_cluster_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    if (num_jobs < 0 || num_jobs > distribute::kNumJobs) {
      return absl::InvalidArgumentError(absl::StrCat("num_jobs is ", num_jobs, " (0 to ", distribute::kNumJobs, ")"));
    }
    if (num_jobs > 0 && jobs == nullptr) return NullArgument("jobs");
    if (num_jobs > 0 && task_counts == nullptr) return NullArgument("task_counts");
    distribute::SlurmSettings settings;
    for (int32_t i = 0; i < num_jobs; ++i) {
      if (jobs[i] == nullptr) return NullArgument(absl::StrCat("jobs[", i, "]"));
      settings.jobs.push_back(distribute::SlurmJob{jobs[i], task_counts[i]});
    }
    settings.port_base = port_base;
    settings.tasks_per_node = tasks_per_node;
    ASSIGN_OR_RETURN(ClusterSpec spec, distribute::ClusterSpecFromSlurm(settings));
    *out = new dist_cluster{std::move(spec)};
    return absl::OkStatus();
  });
}

dist_status_t dist_cluster_from_statefulset(const char* pod_name, const char* service, int32_t replicas,
                                            int32_t port, dist_cluster_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    distribute::StatefulSetSettings settings;
    if (pod_name != nullptr) settings.pod_name = pod_name;
    if (service != nullptr) settings.service = service;
    settings.replicas = replicas;
    settings.port = port;
    ASSIGN_OR_RETURN(ClusterSpec spec, distribute::ClusterSpecFromStatefulSet(settings));
    *out = new dist_cluster{std::move(spec)};
    return absl::OkStatus();
  });
}

dist_status_t dist_cluster_create(dist_cluster_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    *out = new dist_cluster{};
    return absl::OkStatus();
  });
}

dist_status_t dist_cluster_add_task(dist_cluster_t* cluster, const char* job, int32_t index,
                                    const char* address) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(cluster, "cluster"));
    if (job == nullptr) return NullArgument("job");
    if (address == nullptr) return NullArgument("address");
    return cluster->spec.AddTask(job, index, address);
  });
}

dist_status_t dist_cluster_set_task(dist_cluster_t* cluster, const char* job, int32_t index) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(cluster, "cluster"));
    if (job == nullptr) return NullArgument("job");
    return cluster->spec.SetTask(job, index);
  });
}

dist_status_t dist_cluster_task_type(const dist_cluster_t* cluster, const char** out_borrowed_type) {
  return Accessor(__func__, cluster, "cluster", out_borrowed_type, "out_borrowed_type",
                  [](const dist_cluster& c, const char*& type) -> absl::Status {
                    ASSIGN_OR_RETURN(distribute::Job job, c.spec.task_type());
                    type = distribute::JobName(job);
                    return absl::OkStatus();
                  });
}

dist_status_t dist_cluster_task_index(const dist_cluster_t* cluster, int32_t* out_index) {
  return Accessor(__func__, cluster, "cluster", out_index, "out_index",
                  [](const dist_cluster& c, int32_t& index) -> absl::Status {
                    ASSIGN_OR_RETURN(index, c.spec.task_index());
                    return absl::OkStatus();
                  });
}

dist_status_t dist_cluster_is_chief(const dist_cluster_t* cluster, int32_t* out_is_chief) {
  return Accessor(__func__, cluster, "cluster", out_is_chief, "out_is_chief",
                  [](const dist_cluster& c, int32_t& is_chief) -> absl::Status {
                    ASSIGN_OR_RETURN(const bool chief, c.spec.is_chief());
                    is_chief = chief ? 1 : 0;
                    return absl::OkStatus();
                  });
}

dist_status_t dist_cluster_num_workers(const dist_cluster_t* cluster, int32_t* out_count) {
  return Accessor(__func__, cluster, "cluster", out_count, "out_count",
                  [](const dist_cluster& c, int32_t& count) -> absl::Status {
                    ASSIGN_OR_RETURN(count, c.spec.worker_count());
                    return absl::OkStatus();
                  });
}

dist_status_t dist_cluster_num_tasks(const dist_cluster_t* cluster, const char* job, int32_t* out_count) {
  return Accessor(__func__, cluster, "cluster", out_count, "out_count",
                  [&](const dist_cluster& c, int32_t& count) -> absl::Status {
                    if (job == nullptr) return NullArgument("job");
                    ASSIGN_OR_RETURN(count, c.spec.num_tasks(absl::string_view(job)));
                    return absl::OkStatus();
                  });
}

dist_status_t dist_cluster_task_index_at(const dist_cluster_t* cluster, const char* job, int32_t position,
                                         int32_t* out_index) {
  return Accessor(__func__, cluster, "cluster", out_index, "out_index",
                  [&](const dist_cluster& c, int32_t& index) -> absl::Status {
                    if (job == nullptr) return NullArgument("job");
                    ASSIGN_OR_RETURN(index, c.spec.task_index_at(job, position));
                    return absl::OkStatus();
                  });
}

dist_status_t dist_cluster_task_address(const dist_cluster_t* cluster, const char* job, int32_t index,
                                        const char** out_borrowed_address) {
  return Accessor(__func__, cluster, "cluster", out_borrowed_address, "out_borrowed_address",
                  [&](const dist_cluster& c, const char*& address) -> absl::Status {
                    if (job == nullptr) return NullArgument("job");
                    ASSIGN_OR_RETURN(const std::string* found, c.spec.task_address(job, index));
                    address = found->c_str();
                    return absl::OkStatus();
                  });
}

void dist_cluster_destroy(dist_cluster_t* cluster) { DestroyHandle(cluster); }


dist_status_t dist_cluster_rpc_layer(const dist_cluster_t* cluster, const char** out_rpc_layer) {
  return ClusterString(__func__, cluster, out_rpc_layer, "out_rpc_layer", &ClusterSpec::rpc_layer);
}

dist_status_t dist_cluster_environment(const dist_cluster_t* cluster, const char** out_environment) {
  return ClusterString(__func__, cluster, out_environment, "out_environment",
                       &ClusterSpec::environment);
}

dist_status_t dist_cluster_master(const dist_cluster_t* cluster, const char** out_master) {
  return ClusterString(__func__, cluster, out_master, "out_master", &ClusterSpec::master);
}

}  // extern "C"
