// C entry points for distributed input: options, distributing datasets, input contexts.
#include <memory>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "core/c_api/api_guard.h"
#include "core/c_api/handle_destroy.h"
#include "core/c_api/handles.h"
#include "core/c_api/user_data.h"
#include "core/c_api/value_args.h"
#include "core/input/distributed_dataset.h"
#include "core/util/status_macros.h"
#include "distribute/input.h"

using distribute::DatasetPtr;
using distribute::DistributedDataset;
using distribute::InputContext;
using distribute::InputOptions;
using distribute::c_api::CheckHandle;
using distribute::c_api::CheckOptionalHandle;
using distribute::c_api::CheckOwnedHandle;
using distribute::c_api::ClearLastError;
using distribute::c_api::ClearOut;
using distribute::c_api::DestroyHandle;
using distribute::c_api::Guard;
using distribute::c_api::NullArgument;

namespace {

using DistributedPtr = std::shared_ptr<const DistributedDataset>;

absl::StatusOr<InputOptions> OptionsOf(const dist_input_options_t* options) {
  RETURN_IF_ERROR(CheckOptionalHandle(options, "options"));
  return options != nullptr ? options->options : InputOptions{};
}

// Changes a copy and stores it only when the core accepts it: a rejected value changes
// nothing.
dist_status_t SetOption(const char* function, dist_input_options_t* options,
                        absl::FunctionRef<void(InputOptions&)> change) {
  return Guard(function, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(options, "options"));
    InputOptions changed = options->options;
    change(changed);
    RETURN_IF_ERROR(distribute::ValidateInputOptions(changed));
    options->options = changed;
    return absl::OkStatus();
  });
}

absl::StatusOr<DistributedPtr> DistributeDataset(dist_strategy_t* strategy,
                                                 const dist_dataset_t* dataset,
                                                 const InputOptions& options) {
  RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
  RETURN_IF_ERROR(CheckHandle(dataset, "dataset"));
  return DistributedDataset::FromDataset(*strategy->strategy, dataset->dataset, options);
}

// Calls the C dataset function through the core's function-based distribution.
absl::StatusOr<DistributedPtr> DistributeFromFunction(dist_strategy_t* strategy,
                                                      dist_dataset_fn fn, void* user_data,
                                                      const InputOptions& options) {
  RETURN_IF_ERROR(CheckHandle(strategy, "strategy"));
  if (fn == nullptr) return NullArgument("fn");
  return DistributedDataset::FromFunction(
      *strategy->strategy, [&](const InputContext& context) -> absl::StatusOr<DatasetPtr> {
        dist_dataset_t* produced = nullptr;
        DatasetPtr dataset;
        ClearLastError();
        dist_input_context context_handle(context);
        context_handle.MarkBorrowed();
        const dist_status_t code = fn(&context_handle, &produced, user_data);
        const std::string who =
            absl::StrCat("fn for input pipeline ", context.input_pipeline_id());
        absl::Status owned;
        if (produced != nullptr) {
          owned = CheckOwnedHandle(produced, "out");
          if (owned.ok()) {  // taken even when fn failed, so that nothing it owned leaks
            dataset = produced->dataset;
            DestroyHandle(produced);
          }
        }
        if (code != DIST_OK) return distribute::c_api::CallbackStatus(code, who);
        if (!owned.ok()) return absl::InvalidArgumentError(absl::StrCat(who, ": ", owned.message()));
        if (dataset == nullptr) return absl::InvalidArgumentError(absl::StrCat(who, " stored no dataset"));
        return dataset;
      },
      options);
}

dist_status_t NewIterator(const char* function, dist_iterator_t** out,
                          absl::FunctionRef<absl::StatusOr<DistributedPtr>()> distribute_input) {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(DistributedPtr distributed, distribute_input());
    ASSIGN_OR_RETURN(std::unique_ptr<distribute::ValueIterator> iterator,
                     distribute::IterateDistributed(*distributed));
    *out = new dist_iterator(std::move(iterator));
    return absl::OkStatus();
  });
}

// Shared body of the input context accessors.
template <typename T>
dist_status_t ContextAccessor(const char* function, const dist_input_context_t* context,
                              T* out, absl::string_view out_arg,
                              absl::FunctionRef<absl::StatusOr<T>(const InputContext&)> read) {
  ClearOut(out);
  return Guard(function, [&]() -> absl::Status {
    RETURN_IF_ERROR(CheckHandle(context, "context"));
    if (out == nullptr) return NullArgument(out_arg);
    ASSIGN_OR_RETURN(*out, read(context->context));
    return absl::OkStatus();
  });
}

}  // namespace

extern "C" {

dist_status_t dist_input_options_create(dist_input_options_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    *out = new dist_input_options();
    return absl::OkStatus();
  });
}

void dist_input_options_destroy(dist_input_options_t* options) { DestroyHandle(options); }

dist_status_t dist_input_options_set_prefetch_depth(dist_input_options_t* options, int64_t depth) {
  return SetOption(__func__, options, [&](InputOptions& o) { o.prefetch_depth = depth; });
}

dist_status_t dist_input_options_set_replication_mode(dist_input_options_t* options,
                                                      dist_input_replication_mode_t mode) {
  return SetOption(__func__, options, [&](InputOptions& o) {
    o.replication_mode = static_cast<distribute::InputReplicationMode>(mode);
  });
}

dist_status_t dist_input_options_set_auto_shard_policy(dist_input_options_t* options,
                                                       dist_auto_shard_policy_t policy) {
  return SetOption(__func__, options, [&](InputOptions& o) {
    o.auto_shard_policy = static_cast<distribute::AutoShardPolicy>(policy);
  });
}

dist_status_t dist_input_options_set_fetch_to_device(dist_input_options_t* options, int32_t enable) {
  return SetOption(__func__, options, [&](InputOptions& o) { o.fetch_to_device = enable != 0; });
}

dist_status_t dist_input_options_set_per_replica_batches(dist_input_options_t* options, int32_t enable) {
  return SetOption(__func__, options, [&](InputOptions& o) { o.per_replica_batches = enable != 0; });
}

dist_status_t dist_input_options_set_partial_batch_split(dist_input_options_t* options,
                                                        dist_partial_batch_split_t split) {
  return SetOption(__func__, options, [&](InputOptions& o) {
    o.partial_batch_split = static_cast<distribute::PartialBatchSplit>(split);
  });
}

dist_status_t dist_strategy_distribute_dataset(dist_strategy_t* strategy,
                                               const dist_dataset_t* dataset,
                                               const dist_input_options_t* options,
                                               dist_distributed_dataset_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(const InputOptions chosen, OptionsOf(options));
    ASSIGN_OR_RETURN(DistributedPtr distributed, DistributeDataset(strategy, dataset, chosen));
    *out = new dist_distributed_dataset(std::move(distributed));
    return absl::OkStatus();
  });
}

dist_status_t dist_strategy_distribute_datasets_from_function(dist_strategy_t* strategy,
                                                              dist_dataset_fn fn, void* user_data,
                                                              dist_free_fn free_fn,
                                                              const dist_input_options_t* options,
                                                              dist_distributed_dataset_t** out) {
  ClearOut(out);
  const dist_status_t status = Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(const InputOptions chosen, OptionsOf(options));
    ASSIGN_OR_RETURN(DistributedPtr distributed,
                     DistributeFromFunction(strategy, fn, user_data, chosen));
    *out = new dist_distributed_dataset(std::move(distributed));
    return absl::OkStatus();
  });
  // fn is no longer needed; on failure the caller keeps user_data.
  if (status == DIST_OK && free_fn != nullptr) free_fn(user_data);
  return status;
}

dist_status_t dist_distributed_dataset_make_iterator(const dist_distributed_dataset_t* dataset,
                                                    dist_iterator_t** out) {
  return NewIterator(__func__, out, [&]() -> absl::StatusOr<DistributedPtr> {
    RETURN_IF_ERROR(CheckHandle(dataset, "dataset"));
    return dataset->dataset;
  });
}

dist_status_t dist_distributed_dataset_num_components(const dist_distributed_dataset_t* dataset,
                                                      int32_t* out_count) {
  return distribute::c_api::Accessor(__func__, dataset, "dataset", out_count, "out_count",
                                     [](const dist_distributed_dataset& d, int32_t& count) {
                                       count = d.dataset->num_components();
                                       return absl::OkStatus();
                                     });
}

void dist_distributed_dataset_destroy(dist_distributed_dataset_t* dataset) { DestroyHandle(dataset); }

dist_status_t dist_strategy_make_dataset_iterator(dist_strategy_t* strategy,
                                                  const dist_dataset_t* dataset,
                                                  dist_iterator_t** out) {
  return NewIterator(__func__, out, [&] { return DistributeDataset(strategy, dataset, InputOptions{}); });
}

dist_status_t dist_strategy_make_input_fn_iterator(dist_strategy_t* strategy, dist_dataset_fn fn,
                                                   void* user_data, dist_iterator_t** out) {
  return NewIterator(__func__, out, [&] {
    return DistributeFromFunction(strategy, fn, user_data, InputOptions{});
  });
}

dist_status_t dist_input_context_create(int32_t num_input_pipelines, int32_t input_pipeline_id,
                                        int32_t num_replicas_in_sync, dist_input_context_t** out) {
  ClearOut(out);
  return Guard(__func__, [&]() -> absl::Status {
    if (out == nullptr) return NullArgument("out");
    ASSIGN_OR_RETURN(InputContext context,
                     InputContext::Create(num_input_pipelines, input_pipeline_id, num_replicas_in_sync));
    *out = new dist_input_context(std::move(context));
    return absl::OkStatus();
  });
}

void dist_input_context_destroy(dist_input_context_t* context) { DestroyHandle(context); }

dist_status_t dist_input_context_num_input_pipelines(const dist_input_context_t* context,
                                                     int32_t* out_count) {
  return ContextAccessor<int32_t>(__func__, context, out_count, "out_count",
                                  [](const InputContext& c) -> absl::StatusOr<int32_t> {
                                    return c.num_input_pipelines();
                                  });
}

dist_status_t dist_input_context_input_pipeline_id(const dist_input_context_t* context,
                                                   int32_t* out_id) {
  return ContextAccessor<int32_t>(__func__, context, out_id, "out_id",
                                  [](const InputContext& c) -> absl::StatusOr<int32_t> {
                                    return c.input_pipeline_id();
                                  });
}

dist_status_t dist_input_context_num_replicas_in_sync(const dist_input_context_t* context,
                                                      int32_t* out_count) {
  return ContextAccessor<int32_t>(__func__, context, out_count, "out_count",
                                  [](const InputContext& c) -> absl::StatusOr<int32_t> {
                                    return c.num_replicas_in_sync();
                                  });
}

dist_status_t dist_input_context_per_replica_batch_size(const dist_input_context_t* context,
                                                        int64_t global_batch_size,
                                                        int64_t* out_size) {
  return ContextAccessor<int64_t>(__func__, context, out_size, "out_size",
                                  [&](const InputContext& c) {
                                    return c.PerReplicaBatchSize(global_batch_size);
                                  });
}

}  // extern "C"
