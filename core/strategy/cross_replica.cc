#include "core/strategy/cross_replica.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/kernels/reduce_kernels.h"
#include "core/tensor/concatenate.h"
#include "core/device/local_devices.h"
#include "core/strategy/integer_mean.h"
#include "core/strategy/thread_context.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"
#include "core/values/variable.h"

namespace distribute {
namespace {

bool IsPerReplicaLike(const Value& value) {
  return value.kind() == ValueKind::kPerReplica ||
         (value.kind() == ValueKind::kSyncOnReadVariable && value.component_index() < 0);
}

// Ops for which reducing n copies of one value gives that value back.
bool IsIdempotent(ReduceOp op) {
  return op == ReduceOp::kMean || op == ReduceOp::kMin || op == ReduceOp::kMax;
}

std::string Signature(const Tensor& t) {
  return absl::StrCat(DTypeName(t.dtype()), t.shape().ToString());
}

absl::Status CheckComponentCount(const Strategy& strategy, const std::vector<Tensor>& components) {
  if (static_cast<int32_t>(components.size()) != strategy.num_replicas()) {
    return absl::InvalidArgumentError(absl::StrCat("value has ", components.size(),
                                                   " components but the strategy has ",
                                                   strategy.num_replicas(), " replicas"));
  }
  return absl::OkStatus();
}

absl::Status CheckSameSignature(const std::vector<Tensor>& components) {
  for (size_t i = 1; i < components.size(); ++i) {
    if (components[i].dtype() != components[0].dtype() ||
        !(components[i].shape() == components[0].shape())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "component ", i, " is ", Signature(components[i]), " but component 0 is ",
          Signature(components[0]), ": components must agree (reduce with an axis to combine "
                                    "batches of different sizes)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> Allocate(DType dtype, Shape shape, const DeviceSpec& device) {
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer,
                   Buffer::Allocate(device, static_cast<size_t>(shape.num_elements()) * DTypeSize(dtype),
                                    false));
  return Tensor::FromBuffer(dtype, std::move(shape), std::move(buffer));
}

// Cross-replica gathers, reductions along an axis, and reductions the collective cannot
// run on the devices (Collective::ReduceOnDevice: a job's, integer MEAN, a CPU destination)
// compute on the host, whatever device the components live on: host copies of GPU
// components.
absl::StatusOr<std::vector<Tensor>> OnHost(std::vector<Tensor> components) {
  for (Tensor& t : components) {
    ASSIGN_OR_RETURN(t, t.OnHost());
  }
  return components;
}

// Where a result bound for `device` is computed: there when it is host memory, else on
// the host (and copied to `device` at the end).
DeviceSpec HostFor(const DeviceSpec& device) {
  return device.type == DeviceType::kGpu ? DeviceSpec{}.WithDefaults() : device;
}


// TF's rule for values that are not per-replica (a tensor, a Mirrored value or variable):
// reducing n copies of them is only defined when the op is idempotent or n is 1.
absl::StatusOr<Tensor> ReduceNonDistributed(const Strategy& strategy, ReduceOp op,
                                            const Value& value, const Tensor& first,
                                            const DeviceSpec& device) {
  RETURN_IF_ERROR(CheckReducible(first.dtype(), op));
  if (IsIdempotent(op) || strategy.num_replicas_in_sync() == 1) return first.PlacedOn(device);
  return absl::InvalidArgumentError(absl::StrCat(
      "a ", ValueKindName(value.kind()), " is the same on every replica, so reducing it with ",
      ReduceOpName(op), " across ", strategy.num_replicas_in_sync(),
      " replicas is not defined (TF allows MEAN for it); pass a PerReplica value"));
}

// This worker's components combined (in accumulator precision), then with the other
// workers' in the order one process with all the replicas would use.
absl::StatusOr<Tensor> ReduceComponents(const Strategy& strategy, ReduceOp op,
                                        const std::vector<Tensor>& components,
                                        const DeviceSpec& device) {
  RETURN_IF_ERROR(CheckSameSignature(components));
  RETURN_IF_ERROR(CheckReducible(components.front().dtype(), op));
  // An integer MEAN sums (on the host) and divides afterwards (integer_mean.h).
  const bool integer_mean = IsIntegerMean(components.front().dtype(), op);
  if (!integer_mean && device.type == DeviceType::kGpu) {
    ASSIGN_OR_RETURN(std::optional<Tensor> reduced,
                     strategy.collective().ReduceOnDevice(op, components, device, strategy.NewDeadline()));
    if (reduced.has_value()) return *std::move(reduced);
  }
  ASSIGN_OR_RETURN(const std::vector<Tensor> host_components, OnHost(components));
  const Tensor& first = host_components.front();
  std::vector<const void*> inputs;
  for (const Tensor& t : host_components) inputs.push_back(t.data());
  const DeviceSpec host = DeviceSpec{}.WithDefaults();
  ASSIGN_OR_RETURN(Tensor out, Allocate(first.dtype(), first.shape(), integer_mean ? host : HostFor(device)));
  RETURN_IF_ERROR(strategy.workers().AllReduceLocal(
      integer_mean ? ReduceOp::kSum : op, first.dtype(), inputs.data(),
      static_cast<int32_t>(inputs.size()), static_cast<size_t>(first.shape().num_elements()),
      out.data(), strategy.num_replicas_in_sync(),
      absl::StrCat("reduce(", ReduceOpName(op), ") of ", Signature(first)), strategy.NewDeadline()));
  if (integer_mean) return IntegerMean(out, strategy.num_replicas_in_sync(), device);
  return out.PlacedOn(device);
}

absl::StatusOr<Tensor> ReduceAcross(const Strategy& strategy, ReduceOp op, const Value& value,
                                    const DeviceSpec& device) {
  ASSIGN_OR_RETURN(std::vector<Tensor> components, LocalResults(value));
  if (!IsPerReplicaLike(value)) {
    return ReduceNonDistributed(strategy, op, value, components.front(), device);
  }
  RETURN_IF_ERROR(CheckComponentCount(strategy, components));
  if (strategy.num_replicas_in_sync() == 1) {
    RETURN_IF_ERROR(CheckReducible(components.front().dtype(), op));
    return components.front().PlacedOn(device);
  }
  return ReduceComponents(strategy, op, components, device);
}

// The components a reduction or gather along an axis works on: TF runs a per-replica
// function over the value, so a value that is not per-replica counts once per replica.
absl::StatusOr<std::vector<Tensor>> PerReplicaComponents(const Strategy& strategy,
                                                         const Value& value) {
  ASSIGN_OR_RETURN(std::vector<Tensor> components, LocalResults(value));
  if (IsPerReplicaLike(value)) {
    RETURN_IF_ERROR(CheckComponentCount(strategy, components));
    return components;
  }
  return std::vector<Tensor>(static_cast<size_t>(strategy.num_replicas()), components.front());
}

// Checks that components agree in dtype, rank and every dimension but `axis`, and returns
// `axis` normalised to [0, rank).
absl::StatusOr<int32_t> CheckAlongAxis(const std::vector<Tensor>& components, int32_t axis) {
  const Tensor& first = components.front();
  const int32_t rank = first.shape().rank();
  const int32_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank) {
    return absl::InvalidArgumentError(absl::StrCat("axis ", axis,
                                                   " is out of range for components of rank ",
                                                   rank));
  }
  for (size_t i = 1; i < components.size(); ++i) {
    const Tensor& t = components[i];
    bool same = t.dtype() == first.dtype() && t.shape().rank() == rank;
    for (int32_t d = 0; same && d < rank; ++d) {
      same = d == normalized || t.shape().dim(d) == first.shape().dim(d);
    }
    if (!same) {
      return absl::InvalidArgumentError(absl::StrCat(
          "component ", i, " is ", Signature(t), " but component 0 is ", Signature(first),
          ": components may differ only along axis ", normalized));
    }
  }
  return normalized;
}

absl::StatusOr<Tensor> ReduceAlongAxis(const Strategy& strategy, ReduceOp op, const Value& value,
                                       int32_t axis, const DeviceSpec& device) {
  ASSIGN_OR_RETURN(std::vector<Tensor> components, PerReplicaComponents(strategy, value));
  ASSIGN_OR_RETURN(const int32_t normalized, CheckAlongAxis(components, axis));
  RETURN_IF_ERROR(CheckReducible(components.front().dtype(), op));
  ASSIGN_OR_RETURN(components, OnHost(std::move(components)));
  const Tensor& first = components.front();
  const DType dtype = first.dtype();
  const DType acc = AccumulatorDType(dtype);
  const ReduceOp partial_op = op == ReduceOp::kMean ? ReduceOp::kSum : op;
  std::vector<int64_t> out_dims;
  int64_t outer = 1;
  int64_t inner = 1;
  for (int32_t d = 0; d < first.shape().rank(); ++d) {
    if (d == normalized) continue;
    out_dims.push_back(first.shape().dim(d));
    (d < normalized ? outer : inner) *= first.shape().dim(d);
  }
  ASSIGN_OR_RETURN(Shape out_shape, Shape::Make(out_dims));
  const DeviceSpec host = DeviceSpec{}.WithDefaults();
  // Each replica's tensor reduced along the axis, in accumulator precision.
  std::vector<Tensor> partials;
  int64_t total = 0;
  for (const Tensor& t : components) {
    const int64_t len = t.shape().dim(normalized);
    total += len;
    ASSIGN_OR_RETURN(Tensor partial, Allocate(acc, out_shape, host));
    ReduceAxisToAccumulator(dtype, partial_op, t.data(), outer, len, inner, partial.data());
    partials.push_back(std::move(partial));
  }
  ASSIGN_OR_RETURN(Tensor sum, Allocate(acc, out_shape, host));
  std::vector<const void*> inputs;
  for (const Tensor& p : partials) inputs.push_back(p.data());
  void* output = sum.data();
  const size_t count = static_cast<size_t>(out_shape.num_elements());
  ReduceRange(acc, partial_op, inputs.data(), static_cast<int32_t>(inputs.size()), &output, 1, 0,
              count, 1);
  {
    // The workers' partial results and row counts, combined in worker order.
    Workers& workers = strategy.workers();
    const Deadline deadline = strategy.NewDeadline();
    const std::string what = absl::StrCat("reduce(", ReduceOpName(op), ", axis ", normalized,
                                          ") of ", DTypeName(dtype));
    void* total_out = &total;
    const int64_t local_total = total;
    const Workers::Segment rows{DType::kInt64, 1, 0, std::span<void* const>(&total_out, 1)};
    RETURN_IF_ERROR(workers.AllReduce(ReduceOp::kSum, &local_total, sizeof(local_total),
                                      std::span<const Workers::Segment>(&rows, 1), 1,
                                      absl::StrCat(what, " row count"), deadline));
    const Workers::Segment partial{acc, count, 0, std::span<void* const>(&output, 1)};
    RETURN_IF_ERROR(workers.AllReduce(partial_op, sum.data(), sum.byte_size(),
                                      std::span<const Workers::Segment>(&partial, 1), 1, what,
                                      deadline));
  }
  if (IsIntegerMean(dtype, op)) {
    // TF: the integer sum (wrapped to the dtype) over the row count, by truediv.
    ASSIGN_OR_RETURN(Tensor wrapped, Allocate(dtype, out_shape, host));
    FromAccumulator(dtype, sum.data(), wrapped.data(), count);
    return IntegerMean(wrapped, total, device);
  }
  if (op == ReduceOp::kMean) {
    if (total == 0) {
      // 0 / 0, as TF computes it.
      for (size_t i = 0; i < count; ++i) {
        if (acc == DType::kFloat32) static_cast<float*>(sum.data())[i] = std::numeric_limits<float>::quiet_NaN();
        if (acc == DType::kFloat64) static_cast<double*>(sum.data())[i] = std::numeric_limits<double>::quiet_NaN();
      }
    } else {
      DivideInPlace(acc, sum.data(), count, total);
    }
  }
  ASSIGN_OR_RETURN(Tensor out, Allocate(dtype, std::move(out_shape), HostFor(device)));
  FromAccumulator(dtype, sum.data(), out.data(), count);
  return out.PlacedOn(device);
}

}  // namespace

absl::StatusOr<std::vector<Tensor>> LocalResults(const Value& value) {
  if (!value.is_variable()) return std::vector<Tensor>(value.components().begin(), value.components().end());
  if (value.component_index() >= 0) {
    ASSIGN_OR_RETURN(Tensor copy, value.variable()->Snapshot(value.component_index()));
    return std::vector<Tensor>{std::move(copy)};
  }
  return value.variable()->SnapshotAll();
}

absl::StatusOr<Value> Reduce(Strategy& strategy, ReduceOp op, const Value& value,
                             std::optional<int32_t> axis) {
  RETURN_IF_ERROR(RequireCrossReplica(strategy, "reduce"));
  const DeviceSpec& device = strategy.worker_devices().front();
  if (axis.has_value()) {
    ASSIGN_OR_RETURN(Tensor out, ReduceAlongAxis(strategy, op, value, *axis, device));
    return Value(std::move(out));
  }
  ASSIGN_OR_RETURN(Tensor out, ReduceAcross(strategy, op, value, device));
  return Value(std::move(out));
}

absl::StatusOr<Value> Gather(Strategy& strategy, const Value& value, int32_t axis) {
  RETURN_IF_ERROR(RequireCrossReplica(strategy, "gather"));
  ASSIGN_OR_RETURN(std::vector<Tensor> components, PerReplicaComponents(strategy, value));
  if (components.front().shape().rank() == 0) {
    return absl::InvalidArgumentError("scalars cannot be gathered along an axis");
  }
  ASSIGN_OR_RETURN(const int32_t normalized, CheckAlongAxis(components, axis));
  ASSIGN_OR_RETURN(components, OnHost(std::move(components)));
  const Tensor& first = components.front();
  Dims dims = first.shape().dims();
  int64_t gathered = 0;
  for (const Tensor& t : components) gathered += t.shape().dim(normalized);
  dims[static_cast<size_t>(normalized)] = gathered;
  ASSIGN_OR_RETURN(Shape shape, Shape::Make(dims));
  ASSIGN_OR_RETURN(Tensor out, Allocate(first.dtype(), shape, HostFor(strategy.worker_devices().front())));
  int64_t outer = 1;
  for (int32_t d = 0; d < normalized; ++d) outer *= first.shape().dim(d);
  std::vector<std::span<const char>> blocks;
  for (const Tensor& t : components) blocks.push_back(BytesOf(t));
  ConcatenateAlongAxis(blocks, outer, static_cast<char*>(out.data()));
  Dims dims_but_axis = first.shape().dims();
  dims_but_axis[static_cast<size_t>(normalized)] = -1;
  ASSIGN_OR_RETURN(Tensor all, strategy.workers().AllGatherAlongAxis(
                                   out, normalized,
                                   absl::StrCat("gather(axis ", normalized, ") of ", DTypeName(first.dtype()),
                                                "[", absl::StrJoin(dims_but_axis, ", "), "]"),
                                   strategy.NewDeadline()));
  ASSIGN_OR_RETURN(Tensor placed, all.PlacedOn(strategy.worker_devices().front()));
  return Value(std::move(placed));
}

absl::StatusOr<Destinations> DestinationsOf(const Value& value) {
  Destinations devices;
  if (value.is_variable()) {
    const Variable& variable = *value.variable();
    if (value.component_index() >= 0) return Destinations{variable.device(value.component_index())};
    for (int32_t i = 0; i < variable.num_copies(); ++i) devices.push_back(variable.device(i));
    return devices;
  }
  for (const Tensor& t : value.components()) devices.push_back(t.device());
  return devices;
}

absl::StatusOr<Destinations> DestinationsOf(absl::string_view device) {
  ASSIGN_OR_RETURN(DeviceSpec spec, DeviceSpec::Parse(device));
  ASSIGN_OR_RETURN(DeviceSpec resolved, ResolveLocalDevice(spec));
  return Destinations{resolved};
}

absl::StatusOr<std::vector<Value>> BatchReduceTo(Strategy& strategy, ReduceOp op,
                                                 std::span<const Value> values,
                                                 std::span<const Destinations> destinations) {
  RETURN_IF_ERROR(RequireCrossReplica(strategy, "reduce_to"));
  std::vector<Value> results;
  results.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const Destinations& to = destinations[i];
    absl::StatusOr<Tensor> reduced = ReduceAcross(strategy, op, values[i], to.front());
    if (!reduced.ok()) {
      return absl::Status(reduced.status().code(),
                          absl::StrCat("value ", i, ": ", reduced.status().message()));
    }
    if (to.size() == 1) {
      results.emplace_back(*std::move(reduced));
      continue;
    }
    std::vector<Tensor> copies{*reduced};
    for (size_t d = 1; d < to.size(); ++d) {
      ASSIGN_OR_RETURN(Tensor copy, reduced->CopyTo(to[d].ToString()));
      copies.push_back(std::move(copy));
    }
    ASSIGN_OR_RETURN(Value mirrored, Value::Mirrored(std::move(copies)));
    results.push_back(std::move(mirrored));
  }
  return results;
}

absl::StatusOr<std::optional<Value>> Update(Strategy& strategy, const Value& variable,
                                            UpdateFn fn, std::span<const Value> args, bool group) {
  RETURN_IF_ERROR(RequireCrossReplica(strategy, "update"));
  if (!variable.is_variable()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "update needs a variable, but the value is a ", ValueKindName(variable.kind())));
  }
  const std::shared_ptr<Variable>& state = variable.variable();
  const int32_t copies = variable.component_index() >= 0 ? 1 : state->num_copies();
  for (size_t a = 0; a < args.size(); ++a) {
    if (IsPerReplicaLike(args[a])) {
      return absl::InvalidArgumentError(absl::StrCat(
          "args[", a, "] is a ", ValueKindName(args[a].kind()),
          ": update arguments must not be per-replica (use reduce_to first)"));
    }
    if (args[a].kind() == ValueKind::kMirrored && args[a].num_components() != copies) {
      return absl::InvalidArgumentError(absl::StrCat(
          "args[", a, "] is a Mirrored value with ", args[a].num_components(),
          " components but the variable has ", copies, " copies"));
    }
  }
  std::shared_ptr<Strategy> self = strategy.shared_from_this();
  std::vector<std::optional<Value>> results;
  for (int32_t i = 0; i < copies; ++i) {
    // fn gets each copy, as TF's update passes each device's variable: a distributed
    // variable's one copy on this worker too (assigning it must not aggregate again).
    const bool whole = copies == 1 && (variable.component_index() >= 0 || !variable.is_distributed());
    const Value target = whole ? variable : Value::VariableComponent(state, i);
    std::vector<Value> unwrapped;
    for (const Value& arg : args) {
      if (arg.kind() == ValueKind::kMirrored) {
        ASSIGN_OR_RETURN(Value part, arg.Component(copies == 1 ? 0 : i));
        unwrapped.push_back(std::move(part));
      } else {
        unwrapped.push_back(arg);
      }
    }
    ScopedFrame frame(Frame{FrameKind::kUpdate, self});
    ASSIGN_OR_RETURN(std::optional<Value> result, fn(target, unwrapped));
    results.push_back(std::move(result));
  }
  const bool any = std::any_of(results.begin(), results.end(), [](auto& r) { return r.has_value(); });
  if (!any) return std::optional<Value>();
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the update function returned a value for one copy but not for copy ", i));
    }
    ASSIGN_OR_RETURN(const Tensor* tensor, results[i]->AsTensor());
    tensors.push_back(*tensor);
  }
  if (tensors.size() == 1) return std::optional<Value>(Value(tensors.front()));
  if (group) {
    ASSIGN_OR_RETURN(Value merged, Value::Mirrored(std::move(tensors)));
    return std::optional<Value>(std::move(merged));
  }
  ASSIGN_OR_RETURN(Value per_replica, Value::PerReplica(std::move(tensors)));
  return std::optional<Value>(std::move(per_replica));
}

absl::StatusOr<Value> DistributeValuesFromFunction(Strategy& strategy, ValueFn fn) {
  RETURN_IF_ERROR(RequireCrossReplica(strategy, "distribute_values_from_function"));
  std::vector<Tensor> components;
  for (int32_t r = 0; r < strategy.num_replicas(); ++r) {
    const int32_t id = strategy.first_replica_in_sync() + r;
    ASSIGN_OR_RETURN(std::optional<Value> produced, fn(id, strategy.num_replicas_in_sync()));
    if (!produced.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("fn for replica ", id, " stored no value"));
    }
    absl::StatusOr<const Tensor*> tensor = produced->AsTensor();
    if (!tensor.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("fn for replica ", id, ": ", tensor.status().message()));
    }
    components.push_back(**tensor);
  }
  // A lone replica's value is the value itself, unless other workers hold replicas too
  // (TF wraps it then, as run's results: a cross-replica reduction must span every worker).
  if (components.size() == 1 && strategy.num_workers() == 1) return Value(components.front());
  return Value::PerReplica(std::move(components));
}

Value ValueContainer(const Value& value) {
  if (value.is_variable() && value.component_index() >= 0) return Value::OfVariable(value.variable());
  return value;
}

absl::StatusOr<bool> VariableCreatedInScope(const Strategy& strategy, const Value& variable) {
  if (!variable.is_variable()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable is a ", ValueKindName(variable.kind()), ", not a variable"));
  }
  return variable.variable()->strategy_id() == strategy.id();
}

absl::Status ColocateVarsWithEnter(const Strategy& strategy, const Value& variable) {
  if (!variable.is_variable()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable is a ", ValueKindName(variable.kind()), ", not a variable"));
  }
  // TF's validate_colocate: a variable of another strategy would be looked up among this
  // one's (under ParameterServer by name: an unrelated variable of that name, or none).
  // Outside this strategy's scope ColocateEnter's FailedPrecondition comes first.
  const ThreadContext& thread = ThreadContext::Current();
  const bool in_scope = thread.top_kind() == FrameKind::kScope && thread.strategy().get() == &strategy;
  if (in_scope && variable.variable()->strategy_id() != strategy.id()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "colocate_vars_with must be passed a variable created in this strategy's scope; ",
        Quoted(variable.variable()->name()), " belongs to another strategy"));
  }
  ASSIGN_OR_RETURN(Destinations devices, DestinationsOf(variable));
  return ThreadContext::Current().ColocateEnter(&strategy, std::move(devices),
                                                variable.variable()->name());
}

}  // namespace distribute
