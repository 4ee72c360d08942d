// C entry points for the coordinator, its remote values and its per-worker datasets and
// iterators (coordinator.h).
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/coordinator/coordinator.h"
#include "core/util/status_macros.h"
#include "distribute/coordinator.h"

using distribute::InputOptions;
using distribute::Tensor;
using distribute::Value;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;
using distribute::coordinator::ClosureArguments;
using distribute::coordinator::Coordinator;
using distribute::coordinator::PerWorkerResource;
using distribute::coordinator::RemoteValue;

namespace {

absl::Status CheckFunctionName(const char* name, absl::string_view argument) {
  if (name == nullptr) return NullArgument(argument);
  return absl::OkStatus();  // the core checks the name itself
}

dist_status_t CreatePerWorkerDataset(const char* function, dist_coordinator_t* coordinator,
                                     const char* dataset_function, const dist_input_options_t* options,
                                     bool from_function, dist_per_worker_t** out) {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(coordinator, "coordinator"));
    RETURN_IF_ERROR(CheckFunctionName(dataset_function, "dataset_function"));
    RETURN_IF_ERROR(distribute::c_api::CheckOptionalHandle(options, "options"));
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(std::shared_ptr<PerWorkerResource> resource,
                     coordinator->coordinator->CreatePerWorkerDataset(
                         dataset_function, options != nullptr ? options->options : InputOptions{}, from_function));
    *out = new dist_per_worker(std::move(resource));
    return absl::OkStatus();
  });
}

}  // namespace

extern "C" {

dist_status_t dist_coordinator_create(dist_strategy_t* strategy, dist_coordinator_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(std::unique_ptr<Coordinator> coordinator, Coordinator::Create(strategy->strategy));
    *out = new dist_coordinator(std::move(coordinator));
    return absl::OkStatus();
  });
}

void dist_coordinator_destroy(dist_coordinator_t* coordinator) { DestroyHandle(coordinator); }

dist_status_t dist_coordinator_schedule(dist_coordinator_t* coordinator, const char* function,
                                        const dist_closure_args_t* args, dist_remote_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(coordinator, "coordinator"));
    RETURN_IF_ERROR(CheckFunctionName(function, "function"));
    RETURN_IF_ERROR(distribute::c_api::CheckOptionalHandle(args, "args"));
    if (out == nullptr) return NullArgument("out");
    static const ClosureArguments kNone;
    ASSIGN_OR_RETURN(std::shared_ptr<RemoteValue> value,
                     coordinator->coordinator->Schedule(function, args != nullptr ? args->arguments : kNone));
    *out = new dist_remote_value(std::move(value));
    return absl::OkStatus();
  });
}

dist_status_t dist_coordinator_join(dist_coordinator_t* coordinator) {
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(coordinator, "coordinator"));
    return coordinator->coordinator->Join();
  });
}

dist_status_t dist_coordinator_done(dist_coordinator_t* coordinator, int32_t* out_done) {
  ClearOut(out_done);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(coordinator, "coordinator"));
    if (out_done == nullptr) return NullArgument("out_done");
    ASSIGN_OR_RETURN(const bool done, coordinator->coordinator->Done());
    *out_done = done ? 1 : 0;
    return absl::OkStatus();
  });
}

dist_status_t dist_coordinator_num_workers(const dist_coordinator_t* coordinator, int32_t* out_count) {
  return distribute::c_api::Accessor(__func__, coordinator, "coordinator", out_count, "out_count",
                                     [](const dist_coordinator& c, int32_t& count) {
                                       count = c.coordinator->num_workers();
                                       return absl::OkStatus();
                                     });
}

dist_status_t dist_remote_value_fetch(dist_remote_value_t* value, dist_value_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(value, "value"));
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(std::optional<Tensor> result, value->value->Fetch());
    if (result.has_value()) *out = new dist_value(Value(*std::move(result)));
    return absl::OkStatus();
  });
}

dist_status_t dist_remote_value_is_ready(const dist_remote_value_t* value, int32_t* out_ready) {
  return distribute::c_api::Accessor(__func__, value, "value", out_ready, "out_ready",
                                     [](const dist_remote_value& v, int32_t& ready) {
                                       ready = v.value->ready() ? 1 : 0;
                                       return absl::OkStatus();
                                     });
}

void dist_remote_value_destroy(dist_remote_value_t* value) { DestroyHandle(value); }

dist_status_t dist_coordinator_create_per_worker_dataset(dist_coordinator_t* coordinator,
                                                         const char* dataset_function,
                                                         const dist_input_options_t* options,
                                                         dist_per_worker_t** out) {
  return CreatePerWorkerDataset(__func__, coordinator, dataset_function, options, false, out);
}

dist_status_t dist_coordinator_create_per_worker_dataset_from_function(dist_coordinator_t* coordinator,
                                                                       const char* dataset_function,
                                                                       const dist_input_options_t* options,
                                                                       dist_per_worker_t** out) {
  return CreatePerWorkerDataset(__func__, coordinator, dataset_function, options, true, out);
}

dist_status_t dist_per_worker_make_iterator(const dist_per_worker_t* dataset, dist_per_worker_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(dataset, "dataset"));
    if (out == nullptr) return NullArgument("out");
    if (dataset->resource->is_iterator()) {
      return absl::InvalidArgumentError("dataset is a per-worker iterator: make iterators of a per-worker dataset");
    }
    // The resource's coordinator state makes the iterator: the coordinator handle itself
    // may be gone (closures then fail, as TF's do after the coordinator is deleted).
    ASSIGN_OR_RETURN(std::shared_ptr<PerWorkerResource> iterator,
                     PerWorkerResource::MakeIterator(dataset->resource));
    *out = new dist_per_worker(std::move(iterator));
    return absl::OkStatus();
  });
}

void dist_per_worker_destroy(dist_per_worker_t* value) { DestroyHandle(value); }

}  // extern "C"
