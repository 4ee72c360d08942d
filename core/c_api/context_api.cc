// C entry points for the replica context: identity and collectives.
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/current_context_handle.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/c_api/value_args.h"
#include "core/strategy/replica_context.h"
#include "core/strategy/thread_context.h"
#include "core/strategy/variable_ops.h"
#include "core/util/status_macros.h"
#include "distribute/context.h"

using distribute::ReplicaContext;
using distribute::Tensor;
using distribute::Value;
using distribute::c_api::CheckHandle;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

// A collective's input behind a handle: the handle's tensor, or a variable's value read
// into `*read`.
absl::StatusOr<const Tensor*> InputTensor(const dist_value_t* value, absl::string_view name,
                                          std::optional<Tensor>* read) {
  RETURN_IF_ERROR(CheckHandle(value, name));
  return distribute::CollectiveInput(value->value, read);
}

// The context behind a handle that must be this thread's current replica context.
absl::StatusOr<ReplicaContext*> Current(dist_context_t* context) {
  RETURN_IF_ERROR(CheckHandle(context, "context"));
  ReplicaContext* replica = context->context;
  RETURN_IF_ERROR(distribute::RequireCurrentReplicaContext(*replica));
  return replica;
}

// Shared body of the single-tensor collectives.
dist_status_t Collective(const char* function, dist_context_t* context, const dist_value_t* value,
                         dist_value_t** out,
                         absl::FunctionRef<absl::StatusOr<Tensor>(ReplicaContext&, const Tensor&)> body) {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(ReplicaContext * replica, Current(context));
    std::optional<Tensor> read;
    ASSIGN_OR_RETURN(const Tensor* input, InputTensor(value, "value", &read));
    absl::StatusOr<Tensor> result = body(*replica, *input);
    if (!result.ok()) return result.status();
    *out = new dist_value(*std::move(result));
    return absl::OkStatus();
  });
}

}  // namespace

extern "C" {

dist_status_t dist_context_replica_id(const dist_context_t* context, int32_t* out_replica_id) {
  ClearOut(out_replica_id);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(context, "context"));
    if (out_replica_id == nullptr) return NullArgument("out_replica_id");
    *out_replica_id = context->context->replica_id_in_sync_group();
    return absl::OkStatus();
  });
}

dist_status_t dist_context_num_replicas_in_sync(const dist_context_t* context, int32_t* out_count) {
  ClearOut(out_count);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(context, "context"));
    if (out_count == nullptr) return NullArgument("out_count");
    *out_count = context->context->num_replicas_in_sync();
    return absl::OkStatus();
  });
}

dist_status_t dist_context_strategy(const dist_context_t* context, dist_strategy_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(context, "context"));
    if (out == nullptr) return NullArgument("out");
    *out = new dist_strategy(context->context->strategy_ref());
    return absl::OkStatus();
  });
}

dist_status_t dist_context_device(const dist_context_t* context, const char** out_borrowed_device) {
  ClearOut(out_borrowed_device);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(context, "context"));
    if (out_borrowed_device == nullptr) return NullArgument("out_borrowed_device");
    *out_borrowed_device = context->context->device_name().c_str();
    return absl::OkStatus();
  });
}

dist_status_t dist_context_set_timeout_ms(dist_context_t* context, int64_t timeout_ms) {
  return Guard(__func__, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ReplicaContext * replica, Current(context));
    return replica->SetTimeoutMs(timeout_ms);
  });
}

dist_status_t dist_context_all_reduce(dist_context_t* context, dist_reduce_op_t op,
                                      const dist_value_t* value, dist_value_t** out) {
  return Collective(__func__, context, value, out,
                    [op](ReplicaContext& replica, const Tensor& input) -> absl::StatusOr<Tensor> {
                      ASSIGN_OR_RETURN(distribute::ReduceOp reduce_op, distribute::ReduceOpFromInt(op));
                      return replica.AllReduce(reduce_op, input);
                    });
}

dist_status_t dist_context_all_reduce_into(dist_context_t* context, dist_reduce_op_t op,
                                           const dist_value_t* value, dist_value_t* out) {
  return Guard(__func__, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ReplicaContext * replica, Current(context));
    std::optional<Tensor> read;
    ASSIGN_OR_RETURN(const Tensor* input, InputTensor(value, "value", &read));
    RETURN_IF_ERROR(CheckHandle(out, "out"));
    absl::StatusOr<const Tensor*> target = out->value.AsTensor();
    if (!target.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("out: ", target.status().message()));
    }
    ASSIGN_OR_RETURN(distribute::ReduceOp reduce_op, distribute::ReduceOpFromInt(op));
    return replica->AllReduceInto(reduce_op, *input, **target);
  });
}

dist_status_t dist_context_batch_all_reduce(dist_context_t* context, dist_reduce_op_t op,
                                            const dist_value_t* const* values, int32_t count,
                                            dist_value_t** outs) {
  if (outs != nullptr) {
    for (int32_t i = 0; i < count; ++i) outs[i] = nullptr;
  }
  return Guard(__func__, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ReplicaContext * replica, Current(context));
    if (count < 1) return absl::InvalidArgumentError(absl::StrCat("count is ", count, ": expected >= 1"));
    if (values == nullptr) return NullArgument("values");
    if (outs == nullptr) return NullArgument("outs");
    ASSIGN_OR_RETURN(distribute::ReduceOp reduce_op, distribute::ReduceOpFromInt(op));
    std::vector<Tensor> inputs;
    for (int32_t i = 0; i < count; ++i) {
      std::optional<Tensor> read;
      ASSIGN_OR_RETURN(const Tensor* input, InputTensor(values[i], absl::StrCat("values[", i, "]"), &read));
      inputs.push_back(read.has_value() ? *std::move(read) : *input);
    }
    ASSIGN_OR_RETURN(std::vector<Tensor> results, replica->BatchAllReduce(reduce_op, inputs));
    for (int32_t i = 0; i < count; ++i) outs[i] = new dist_value(std::move(results[i]));
    return absl::OkStatus();
  });
}

dist_status_t dist_context_all_gather(dist_context_t* context, const dist_value_t* value,
                                      int32_t axis, dist_value_t** out) {
  return Collective(__func__, context, value, out,
                    [axis](ReplicaContext& replica, const Tensor& input) {
                      return replica.AllGather(input, axis);
                    });
}

dist_status_t dist_context_broadcast(dist_context_t* context, const dist_value_t* value,
                                     int32_t source_replica, dist_value_t** out) {
  return Collective(__func__, context, value, out,
                    [source_replica](ReplicaContext& replica, const Tensor& input) {
                      return replica.Broadcast(input, source_replica);
                    });
}

dist_status_t dist_context_merge_call(dist_context_t* context, dist_merge_fn fn,
                                      void* user_data, const dist_value_t* const* args,
                                      int32_t num_args, dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(ReplicaContext * replica, Current(context));
    if (fn == nullptr) return NullArgument("fn");
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(std::vector<Value> values, distribute::c_api::ValuesOf(args, num_args, "args"));
    ASSIGN_OR_RETURN(
        std::optional<Value> result,
        replica->MergeCall(values, [&](std::span<const Value> gathered)
                                       -> absl::StatusOr<std::optional<Value>> {
          dist_strategy strategy(replica->strategy_ref());
          strategy.MarkBorrowed();
          distribute::c_api::HandleArray handles(gathered);
          dist_value_t* produced = nullptr;
          distribute::c_api::ClearLastError();
          const dist_status_t code = fn(&strategy, handles.data(), handles.size(), &produced, user_data);
          return distribute::c_api::TakeCallbackResult(code, produced, "merge_call's fn", "out");
        }));
    if (result.has_value()) *out = new dist_value(std::move(*result));
    return absl::OkStatus();
  });
}

dist_status_t dist_context_leave(dist_context_t* context) {
  return Guard(__func__, [&]() -> absl::Status {
    if (context == nullptr) return absl::OkStatus();
    RETURN_IF_ERROR(CheckHandle(context, "context"));
    ReplicaContext* replica = context->context;
    RETURN_IF_ERROR(replica->strategy().LeaveReplica(*replica));
    // Only a joined replica's own handle owns its context: the core refuses every other
    // context above, and the current-context lookup hands out that very handle.
    distribute::c_api::ClearJoinedContextHandle(context);
    DestroyHandle(context);
    return absl::OkStatus();
  });
}

}  // extern "C"
