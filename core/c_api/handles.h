// The structs behind the public opaque handles. Only core/c_api sees these.
#ifndef DISTRIBUTE_CORE_C_API_HANDLES_H_
#define DISTRIBUTE_CORE_C_API_HANDLES_H_

#include <string>
#include <utility>

#include <memory>

#include "core/cluster/cluster_spec.h"
#include "core/collective/cross_device_ops.h"
#include "core/device/device_spec.h"
#include "core/input/dataset.h"
#include "core/input/distributed_dataset.h"
#include "core/input/input_context.h"
#include "core/input/input_options.h"
#include "core/input/value_iterator.h"
#include "core/server/server.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/strategy.h"
#include "core/values/value.h"
#include "distribute/types.h"

struct dist_device {
  explicit dist_device(distribute::DeviceSpec s) : spec(std::move(s)), name(spec.ToString()) {}
  distribute::DeviceSpec spec;
  std::string name;  // canonical, borrowed by dist_device_name
};

struct dist_value {
  explicit dist_value(distribute::Value v) : value(std::move(v)) {}
  distribute::Value value;
};

struct dist_strategy {
  explicit dist_strategy(std::shared_ptr<distribute::Strategy> s) : strategy(std::move(s)) {}
  std::shared_ptr<distribute::Strategy> strategy;
};

struct dist_cross_device_ops {
  explicit dist_cross_device_ops(distribute::CrossDeviceOps o) : ops(std::move(o)) {}
  distribute::CrossDeviceOps ops;
};

struct dist_communication_options {
  distribute::CommunicationOptions options;
};

struct dist_dataset {
  explicit dist_dataset(distribute::DatasetPtr d) : dataset(std::move(d)) {}
  distribute::DatasetPtr dataset;
};

struct dist_distributed_dataset {
  explicit dist_distributed_dataset(std::shared_ptr<const distribute::DistributedDataset> d)
      : dataset(std::move(d)) {}
  std::shared_ptr<const distribute::DistributedDataset> dataset;
};

struct dist_iterator {
  explicit dist_iterator(std::unique_ptr<distribute::ValueIterator> i) : iterator(std::move(i)) {}
  std::unique_ptr<distribute::ValueIterator> iterator;
};

struct dist_cluster {
  distribute::ClusterSpec spec;
};

struct dist_server {
  std::unique_ptr<distribute::Server> server;
};

struct dist_server_options {
  distribute::Server::Options options;
};

struct dist_input_options {
  distribute::InputOptions options;
};

// dist_context_t is the core's ReplicaContext itself (the struct stays incomplete), so
// dist_current_replica_context hands out the very pointer the replica function received.
namespace distribute::c_api {
inline ReplicaContext* Unwrap(dist_context_t* context) {
  return reinterpret_cast<ReplicaContext*>(context);
}
inline const ReplicaContext* Unwrap(const dist_context_t* context) {
  return reinterpret_cast<const ReplicaContext*>(context);
}
inline dist_context_t* Wrap(ReplicaContext* context) {
  return reinterpret_cast<dist_context_t*>(context);
}
// dist_input_context_t is the core's InputContext itself, borrowed by the dataset function
// for the duration of its call.
inline const InputContext* Unwrap(const dist_input_context_t* context) {
  return reinterpret_cast<const InputContext*>(context);
}
inline const dist_input_context_t* Wrap(const InputContext* context) {
  return reinterpret_cast<const dist_input_context_t*>(context);
}
// ... or created by dist_input_context_create, owned by the caller.
inline dist_input_context_t* Wrap(InputContext* context) {
  return reinterpret_cast<dist_input_context_t*>(context);
}
inline InputContext* Unwrap(dist_input_context_t* context) {
  return reinterpret_cast<InputContext*>(context);
}
}  // namespace distribute::c_api

#endif  // DISTRIBUTE_CORE_C_API_HANDLES_H_
