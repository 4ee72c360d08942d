// AttachVariable (wire_values.h): a worker's handle on a variable the coordinator created.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/coordinator/wire_values.h"
#include "core/ps/names.h"
#include "core/ps/partitioner.h"
#include "core/ps/placement.h"
#include "core/backend/parameter_servers.h"
#include "core/strategy/ps_variable_storage.h"
#include "core/tensor/dtype.h"
#include "core/tensor/shape.h"
#include "core/util/status_macros.h"

namespace distribute::coordinator {
namespace {

absl::StatusOr<Shape> ShapeOf(const google::protobuf::RepeatedField<int64_t>& dims, absl::string_view what) {
  if (dims.size() > kMaxRank) {
    return absl::InvalidArgumentError(absl::StrCat(what, " has rank ", dims.size(), ", more than ", kMaxRank));
  }
  return Shape::Make(std::span<const int64_t>(dims.data(), static_cast<size_t>(dims.size())));
}

// The placement `ref` describes, checked against the worker's `num_tasks` ps tasks.
absl::StatusOr<ps::VariablePlacement> PlacementOf(const closures::VariableRef& ref, int32_t num_tasks) {
  RETURN_IF_ERROR(ps::CheckPsName("variable name", ref.name()));
  ps::VariablePlacement placement;
  placement.declaration.name = ref.name();
  ASSIGN_OR_RETURN(placement.declaration.dtype, DTypeFromInt(ref.dtype()));
  ASSIGN_OR_RETURN(placement.declaration.shape, ShapeOf(ref.dims(), "the variable"));
  if (ref.shards_size() < 1 || ref.shards_size() > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable ", ps::QuotedName(ref.name()), " has ", ref.shards_size(), " shards (1 to 4096)"));
  }
  if (ref.partitioned()) {
    ASSIGN_OR_RETURN(placement.layout,
                     ps::LayoutShards(placement.declaration.shape, ref.axis(), ref.shards_size()));
  } else if (ref.shards_size() != 1 || ref.shards(0).name() != ref.name()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable ", ps::QuotedName(ref.name()), " is not partitioned, so it is one shard named as itself"));
  }
  for (int i = 0; i < ref.shards_size(); ++i) {
    const closures::VariableShard& wire = ref.shards(i);
    ps::ShardPlacement shard;
    shard.name = ref.partitioned() ? ps::ShardName(ref.name(), i) : ref.name();
    if (wire.name() != shard.name) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", i, " of variable ", ps::QuotedName(ref.name()),
                                                     " must be named ", ps::QuotedName(shard.name)));
    }
    if (wire.task() < 0 || wire.task() >= num_tasks) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", ps::QuotedName(shard.name), " is on ps task ",
                                                     wire.task(), ", but the cluster has ", num_tasks));
    }
    shard.task = wire.task();
    ASSIGN_OR_RETURN(shard.shape, ShapeOf(wire.dims(), "a shard"));
    const Shape expected = placement.layout ? placement.layout->ShardShape(i) : placement.declaration.shape;
    if (!(shard.shape == expected)) {
      return absl::InvalidArgumentError(absl::StrCat("shard ", ps::QuotedName(shard.name),
                                                     " does not have the shape its layout gives it"));
    }
    placement.shards.push_back(std::move(shard));
  }
  return placement;
}

}  // namespace

absl::StatusOr<Value> AttachVariable(Strategy& strategy, const closures::VariableRef& ref) {
  const std::shared_ptr<ParameterServers>& servers = strategy.parameter_servers();
  if (servers == nullptr) {
    return absl::InvalidArgumentError("closures run with a ParameterServerStrategy: this strategy has no ps tasks");
  }
  ASSIGN_OR_RETURN(ps::VariablePlacement placement,
                   PlacementOf(ref, static_cast<int32_t>(servers->hosts.size())));
  ASSIGN_OR_RETURN(const VariableSync sync, VariableSyncFromInt(ref.synchronization()));
  ASSIGN_OR_RETURN(const VariableAggregation aggregation, VariableAggregationFromInt(ref.aggregation()));
  const DType dtype = placement.declaration.dtype;
  const Shape shape = placement.declaration.shape;
  const DeviceSpec device = servers->devices[static_cast<size_t>(placement.shards.front().task)];
  auto storage = std::make_shared<PsVariableStorage>(servers, std::move(placement));
  auto variable = std::make_shared<Variable>(ref.name(), sync, aggregation, dtype, shape, device,
                                             std::move(storage), strategy.id());
  return Value::OfVariable(std::move(variable));
}

}  // namespace distribute::coordinator
