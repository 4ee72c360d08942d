// C entry points for the arguments of a scheduled function (coordinator.h): built on the
// coordinator, or lent to a closure function on a worker.
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/coordinator/closure_arguments.h"
#include "core/strategy/ps_variables.h"
#include "core/util/status_macros.h"
#include "core/values/variable.h"
#include "distribute/coordinator.h"

using distribute::Tensor;
using distribute::Value;
using distribute::ValueKind;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;
using distribute::coordinator::ArgumentKind;
using distribute::coordinator::ClosureArgument;
using distribute::coordinator::kMaxClosureArgumentBytes;
using distribute::coordinator::kMaxClosureArguments;

namespace {

absl::Status CheckBuildable(const dist_closure_args_t* args) {
  RETURN_IF_ERROR(CheckHandle(args, "args"));
  if (args->arguments.on_worker) {
    return absl::InvalidArgumentError("args were lent to a closure function: they cannot be changed");
  }
  if (args->arguments.items.size() >= static_cast<size_t>(kMaxClosureArguments)) {
    return absl::InvalidArgumentError(absl::StrCat("a closure takes at most ", kMaxClosureArguments, " arguments"));
  }
  return absl::OkStatus();
}

void Append(dist_closure_args_t* args, ClosureArgument argument) {
  std::unique_ptr<dist_value> lent;
  if (argument.value.has_value()) {
    lent = std::make_unique<dist_value>(*argument.value);
    lent->MarkBorrowed();
  }
  args->lent_values.push_back(std::move(lent));
  args->lent_iterators.push_back(nullptr);
  args->arguments.items.push_back(std::move(argument));
}

absl::StatusOr<const ClosureArgument*> ArgumentAt(const dist_closure_args_t* args, int32_t index) {
  RETURN_IF_ERROR(CheckHandle(args, "args"));
  if (index < 0 || static_cast<size_t>(index) >= args->arguments.items.size()) {
    return absl::OutOfRangeError(
        absl::StrCat("index is ", index, ": the list has ", args->arguments.items.size(), " arguments"));
  }
  return &args->arguments.items[static_cast<size_t>(index)];
}

}  // namespace

extern "C" {

dist_status_t dist_closure_args_create(dist_closure_args_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    *out = new dist_closure_args();
    return absl::OkStatus();
  });
}

void dist_closure_args_destroy(dist_closure_args_t* args) { DestroyHandle(args); }

dist_status_t dist_closure_args_add_value(dist_closure_args_t* args, const dist_value_t* value) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckBuildable(args));
    RETURN_IF_ERROR(CheckHandle(value, "value"));
    ClosureArgument argument;
    const Value& v = value->value;
    if (v.kind() == ValueKind::kVariable && v.is_variable()) {
      if (absl::Status ps = distribute::PsStorageOf(v).status(); !ps.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("value: ", ps.message()));
      }
      argument.kind = ArgumentKind::kVariable;
    } else if (v.kind() == ValueKind::kTensor && !v.is_variable()) {
      ASSIGN_OR_RETURN(const Tensor* tensor, v.AsTensor());
      if (tensor->device().type != distribute::DeviceType::kCpu) {
        return absl::InvalidArgumentError(absl::StrCat("value is on ", tensor->device_name(),
                                                       ": closures carry host (CPU) tensors"));
      }
      if (tensor->byte_size() > kMaxClosureArgumentBytes - args->tensor_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the tensors of one closure's arguments may hold ", kMaxClosureArgumentBytes,
            " bytes together: this one (", tensor->byte_size(), " bytes) does not fit"));
      }
      args->tensor_bytes += tensor->byte_size();
      argument.kind = ArgumentKind::kTensor;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "value is a ", distribute::ValueKindName(v.kind()),
          ": a closure takes tensors and variables of a ParameterServerStrategy"));
    }
    argument.value = v;
    Append(args, std::move(argument));
    return absl::OkStatus();
  });
}

dist_status_t dist_closure_args_add_per_worker(dist_closure_args_t* args, const dist_per_worker_t* value) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckBuildable(args));
    RETURN_IF_ERROR(CheckHandle(value, "value"));
    if (!value->resource->is_iterator()) {
      return absl::InvalidArgumentError(
          "value is a per-worker dataset: pass a per-worker iterator (dist_per_worker_make_iterator)");
    }
    ClosureArgument argument;
    argument.kind = ArgumentKind::kIterator;
    argument.per_worker = value->resource;
    Append(args, std::move(argument));
    return absl::OkStatus();
  });
}

dist_status_t dist_closure_args_count(const dist_closure_args_t* args, int32_t* out_count) {
  return distribute::c_api::Accessor(__func__, args, "args", out_count, "out_count",
                                     [](const dist_closure_args& a, int32_t& count) {
                                       count = static_cast<int32_t>(a.arguments.items.size());
                                       return absl::OkStatus();
                                     });
}

dist_status_t dist_closure_args_kind(const dist_closure_args_t* args, int32_t index,
                                     dist_closure_arg_kind_t* out_kind) {
  ClearOut(out_kind);
  return Guard(__func__, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(const ClosureArgument* argument, ArgumentAt(args, index));
    if (out_kind == nullptr) return NullArgument("out_kind");
    *out_kind = static_cast<dist_closure_arg_kind_t>(argument->kind);
    return absl::OkStatus();
  });
}

dist_status_t dist_closure_args_value(const dist_closure_args_t* args, int32_t index, dist_value_t** out_value) {
  ClearOut(out_value);
  return Guard(__func__, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(const ClosureArgument* argument, ArgumentAt(args, index));
    if (out_value == nullptr) return NullArgument("out_value");
    dist_value* lent = args->lent_values[static_cast<size_t>(index)].get();
    if (argument->kind == ArgumentKind::kIterator || lent == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", index, " is a per-worker iterator: use dist_closure_args_iterator"));
    }
    *out_value = lent;
    return absl::OkStatus();
  });
}

dist_status_t dist_closure_args_iterator(const dist_closure_args_t* args, int32_t index,
                                         dist_iterator_t** out_iterator) {
  ClearOut(out_iterator);
  return Guard(__func__, [&]() -> absl::Status {
    ASSIGN_OR_RETURN(const ClosureArgument* argument, ArgumentAt(args, index));
    if (out_iterator == nullptr) return NullArgument("out_iterator");
    if (argument->kind != ArgumentKind::kIterator) {
      return absl::InvalidArgumentError(absl::StrCat("argument ", index, " is not a per-worker iterator"));
    }
    dist_iterator* lent = args->lent_iterators[static_cast<size_t>(index)].get();
    if (lent == nullptr) {
      return absl::InvalidArgumentError(
          "a per-worker iterator has a component only on a worker, inside a closure function");
    }
    *out_iterator = lent;
    return absl::OkStatus();
  });
}

}  // extern "C"
