// The structs behind the public opaque handles. Only core/c_api sees these. Each starts
// with its type tag (handle_tag.h): the shim checks it on every entry that takes a handle,
// and handle_destroy.h destroys them.
#ifndef DISTRIBUTE_CORE_C_API_HANDLES_H_
#define DISTRIBUTE_CORE_C_API_HANDLES_H_

#include <string>
#include <utility>
#include <vector>

#include <memory>
#include <optional>

#include "core/c_api/handle_tag.h"
#include "core/cluster/cluster_spec.h"
#include "core/coordinator/closure_arguments.h"
#include "core/coordinator/coordinator.h"
#include "core/collective/cross_device_ops.h"
#include "core/device/device_spec.h"
#include "core/input/dataset.h"
#include "core/input/distributed_dataset.h"
#include "core/input/input_context.h"
#include "core/input/input_options.h"
#include "core/input/value_iterator.h"
#include "core/ps/partitioner.h"
#include "core/ps/placement.h"
#include "core/server/server.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/strategy.h"
#include "core/values/value.h"
#include "distribute/types.h"

using distribute::c_api::HandleType;
using distribute::c_api::TaggedHandle;

struct dist_device : TaggedHandle<HandleType::kDevice> {
  explicit dist_device(distribute::DeviceSpec s) : spec(std::move(s)), name(spec.ToString()) {}
  distribute::DeviceSpec spec;
  std::string name;  // canonical, borrowed by dist_device_name
};

struct dist_value : TaggedHandle<HandleType::kValue> {
  explicit dist_value(distribute::Value v) : value(std::move(v)) {}
  // A tensor's handle made in place (a collective's new value, every call).
  explicit dist_value(distribute::Tensor t) : value(std::move(t)) {}
  distribute::Value value;
};

struct dist_strategy : TaggedHandle<HandleType::kStrategy> {
  explicit dist_strategy(std::shared_ptr<distribute::Strategy> s) : strategy(std::move(s)) {}
  std::shared_ptr<distribute::Strategy> strategy;
};

// A replica context: borrowed (a replica function's, the current or the default one) or
// owned by a replica joined with dist_strategy_join_replica, released by dist_context_leave.
struct dist_context : TaggedHandle<HandleType::kContext> {
  explicit dist_context(distribute::ReplicaContext* borrowed) : context(borrowed) {}
  explicit dist_context(std::unique_ptr<distribute::ReplicaContext> joined_context)
      : context(joined_context.get()), joined(std::move(joined_context)) {}
  distribute::ReplicaContext* context;
  std::unique_ptr<distribute::ReplicaContext> joined;
};

struct dist_cross_device_ops : TaggedHandle<HandleType::kCrossDeviceOps> {
  explicit dist_cross_device_ops(distribute::CrossDeviceOps o) : ops(std::move(o)) {}
  distribute::CrossDeviceOps ops;
};

struct dist_communication_options : TaggedHandle<HandleType::kCommunicationOptions> {
  distribute::CommunicationOptions options;
};

// Where a ParameterServerStrategy puts its variables (see parameter_server.h).
struct dist_parameter_server_options : TaggedHandle<HandleType::kParameterServerOptions> {
  distribute::ps::PlacementPolicy placement = distribute::ps::PlacementPolicy::kRoundRobin;
  std::optional<distribute::ps::Partitioner> partitioner;
};

struct dist_dataset : TaggedHandle<HandleType::kDataset> {
  explicit dist_dataset(distribute::DatasetPtr d) : dataset(std::move(d)) {}
  distribute::DatasetPtr dataset;
};

struct dist_distributed_dataset : TaggedHandle<HandleType::kDistributedDataset> {
  explicit dist_distributed_dataset(std::shared_ptr<const distribute::DistributedDataset> d)
      : dataset(std::move(d)) {}
  std::shared_ptr<const distribute::DistributedDataset> dataset;
};

// Shared: a per-worker iterator's component on a worker is lent to closure functions
// while the worker's session keeps it.
struct dist_iterator : TaggedHandle<HandleType::kIterator> {
  explicit dist_iterator(std::shared_ptr<distribute::ValueIterator> i) : iterator(std::move(i)) {}
  std::shared_ptr<distribute::ValueIterator> iterator;
};

// An input context: a copy of the core's, made for a dataset function's call (borrowed)
// or by dist_input_context_create (owned).
struct dist_input_context : TaggedHandle<HandleType::kInputContext> {
  explicit dist_input_context(distribute::InputContext c) : context(std::move(c)) {}
  distribute::InputContext context;
};

struct dist_cluster : TaggedHandle<HandleType::kCluster> {
  dist_cluster() = default;
  explicit dist_cluster(distribute::ClusterSpec s) : spec(std::move(s)) {}
  distribute::ClusterSpec spec;
};

struct dist_server : TaggedHandle<HandleType::kServer> {
  explicit dist_server(std::unique_ptr<distribute::Server> s) : server(std::move(s)) {}
  std::unique_ptr<distribute::Server> server;
};

struct dist_server_options : TaggedHandle<HandleType::kServerOptions> {
  distribute::Server::Options options;
};

struct dist_input_options : TaggedHandle<HandleType::kInputOptions> {
  distribute::InputOptions options;
};

// The arguments of a scheduled function: built by dist_closure_args_create on the
// coordinator, or resolved on a worker and lent to a closure function (on_worker). Each
// value and iterator has a borrowed handle made when it is added, which
// dist_closure_args_value and _iterator lend (null where the kind has none).
struct dist_closure_args : TaggedHandle<HandleType::kClosureArgs> {
  distribute::coordinator::ClosureArguments arguments;
  std::vector<std::unique_ptr<dist_value>> lent_values;
  std::vector<std::unique_ptr<dist_iterator>> lent_iterators;
  uint64_t tensor_bytes = 0;  // of the tensors added, against the message bound
};

struct dist_coordinator : TaggedHandle<HandleType::kCoordinator> {
  explicit dist_coordinator(std::unique_ptr<distribute::coordinator::Coordinator> c)
      : coordinator(std::move(c)) {}
  std::unique_ptr<distribute::coordinator::Coordinator> coordinator;
};

struct dist_remote_value : TaggedHandle<HandleType::kRemoteValue> {
  explicit dist_remote_value(std::shared_ptr<distribute::coordinator::RemoteValue> v) : value(std::move(v)) {}
  std::shared_ptr<distribute::coordinator::RemoteValue> value;
};

// A per-worker dataset or iterator; keeps its coordinator's state (not the coordinator).
struct dist_per_worker : TaggedHandle<HandleType::kPerWorker> {
  explicit dist_per_worker(std::shared_ptr<distribute::coordinator::PerWorkerResource> r)
      : resource(std::move(r)) {}
  std::shared_ptr<distribute::coordinator::PerWorkerResource> resource;
};

#endif  // DISTRIBUTE_CORE_C_API_HANDLES_H_
