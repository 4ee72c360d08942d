#include "core/strategy/replica_context.h"

#include <algorithm>

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/kernels/reduce_op.h"
#include "core/strategy/integer_mean.h"
#include "core/strategy/strategy.h"
#include "core/strategy/thread_context.h"
#include "core/util/quote.h"
#include "core/util/status_macros.h"
#include "core/values/variable.h"

namespace distribute {
namespace {

// A new tensor on `device` with `like`'s dtype and shape, contents undefined.
absl::StatusOr<Tensor> AllocateLike(const Tensor& like, const DeviceSpec& device) {
  ASSIGN_OR_RETURN(std::shared_ptr<Buffer> buffer, Buffer::Allocate(device, like.byte_size(), false));
  return Tensor::FromBuffer(like.dtype(), like.shape(), std::move(buffer));
}

// Whether `a` and `b` are the same memory for a collective: host memory (any CPU device),
// or the same GPU.
bool SameMemory(const DeviceSpec& a, const DeviceSpec& b) {
  const bool a_gpu = a.type == DeviceType::kGpu;
  const bool b_gpu = b.type == DeviceType::kGpu;
  return a_gpu == b_gpu && (!a_gpu || a.index == b.index);
}

// Why `out` cannot take the all-reduce of `value` under `op` among `replicas`, if it
// cannot: it must have the result's dtype and value's shape.
absl::Status CheckIntoTarget(const Tensor& value, ReduceOp op, int32_t replicas, const Tensor& out) {
  const DType dtype = replicas > 1 ? ReducedDType(value.dtype(), op) : value.dtype();
  if (out.dtype() != dtype || !(out.shape() == value.shape())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "out is ", DTypeName(out.dtype()), out.shape().ToString(), ": the all-reduce of ",
        DTypeName(value.dtype()), value.shape().ToString(), " (", ReduceOpName(op), ") is ",
        DTypeName(dtype), value.shape().ToString()));
  }
  return absl::OkStatus();
}

}  // namespace

ReplicaContext::ReplicaContext(Strategy& strategy, int32_t replica_id, bool joined)
    : strategy_(strategy), replica_id_(replica_id), joined_(joined) {}

ReplicaContext& ReplicaContext::DefaultContext() {
  static ReplicaContext* context = new ReplicaContext(*Strategy::Default(), 0, false);
  return *context;
}

std::shared_ptr<Strategy> ReplicaContext::strategy_ref() const { return strategy_.shared_from_this(); }

int32_t ReplicaContext::num_replicas() const { return strategy_.num_replicas(); }

int32_t ReplicaContext::replica_id_in_sync_group() const {
  return strategy_.first_replica_in_sync() + replica_id_;
}

int32_t ReplicaContext::num_replicas_in_sync() const { return strategy_.num_replicas_in_sync(); }

const DeviceSpec& ReplicaContext::device() const {
  return strategy_.worker_devices()[static_cast<size_t>(replica_id_)];
}

const std::string& ReplicaContext::device_name() const {
  return strategy_.worker_names()[static_cast<size_t>(replica_id_)];
}

Deadline ReplicaContext::NewDeadline() const {
  return timeout_ms_ > 0 ? Deadline::AfterMs(timeout_ms_) : strategy_.NewDeadline();
}

absl::Status ReplicaContext::SetTimeoutMs(int64_t timeout_ms) {
  if (timeout_ms < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "timeout_ms is ", timeout_ms, ": expected a positive number of milliseconds, or 0 for "
                                      "the strategy's timeout"));
  }
  if (this == &DefaultContext()) {
    return absl::FailedPreconditionError(
        "the default replica context is shared by every thread and never waits: its timeout "
        "cannot be set");
  }
  timeout_ms_ = timeout_ms;
  return absl::OkStatus();
}

absl::StatusOr<Tensor> ReplicaContext::AllReduce(ReduceOp op, const Tensor& value) {
  if (num_replicas_in_sync() == 1 || IsIntegerMean(value.dtype(), op)) {
    ASSIGN_OR_RETURN(std::vector<Tensor> out, BatchAllReduce(op, std::span<const Tensor>(&value, 1)));
    return std::move(out.front());
  }
  // The common case, without BatchAllReduce's vectors (a small all-reduce's hot path): a
  // new tensor in this replica's memory, which AllReduceInto checks and fills.
  absl::StatusOr<Tensor> out = AllocateLike(value, device());
  if (!out.ok()) return strategy_.collective().FailTogether(replica_id_, out.status(), NewDeadline());
  RETURN_IF_ERROR(AllReduceInto(op, value, *out));
  return out;
}

absl::Status ReplicaContext::AllReduceInto(ReduceOp op, const Tensor& value, const Tensor& out) {
  absl::Status local = CheckReducible(value.dtype(), op);
  if (local.ok()) local = CheckIntoTarget(value, op, num_replicas_in_sync(), out);
  if (num_replicas_in_sync() == 1) {
    RETURN_IF_ERROR(local);
    if (out.data() == value.data()) return absl::OkStatus();
    return CopyBytes(*out.buffer(), *value.buffer(), value.byte_size());
  }
  if (!local.ok()) return strategy_.collective().FailTogether(replica_id_, local, NewDeadline());
  if (IsIntegerMean(value.dtype(), op) || !SameMemory(out.device(), device())) {
    ASSIGN_OR_RETURN(Tensor result, AllReduce(op, value));
    return CopyBytes(*out.buffer(), *result.buffer(), result.byte_size());
  }
  return strategy_.collective().AllReduce(replica_id_, op, std::span<const Tensor>(&value, 1),
                                          std::span<const Tensor>(&out, 1), NewDeadline());
}

absl::StatusOr<std::vector<Tensor>> ReplicaContext::BatchAllReduce(ReduceOp op,
                                                                   std::span<const Tensor> values) {
  std::vector<Tensor> outputs;
  outputs.reserve(values.size());
  absl::Status local;
  for (size_t i = 0; i < values.size() && local.ok(); ++i) {
    local = CheckReducible(values[i].dtype(), op);
    if (local.ok()) {
      absl::StatusOr<Tensor> out = AllocateLike(values[i], device());
      if (out.ok()) {
        outputs.push_back(*std::move(out));
      } else {
        local = out.status();
      }
    }
  }
  if (num_replicas_in_sync() == 1) {
    // One replica: every op of one value is that value; no rendezvous (the default
    // context may be shared by several threads).
    RETURN_IF_ERROR(local);
    for (size_t i = 0; i < values.size(); ++i) {
      RETURN_IF_ERROR(CopyBytes(*outputs[i].buffer(), *values[i].buffer(), values[i].byte_size()));
    }
    return outputs;
  }
  if (!local.ok()) return strategy_.collective().FailTogether(replica_id_, local, NewDeadline());
  const bool any_integer_mean = std::any_of(values.begin(), values.end(), [op](const Tensor& t) {
    return IsIntegerMean(t.dtype(), op);
  });
  if (!any_integer_mean) {  // the common case: one collective, no regrouping
    RETURN_IF_ERROR(strategy_.collective().AllReduce(replica_id_, op, values, outputs, NewDeadline()));
    return outputs;
  }
  // Integers under MEAN are summed in a collective of their own and divided here
  // (integer_mean.h); every replica makes the same two calls, each skipped when empty.
  std::vector<Tensor> in[2], out[2];
  for (size_t i = 0; i < values.size(); ++i) {
    const int k = IsIntegerMean(values[i].dtype(), op) ? 1 : 0;
    in[k].push_back(values[i]);
    out[k].push_back(outputs[i]);
  }
  const ReduceOp ops[2] = {op, ReduceOp::kSum};
  for (int k = 0; k < 2; ++k) {
    if (in[k].empty()) continue;
    RETURN_IF_ERROR(strategy_.collective().AllReduce(replica_id_, ops[k], in[k], out[k], NewDeadline()));
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (!IsIntegerMean(values[i].dtype(), op)) continue;
    ASSIGN_OR_RETURN(outputs[i], IntegerMean(outputs[i], num_replicas_in_sync(), device()));
  }
  return outputs;
}

absl::StatusOr<Tensor> ReplicaContext::AllGather(const Tensor& value, int32_t axis) {
  const int32_t rank = value.shape().rank();
  const int32_t normalized = axis < 0 ? axis + rank : axis;
  if (rank == 0 || normalized < 0 || normalized >= rank) {
    const absl::Status bad = absl::InvalidArgumentError(absl::StrCat(
        "axis ", axis, " is out of range for a tensor of rank ", rank,
        rank == 0 ? ": scalars cannot be gathered along an axis" : ""));
    if (num_replicas_in_sync() == 1) return bad;
    return strategy_.collective().FailTogether(replica_id_, bad, NewDeadline());
  }
  if (num_replicas_in_sync() == 1) return value.CopyTo(device_name());
  return strategy_.collective().AllGather(replica_id_, value, normalized, device(), NewDeadline());
}

absl::StatusOr<Tensor> ReplicaContext::Broadcast(const Tensor& value, int32_t source_replica) {
  if (source_replica < 0 || source_replica >= num_replicas_in_sync()) {
    const absl::Status bad = absl::InvalidArgumentError(
        absl::StrCat("source_replica ", source_replica, " is out of range: there are ",
                     num_replicas_in_sync(), " replicas"));
    if (num_replicas_in_sync() == 1) return bad;
    return strategy_.collective().FailTogether(replica_id_, bad, NewDeadline());
  }
  if (num_replicas_in_sync() == 1) return value.CopyTo(device_name());
  return strategy_.collective().Broadcast(replica_id_, value, source_replica, device(), NewDeadline());
}

absl::Status ReplicaContext::Sync() {
  if (num_replicas() == 1) return absl::OkStatus();
  return strategy_.collective().Sync(replica_id_, NewDeadline());
}

absl::StatusOr<std::optional<Value>> ReplicaContext::MergeCall(std::span<const Value> args,
                                                               MergeFn fn) {
  const int32_t n = num_replicas();
  std::shared_ptr<Strategy> self = strategy_ref();
  if (n == 1) {
    // One replica: merge_call's function runs right here, in cross-replica context.
    ScopedFrame frame(Frame{FrameKind::kMerge, self});
    if (strategy_.num_workers() == 1) return fn(args);
    // A multi-worker replica has peers on other workers: as in TF (and as run's results),
    // its tensors reach fn as PerReplica values of one component, so that cross-replica
    // reductions in fn span every worker; fn's result is unwrapped for this replica.
    std::vector<Value> wrapped;
    for (size_t i = 0; i < args.size(); ++i) {
      ASSIGN_OR_RETURN(Value value, Regroup(args.subspan(i, 1), absl::StrCat("merge_call argument ", i),
                                            /*always_wrap=*/true));
      wrapped.push_back(std::move(value));
    }
    ASSIGN_OR_RETURN(std::optional<Value> result, fn(wrapped));
    if (!result.has_value()) return result;
    ASSIGN_OR_RETURN(Value part, PartForReplica(*result, 0, 1));
    return std::optional<Value>(std::move(part));
  }
  using Arguments = std::span<const Value>;
  auto leader = [&](std::span<const Arguments* const> payloads) -> absl::StatusOr<std::optional<Value>> {
    std::vector<Value> gathered;
    for (size_t i = 0; i < args.size(); ++i) {
      std::vector<Value> per_replica;
      for (int32_t q = 0; q < n; ++q) per_replica.push_back((*payloads[q])[i]);
      ASSIGN_OR_RETURN(Value value, Regroup(per_replica, absl::StrCat("merge_call argument ", i)));
      gathered.push_back(std::move(value));
    }
    ScopedFrame frame(Frame{FrameKind::kMerge, self});
    return fn(gathered);
  };
  ASSIGN_OR_RETURN(std::shared_ptr<const std::optional<Value>> shared,
                   (strategy_.collective().Merge<Arguments, std::optional<Value>>(
                       replica_id_, args, static_cast<int32_t>(args.size()), leader, NewDeadline())));
  const std::optional<Value>& result = *shared;
  if (!result.has_value()) return std::optional<Value>();
  ASSIGN_OR_RETURN(Value part, PartForReplica(*result, replica_id_, n));
  return std::optional<Value>(std::move(part));
}

absl::StatusOr<Value> Regroup(std::span<const Value> per_replica, absl::string_view what,
                              bool always_wrap) {
  const Value& first = per_replica.front();
  if (per_replica.size() == 1 && !(always_wrap && first.kind() == ValueKind::kTensor)) return first;
  if (first.is_variable()) {
    for (size_t q = 1; q < per_replica.size(); ++q) {
      if (per_replica[q].variable() != first.variable() ||
          per_replica[q].component_index() != first.component_index()) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": replica 0 passed variable ", Quoted(first.variable()->name()), " but replica ", q,
            " passed something else; every replica must pass the same variable"));
      }
    }
    return first;
  }
  std::vector<Tensor> tensors;
  for (size_t q = 0; q < per_replica.size(); ++q) {
    absl::StatusOr<const Tensor*> tensor = per_replica[q].AsTensor();
    if (!tensor.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(what, " from replica ", q, ": ",
                                                     tensor.status().message()));
    }
    tensors.push_back(**tensor);
  }
  return Value::PerReplica(std::move(tensors));
}

absl::StatusOr<Value> PartForReplica(const Value& value, int32_t replica, int32_t num_replicas) {
  if (value.kind() != ValueKind::kPerReplica && value.kind() != ValueKind::kMirrored) return value;
  if (value.num_components() != num_replicas) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ", ValueKindName(value.kind()), " has ", value.num_components(),
        " components but the strategy has ", num_replicas, " replicas"));
  }
  return value.Component(replica);
}

absl::StatusOr<std::vector<std::vector<Value>>> UnwrapForReplicas(std::span<const Value> args,
                                                                  int32_t num_replicas) {
  std::vector<std::vector<Value>> unwrapped(static_cast<size_t>(num_replicas));
  for (size_t a = 0; a < args.size(); ++a) {
    const Value& arg = args[a];
    const bool split = arg.kind() == ValueKind::kPerReplica || arg.kind() == ValueKind::kMirrored;
    if (split && arg.num_components() != num_replicas) {
      return absl::InvalidArgumentError(absl::StrCat("args[", a, "] has ", arg.num_components(),
                                                     " components but the strategy has ",
                                                     num_replicas, " replicas"));
    }
    for (int32_t r = 0; r < num_replicas; ++r) {
      if (split) {
        ASSIGN_OR_RETURN(Value part, arg.Component(r));
        unwrapped[static_cast<size_t>(r)].push_back(std::move(part));
      } else {
        unwrapped[static_cast<size_t>(r)].push_back(arg);
      }
    }
  }
  return unwrapped;
}

absl::StatusOr<std::optional<Value>> MergeResults(std::span<std::optional<Value>> per_replica,
                                                  int32_t slot, bool always_wrap) {
  std::vector<Value> values;
  int32_t missing = -1;
  int32_t present = -1;
  for (size_t r = 0; r < per_replica.size(); ++r) {
    if (per_replica[r].has_value()) {
      values.push_back(*per_replica[r]);
      if (present < 0) present = static_cast<int32_t>(r);
    } else if (missing < 0) {
      missing = static_cast<int32_t>(r);
    }
  }
  if (values.empty()) return std::optional<Value>();
  if (missing >= 0) {
    return absl::InvalidArgumentError(absl::StrCat("result ", slot, ": replica ", present,
                                                   " returned a value but replica ", missing,
                                                   " did not"));
  }
  ASSIGN_OR_RETURN(Value merged, Regroup(values, absl::StrCat("result ", slot), always_wrap));
  return std::optional<Value>(std::move(merged));
}

}  // namespace distribute
